"""Suite-wide setup: real model requests are forbidden (hermes.testing's guard); built caches
(the Chinese↔English lexicon, hermes.storage.sqlite.lexicon) go to the repo's
``.cache/hermes``, not the user's home, and are built once for all tests (and the CLI
subprocesses they start)."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault(
    "HERMES_CACHE_DIR", str(Path(__file__).resolve().parent.parent / ".cache" / "hermes")
)

# `make mutation` (docs/testing.md) runs the tests under mutmut's tracing, many times slower:
# no deadlines there, and the same examples for every mutant (a mutant is killed by the tests,
# not by the luck of the draw).
settings.register_profile(
    "mutation",
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.fixture(scope="session", autouse=True)
def _lexicon_ready() -> None:
    """Keyword searches see the Chinese↔English lexicon from a test's first query: a store does
    not wait for it (hermes.storage.sqlite.lexicon.load_lexicon), the suite does, once."""
    from hermes.storage.sqlite.lexicon import load_lexicon

    load_lexicon()


# hermes.testing: the guard; fake_chat_server: its ``server`` fixture (not autouse).
pytest_plugins = ["hermes.testing", "tests.models.fake_chat_server"]
