"""Working memory (seed 002 §2.2): the current task's key facts, kept per session.

A user who asks on Monday "帮我统计一下上周的退款率" and on Friday says "再跑一下这个数据" is
long out of the context window by then. :class:`WorkingMemory` keeps what such a follow-up
needs, JSON-serialisable so it is saved with the session state and outlives restarts:

- **facts** — ids (orders, tickets, UUIDs), files and paths, URLs, e-mail addresses, dates
  (``明天``/``下周一``/``next Monday`` resolved to ISO dates against a given ``now``), simple
  names, and the scalar arguments of tool calls. What the user said is kept apart from what
  tool calls and results showed: each side holds at most ``max_facts`` (least recent dropped
  first), so a busy run of lookups never pushes out an id the user gave, and the ids the user
  states as *their own* ("我的订单号是…", "my account is…": ``Fact.own``) go last of all;
- **the last call of each tool** — arguments, outcome, a one-line summary, the user's request.

:meth:`~WorkingMemory.resolve` maps "再跑一下这个数据" / "run that again" / "同一个订单" /
"the same file" / "我的订单" to a call to repeat or a fact — by what the words point at: "我的
订单" / "my order" is the user's own, "刚才查到的那个" / "the one you found" what a tool showed,
"同一个" / "the same" what was last acted on; a bare "那个订单" that could be the user's own
order or the one last looked up is reported as ambiguous, never silently the last id a tool
returned. :meth:`~WorkingMemory.render` is a bounded block for the prompt. Pure and
synchronous. Tool outputs are data: only short identifiers and a clipped summary are taken
from them.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Final, Literal

from hermes.memory.scan import MAX_SCAN_CHARS, MAX_VALUE_CHARS, find_facts, name_key
from hermes.observe import REDACTED, get_logger, is_secret_key, redact
from hermes.session.privacy import has_secret_marker
from hermes.session.sticky import owned_identifiers
from hermes.session.summary import clip
from hermes.text.lang import Lang

__all__ = [
    "Fact",
    "FactSource",
    "LastCall",
    "Reference",
    "WorkingMemory",
    "looks_like_instruction",
]

log = get_logger("memory")

FactSource = Literal["user", "tool_call", "tool_result"]
Scalar = str | int | float | bool

#: Arguments of a call whose JSON is longer are stored clipped (``LastCall.complete`` False).
MAX_ARGUMENTS_CHARS: Final = 4000
_SUMMARY_CHARS: Final = 160
_MAX_FACTS: Final = 50
_MAX_CALLS: Final = 20
_REQUEST_CHARS: Final = 200
_FACTS_PER_SOURCE: Final = 12
#: Format 2 keeps user facts apart from tool facts and marks the user's own ids (format 1
#: reads as it is: its facts are simply not ``own``).
_FORMAT_VERSION: Final = 2
#: Candidates an ambiguous reference lists.
_MAX_CANDIDATES: Final = 3


# -- the memory ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fact:
    """One key fact of the session's task.

    ``label`` says what the value is (``order_id``, ``date``, ``file`` … see :func:`find_facts`,
    or the argument name for a tool-call argument); ``origin`` is the tool name for facts from
    a tool call or result, else ``""``; ``text`` is how it was written (``明天`` for a date);
    ``turn`` the working-memory turn it was last seen in; ``seen_at`` an ISO timestamp;
    ``own``: the user stated it as their own ("我的订单号是…", "my account is…").
    """

    label: str
    value: Scalar
    source: FactSource
    origin: str
    text: str
    turn: int
    seen_at: str
    own: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fact:
        """Raises ``ValueError``/``TypeError``/``KeyError`` for malformed data."""
        value = data["value"]
        source = data["source"]
        if not isinstance(value, str | int | float | bool):
            raise TypeError("fact value must be a JSON scalar")
        if source not in ("user", "tool_call", "tool_result"):
            raise ValueError(f"unknown fact source {source!r}")
        return cls(
            label=str(data["label"]),
            value=value,
            source=source,
            origin=str(data.get("origin", "")),
            text=str(data.get("text", value)),
            turn=int(data.get("turn", 0)),
            seen_at=str(data.get("seen_at", "")),
            own=data.get("own") is True and source == "user",
        )

    @property
    def key(self) -> tuple[str, str, str]:
        """Where the fact is kept: by source, label and value (the same id said by the user
        and shown by a tool is two facts, one on each side)."""
        return (self.source, self.label, json.dumps(self.value, ensure_ascii=False))


@dataclass(frozen=True, slots=True)
class LastCall:
    """The last call of one tool in this session.

    ``complete`` is False when the arguments were too large to keep and were clipped: such a
    call cannot be repeated as stored. ``request`` is the user's message of the turn that made
    the call (clipped), so "再跑一下这个数据" can be explained ("统计上周的退款率").
    """

    tool: str
    arguments: dict[str, Any]
    ok: bool
    summary: str | None
    error_type: str | None
    request: str | None
    turn: int
    at: str
    complete: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LastCall:
        """Raises ``ValueError``/``TypeError``/``KeyError`` for malformed data."""
        arguments = data["arguments"]
        if not isinstance(arguments, dict):
            raise TypeError("call arguments must be an object")
        return cls(
            tool=str(data["tool"]),
            arguments=arguments,
            ok=bool(data["ok"]),
            summary=_opt_str(data.get("summary")),
            error_type=_opt_str(data.get("error_type")),
            request=_opt_str(data.get("request")),
            turn=int(data.get("turn", 0)),
            at=str(data.get("at", "")),
            complete=bool(data.get("complete", True)),
        )

    def signature(self, max_chars: int = 120) -> str:
        """``tool(a="x", b=2)``, clipped to ``max_chars``; ``tool(…)`` when the arguments read
        like an instruction (the line is shown in a system message: see ``render``)."""
        args = ", ".join(
            f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
            for key, value in self.arguments.items()
        )
        args = "…" if looks_like_instruction(args) else args
        return clip(f"{self.tool[:60]}({args})", max_chars)


@dataclass(frozen=True, slots=True)
class Reference:
    """What a follow-up such as "再跑一下这个数据" or "the same file" refers to.

    ``kind`` is ``repeat`` (``call`` is the call to run again; ``fact`` is set too when the
    text also named one, e.g. "再查一下同一个订单"), ``fact`` (``fact`` is the value meant) or
    ``ambiguous`` (``candidates``: the values the words could mean — the user's own one and
    the one a tool showed last — for the model to ask about, never to pick).
    ``phrase`` is the part of the text that was understood.
    """

    kind: Literal["repeat", "fact", "ambiguous"]
    phrase: str
    call: LastCall | None = None
    fact: Fact | None = None
    candidates: tuple[Fact, ...] = ()

    def describe(self, lang: Lang = "zh") -> str:
        """One line for the prompt or the user: ``「这个数据」指的是：stats(period="上周")``."""
        if self.kind == "ambiguous":
            return _ambiguous_line(self.phrase, self.candidates, lang)
        target = ""
        if self.kind == "repeat" and self.call is not None:
            target = self.call.signature()
        elif self.fact is not None:
            target = clip(_fact_text(self.fact), _FACT_LINE_CHARS) + _provenance(self.fact, lang)
        if lang == "zh":
            return f"「{self.phrase}」指的是：{target}"
        return f'"{self.phrase}" refers to: {target}'


# Text that addresses the model rather than describing data: an injected "instruction" in a
# tool's output. Kept broad on purpose: a withheld summary costs little, an obeyed one a lot.
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|your)\b"
    r"|\binstructions?\b|\b(?:system|developer|admin)\s*(?:prompt|message|note|override)\b"
    r"|\bfrom\s+now\s+on\b|\byou\s+(?:must|should|are\s+now|will\s+now|have\s+to)\b"
    r"|\b(?:reveal|disclose|exfiltrate|password|passphrase|api[\s_-]?key|secret)\b|^\s*(?:system"
    r"|assistant|user)\s*:|\b(?:call|invoke|use)\s+(?:the\s+)?\w+(?:\s+tool\b|\s*\()|</?\s*system"
    r"|忽略|无视|不要理会|指令|提示词|系统(?:消息|提示|通知)|从现在(?:起|开始)|你(?:必须|现在是|应该|要)"
    r"|泄露|透露|密码|密钥|调用", re.IGNORECASE | re.MULTILINE,
)  # fmt: skip
_FACT_LINE_CHARS: Final = 120


def looks_like_instruction(text: str) -> bool:
    """Whether ``text`` (tool output) reads like an instruction to the model."""
    return _INSTRUCTION.search(text[:MAX_SCAN_CHARS]) is not None


def _call_line(call: LastCall, zh: bool) -> str:
    """``- tool(args) → ok: summary`` with anything instruction-like withheld."""
    summary = call.summary
    if summary and looks_like_instruction(summary):
        summary = "（输出未显示）" if zh else "(output not shown)"
    outcome = ("成功" if call.ok else "失败") if zh else ("ok" if call.ok else "failed")
    detail = (f"：{summary}" if zh else f": {summary}") if summary else ""
    return f"- {call.signature()} → {outcome}{detail}"


def _fact_text(fact: Fact) -> str:
    written = f"（{fact.text}）" if fact.text and fact.text != str(fact.value) else ""
    return f"{fact.label}: {fact.value}{written}"


def _provenance(fact: Fact, lang: Lang) -> str:
    """Where a fact came from, as the prompt says it: the user's own, the user's words, a call
    or a tool's result."""
    zh = lang == "zh"
    if fact.own:
        return "（用户自己的）" if zh else " (the user's own)"
    if fact.source == "user":
        return "（用户说的）" if zh else " (said by the user)"
    if fact.source == "tool_call":
        return f"（调用 {fact.origin} 时用的）" if zh else f" (used in a call to {fact.origin})"
    return f"（{fact.origin} 的结果里出现的）" if zh else f" (seen in a result of {fact.origin})"


