"""Storage backends, one folder per engine (DESIGN.md, "Layers"): ``sqlite/`` (the default);
PostgreSQL, Redis and the task queue join as ``postgres/``, ``redis/`` and ``queue/``.

The protocols live with their concepts (``hermes.session.store.Store``,
``hermes.session.locks.SessionLocks``…); ``storage/open.py`` turns a URL into the backend of
each; only the composition root (``hermes.agent.compose``) imports this package. Every backend
passes the protocol's conformance suite (``tests/storage/conformance/``).
"""
