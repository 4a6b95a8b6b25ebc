// Preloaded (`node --require`) into the reference servers the interop tests run over HTTP/SSE.
// server-everything calls `app.listen(PORT)` without a host, which binds every interface and
// has no option to change it; this makes a listen on a bare port bind 127.0.0.1 only, so the
// tests expose nothing beyond loopback. Anything else is passed through unchanged.
"use strict";
const net = require("node:net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  const port = args[0];
  const barePort =
    typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (barePort && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