def _ambiguous_line(phrase: str, candidates: tuple[Fact, ...], lang: Lang) -> str:
    shown = [clip(_fact_text(f), _FACT_LINE_CHARS) + _provenance(f, lang) for f in candidates]
    if lang == "zh":
        return f"「{phrase}」可能指：{'；或 '.join(shown)}。不确定是哪一个：先问用户，不要猜。"
    return (
        f'"{phrase}" could mean: {"; or ".join(shown)}. Unclear which: ask the user, do not guess.'
    )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _iso(now: datetime) -> str:
    return now.isoformat(timespec="seconds")


# Follow-up phrases. "Repeat": run the last call again. "Same": a noun names a kind of fact.
_REPEAT = re.compile(
    r"再(?:跑|运行|执行|查|算|做|来|试|发|生成|统计|导出|拉|搜)(?:一下|一遍|一次|一回|下)?"
    r"|重新(?:跑|运行|执行|查|算|做|来|试|生成|统计|拉)|重跑|重试|再来一[次遍个]|照旧|老样子"
    r"|照上次|[跟和同]上次一样|同上"
    r"|\b(?:run|do|try|execute|fetch|check|compute|query|send|generate|pull|redo)\s+"
    r"(?:it|that|this|them|the\s+same(?:\s+\w+)?|the\s+last\s+one)\s+again\b"
    r"|\bre-?run\b|\bretry\b|\bagain\b|\bonce\s+more\b|\bone\s+more\s+time\b"
    r"|\bsame\s+as\s+(?:last\s+time|before)\b|\brepeat\s+(?:it|that|the\s+last(?:\s+\w+)?)\b",
    re.IGNORECASE,
)
# noun group → (label keys (name_key) it means, label endings it means: ``tracking_url`` is a
# url, ``sort_order`` is not an order). "call" means the last call and its result.
_NOUNS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "order": (("orderid", "order", "orderno", "ordernumber"), ("orderid", "orderno")),
    "ticket": (("ticketid", "ticket", "issue", "issueid", "caseid"), ("ticketid", "issueid")),
    "file": (("file", "path", "filename", "filepath"), ("file", "path", "filename")),
    "url": (("url", "link", "href"), ("url", "link")),
    "date": (("date", "day"), ("date",)),
    "person": (("person", "name", "customer", "contact"), ("customer", "contact")),
    "organization": (("organization", "company", "org"), ("company",)),
    "email": (("email", "mail"), ("email",)),
    "id": (("id", "uuid"), ()),
    "city": (("city", "location", "place"), ("city",)),
    "account": (("account", "accountid", "username", "userid", "customerid"), ("accountid",)),
    "address": (("address", "shippingaddress", "deliveryaddress"), ("address",)),
    "phone": (("phone", "mobile", "phonenumber", "tel"), ("phone", "phonenumber")),
    # seed 003 §5: "我上次订的会议室" — the room a booking plan or tool returned
    "room": (("room", "roomid", "meetingroom", "roomno", "roomnumber"), ("roomid",)),
    "call": ((), ()),
}
_NOUN_WORDS: Final[dict[str, str]] = {
    "订单": "order", "单子": "order", "order": "order",
    "工单": "ticket", "ticket": "ticket", "issue": "ticket", "case": "ticket",
    "文件": "file", "表格": "file", "报表": "file", "文档": "file", "file": "file",
    "spreadsheet": "file", "document": "file", "csv": "file", "path": "file",
    "链接": "url", "网址": "url", "网站": "url", "link": "url", "url": "url", "page": "url",
    "日期": "date", "date": "date", "day": "date",
    "人": "person", "客户": "person", "联系人": "person", "person": "person",
    "customer": "person", "client": "person", "contact": "person",
    "公司": "organization", "company": "organization",
    "邮箱": "email", "email": "email", "编号": "id", "id": "id", "uuid": "id",
    "账号": "account", "帐号": "account", "账户": "account", "account": "account",
    "username": "account", "地址": "address", "住址": "address", "address": "address",
    "手机号": "phone", "手机": "phone", "电话": "phone", "phone": "phone",
    "快递": "order", "包裹": "order", "package": "order", "parcel": "order",
    "城市": "city", "地方": "city", "city": "city", "place": "city",
    "会议室": "room", "房间": "room", "room": "room",
    "数据": "call", "结果": "call", "报告": "call", "查询": "call", "data": "call",
    "result": "call", "results": "call", "report": "call", "query": "call",
}  # fmt: skip


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_SEEN_WORDS = (
    r"(?:刚才|刚刚|之前|上次)?(?:你)?"
    r"(?:查到|查出来|查出|找到|搜到|返回|看到|查|订好|预订|预定|订)的"
)
_SAME = re.compile(
    r"(?P<day>同一天|那一?天|当天)"
    r"|(?P<zdet>" + _SEEN_WORDS + r"|我自己的|我们的|我的|同一个?|同样的?|相同的?|这个|那个|刚才的?"
    r"|刚刚的?|上次的?|之前的?|前面的?|上面的?|原来的?)(?:那个|这个|那|这)?"
    r"(?P<zh>" + _alternation(w for w in _NOUN_WORDS if not w.isascii()) + ")"
    r"|\b(?P<edet>the\s+same|same|that|this|the\s+previous|the\s+last|the\s+earlier|my\s+own|my"
    r"|our)\s+(?P<en>" + _alternation(w for w in _NOUN_WORDS if w.isascii()) + r")\b"
    r"|\bthe\s+(?P<found>"
    + _alternation(w for w in _NOUN_WORDS if w.isascii())
    + r")\s+(?:that\s+)?"
    r"(?:you|we|it)\s+(?:just\s+)?(?:found|looked\s+up|got|fetched|returned|showed)\b"
    r"|\bthe\s+(?P<done>"
    + _alternation(w for w in _NOUN_WORDS if w.isascii())
    + r")\s+(?:that\s+)?(?:i|we)\s+(?:just\s+|last\s+)?"
    r"(?:booked|reserved|ordered|used|picked|chose|sent|opened)\b",
    re.IGNORECASE,
)
#: What the words of a reference point at: the user's own (我的, my), what a tool showed
#: (刚才查到的, the one you found), what was last acted on (同一个, the same, 刚才的) or
#: nothing in particular (那个, that).
Pointer = Literal["own", "seen", "acted", "bare"]
#: Kinds a possessive may name ("我的订单"); "我的数据" is not the last call, "my day" no date.
_OWN_GROUPS: Final = frozenset(
    {"order", "ticket", "file", "url", "email", "id", "city", "account", "address", "phone",
     "organization"}
)  # fmt: skip


