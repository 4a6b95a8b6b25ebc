"""Arithmetic in free text (Chinese and English) → exact trees for the ``calculator`` tool.

``read_arithmetic("15乘以27再加100等于多少")`` reads one calculation, ``15*27+100``;
``read_arithmetic("再加100呢？", has_last=True)`` reads a follow-up on the previous result.
Every word of the text is accounted for: a number, an operator, a filler word ("等于多少",
"what is"), punctuation — or an unknown word, which is never skipped silently (seed 002 §2.3:
an honest failure beats a wrong success). How the text is read, in order:

1. **Clauses.** Punctuation (，。？；, …) cuts the text into clauses. A clause with an unknown
   word is *unreadable* when it also has an operator ("五乘以一打": 打 is not a number) and
   *not arithmetic* otherwise ("I have 3 cats"); either way it is reported, never computed.
2. **Stages.** 再 / 然后 / 接着 / then / and then start a new stage that applies to the result so
   far: "100减去20再除以4" is (100-20)/4 = 20; "先算15加2，再乘以3" is (15+2)*3 = 51.
3. **Precedence.** Inside a stage, the usual rules, words or symbols alike: "15 plus 2 times 3"
   is 15+(2*3) = 21; ``**`` before unary minus before ``* /`` before ``+ -``; "of"/"的" before a
   fraction or percentage multiplies ("10 percent of 50", "200的五分之一").
4. **Follow-ups.** A clause that starts with an operator ("再加100", "divided by 2", "的平方")
   continues the calculation before it in the same message; only when the message has no
   calculation of its own does it continue the session's last result (``has_last``).
   A leading ``-`` is a sign; a leading word 减/minus continues the last result when there is
   one, and is a minus sign otherwise.

Numbers are read exactly (:mod:`hermes.models.brain.numbers`): 三点五, 五分之一, 百分之十, 负三,
一万二, 3.5万, 1.2k, "three and a half", "a quarter". Only digits, ``+ - * / ** ( ) . ,`` and
the calculator's own function names ever reach the calculator.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from hermes.models.brain import arith
from hermes.models.brain.arith import BinOp, Call, Const, Neg, Node, Num, Prev
from hermes.models.brain.numbers import (
    EN_NUMBER_WORDS,
    Number,
    format_exact,
    read_chinese_number,
    read_digits,
    read_english_number,
)

__all__ = [
    "MAX_TOKENS",
    "Calculation",
    "ParsedExpression",
    "Reading",
    "format_number",
    "parse_expression",
    "read_arithmetic",
    "resolve_expression",
]

#: More tokens than this is not an arithmetic question typed into a chat.
MAX_TOKENS = 200
_ZH = "零〇一二两三四五六七八九十百千万亿"
_FUNCTIONS = "sqrt|abs|round|floor|ceil|log10|log|exp|sin|cos|tan|min|max"
_MASTER = re.compile(
    rf"""
    (?P<space>\s+)
    |(?P<power_n>的?\s*(?P<pow_n>[-负]?(?:\d+(?:\.\d+)?|[零一二两三四五六七八九十点]+))\s*次(?:方|幂))
    |(?P<postfix>的?平方根|的?平方(?![米公厘千分])|的?立方(?![米公厘千分])|\bsquared\b|\bcubed\b)
    |(?P<half>一半)
    |(?P<of>的(?=\s*(?:[\d{_ZH}负]|一半))|\bof\b)
    |(?P<date>(?<![\d.])\d{{4}}(?P<date_sep>[-/])\d{{1,2}}(?P=date_sep)\d{{1,2}}(?![\d.]))
    |(?P<number>(?P<digits>\d+(?:\.\d+)?)(?![\d.{_ZH}点分又])(?:\s*(?P<suffix>k)(?![a-z]))?)
    |(?P<zh_filler0>一下)
    |(?P<zh>负?[\d.{_ZH}点分之又]*[\d{_ZH}])
    |(?P<neg>负|\bnegative\b)
    |(?P<percent>%|\bper\s*cent\b)
    |(?P<zh_op>加上|加|减去|减掉|减|乘以|乘上|乘|除以)
    |(?P<en_op>\b(?:multiplied\s+by|divided\s+by|(?:raised\s+)?to\s+the\s+power\s+of|plus|minus
        |times|over)\b)
    |(?P<pow>\*\*|\^)
    |(?P<sym>[-+*/×÷−]|(?<![a-z])x(?![a-z]))
    |(?P<fn>\b(?:{_FUNCTIONS})\s*(?=\())
    |(?P<sqrt>(?:\bthe\s+)?\bsquare\s+root\s+of\b|根号)
    |(?P<const>\bpi\b|π)
    |(?P<stage>再|然后|接着|之后|\band\s+then\b|\bthen\b|\bafter\s+that\b)
    |(?P<lp>[(\[])
    |(?P<rp>[)\]])
    |(?P<punct>[,，。!！?？;；:：、]|\.(?!\d))
    |(?P<zh_filler>请问|请|帮我|帮忙|麻烦|给我|我想知道|想知道|告诉我|算一下|算一算|算算|计算一下
        |看一下|看看|查一下|分别|各是|各
        |计算|算出|算|一下|等于多少|等于几|等于|是多少|得多少|得几|多少|结果是|的结果|结果|是|得
        |呢|吗|啊|呀|吧|嘛|了|那么|那|先|你|的|好)
    |(?P<equals>=)
    |(?P<word>[a-z]+(?:'[a-z]+)?)
    """,
    re.VERBOSE | re.IGNORECASE,
)
_EN_FILLER = frozenset(
    (
        "what", "what's", "whats", "is", "are", "was", "the", "how", "much", "please", "calculate",
        "compute", "calc", "tell", "me", "can", "could", "would", "you", "i", "want", "to", "know",
        "equals", "equal", "result", "does", "do", "make", "makes", "give", "solve", "work", "out",
        "get", "find", "hey", "hi", "hermes", "ok", "okay", "so", "now", "us", "let's", "lets",
        "figure", "answer", "it", "something", "anything", "for", "quick", "quickly",
    )
)  # fmt: skip
_EN_WORDS = re.compile(r"[a-z]+(?:[\s-]+[a-z]+){0,11}", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+", re.IGNORECASE)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_ZH_OPS = {
    "加上": "+", "加": "+", "减去": "-", "减掉": "-", "减": "-",
    "乘以": "*", "乘上": "*", "乘": "*", "除以": "/",
}  # fmt: skip
_EN_OPS = {
    "plus": "+", "minus": "-", "times": "*", "multiplied by": "*", "divided by": "/", "over": "/",
    "to the power of": "**", "raised to the power of": "**",
}  # fmt: skip
_SYMBOLS = {"-": "-", "−": "-", "+": "+", "*": "*", "/": "/", "×": "*", "÷": "/", "x": "*"}
_POSTFIX = {"平方根": Fraction(1, 2), "平方": Fraction(2), "立方": Fraction(3)}
_POSTFIX |= {"squared": Fraction(2), "cubed": Fraction(3)}


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # num op postfix of fn sqrt const lp rp comma stage and unk
    text: str
    start: int
    end: int
    number: Number | None = None
    #: "zh" / "en" for an operator written as a word (减去, minus): a follow-up, not a sign.
    word: str = ""


@dataclass(frozen=True, slots=True)
class Calculation:
    """One calculation read from text. ``tree`` contains :class:`~arith.Prev` when it continues
    the session's last result (``continues``); ``source`` is the text it was read from."""

    tree: Node
    source: str

    @property
    def continues(self) -> bool:
        return arith.continues(self.tree)


@dataclass(frozen=True, slots=True)
class Reading:
    """Everything a text says about arithmetic (see the module docstring)."""

    calculations: tuple[Calculation, ...] = ()
    #: Clauses with an operator that could not be read, with the words that were not understood.
    unreadable: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Clauses that are not arithmetic at all ("I have 3 cats").
    ignored: tuple[str, ...] = ()
    #: A follow-up ("再加100") with no calculation before it in the message and no last result.
    needs_last: bool = False
    #: Too long to be a calculation typed into a chat.
    too_long: bool = False
    #: Clauses that are a single number: nothing to calculate ("计算 42").
    bare: tuple[str, ...] = ()
    #: What to say, clause by clause in the order of the text: ``("calculation", index into
    #: calculations)``, ``("unreadable", index)``, ``("ignored", index)``.
    order: tuple[tuple[str, int], ...] = ()

    @property
    def understood(self) -> bool:
        return not (self.unreadable or self.ignored or self.needs_last or self.too_long)


def normalize(text: str) -> str:
    """NFKC (full-width digits and signs to ASCII), thousands separators dropped."""
    return _THOUSANDS.sub("", unicodedata.normalize("NFKC", text))


def read_arithmetic(text: str, *, has_last: bool = False) -> Reading:
    """Read the arithmetic of ``text`` (module docstring); never raises."""
    norm = normalize(text)
    tokens = _lex(norm)
    if tokens is None:
        return Reading(too_long=True)
    calculations: list[Calculation] = []
    unreadable: list[tuple[str, tuple[str, ...]]] = []
    ignored: list[str] = []
    bare: list[str] = []
    order: list[tuple[str, int]] = []
    needs_last = False
    for clause, source in _clauses(tokens, norm):
        unknown = tuple(t.text for t in clause if t.kind == "unk")
        operators = [t for t in clause if t.kind not in ("num", "unk", "lp", "rp", "const")]
        if unknown:
            numbers = sum(t.kind == "num" for t in clause)
            # With an operator ("五乘以一打") or two numbers ("6除2": 除 alone is ambiguous) it
            # was meant as arithmetic and could not be read; else it is no arithmetic at all.
            if operators or numbers > 1:
                order.append(("unreadable", len(unreadable)))
                unreadable.append((source, unknown))
            else:
                order.append(("ignored", len(ignored)))
                ignored.append(source)
            continue
        if not operators:
            if sum(t.kind == "num" for t in clause) > 1:
                order.append(("unreadable", len(unreadable)))
                unreadable.append((source, ()))  # "15 27": how are they combined?
            else:
                bare.append(source)
            continue
        previous = calculations[-1].tree if calculations else None
        tree = _parse_clause(clause, previous, has_last=has_last)
        if tree is None:
            order.append(("unreadable", len(unreadable)))
            unreadable.append((source, ()))
        elif isinstance(tree, _NeedsLast):
            needs_last = True
        elif _is_number(tree):
            bare.append(source)  # "minus five": a negative number, nothing to calculate
        elif previous is not None and _extends(clause):
            calculations[-1] = Calculation(tree, calculations[-1].source + "，" + source)
        else:
            order.append(("calculation", len(calculations)))
            calculations.append(Calculation(tree, source))
    return Reading(
        tuple(calculations),
        tuple(unreadable),
        tuple(ignored),
        needs_last,
        bare=tuple(bare),
        order=tuple(order),
    )


# -- lexing -----------------------------------------------------------------------------------


def _lex(text: str) -> list[_Tok] | None:
    tokens: list[_Tok] = []
    pos, depth = 0, 0
    while pos < len(text):
        match = _MASTER.match(text, pos)
        if match is None:  # a character no rule knows: an unknown word of its own
            token: _Tok | None = _Tok("unk", text[pos], pos, pos + 1)
            end = pos + 1
        elif match.lastgroup == "word" and match.group("word").lower() in EN_NUMBER_WORDS:
            token, end = _english_number(text, pos)
        else:
            token, end = _token(match, depth)
        pos = end
        if token is None:
            continue
        depth += (token.kind == "lp") - (token.kind == "rp" and depth > 0)
        tokens.append(token)
        if len(tokens) > MAX_TOKENS:
            return None
    return _merge(tokens, text)


def _token(match: re.Match[str], depth: int) -> tuple[_Tok | None, int]:
    start, end = match.span()
    kind = match.lastgroup or ""
    text = match.group(0)
    if kind in ("space", "zh_filler", "zh_filler0", "equals"):
        return None, end
    if kind == "word":
        lowered = text.lower()
        if lowered in _EN_FILLER:
            return None, end
        return _Tok("and" if lowered == "and" else "unk", text, start, end), end
    if kind == "power_n":
        exponent = read_chinese_number(match.group("pow_n").replace("-", "负"))
        if exponent is None:
            return _Tok("unk", text, start, end), end
        return _Tok("postfix", exponent.shown, start, end, exponent), end
    if kind == "postfix":
        word = text.removeprefix("的").lower()
        value = _POSTFIX[word]
        return _Tok("postfix", word, start, end, Number(value, format_exact(value) or "")), end
    if kind == "half":
        return _Tok("num", text, start, end, Number(Fraction(1, 2), "1/2")), end
    if kind == "number":
        digits = read_digits(match.group("digits"), match.group("suffix"))
        return _Tok("num", text, start, end, digits), end
    if kind == "date":  # a calendar date is not a subtraction or a division
        return _Tok("unk", text, start, end), end
    if kind == "zh":
        number = read_chinese_number(text)
        return _Tok("num" if number else "unk", text, start, end, number), end
    if kind in ("zh_op", "en_op"):
        if kind == "zh_op":
            return _Tok("op", _ZH_OPS[text], start, end, word="zh"), end
        return _Tok("op", _EN_OPS[" ".join(text.lower().split())], start, end, word="en"), end
    if kind == "sym":
        return _Tok("op", _SYMBOLS[text.lower()], start, end), end
    if kind == "pow":
        return _Tok("op", "**", start, end), end
    if kind == "neg":
        return _Tok("op", "-", start, end), end
    if kind == "fn":
        return _Tok("fn", text.strip(), start, end), end
    if kind == "const":
        return _Tok("const", "pi", start, end), end
    if kind == "punct" and text in ",，" and depth > 0:
        return _Tok("comma", ",", start, end), end
    return _Tok(kind, text, start, end), end  # of sqrt percent stage lp rp punct


def _english_number(text: str, pos: int) -> tuple[_Tok, int]:
    """An English number phrase at ``pos`` ("three and a half"), else the one unknown word."""
    run = _EN_WORDS.match(text, pos)
    assert run is not None  # the caller saw a word here
    spans = [(pos + m.start(), pos + m.end()) for m in _WORD.finditer(run.group(0))]
    words = [text[start:end].lower() for start, end in spans]
    ends = [end for _, end in spans]
    found = read_english_number(words)
    if found is None:
        first = text[pos : ends[0]]
        kind = "and" if words[0] == "and" else "unk"
        if words[0] in _EN_FILLER:
            return _Tok("filler", first, pos, ends[0]), ends[0]
        return _Tok(kind, first, pos, ends[0]), ends[0]
    number, size = found
    return _Tok("num", text[pos : ends[size - 1]], pos, ends[size - 1], number), ends[size - 1]


def _merge(tokens: list[_Tok], text: str) -> list[_Tok]:
    """Fold what belongs together: a percent sign into its number (10% = 1/10, shown "10%"),
    "3 and a half" into 3.5, and neighbouring unknown words into one ("I have" is one piece;
    "have 3 cats" stays three)."""
    out: list[_Tok] = []
    for token in tokens:
        if token.kind == "filler":
            continue
        merged = _fold(out, token, text)
        if merged is None:
            out.append(token)
    return out


def _fold(out: list[_Tok], token: _Tok, text: str) -> bool | None:
    """Fold ``token`` into the end of ``out`` and return True, or return None."""
    last = out[-1] if out else None
    if last is None:
        return None
    if token.kind == "percent" and last.kind == "num" and last.number is not None:
        number = Number(last.number.value / 100, last.number.shown + "%", percent=True)
        out[-1] = _Tok("num", text[last.start : token.end], last.start, token.end, number)
        return True
    if token.kind == "unk" and last.kind == "unk" and not text[last.end : token.start].strip():
        out[-1] = _Tok("unk", text[last.start : token.end], last.start, token.end)
        return True
    whole = out[-2] if len(out) >= 2 else None
    if (
        last.kind == "and"
        and whole is not None
        and whole.number is not None
        and whole.number.value.denominator == 1
        and token.number is not None
        and 0 < token.number.value < 1
    ):  # "3 and a half"
        value = whole.number.value + token.number.value
        merged = Number(value, format_exact(value) or f"{value.numerator}/{value.denominator}")
        out[-2:] = [_Tok("num", text[whole.start : token.end], whole.start, token.end, merged)]
        return True
    return None


# -- clauses and parsing ----------------------------------------------------------------------


def _clauses(tokens: list[_Tok], text: str) -> list[tuple[list[_Tok], str]]:
    """Tokens split at punctuation, each clause with its source text."""
    clauses: list[tuple[list[_Tok], str]] = []
    current: list[_Tok] = []
    start = 0
    for token in [*tokens, _Tok("punct", "", len(text), len(text))]:
        if token.kind != "punct":
            current.append(token)
            continue
        if current:
            clauses.append((_resolve_and(current), text[start : token.start].strip()))
        current, start = [], token.end
    return clauses


def _resolve_and(clause: list[_Tok]) -> list[_Tok]:
    """ "and" before an operator starts a stage ("and divided by 2"); elsewhere it is unknown."""
    out: list[_Tok] = []
    for index, token in enumerate(clause):
        if token.kind != "and":
            out.append(token)
            continue
        following = clause[index + 1] if index + 1 < len(clause) else None
        if following is not None and following.kind in ("op", "postfix", "stage"):
            out.append(_Tok("stage", token.text, token.start, token.end))
        else:
            out.append(_Tok("unk", token.text, token.start, token.end))
    return out


class _NeedsLast:
    """Marker: a follow-up with nothing to follow."""


_NEEDS_LAST = _NeedsLast()


def _is_number(tree: Node) -> bool:
    return isinstance(tree, Num) or (isinstance(tree, Neg) and isinstance(tree.operand, Num))


def _extends(clause: list[_Tok]) -> bool:
    first = clause[0]
    return first.kind in ("stage", "postfix") or (
        first.kind == "op" and (first.text != "-" or bool(first.word))
    )


def _parse_clause(
    clause: list[_Tok], previous: Node | None, *, has_last: bool
) -> Node | _NeedsLast | None:
    """The clause's tree (continuing ``previous`` or the last result when it starts with an
    operator), :data:`_NEEDS_LAST`, or ``None`` when it is not well formed."""
    stages: list[list[_Tok]] = [[]]
    for token in clause:
        if token.kind == "stage":
            stages.append([])
        else:
            stages[-1].append(token)
    if not stages[0]:
        stages.pop(0)  # "再加100": the clause starts with a stage word
        leading = True
    else:
        leading = _extends(stages[0])
    if not stages or any(not stage for stage in stages):
        return None
    tree: Node | None = None
    if leading:
        first = stages[0][0]
        if previous is not None:
            tree = previous
        elif has_last:
            tree = Prev()
        elif first.kind == "op" and first.text == "-" and first.word == "en":
            leading = False  # "minus three times two" with nothing before: a minus sign
        else:
            return _NEEDS_LAST
    for index, stage in enumerate(stages):
        if index == 0 and not leading:
            tree = _parse(stage, None)
        elif _extends(stage) or (stage[0].kind == "op" and stage[0].text == "-"):
            tree = _parse(stage, tree)
        else:
            return None  # "15，然后 27": a stage must say what to do with the result so far
        if tree is None:
            return None
    return tree


def _parse(tokens: list[_Tok], previous: Node | None) -> Node | None:
    parser = _Parser(tokens, previous)
    try:
        node = parser.expression()
    except _Malformed:
        return None
    return node if parser.done() else None


class _Malformed(Exception):
    pass


class _Parser:
    """Precedence climbing over one stage's tokens; ``previous`` is the left operand of a
    stage that starts with an operator."""

    def __init__(self, tokens: list[_Tok], previous: Node | None) -> None:
        self.tokens = tokens
        self.index = 0
        self.previous = previous

    def done(self) -> bool:
        return self.index == len(self.tokens)

    def _peek(self) -> _Tok | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def _take(self) -> _Tok:
        token = self._peek()
        if token is None:
            raise _Malformed
        self.index += 1
        return token

    def _is_op(self, *ops: str) -> bool:
        token = self._peek()
        return token is not None and token.kind == "op" and token.text in ops

    def expression(self) -> Node:
        node = self._term()
        while self._is_op("+", "-"):
            op = self._take().text
            node = BinOp(op, node, self._term())
        return node

    def _term(self) -> Node:
        node = self._unary()
        while True:
            token = self._peek()
            if token is None or not (
                token.kind == "of" or (token.kind == "op" and token.text in "*/")
            ):
                return node
            self.index += 1
            node = BinOp("*" if token.kind == "of" else token.text, node, self._unary())

    def _unary(self) -> Node:
        if self.previous is None and self._is_op("-"):
            self.index += 1
            operand = self._unary()
            if isinstance(operand, Num) and operand.number.value > 0:
                number = operand.number
                return Num(Number(-number.value, "-" + number.shown, number.percent))
            return Neg(operand)
        if self.previous is None and self._is_op("+"):
            self.index += 1
            return self._unary()
        return self._power()

    def _power(self) -> Node:
        base = self._postfix()
        if self._is_op("**"):
            self.index += 1
            return BinOp("**", base, self._unary())
        return base

    def _postfix(self) -> Node:
        node = self._primary()
        while (token := self._peek()) is not None and token.kind == "postfix":
            self.index += 1
            assert token.number is not None
            node = BinOp("**", node, Num(token.number))
        return node

    def _primary(self) -> Node:
        if self.previous is not None:
            node, self.previous = self.previous, None
            return node
        token = self._take()
        if token.kind == "num" and token.number is not None:
            return Num(token.number)
        if token.kind == "const":
            return Const("pi")
        if token.kind == "lp":
            node = self.expression()
            if self._take().kind != "rp":
                raise _Malformed
            return node
        if token.kind == "fn":
            return self._call(token.text)
        if token.kind == "sqrt":
            return Call("sqrt", (self._power(),))
        raise _Malformed

    def _call(self, name: str) -> Node:
        if self._take().kind != "lp":
            raise _Malformed
        args = [self.expression()]
        while (token := self._peek()) is not None and token.kind == "comma":
            self.index += 1
            args.append(self.expression())
        if self._take().kind != "rp":
            raise _Malformed
        return Call(name, tuple(args))


# -- the older, single-expression API -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedExpression:
    """An arithmetic expression found in text, as calculator input.

    ``continues`` is true when the text starts with an operator ("再加100", "times 2"): the
    expression continues the previous result and ``text`` starts with that operator.
    """

    text: str
    continues: bool = False


def parse_expression(text: str) -> ParsedExpression | None:
    """The one calculation in ``text`` as calculator input, or ``None`` when there is none,
    several, or any part of the text that looks like arithmetic could not be read."""
    reading = read_arithmetic(text, has_last=True)
    if reading.unreadable or reading.too_long or len(reading.calculations) != 1:
        return None
    tree = reading.calculations[0].tree
    text = arith.calculator_text(tree)
    if not arith.continues(tree):
        return ParsedExpression(text)
    rest = text.removeprefix("ans")
    if rest == text or "ans" in rest:
        return None  # the previous result inside a larger expression: not a plain suffix
    return ParsedExpression(rest, continues=True)


def resolve_expression(parsed: ParsedExpression, last_result: object) -> str | None:
    """The calculator expression: ``parsed.text``, or the last result + a continuation.

    ``None`` when the expression continues a previous result but there is none to continue.
    """
    if not parsed.continues:
        return parsed.text
    base = format_number(last_result)
    if base is None:
        return None
    if base.startswith("-"):
        base = f"({base})"  # (-5)**2, not -5**2
    return base + parsed.text


def format_number(value: object) -> str | None:
    """A number as calculator input text (no exponent notation); ``None`` for non-numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Fraction):
        return None
    try:
        number = Fraction(value) if not isinstance(value, float) else Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        return None
    except OverflowError:
        return None
    exact = format_exact(number)
    if exact is not None:
        return exact
    return f"({number.numerator}/{number.denominator})"
