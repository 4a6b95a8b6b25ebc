"""Chinese statement rules: "我喜欢…", "我的X是Y", "我叫…", "我每天…", and their wording as one
third-person sentence ("用户喜欢喝美式咖啡。")."""

from __future__ import annotations

import re
from typing import Final

from hermes.memory.extract.candidate import CLEAR, PLAIN, Found, Rule
from hermes.memory.extract.shape import EMPTY_OBJECT, clean
from hermes.memory.records import MemoryKind

ZH_LEAD = (
    r"^(?:(?:其实|另外|对了|顺便说一下|顺便说|顺便|嗯|哦|噢|还有|而且|说实话|老实说|我跟你说|跟你说"
    r"|告诉你|那个|就是|然后|但是|不过|可是|所以|并且|同时|好的|好|ok|OK)[，,、\s]*)*"
)


_ZH_CHANGE = re.compile(r"现在|目前|如今|最近|已经|改成|改为|换成|不再|以后")


_ZH_OLD = re.compile(
    r"(?:而不是|不再是|不再喜欢|以前(?:喜欢|是|爱)?|之前(?:喜欢|是|爱)?)(?P<old>[^，,。]+)"
)


_ZH_PERSONAL_NOUNS = (
    "女儿|儿子|老婆|老公|妻子|丈夫|孩子|妈妈|爸爸|母亲|父亲|女朋友|男朋友|对象|猫|狗|宠物|生日|邮箱"
    "|手机号|电话|车|车牌|公司|老板|领导|专业|学校|工作|职业|家乡|老家"
)
_ZH_BAD_KEYS = re.compile(
    r"^(?:问题|意思|想法|意见|看法|建议|疑问|理解|回答|答案|需求|要求|任务|天|妈呀|错|理由|原因|猜测|感觉)$"
)


def zh_third_person(text: str) -> str:
    """我 → 用户, 你/您 → 助手 (我们 is left as it is)."""
    text = re.sub(r"我(?!们)", "用户", text)
    return re.sub(r"[你您](?!们|好)", "助手", text)


def zh_sentence(text: str) -> str:
    text = clean(text)
    return text if text.endswith(("。", "！", "？")) else text + "。"


def _zh_preference(m: re.Match[str]) -> Found | None:
    adv, verb, obj = m["adv"] or "", m["verb"], m["obj"]
    if EMPTY_OBJECT.match(obj):
        return None
    kind: MemoryKind = "habit" if verb.endswith("习惯") else "preference"
    strong = re.search(r"最|一直|真的|非常|特别|超|很|向来|从来", adv) is not None
    changed = (
        _ZH_CHANGE.search(adv + verb) is not None
        or obj.rstrip(" \t。.!！~～").endswith("了")
        or _ZH_OLD.search(obj) is not None
    )
    hint = old = None
    if changed:
        old = _ZH_OLD.search(obj)
        hint = clean(obj) if verb.startswith("不再") else clean(old["old"] if old else verb + obj)
    content = zh_sentence(zh_third_person(f"我{adv}{verb}{obj}"))
    return Found(kind, content, CLEAR if strong else PLAIN, None, hint)


def _zh_key_value(m: re.Match[str]) -> Found | None:
    key, copula, value = m["key"].strip(), m["cop"], m["value"]
    if _ZH_BAD_KEYS.match(key) or EMPTY_OBJECT.match(value):
        return None
    kind: MemoryKind = "preference" if re.search(r"最喜欢|最爱|偏好", key) else "fact"
    changed = m["now"] is not None or re.search(r"改成|换成|改为", value) is not None
    value = re.sub(r"^(?:改成|换成|改为)了?", "", value)
    content = zh_sentence(zh_third_person(f"我的{key}{copula}{value}"))
    return Found(kind, content, CLEAR, key, key if changed else None)


def _zh_simple(kind: MemoryKind, template: str, topic: str | None = None) -> Rule:
    """A rule whose content is ``template`` filled with the match's ``value`` group."""

    def rule(m: re.Match[str]) -> Found | None:
        value = clean(m["value"])
        if EMPTY_OBJECT.match(value) or re.match(r"^[你他她它了过着]", value):
            return None
        changed = "now" in m.groupdict() and m["now"] is not None
        content = zh_sentence(zh_third_person(template.format(value=value)))
        return Found(kind, content, CLEAR, topic, topic if changed else None)

    return rule