def _pointer(same: re.Match[str]) -> Pointer:
    if same["found"]:
        return "seen"
    if same["done"]:  # "the room I booked": what was last acted on
        return "acted"
    det = " ".join((same["zdet"] or same["edet"] or "").lower().split())
    if "我" in det or det in ("my", "my own", "our"):
        return "own"
    if det.endswith("的") and re.search("查|找到|搜到|返回|看到", det):
        return "seen"
    return "bare" if det in ("这个", "那个", "that", "this") else "acted"


class WorkingMemory:
    """The key facts and last tool calls of one session (see the module docstring).

    Not thread-safe; one turn of a session runs at a time (the session lock), which is all the
    agent needs. ``now`` is always passed in, so tests and replays are deterministic.
    """

    def __init__(self, *, max_facts: int = _MAX_FACTS, max_calls: int = _MAX_CALLS) -> None:
        if max_facts < 1 or max_calls < 1:
            raise ValueError("max_facts and max_calls must be at least 1")
        self.max_facts = max_facts
        self.max_calls = max_calls
        self.turn = 0
        self._request: str | None = None
        self._facts: OrderedDict[tuple[str, str, str], Fact] = OrderedDict()
        self._calls: OrderedDict[str, LastCall] = OrderedDict()

    # -- reading --------------------------------------------------------------------------

    @property
    def facts(self) -> list[Fact]:
        """All facts, most recently seen first."""
        return list(reversed(self._facts.values()))

    @property
    def calls(self) -> list[LastCall]:
        """The last call of each tool, most recent first."""
        return list(reversed(self._calls.values()))

    def __len__(self) -> int:
        return len(self._facts)

    def last_call(self, tool: str | None = None, *, ok_only: bool = False) -> LastCall | None:
        """The most recent call (of ``tool`` when given; successful ones only if ``ok_only``)."""
        for call in self.calls:
            if (tool is None or call.tool == tool) and (call.ok or not ok_only):
                return call
        return None

    # -- observing ------------------------------------------------------------------------

    def observe_user(self, text: str, *, now: datetime) -> list[Fact]:
        """Take the key facts of the user's message; starts a new working-memory turn.

        Relative dates are resolved against ``now`` (give it in the user's time zone), so a
        "明天" said on Monday stays Tuesday's date when it is read on Friday.
        """
        self.turn += 1
        self._request = clip(text, _REQUEST_CHARS) if text.strip() else None
        owned = {fact.value: fact.label for fact in owned_identifiers(text)}
        found = [
            (label, value, written)
            for label, value, written in find_facts(text, now)
            if not has_secret_marker(value)
        ]
        known = {value for _, value, _ in found}
        found += [(label, value, value) for value, label in owned.items() if value not in known]
        # Bounded per message: a pasted list of 500 order numbers must not evict everything.
        return [
            self._touch(label, value, "user", "", written, now=now, own=value in owned)
            for label, value, written in found[:_FACTS_PER_SOURCE]
        ]

    def observe_tool_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        ok: bool,
        now: datetime,
        output: Any = None,
        summary: str | None = None,
        error_type: str | None = None,
    ) -> LastCall:
        """Record a finished tool call and the key facts of its arguments and result.

        Arguments and result facts are kept only for a successful call (a failed call's
        arguments may be the very thing that was wrong); the call itself is always recorded.
        """
        args, complete = _bounded_arguments(arguments)
        output = redact(output)  # a token in a result must not reach the summary or the facts
        call = LastCall(
            tool=tool,
            arguments=args,
            ok=ok,
            # The tool's own summary only, never its output: fetched text (a page, a mail)
            # is shown in a system message by render, where it must not pass for an instruction.
            summary=(clip(summary, _SUMMARY_CHARS) or None) if ok and summary else None,
            error_type=error_type,
            request=self._request,
            turn=self.turn,
            at=_iso(now),
            complete=complete,
        )
        self._calls.pop(tool, None)
        self._calls[tool] = call
        while len(self._calls) > self.max_calls:
            self._calls.popitem(last=False)
        if ok:
            for key, value in list(args.items())[:_FACTS_PER_SOURCE]:
                if (
                    _is_fact_value(value)
                    and value != REDACTED
                    and not has_secret_marker(str(value))
                ):
                    self._touch(key, value, "tool_call", tool, str(value), now=now)
            for label, value, written in _result_facts(summary, output, now):
                self._touch(label, value, "tool_result", tool, written, now=now)
        return call

    def _touch(
        self,
        label: str,
        value: Scalar,
        source: FactSource,
        origin: str,
        text: str,
        *,
        now: datetime,
        own: bool = False,
    ) -> Fact:
        key = (source, label, json.dumps(value, ensure_ascii=False))
        before = self._facts.pop(key, None)
        own = own or (before is not None and before.own)  # once the user's own, always
        text = clip(text, MAX_VALUE_CHARS)
        fact = Fact(label, value, source, origin, text, self.turn, _iso(now), own)
        self._facts[key] = fact
        self._evict(user=source == "user")
        return fact

    def _evict(self, *, user: bool) -> None:
        """Keep each side (the user's facts; tool calls' and results') within ``max_facts``:
        the least recently seen go first — on the user's side, their own ids go last."""
        side = [k for k, f in self._facts.items() if (f.source == "user") == user]
        over = len(side) - self.max_facts
        if over <= 0:
            return
        if user:
            side.sort(key=lambda k: self._facts[k].own)  # stable: least recent first
        for key in side[:over]:
            del self._facts[key]

    # -- resolving ------------------------------------------------------------------------

    def resolve(self, text: str) -> Reference | None:
        """What a follow-up refers to, or None when the text has no such phrase or memory
        holds nothing that fits.

        - "再跑一下这个数据" / "run that again" / "老样子" → ``repeat`` with the most recent
          successful call (else the most recent one); a tool named in the text, or a stored
          argument value mentioned in it, picks that tool's last call instead.
        - "同一个订单" / "the same file" / "那个链接" / "我的订单" → ``fact`` with the fact of
          that kind (an order id, a file …) the words point at (:meth:`_fact_for`), or
          ``ambiguous`` with the candidates when they could mean the user's own one or
          another one a tool showed.
        """
        text = text[:MAX_SCAN_CHARS]
        repeat = _REPEAT.search(text)
        same = _SAME.search(text)
        group: str | None = None
        pointer: Pointer = "acted"
        if same is not None:
            noun = same["zh"] or same["en"] or same["found"] or same["done"]
            group = "date" if same["day"] else _NOUN_WORDS.get(noun.lower())
            pointer = "acted" if same["day"] else _pointer(same)
            if pointer == "own" and group not in _OWN_GROUPS:
                group = None  # "我的数据", "my day": not a reference
        found = self._fact_for(group, pointer) if group not in (None, "call") else ()
        fact = found[0] if len(found) == 1 else None
        if repeat is not None or group == "call":
            call = self._call_for(text)
            if call is not None:
                phrase = repeat[0] if repeat is not None else same[0] if same else text
                return Reference("repeat", phrase, call=call, fact=fact)
        if same is None or not found:
            return None
        if fact is None:
            return Reference("ambiguous", same[0], candidates=found)
        return Reference("fact", same[0], fact=fact)

    def _fact_for(self, group: str | None, pointer: Pointer = "acted") -> tuple[Fact, ...]:
        """The fact(s) of kind ``group`` the words point at: one, several (ambiguous) or none.

        ``own``: the user's own (else the newest the user said); ``seen``: the newest a tool
        result showed; ``acted``: the newest used in a call, else the user's, else one a
        result showed. ``bare`` ("那个订单"): the user's one, unless a call or a result holds
        another one — then both are candidates; without the user's, what was last acted on,
        else what results showed (several different ones are candidates)."""
        keys, endings = _NOUNS.get(group or "", ((), ()))
        by_source: dict[str, list[Fact]] = {
            "own": [],
            "user": [],
            "tool_call": [],
            "tool_result": [],
        }
        for fact in self.facts:
            label = name_key(fact.label)
            if label in keys or label.endswith(endings):
                by_source["own" if fact.own else fact.source].append(fact)
        mine = (by_source["own"] or by_source["user"])[:1]
        acted, seen = by_source["tool_call"][:1], by_source["tool_result"]
        if pointer == "own":
            return tuple(mine)
        if pointer == "seen":
            return tuple(seen[:1])
        if pointer == "acted":
            return tuple((acted or mine or seen)[:1])
        if mine:
            other = acted or seen[:1]
            if other and other[0].value != mine[0].value:
                return (mine[0], other[0])
            return (mine[0],)
        if acted:
            return (acted[0],)
        distinct = list({json.dumps(f.value): f for f in reversed(seen)}.values())[::-1]
        return tuple(distinct[:_MAX_CANDIDATES])

    def _call_for(self, text: str) -> LastCall | None:
        lowered = text.casefold()
        for call in self.calls:
            if call.tool and call.tool.casefold() in lowered:
                return call
        for call in self.calls:
            for value in call.arguments.values():
                if isinstance(value, str) and len(value) >= 2 and value.casefold() in lowered:
                    return call
        return self.last_call(ok_only=True) or self.last_call()

    # -- rendering ------------------------------------------------------------------------

    def render(self, *, lang: Lang = "zh", max_chars: int = 800, max_calls: int = 5) -> str:
        """A compact block for the prompt, at most ``max_chars`` long; ``""`` when empty.

        What the user said comes first (their own ids first of all), then the calls (newest
        first), then what results showed (the arguments of the calls shown are not repeated):
        lines that do not fit are left out, so the user's facts are the last to go. It goes
        into a system message: a result is shown only as the tool's own summary and its
        identifiers, clipped, and instruction-like text is withheld (tool output is data).
        """
        if not self._facts and not self._calls:
            return ""
        zh = lang == "zh"
        lines = [
            "工作记忆（本会话任务的要点，可能已过时）："
            if zh
            else "Working memory (key facts of this session's task; may be out of date):"
        ]
        said = sorted((f for f in self.facts if f.source == "user"), key=lambda f: not f.own)
        if said:
            lines.append("用户说过的：" if zh else "Said by the user:")
            own = "（用户自己的）" if zh else " (the user's own)"
            lines.extend(
                f"- {clip(_fact_text(fact), _FACT_LINE_CHARS)}{own if fact.own else ''}"
                for fact in said
            )
        calls = self.calls[:max_calls]
        if calls:
            lines.append("最近的工具调用：" if zh else "Recent tool calls:")
        lines.extend(_call_line(call, zh) for call in calls)
        seen = [f for f in self.facts if f.source == "tool_result"]
        if seen:
            lines.append("工具结果里出现的：" if zh else "Seen in tool results:")
            lines.extend(f"- {clip(_fact_text(fact), _FACT_LINE_CHARS)}" for fact in seen)
        out: list[str] = []
        used = 0
        for line in lines:
            cost = len(line) + (1 if out else 0)
            if used + cost > max_chars:
                continue
            out.append(line)
            used += cost
        return "\n".join(out) if len(out) > 1 else ""

    # -- persistence ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe state (store it in ``SessionState.scratch``); read back by ``from_dict``."""
        return {
            "version": _FORMAT_VERSION,
            "turn": self.turn,
            "request": self._request,
            "max_facts": self.max_facts,
            "max_calls": self.max_calls,
            "facts": [fact.to_dict() for fact in self._facts.values()],
            "calls": [call.to_dict() for call in self._calls.values()],
        }

    @classmethod
    def from_dict(cls, data: Any) -> WorkingMemory:
        """The memory saved by :meth:`to_dict`. Never raises: stored data may be old or damaged,
        and a turn must not fail for it, so malformed entries are dropped (and logged) and
        anything that is not such a dict gives an empty memory."""
        if not isinstance(data, Mapping):
            if data is not None:
                log.warning("working_memory_unreadable", got=type(data).__name__)
            return cls()
        # Stored limits are not trusted: 0 would make the constructor raise, 10**9 let a
        # damaged entry grow without bound; they are clamped to [1, default].
        memory = cls(
            max_facts=min(max(_positive_int(data.get("max_facts"), _MAX_FACTS), 1), _MAX_FACTS),
            max_calls=min(max(_positive_int(data.get("max_calls"), _MAX_CALLS), 1), _MAX_CALLS),
        )
        memory.turn = _positive_int(data.get("turn"), 0)
        request = data.get("request")
        memory._request = clip(request, _REQUEST_CHARS) if isinstance(request, str) else None
        dropped = 0
        for raw in _list(data.get("facts")):
            try:
                fact = Fact.from_dict(raw)
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
                dropped += 1
                continue
            if fact.source != "user" or not has_secret_marker(str(fact.value)):
                memory._facts[fact.key] = fact
        for raw in _list(data.get("calls")):
            try:
                call = LastCall.from_dict(raw)
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
                dropped += 1
                continue
            memory._calls[call.tool] = call
        memory._evict(user=True)
        memory._evict(user=False)
        while len(memory._calls) > memory.max_calls:
            memory._calls.popitem(last=False)
        if dropped:
            log.warning("working_memory_entries_dropped", count=dropped)
        return memory


