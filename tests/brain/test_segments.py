"""Cutting a message into its requests (``hermes.models.brain.segments``), with the brain's own
notion of "a request on its own"."""

from __future__ import annotations

import pytest

from hermes.models.brain import RuleBrain
from hermes.models.brain.segments import (
    MAX_REQUESTS,
    MAX_SEPARATORS,
    place_follow_up,
    split_requests,
)

BRAIN = RuleBrain()


def split(text: str) -> list[str]:
    return split_requests(text, BRAIN._is_request)


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("上海今天多少度？另外帮我算一下 (25+17)*3", ["上海今天多少度", "帮我算一下 (25+17)*3"]),
        (
            "what's the weather in Paris and what's 7*8?",
            ["what's the weather in Paris", "what's 7*8"],
        ),
        ("现在几点了？纽约呢？", ["现在几点了", "纽约呢"]),
        ("现在几点了，纽约呢", ["现在几点了", "纽约呢"]),
        ("东京现在几点；另外100除以8", ["东京现在几点", "100除以8"]),
        ("3加4和5加6分别是多少", ["3加4", "5加6分别是多少"]),
        ("帮我算一下3+4，然后告诉我现在几点", ["帮我算一下3+4", "告诉我现在几点"]),
    ],
)
def test_a_message_is_cut_into_its_requests(text: str, parts: list[str]) -> None:
    assert split(text) == parts


@pytest.mark.parametrize(
    "text",
    [
        "纽约和伦敦现在几点？",  # one question about two places
        "15乘以27，再加100",  # one calculation going on
        "先算15乘27，再减去5",
        "three and a half times two",  # "and" inside a number
        "one hundred and five plus five",
        "1,000 + 2,000",  # a thousands separator
        "one hundred apples and one plus zero",  # never cut an unreadable part away
        "I have 3 cats, what is 4+5",  # the arithmetic reader names "I have 3 cats" itself
    ],
)
def test_what_belongs_together_stays_together(text: str) -> None:
    assert split(text) == [text.removesuffix("？")]  # the question mark ends the request


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("纽约呢？", "纽约"),
        ("那伦敦呢", "伦敦"),
        ("东京和首尔呢？", "东京和首尔"),
        ("and Paris?", "Paris"),
        ("what about Tokyo?", "Tokyo"),
        ("how about New York", "New York"),
        ("你呢", None),
        ("再加100呢？", None),
        ("的平方呢", None),
        ("现在几点", None),
    ],
)
def test_a_follow_up_that_only_names_a_place(text: str, place: str | None) -> None:
    assert place_follow_up(text) == place


def test_a_long_message_is_split_with_a_bounded_number_of_checks() -> None:
    # Every check reads one piece, and at most MAX_SEPARATORS places are tried per sentence:
    # a message of a thousand commas costs what a short one does, not a thousand times more.
    checked: list[str] = []

    def is_request(text: str) -> bool:
        checked.append(text)
        return bool(BRAIN._is_request(text))

    parts = split_requests("1+1，" * 1000, is_request)
    assert len(parts) <= MAX_REQUESTS
    assert len(checked) <= 4 * MAX_SEPARATORS
    assert max(len(text) for text in checked) <= 4 * MAX_SEPARATORS * len("1+1，")
