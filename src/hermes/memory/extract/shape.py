"""The shape of a message: sentences, clauses, questions, hypotheticals, hedges, reported
speech and meta talk — what decides whether a clause may be read as a statement at all."""

from __future__ import annotations

import re

# -- text shape: sentences, clauses, questions, hypotheticals ------------------------------

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SENTENCE = re.compile(r"[^。！!？?；;\n]+[。！!？?；;\n]*")
_EN_SENTENCE_BREAK = re.compile(r"(?<=[a-z0-9)\"'])\.\s+(?=[A-Z])")
_CLAUSE_BREAK = re.compile(r"\s*[，,]\s*")
_TAG_QUESTION = re.compile(
    r"[，,\s]*(?:好吗|好不好|可以吗|行吗|行不行|ok|okay|alright|please|will\s+you|won't\s+you"
    r"|can\s+you|thanks?|谢谢)?[\s。.!！?？]*$",
    re.IGNORECASE,
)
_ZH_QUESTION = re.compile(
    r"什么|啥|谁|哪(?!怕)|几(?!乎)|多少|怎么|怎样|为什么|为啥|是否|是不是|有没有|对不对|要不要"
    r"|[吗呢么][\s。.!！]*$"
)
_EN_QUESTION = re.compile(
    r"^(?:do|does|did|can|could|would|will|should|shall|is|are|am|was|were|have|has|had|what"
    r"|which|who|whom|whose|when|where|why|how|isn't|aren't|don't|doesn't|didn't)\b",
    re.IGNORECASE,
)
HYPOTHETICAL = re.compile(
    r"如果|假如|要是|假设|万一|倘若|若是|假若|比如|例如|举个例子"
    r"|\b(?:if|suppose|supposing|imagine|what\s+if|in\s+case|assuming|hypothetically|unless"
    r"|for\s+example|e\.g\.)\b",
    re.IGNORECASE,
)
HEDGE = re.compile(
    r"可能|也许|大概|好像|似乎|不确定|不知道|说不定|或许|估计|有点|也不一定"
    r"|\b(?:maybe|perhaps|probably|possibly|might|not\s+sure|don't\s+know|do\s+not\s+know"
    r"|i\s+think|i\s+guess|i\s+suppose|kind\s+of|sort\s+of|i\s+believe)\b",
    re.IGNORECASE,
)
REPORTED = re.compile(
    r"他说|她说|他们说|别人说|有人说|据说|听说|以为我|觉得我|认为我|(?<!跟你)(?<!和你)(?<!对你)说我"
    r"|\b(?:he|she|they|people|someone|somebody|everyone)\s+(?:said|says|thinks?|thought)\b",
    re.IGNORECASE,
)
META_NEGATION = re.compile(
    r"不是说|没说|没有说|并不是|不要记|别记|不用记|不需要记|忘掉|忘了吧|忘记吧|不记得|记不住|记不得"
    r"|\b(?:didn't\s+say|never\s+said|not\s+saying|don't\s+remember|do\s+not\s+remember"
    r"|forget\s+(?:it|that|this|about))\b",
    re.IGNORECASE,
)
EMPTY_OBJECT = re.compile(
    r"^(?:你|您|他|她|它|他们|这个|那个|这些|那些|这样|那样|it|that|this|these|those|you|him|her"
    r"|them|one|so|too)?[\s。.!！~～了啊呀哦啦吧嘛呢的]*$",
    re.IGNORECASE,
)


def is_chinese(text: str) -> bool:
    return _CJK.search(text) is not None


def sentences(text: str) -> list[tuple[str, str]]:
    """``(sentence without its terminator, terminator)`` pairs."""
    out: list[tuple[str, str]] = []
    for match in _SENTENCE.finditer(text):
        chunk = match[0]
        body = chunk.rstrip("。！!？?；;\n")
        terminator = chunk[len(body) :].strip()
        parts = _EN_SENTENCE_BREAK.split(body)
        out.extend((part.strip(), ".") for part in parts[:-1] if part.strip())
        if parts[-1].strip():
            out.append((parts[-1].strip(), terminator))
    return out


def is_question(text: str, terminator: str) -> bool:
    if "?" in terminator or "？" in terminator:
        return True
    if is_chinese(text):
        return _ZH_QUESTION.search(text) is not None
    return _EN_QUESTION.search(text.strip()) is not None


def strip_tag_question(text: str) -> tuple[str, bool]:
    """``text`` without a trailing "好吗？"/"ok?"/"please"; and whether one was there."""
    match = _TAG_QUESTION.search(text)
    if match is None or not match[0].strip(" \t。.!！"):
        return text, False
    return text[: match.start()], True


def clean(text: str) -> str:
    """Trailing particles and punctuation off, whitespace folded."""
    text = " ".join(text.split())
    return re.sub(
        r"[\s，,、。.!！~～…]*(?:了|啊|呀|哦|噢|啦|吧|哈|嘛|呢)?[\s，,、。.!！~～…]*$", "", text
    )


_CONTINUATION = re.compile(
    r"^(?:而不是|而非|不是|不再|(?:rather\s+than|instead\s+of|not|but\s+not)\b)", re.I
)


def unhedged(clause: str) -> str:
    text = " ".join(HEDGE.sub(" ", clause).split()).strip(" ,，")
    return re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", text)


def clauses(sentence: str, terminator: str) -> list[tuple[str, str]]:
    parts: list[str] = []
    for part in (p for p in _CLAUSE_BREAK.split(sentence) if p.strip()):
        if parts and _CONTINUATION.match(part.strip()):
            parts[-1] += "，" + part  # "我喜欢茶，而不是咖啡" is one statement
        else:
            parts.append(part)
    return [(p.strip(), terminator if i == len(parts) - 1 else ",") for i, p in enumerate(parts)]
