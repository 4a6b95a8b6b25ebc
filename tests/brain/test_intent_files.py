"""User intent files: adding intents, overriding defaults, and errors that name file and key."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.errors import ConfigError
from hermes.models.base import ToolSpec
from hermes.models.brain import RuleBrain, default_intents
from hermes.tools.base import ToolResult

from .harness import ALL_TOOLS, Conversation, hints

TRANSLATE = ToolSpec(
    "translate",
    "Translate text into another language.",
    {"type": "object", "properties": {"text": {"type": "string"}, "target": {"type": "string"}}},
)
GET_WEATHER = ToolSpec(
    "get_weather",
    "Weather forecast for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}},
)

TRANSLATE_YAML = """\
intents:
  - name: translate
    description: {zh: 翻译文本, en: Translate text}
    priority: 5
    patterns: ['^\\s*(翻译|translate)\\s*[:：]?']
    tool: translate
    slots:
      - name: text
        required: true
        from: rest
        ask: {zh: 要翻译什么？, en: 'What should I translate?'}
      - name: target
        from: '(?:成|into|to)\\s*(?P<target>中文|英文|english|chinese)\\s*$'
    args:
      text: "{text}"
      target: "{target}"
      engine: offline
      max_chars: 500
    reply:
      zh: "译文：{translation}"
      en: "Translation: {translation}"
    examples: {zh: ["翻译: hello"], en: ["translate: 你好"]}
"""

WEATHER_YAML = """\
intents:
  - name: weather
    description: {en: Weather from the get_weather tool}
    patterns: ['天气|weather']
    tool: get_weather
    slots:
      - name: city
        required: true
        from: '^(?P<city>\\S+?)\\s*的?(天气|weather)'
        ask: {zh: 哪个城市？, en: 'Which city?'}
    reply:
      zh: "{city}：{condition}"
      en: "{city}: {condition}"