# "我是说…", "我是不是…", "我是在问…": not who the user is.
_ZH_NOT_IDENTITY = re.compile(
    r"^(?:说|不|在|要|想|来|去|问|指|觉得|认为|因为|为了|被|从|跟|和|第一次|否|真|开玩笑|随便|故意"
    r"|刚|已经|有|这|那|个|怎|对|给|把|让|用|可以|会|能|很|太|非常|挺|怕)|的$"
)


def _zh_identity(m: re.Match[str]) -> Found | None:
    value = clean(m["value"])
    if EMPTY_OBJECT.match(value) or len(value) > 30 or _ZH_NOT_IDENTITY.search(value):
        return None
    return Found("fact", zh_sentence(f"用户是{m['article'] or ''}{value}"), PLAIN)


def _zh_habit(m: re.Match[str]) -> Found | None:
    rest = m["rest"]
    if EMPTY_OBJECT.match(rest) or len(clean(rest)) < 2:
        return None
    return Found("habit", zh_sentence(zh_third_person(f"我{m['adv']}{rest}")), PLAIN)


def _zh(pattern: str, rule: Rule) -> tuple[re.Pattern[str], Rule]:
    return re.compile(ZH_LEAD + pattern), rule


ZH_RULES: Final = [
    _zh(r"(?:我的名字(?:是|叫)|我叫)(?P<value>[^\s，,。]{1,20})$",
        _zh_simple("fact", "用户叫{value}", "name 姓名")),
    _zh(r"(?:你)?(?:可以|就)?(?:叫|称呼)我(?P<value>.{1,12}?)(?:就行|就好|吧)?$",
        _zh_simple("preference", "用户希望被称呼为{value}", "name 称呼")),
    _zh(r"我对(?P<value>.{1,20}?)过敏", _zh_simple("fact", "用户对{value}过敏")),
    _zh(r"我(?P<now>现在|目前)?(?:住在|住|家在|生活在)(?P<value>.{1,40})$",
        _zh_simple("fact", "用户住在{value}", "residence 居住地")),
    _zh(r"我(?P<now>已经)?搬(?:家)?(?:到|去)了?(?P<value>.{1,40})$",
        _zh_simple("fact", "用户住在{value}", "residence 居住地")),
    _zh(r"我(?:来自|老家是|老家在|的老家是)(?P<value>.{1,30})$",
        _zh_simple("fact", "用户来自{value}", "hometown 家乡")),
    _zh(r"我(?P<now>现在|目前)?在(?P<value>.{1,30}?(?:工作|上班|任职|实习|读书|上学|念书|读研|读博))了?$",
        _zh_simple("fact", "用户在{value}", "work 工作")),
    _zh(r"我的(?P<key>[^，,。是为叫在]{1,12}?)(?P<now>现在|目前)?(?P<cop>是|为|叫|在)(?P<value>.{1,100})$",
        _zh_key_value),
    _zh(rf"我(?P<key>{_ZH_PERSONAL_NOUNS})(?P<now>现在|目前)?(?P<cop>是|叫|在)(?P<value>.{{1,100}})$",
        _zh_key_value),
    _zh(r"我(?P<adv>(?:现在|目前|最近|如今|已经|其实|一直|还是|也|都|比较|更|最|真的|很|非常|特别|挺"
        r"|超级|超|蛮|向来|从来)*)(?P<verb>不太喜欢|不喜欢|不爱|讨厌|厌恶|受不了|不再喜欢|不再|喜欢"
        r"|喜爱|热爱|爱(?!人)|偏好|偏爱|倾向于?|改喝|改吃|改用|改成|习惯用|习惯|不习惯)(?P<obj>.{1,100})$",
        _zh_preference),
    _zh(r"我(?P<adv>每天|每周|每个?月|每晚|每早|每次|经常|通常|一般|总是|平时)(?P<rest>.{1,100})$",
        _zh_habit),
    _zh(r"我(?:现在|目前)?是(?P<article>一[名个位])?(?P<value>.{1,40})$", _zh_identity),
]  # fmt: skip
