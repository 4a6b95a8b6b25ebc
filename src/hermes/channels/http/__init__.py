"""The HTTP edge (``hermes serve``): FastAPI routes over the one intake (DESIGN.md, HTTP).

``create_app(agent, settings)`` builds the application; each route module owns its routes
(``chat``, ``turns``, ``sessions``, ``approvals``, ``memory``, ``health``) and reaches the
running service through :func:`hermes.channels.http.state.service`.
"""
