"""The OpenAPI schema fuzzed with schemathesis (DESIGN.md, HTTP; "Bad input": no 5xx).

Every operation of ``/openapi.json`` gets generated requests — valid ones and, through the
negative mode, bodies, ids and query values that break the schema — against the real app
over a real agent on a SQLite file (a zero-latency model, no tools). Whatever arrives, the
answer is never a server error, and every error body has the JSON error shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.config.server import ApiKeyConfig, ServerConfig
from hermes.testing import FunctionModel, say

KEY = "fuzz-admin-key-0123456789abcdef"
#: Generated requests per operation and mode (derandomized: the same ones every run).
EXAMPLES = 30


def _answer(request: object) -> object:
    return say("ok")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    directory: Path = tmp_path_factory.mktemp("fuzz")
    agent = Agent(model=FunctionModel(_answer), tools=[], store=directory / "hermes.db")
    settings_ = ServerConfig(api_keys=(ApiKeyConfig(key=KEY, user="root", roles=("admin",)),))
    return create_app(agent, settings_)


def without_lifespan(app: FastAPI) -> Any:
    """``app`` with a lifespan that does nothing: schemathesis's ASGI client runs the lifespan
    around every call, and the app's own shutdown (draining, refusing new turns with 503
    ``shutting_down``, as it should) would then answer the calls after the first."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    return wrapped


@pytest.fixture(scope="module")
def api(app: FastAPI) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", without_lifespan(app))


def _check(case: Any) -> None:
    response = case.call(headers={"Authorization": f"Bearer {KEY}"})
    where = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, (where, response.status_code, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}, (where, body)
        assert isinstance(body["error"]["type"], str), (where, body)
        assert isinstance(body["error"]["message"], str), (where, body)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_operation_answers_with_a_server_error(api: Any, mode: GenerationMode) -> None:
    """Each operation, valid requests (positive) or schema-breaking ones (negative)."""
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 10  # every route of the service is in the schema
    fuzzed: list[str] = []
    for operation in operations:
        run = settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )(given(operation.as_strategy(generation_mode=mode))(_check))
        try:
            run()
        except Unsatisfiable:
            # Nothing to break (no parameters, no body): only in the negative mode.
            assert mode is GenerationMode.NEGATIVE, operation.label
            continue
        fuzzed.append(operation.label)
    assert len(fuzzed) >= (len(operations) if mode is GenerationMode.POSITIVE else 5), fuzzed
