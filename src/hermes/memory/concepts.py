"""What a memory is about, so recall does not hinge on wording (seed 001 §5.3, seed 003 §2.4).

People ask about the *kind* of thing, not its words: "has my package shipped yet?" and
"我的快递发货了吗？" for "The user's order id is ORD-58213", "我住哪" for "用户住在上海…", "我喝
什么咖啡？" for "用户现在改喝拿铁了". A small bilingual vocabulary of kinds (:data:`CONCEPTS`)
bridges the two sides:

- **the memory side**: :func:`concept_tokens` names the kinds a memory's text is about — the
  kinds its words name and their broader kinds (a latte is coffee, coffee is a drink) — and
  the keyword index stores them as one token each, of the memory's owner (``k<owner>order``):
  a kind is common across all users' memories, and a token of its own per user keeps FTS5
  reading only that user's memories of the kind, so a search costs what it cost before;
- **the query side**: :func:`expand` adds, for each kind word of a first-person query ("my
  package", "我的快递", "我住哪"), that kind's token as an alternative of the word (a
  :class:`~hermes.memory.keywords.Group`, scored like a translation: the better of the word
  itself and its kind, never both). A query names only the kind it says ("咖啡" is coffee, not
  every drink), so a tea memory does not answer a coffee question as well as a latte memory.

Hand-written for the kinds a personal assistant is asked about (orders and deliveries, home and
address, work, accounts and ids, contact details, family, pets, food, drinks, health, travel,
schedule, devices, cars, sport, study, code), in both languages, before any test set measured
it; no dependency, bounded regex work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from hermes.memory.keywords import Group, Tok, Tokens, normalize, owner_token, tokenize

__all__ = ["CONCEPTS", "concept_tokens", "concepts_of", "expand", "indexed_text", "kind_token"]

#: kind → (broader kinds, Chinese words, English words). English words match whole words, with
#: an optional plural "s"/"es"; Chinese words match anywhere (no spaces to match on).
CONCEPTS: Final[dict[str, tuple[tuple[str, ...], str, str]]] = {
    "order": ((),
              "订单 单号 快递 快件 包裹 物流 发货 到货 收货 配送 运单 寄件 寄出 取件 签收 派送 下单"
              " 网购 退货 买的东西",
              "order ordered package parcel shipment shipping shipped ship delivery delivered "
              "deliver tracking courier purchase purchased"),
    "home": ((),
             "住在 住址 地址 家住 居住 住哪 住的 住那 搬家 搬到 家在 我家 寄到",
             "live lives lived reside resides home address apartment flat moved"),
    "work": ((),
             "工作 上班 职业 职位 公司 任职 单位 老板 领导 同事 上司 做什么的",
             "work works working job occupation profession employer company career boss "
             "manager colleague colleagues office living"),
    "account": ((),
                "账号 账户 帐号 帐户 用户名 会员 会员号 登录名 客户号 工号 员工号",
                "account username login member membership customer employee"),
    "ticket": ((), "工单 报修 投诉 故障单", "ticket issue case complaint incident"),
    "contact": ((),
                "电话 手机号 手机号码 邮箱 联系方式 微信",
                "phone mobile cell email e-mail contact"),
    "name": ((), "名字 叫什么 姓名 称呼 名叫", "name named called"),
    "family": ((),
               "女儿 儿子 孩子 小孩 老婆 老公 妻子 丈夫 妈妈 爸爸 父母 母亲 父亲 姐姐 妹妹 哥哥"
               " 弟弟 家人",
               "daughter son kid child children wife husband mother father mom dad parent "
               "sister brother family"),
    "pet": ((), "宠物 猫 狗 养了", "pet dog cat puppy kitten"),
    "coffee": (("drink",),
               "咖啡 拿铁 美式 摩卡 卡布奇诺 浓缩",
               "coffee latte americano espresso cappuccino mocha decaf"),
    "tea": (("drink",), "茶 乌龙 龙井 普洱 抹茶", "tea oolong matcha chai"),
    "drink": ((), "喝 饮料 果汁 啤酒 可乐 豆浆", "drink drinks drinking juice beer wine soda"),
    "food": ((),
             "吃 饭 菜 素食 吃素 忌口 口味 外卖 餐厅 饭店 菜馆 早餐 午餐 晚餐",
             "eat eats eating food meal dinner lunch breakfast restaurant vegetarian vegan "
             "diet cuisine dish"),
    "health": ((),
               "过敏 药 病 医生 医院 健康 牙医 看病",
               "allergic allergy allergies medicine medication doctor dentist health sick "
               "hospital"),
    "travel": ((),
               "出差 旅行 旅游 航班 飞机 酒店 机票 火车 高铁 座位 车票",
               "travel trip flight plane hotel airline train seat"),
    "schedule": ((),
                 "会议 开会 周会 例会 日程 预约 约会 安排 行程",
                 "meeting stand-up standup appointment schedule calendar plan"),
    "device": ((), "电脑 笔记本 操作系统", "laptop computer notebook pc"),
    "car": ((), "车 开车 汽车 车牌", "car drive drives vehicle"),
    "sport": ((),
              "运动 跑步 健身 羽毛球 篮球 足球 游泳 瑜伽",
              "exercise running run workout gym sport jogging swimming yoga badminton"),
    "study": ((),
              "学习 语言 英语 雅思 托福 课程",
              "learning studying study course language english ielts toefl"),
    "code": ((),
             "代码 编程 框架 后端 编辑器 数据库 部署",
             "code coding programming framework backend editor ide database deploy github"),
    "birthday": ((), "生日 出生", "birthday born birth"),
}  # fmt: skip


def kind_token(concept: str, user_id: str) -> str:
    """The index token of a kind in ``user_id``'s memories (one word for the tokenizer:
    letters and digits; no memory's own words look like it)."""
    return f"k{owner_token(user_id)[1:13]}{concept}"


