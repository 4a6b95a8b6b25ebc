"""Suite-wide setup: real model requests are forbidden (hermes.testing's guard)."""

pytest_plugins = ["hermes.testing"]
