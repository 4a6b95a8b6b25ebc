"""The SQLite backends (the default engine): one file per concern under ``.hermes/``."""