def _positive_int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return default
    return value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_fact_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False  # a flag is not a fact of the task
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and 0 < len(value.strip()) <= MAX_VALUE_CHARS


def _bounded_arguments(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """JSON-safe arguments, and whether they are complete (not clipped, nothing redacted).

    Secret-keyed values (``password``, ``api_key``, ``token`` …) are replaced by ``***``:
    working memory is saved with the session and shown to the model, never a secret store.
    """
    try:
        safe: dict[str, Any] = json.loads(json.dumps(dict(arguments), default=str))
    except (TypeError, ValueError, RecursionError):
        return {}, False  # not JSON-like (a cycle, a huge nesting): nothing to repeat
    redacted = redact(safe)
    if redacted is not safe:
        return _clipped(redacted), False
    clipped = _clipped(safe)
    return clipped, clipped is safe


def _clipped(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with long strings cut and structures elided, if over the size limit."""
    if len(json.dumps(values, ensure_ascii=False)) <= MAX_ARGUMENTS_CHARS:
        return values
    kept = (int, float, bool, type(None))
    return {
        k: clip(v, MAX_VALUE_CHARS) if isinstance(v, str) else v if isinstance(v, kept) else "…"
        for k, v in values.items()
    }


_ID_KEYS = ("id", "no", "number", "url", "link", "href", "path", "file", "filename")


def _result_facts(summary: str | None, output: Any, now: datetime) -> list[tuple[str, Scalar, str]]:
    """Identifiers in a tool result: id-like top-level fields of a dict output, then ids, urls,
    files and dates found in the summary or the output text. Bounded; never the whole output."""
    facts: list[tuple[str, Scalar, str]] = []
    if isinstance(output, Mapping):
        for key, value in list(output.items())[:50]:
            label = name_key(str(key))
            shown = _is_fact_value(value) and not looks_like_instruction(f"{key} {value}")
            if label.endswith(_ID_KEYS) and shown and not is_secret_key(str(key)):
                facts.append((str(key)[:MAX_VALUE_CHARS], value, str(value)))
    texts = [summary or ""]
    if isinstance(output, str):
        texts.append(output)
    elif output is not None and not facts:
        texts.append(json.dumps(output, ensure_ascii=False, default=str))
    for text in texts:
        if looks_like_instruction(text):
            continue  # an output that addresses the model is not a source of task facts
        for label, value, written in find_facts(text[:MAX_SCAN_CHARS], now):
            if label not in ("person", "organization"):  # names in data are too noisy
                facts.append((label, value, written))
    return facts[:_FACTS_PER_SOURCE]