def _compile() -> tuple[re.Pattern[str], re.Pattern[str], dict[str, str]]:
    owner: dict[str, str] = {}
    zh_words: list[str] = []
    en_words: list[str] = []
    for concept, (_, zh, en) in CONCEPTS.items():
        for word in zh.split():
            owner.setdefault(word, concept)
            zh_words.append(word)
        for word in en.split():
            owner.setdefault(word, concept)
            en_words.append(word)
    zh_alt = "|".join(re.escape(w) for w in sorted(set(zh_words), key=len, reverse=True))
    en_alt = "|".join(re.escape(w) for w in sorted(set(en_words), key=len, reverse=True))
    return re.compile(zh_alt), re.compile(rf"\b({en_alt})(?:e?s)?\b"), owner


_ZH, _EN, _OWNER = _compile()
_SCAN_CHARS: Final = 2000
_FIRST_PERSON = re.compile(
    r"[我咱俺]|本人|\b(?:i|me|my|mine|myself|we|our|ours|i'm|i've|i'd)\b", re.IGNORECASE
)


def _mentions(text: str) -> list[tuple[str, str]]:
    """(word as found, its kind) for every kind word of ``text``, in order."""
    flat = normalize(text[:_SCAN_CHARS])
    found = [(m.start(), m[0], _OWNER[m[0]]) for m in _ZH.finditer(flat)]
    found += [(m.start(), m[0], _OWNER[m[1]]) for m in _EN.finditer(flat)]
    return [(word, concept) for _, word, concept in sorted(found)]


def concepts_of(text: str) -> set[str]:
    """The kinds ``text`` is about: those its words name and their broader kinds."""
    kinds: set[str] = set()
    for _, concept in _mentions(text):
        kinds.add(concept)
        kinds.update(CONCEPTS[concept][0])
    return kinds


def concept_tokens(text: str, user_id: str) -> str:
    """The kinds of ``text`` as ``user_id``'s index tokens, space-separated (``""``: none)."""
    return " ".join(kind_token(c, user_id) for c in sorted(concepts_of(text)))


def indexed_text(content: str, topic: str | None, tags: Iterable[str], user_id: str) -> str:
    """What keyword search sees of a memory of ``user_id``: its content, topic and tags, and
    the tokens of the kinds they are about."""
    own = " ".join((content, topic or "", *tags))
    kinds = concept_tokens(own, user_id)
    return f"{own} {kinds}" if kinds else own


def expand(text: str, tokens: Tokens, user_id: str) -> Tokens:
    """``tokens`` (a query of ``user_id``'s memories, maybe with translation groups) with each
    kind word of a first-person ``text`` given its kind's token as one more alternative (see
    the module docstring). Unchanged for a query without first person or without kind words."""
    if _FIRST_PERSON.search(text[:_SCAN_CHARS]) is None:
        return tokens
    by_concept: dict[str, list[Tok]] = {}
    own = {(0, t) for t in tokens.terms} | {(1, c) for c in tokens.chars}
    for word, concept in _mentions(text):
        word_tokens = tokenize(word)
        mine = [(0, t) for t in word_tokens.terms if (0, t) in own]
        mine += [(1, c) for c in word_tokens.chars if (1, c) in own]
        if not mine:  # "住哪": its bigram is a function word; its character still counts
            mine = [(1, ch) for ch in word if (1, ch) in own]
        held = by_concept.setdefault(concept, [])
        held.extend(t for t in mine if t not in held)
    by_concept = {concept: toks for concept, toks in by_concept.items() if toks}
    if not by_concept:
        return tokens
    groups = list(tokens.groups)
    for concept, originals in by_concept.items():
        groups = _merged(groups, tuple(originals), ((0, kind_token(concept, user_id)),))
    return Tokens(tokens.terms, tokens.chars, tuple(groups))


def _merged(
    groups: Iterable[Group], originals: tuple[Tok, ...], alternative: tuple[Tok, ...]
) -> list[Group]:
    """``groups`` with ``alternative`` added to the group that already holds these originals
    (a word and its translations), or as a new group of the originals no group holds."""
    out: list[Group] = []
    left = list(originals)
    for group in groups:
        if left and set(group.originals) & set(left):
            left = [t for t in left if t not in group.originals]
            if alternative not in group.translations:
                out.append(Group(group.originals, (*group.translations, alternative)))
                continue
        out.append(group)
    if left:
        out.append(Group(tuple(left), (alternative,)))
    return out