"""


def _valid(*, pattern: str = "a", reply: str = "r", extra: str = "") -> str:
    return (
        "intents:\n  - name: x\n    description: {en: d}\n"
        f"    patterns: ['{pattern}']\n    reply: {{en: {reply}}}\n{extra}"
    )


def _reply_intent(text: str) -> str:
    return (
        "intents:\n  - name: custom\n    description: {en: d}\n"
        f"    patterns: ['^custom$']\n    reply: {{en: {text}}}\n"
    )


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def custom_chat(tmp_path: Path, make_chat: Callable[..., Conversation]) -> Conversation:
    files = [_write(tmp_path, "translate.yaml", TRANSLATE_YAML)]
    files.append(_write(tmp_path, "weather.yaml", WEATHER_YAML))
    return make_chat(tools=[*ALL_TOOLS, TRANSLATE, GET_WEATHER], model=RuleBrain(files))


async def test_a_user_intent_maps_a_phrase_to_a_new_tool_with_constants(
    custom_chat: Conversation,
) -> None:
    response = await custom_chat.send("translate: good morning into chinese")
    assert response.tool_calls[0].name == "translate"
    assert response.tool_calls[0].arguments == {
        "text": "good morning into chinese",
        "target": "chinese",
        "engine": "offline",
        "max_chars": 500,
    }
    result = ToolResult(ok=True, output={"translation": "早上好"})
    reply = await custom_chat.give_result(response, result)
    assert reply.content == "Translation: 早上好"


async def test_an_unfilled_optional_slot_leaves_its_argument_out(
    custom_chat: Conversation,
) -> None:
    response = await custom_chat.send("翻译：你好")
    assert response.tool_calls[0].arguments == {
        "text": "你好",
        "engine": "offline",
        "max_chars": 500,
    }


async def test_a_user_intent_asks_for_its_required_slot(custom_chat: Conversation) -> None:
    ask = await custom_chat.send("翻译")
    assert ask.content == "要翻译什么？"
    assert hints(ask) == {"awaiting_slot": "text", "intent": "translate"}
    response = await custom_chat.send("see you tomorrow")
    assert response.tool_calls[0].arguments["text"] == "see you tomorrow"


async def test_a_user_intent_overrides_the_default_of_the_same_name(
    custom_chat: Conversation,
) -> None:
    response = await custom_chat.send("London weather")
    assert response.tool_calls[0].name == "get_weather"
    assert response.tool_calls[0].arguments == {"city": "London"}
    reply = await custom_chat.give_result(
        response, ToolResult(ok=True, output={"condition": "rain"})
    )
    assert reply.content == "London: rain"


async def test_user_help_lists_examples_of_user_intents(custom_chat: Conversation) -> None:
    reply = await custom_chat.send("help")
    assert reply.content is not None
    assert '"translate: 你好"' in reply.content


async def test_user_intents_win_over_defaults_with_overlapping_patterns(
    tmp_path: Path, make_chat: Callable[..., Conversation]
) -> None:
    overlapping = """\
    intents:
      - name: shout
        description: {en: Shout the sum}
        priority: -5
        patterns: ['\\d\\s*\\+\\s*\\d']
        reply: {en: "NUMBERS!"}
    """
    chat = make_chat(model=RuleBrain([_write(tmp_path, "shout.yaml", overlapping)]))
    reply = await chat.send("3 + 4")
    assert reply.content == "NUMBERS!"


async def test_without_defaults_only_user_intents_are_known(
    tmp_path: Path, make_chat: Callable[..., Conversation]
) -> None:
    path = _write(tmp_path, "translate.yaml", TRANSLATE_YAML)
    chat = make_chat(model=RuleBrain([path], include_defaults=False))
    reply = await chat.send("15乘以27等于多少？")
    assert hints(reply) == {"fallback": True}


def test_the_packaged_intents_load_and_cover_the_documented_behaviours() -> None:
    names = {intent.name for intent in default_intents()}
    expected = {"cancel", "capabilities", "calculate", "time", "date", "greeting", "thanks"}
    assert expected | {"weather", "stock", "news"} <= names


def test_a_later_user_file_replaces_an_earlier_intent_of_the_same_name(tmp_path: Path) -> None:
    first = _write(tmp_path, "a.yaml", _reply_intent("hello-1"))
    second = _write(tmp_path, "b.yaml", _reply_intent("hello-2"))
    brain = RuleBrain([first, second])
    (custom,) = [intent for intent in brain.intents if intent.name == "custom"]
    assert custom.reply is not None
    assert custom.reply.get("en") == "hello-2"


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (_valid(extra="    colour: red\n"), "intents[0].colour", "Extra inputs"),
        (_valid(pattern="([unclosed"), "intents[0].patterns[0]", "invalid regular expression"),
        ("intents:\n  - name: x\n    description: {en: d}\n    reply: {en: r}\n",
         "intents[0].patterns", "Field required"),
        (_valid(extra="    slots: [{name: s, required: true, from: rest}]\n    tool: t\n"),
         "intents[0].slots[0].ask", "needs an 'ask'"),
        (_valid(extra="    slots: [{name: s, from: '\\d+'}]\n"),
         "intents[0].slots[0].from", "named group"),
        (_valid(extra="    tool: t\n    args: {a: '{nope}'}\n"),
         "intents[0].args.a", "unknown slot"),
        (_valid(reply="'{x.__class__}'"), "intents[0].reply.en", "not a plain name"),
        (_valid(reply="'{result}'"), "intents[0].reply.en", "unknown template field"),
        (_valid(reply="'{oops'"), "intents[0].reply.en", "bad template"),
        (_valid() + _valid().removeprefix("intents:\n"), "intents[1].name", "duplicate intent"),
        ("intents:\n  - name: x\n    description: {}\n    patterns: [a]\n    reply: {en: r}\n",
         "intents[0].description", "'zh' or 'en'"),
        ("intents: {}\n", "intents", "valid list"),
        ("- just\n- a list\n", "<root>", "valid dictionary"),
        ("version: 2\nintents: []\n", "version", "Input should be 1"),
    ],
)  # fmt: skip
def test_a_bad_intent_file_raises_config_error_naming_file_and_key(
    tmp_path: Path, text: str, key: str, message: str
) -> None:
    path = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(ConfigError) as caught:
        RuleBrain([path])
    assert caught.value.file == str(path)
    assert caught.value.key == key
    assert message in caught.value.message
    assert str(path) in str(caught.value)


def test_a_yaml_syntax_error_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.yaml", "intents:\n  - name: [unclosed\n")
    with pytest.raises(ConfigError) as caught:
        RuleBrain([path])
    assert caught.value.file == str(path)
    assert "invalid YAML" in caught.value.message
    assert "line" in caught.value.message


def test_a_missing_intent_file_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        RuleBrain([tmp_path / "absent.yaml"])
    assert caught.value.file == str(tmp_path / "absent.yaml")


def test_config_error_is_json_ready() -> None:
    error = ConfigError("bad", key="intents[0]", file="f.yaml")
    assert json.loads(json.dumps(error.to_dict()))["type"] == "config_error"


VAT_YAML = """\
intents:
  - name: vat
    description: {zh: 含税价, en: Price with VAT}
    priority: 70
    patterns: ['含税价?|with\\s+vat']
    tool: calculator
    slots:
      - name: amount
        required: true
        from: expression
        ask: {zh: 多少钱？, en: 'How much?'}
      - name: rate
        from: '(?:税率|rate)\\s*(?P<rate>\\d+)\\s*%'
    args:
      expression: "({amount})*1.13"
    reply:
      zh: "{shown} 含税是 {result}（税率 {rate}%）"
      en: "{shown} with VAT is {result} ({rate}%)"
"""


async def test_a_user_calculation_intent_keeps_its_own_slot_names_and_other_slots(
    tmp_path: Path, make_chat: Callable[..., Conversation]
) -> None:
    chat = make_chat(model=RuleBrain([_write(tmp_path, "vat.yaml", VAT_YAML)]))
    reply = await chat.turn("一百加二十的含税价，税率 13%")
    assert chat.calls == [("calculator", {"expression": "(100+20)*1.13"})]
    assert reply.content == "100+20 含税是 135.6（税率 13%）"
