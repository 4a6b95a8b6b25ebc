"""Suite-wide setup: real model requests are forbidden (hermes.testing's guard)."""

# hermes.testing: the guard; fake_chat_server: its ``server`` fixture (not autouse).
pytest_plugins = ["hermes.testing", "tests.models.fake_chat_server"]
