"""Secrets are found and replaced by a marker; personal data is named and masked (seed 003 §2.1,
§4.4). The finders are regex work on untrusted text: properties check they never raise, never
leave a secret behind, and that the cheap first look never misses what the patterns find."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.session import privacy
from hermes.session.privacy import (
    MARKER_EN,
    MARKER_ZH,
    asks_for_secret,
    contains_secret,
    mask_personal,
    only_secrets,
    personal_kinds,
    redact_secrets,
    secret_notice,
)


@pytest.mark.parametrize(
    ("text", "redacted", "kind"),
    [
        ("记住我的银行卡密码是123456", f"记住我的银行卡密码是{MARKER_ZH}", "password"),
        ("my password is hunter2", f"my password is {MARKER_EN}", "password"),
        ("my password is hunter2! ok", f"my password is {MARKER_EN} ok", "password"),
        ("password: correcthorse", f"password: {MARKER_EN}", "password"),
        ("wifi密码：Abc-12345!", f"wifi密码：{MARKER_ZH}", "password"),
        ("我的PIN码是4321", f"我的PIN码是{MARKER_ZH}", "pin"),
        ("CVV 123", f"CVV {MARKER_EN}", "cvv"),
        ("验证码 883921，别告诉别人", f"验证码 {MARKER_ZH}，别告诉别人", "otp"),
        ("card 4111 1111 1111 1111 please", f"card {MARKER_EN} please", "card_number"),
        ("卡号 6222021234567890128", f"卡号 {MARKER_ZH}", "card_number"),
        ("身份证号 110101199003074514", f"身份证号 {MARKER_ZH}", "id_number"),
        ("ID 11010519491231002X is mine", f"ID {MARKER_EN} is mine", "id_number"),
        ("api_key=sk-proj-abcdefghijklmnopqrstuvwx1234", f"api_key={MARKER_EN}", "api_key"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", f"token {MARKER_EN}", "api_key"),
        ("use AKIAIOSFODNN7EXAMPLE here", f"use {MARKER_EN} here", "api_key"),
        ("Authorization: Bearer abcdefghijklmnop1234", f"Authorization: {MARKER_EN}", "api_key"),
    ],
)
def test_secrets_are_replaced_by_the_marker_of_the_messages_language(
    text: str, redacted: str, kind: str
) -> None:
    result = redact_secrets(text)
    assert result.text == redacted
    assert kind in result.kinds
    assert contains_secret(text)
    assert not contains_secret(result.text.replace(MARKER_ZH, "").replace(MARKER_EN, ""))


@pytest.mark.parametrize(
    "text",
    [
        "what is 2+3?",
        "我的密码是多少？",
        "密码错误怎么办",
        "my password is wrong",
        "the password is expired, how do I reset it?",
        "密码是我生日",
        "订单号 ORD-12345 到哪了",
        "我的手机号是13812345678",
        "时间戳 1750000000000123",
        "my secret recipe is grandmothers",
        "max tokens = 4096",
        "happiness and opinions",
    ],
)
def test_talk_about_secrets_and_ordinary_numbers_are_kept(text: str) -> None:
    assert redact_secrets(text).text == text
    assert not redact_secrets(text).removed


def test_the_rest_of_a_message_with_a_secret_stays_worth_reading() -> None:
    redacted = redact_secrets("记住我的订单号是ORD-1，密码是123456。谢谢").text
    assert privacy.without_secret_clauses(redacted) == "记住我的订单号是ORD-1，谢谢"
    assert privacy.without_secret_clauses("no secret here") == "no secret here"


def test_a_message_of_nothing_but_secrets_is_told_apart_from_a_mixed_one() -> None:
    assert only_secrets(redact_secrets("记住我的银行卡密码是123456").text)
    assert only_secrets(redact_secrets("my PIN is 4321, thanks").text)
    assert not only_secrets(redact_secrets("my password is hunter2, log me into the VPN").text)
    assert not only_secrets("nothing secret here")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("我的密码是多少？", "password"),
        ("我的银行卡密码是什么", "password"),
        ("what's my PIN?", "pin"),
        ("tell me my card number", "card_number"),
        ("我的身份证号是多少", "id_number"),
        ("do you remember my api key?", "api_key"),
    ],
)
def test_asking_hermes_to_recite_a_secret_is_recognised(text: str, kind: str) -> None:
    assert asks_for_secret(text) == kind


@pytest.mark.parametrize(
    "text", ["密码是多少位？", "how do I reset my password?", "what is 2+3?", "我的订单到哪了"]
)
def test_questions_about_a_secrets_rules_are_not_asking_to_recite_it(text: str) -> None:
    assert asks_for_secret(text) is None


def test_the_notice_names_what_was_removed_in_both_languages() -> None:
    assert "密码" in secret_notice(("password",), True)
    assert "Hermes 不保存" in secret_notice(("password",), True)
    assert "card number" in secret_notice(("card_number",), False)
    assert "cannot tell you your PIN" in secret_notice(("pin",), False, asked=True)


def test_personal_data_is_named_and_masked_but_kept_apart_from_secrets() -> None:
    text = "我的手机号是13812345678，地址是北京市朝阳区建国路88号，订单号 ORD-58213，邮箱 a.b@x.cn"
    assert set(personal_kinds(text)) == {"phone", "address", "order_id", "email"}
    masked = mask_personal(text)
    assert "13812345678" not in masked
    assert "138" in masked  # the edges stay: two values can still be told apart
    assert "ORD-58213" not in masked
    assert "订单号" in masked
    assert "a.b@x.cn" not in masked
    assert personal_kinds("what is 2+3?") == ()


_FRAGMENTS = st.sampled_from(
    ["密码", "是", "password", " is ", ":", "123456", "4111 1111 1111 1111", "110101199003074514",
     "pin", "cvv", "sk-", "abcdefghijklmnopqrstuvwx", "token", "=", "ghp_", "0123456789" * 4,
     "我的", "多少", "？", "，", "卡号", "AKIA", "IOSFODNN7EXAMPLE", "Bearer ", "验证码", " ", "x",
     "-----BEGIN RSA PRIVATE KEY-----", "1750000000", "eyJ", "."]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=12).map("".join))
def test_the_first_look_never_misses_what_the_patterns_find(text: str) -> None:
    if privacy._find(text):
        assert privacy.may_hold_secret(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(_FRAGMENTS, max_size=12).map("".join)))
def test_redaction_never_raises_and_leaves_no_secret(text: str) -> None:
    once = redact_secrets(text)
    assert redact_secrets(once.text).text == once.text  # nothing left to find
    assert not privacy._find(once.text)
    mask_personal(text)
    personal_kinds(text)
    asks_for_secret(text)
