"""The disguises pirate sites put on copied text, each a pure function of (text, rng).

Every function works on plain text with one paragraph per line and draws all its randomness from
the ``random.Random`` it is given, so a case is reproducible from its seed.

* ``homophones(rate)``: ``round(rate · H)`` of the H Han characters that have a homophone are
  replaced by a different common character with the same tone-less pinyin (pypinyin).
* ``typos(rate)``: each character is hit with probability ``rate``; a hit is a deletion, an
  insertion after it or a replacement, one third each; inserted and replacing characters are a
  look-alike of the original (OCR confusion pairs) half of the time, else a random common one.
* ``pinyin_words(rate)``: each Han word (rjieba) is, with probability ``rate``, written in
  tone-less pinyin letters — the whole word, or one of its characters ("电zi书").
"""

from __future__ import annotations

import random
import re
from collections import Counter
from functools import cache

import opencc
from pypinyin import Style, lazy_pinyin

# Ads and watermarks in the style of 笔趣阁 mirrors; {book} and {site} are filled in per case.
AD_LINES = (
    "最快更新{book}最新章节！",
    "请记住本站域名：www.{site}",
    "天才一秒记住本站地址：[笔趣阁] www.{site} 最快更新！无广告！",
    "手机用户请浏览 m.{site} 阅读，更优质的阅读体验。",
    "笔趣阁 www.{site}，最快更新{book}最新章节！",
    "本章未完，请点击下一页继续阅读》》",
    "一秒记住【www.{site}】，精彩小说无弹窗免费阅读！",
    "章节错误,点此举报(免注册),举报后维护人员会在两分钟内校正章节内容,请耐心等待。",
    "百度搜索 {book} 笔趣阁 即可找到本书最新章节。",
    "{book}最新章节地址：https://www.{site}/book/{num}/",
    "求收藏，求推荐票，求月票！",
    "（本章完）",
)
INLINE_ADS = (
    "（笔趣阁 www.{site}）",
    "【最快更新 www.{site}】",
    "(看最新章节请到{site})",
)
SITES = ("biquge.la", "xbiquge.cc", "biqugexx.com", "bqg99.net", "23us.info", "shuquge.org")

# Characters OCR engines confuse (look-alikes, not homophones).
LOOKALIKES = (
    "己已巳",
    "未末",
    "人入八",
    "日曰目",
    "大太犬天夭",
    "土士",
    "干千于午",
    "戊戌戍",
    "王玉主",
    "木本术禾",
    "刀力刃",
    "田由甲申",
    "自白百",
    "苦若",
    "候侯",
    "贝见",
    "析折",
    "拔拨",
    "汩汨",
    "末未来",
    "今令",
    "免兔",
    "鸟乌",
    "壁璧",
    "辩辨辫",
    "情清晴请",
    "待侍持特",
    "问间闻",
    "住往注",
    "做作",
    "即既",
)
NOISE_CHARS = (" ", "\u3000", "\u200b", "\u200c", "\u200d", "\ufeff", "·", "~", "*", "、", "…")
HALF_TO_FULL = {**{chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}, " ": "\u3000"}
FULL_TO_HALF = {v: k for k, v in HALF_TO_FULL.items()}
PUNCT_SWAP = {"，": ",", "。": ".", "：": ":", "！": "!", "？": "?", "；": ";", "“": '"', "”": '"'}
_SENTENCE_END = "。！？!?…．"
_SENTENCE = re.compile(r"[^。！？!?…．]*[。！？!?…．]+[”’」』\"]*|[^。！？!?…．]+$")


def is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


def common_chars(corpus_text: str) -> tuple[str, ...]:
    """Han characters of the given text seen at least 5 times (the pool of substitutes)."""
    counts = Counter(ch for ch in corpus_text if is_han(ch))
    return tuple(sorted(ch for ch, n in counts.items() if n >= 5))


class Alphabet:
    """Substitute pools derived from a reference text: common characters, homophone groups."""

    def __init__(self, reference_text: str) -> None:
        self.common = common_chars(reference_text)
        groups: dict[str, list[str]] = {}
        for ch in self.common:
            groups.setdefault(lazy_pinyin(ch, style=Style.NORMAL)[0], []).append(ch)
        self.homophones = {
            ch: [o for o in groups[lazy_pinyin(ch, style=Style.NORMAL)[0]] if o != ch]
            for ch in self.common
        }
        self.homophones = {ch: group for ch, group in self.homophones.items() if group}
        self.lookalike = {ch: [o for o in group if o != ch] for group in LOOKALIKES for ch in group}

    def typo_char(self, original: str, rng: random.Random) -> str:
        similar = self.lookalike.get(original)
        if similar and rng.random() < 0.5:
            return rng.choice(similar)
        if rng.random() < 0.5:
            return rng.choice(rng.choice(LOOKALIKES))
        return rng.choice(self.common)


def split_paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n") if p.strip()]


def sentences(paragraph: str) -> list[str]:
    """Sentences of a paragraph, each with its closing punctuation (and closing quote)."""
    return _SENTENCE.findall(paragraph)


def with_ads(text: str, rng: random.Random, book: str = "", every: tuple[int, int] = (2, 5)) -> str:
    """Ad lines between paragraphs (every 2–5), a header and a footer, and a few inline ads."""
    site = rng.choice(SITES)
    fill = {"book": book or "本书", "site": site, "num": rng.randint(1000, 99999)}

    def ad() -> str:
        return rng.choice(AD_LINES).format(**fill)

    out = [ad()]
    gap = rng.randint(*every)
    for p in split_paragraphs(text):
        if rng.random() < 0.15 and len(p) > 20:
            cut = rng.randint(5, len(p) - 5)
            p = p[:cut] + rng.choice(INLINE_ADS).format(**fill) + p[cut:]
        out.append(p)
        gap -= 1
        if gap == 0:
            out.append(ad())
            gap = rng.randint(*every)
    out.append(ad())
    return "\n".join(out)


def noise(text: str, rng: random.Random, rate: float = 0.06) -> str:
    """Punctuation, full/half-width and whitespace noise, zero-width characters."""
    to_full = rng.random() < 0.5
    out = []
    for ch in text:
        if ch in PUNCT_SWAP and rng.random() < 0.5:
            ch = PUNCT_SWAP[ch]
        elif to_full and ch in HALF_TO_FULL and ch != " ":
            ch = HALF_TO_FULL[ch]
        elif not to_full and ch in FULL_TO_HALF:
            ch = FULL_TO_HALF[ch]
        out.append(ch)
        if ch != "\n" and rng.random() < rate:
            out.append(rng.choice(NOISE_CHARS) * rng.randint(1, 2))
        elif ch != "\n" and rng.random() < rate / 10:
            out.append("\n")
    return "".join(out)


@cache
def _opencc(config: str) -> opencc.OpenCC:
    return opencc.OpenCC(config)


def traditional(text: str, rng: random.Random) -> str:
    return _opencc(rng.choice(("s2t", "s2tw", "s2hk"))).convert(text)


def homophones(text: str, rng: random.Random, alphabet: Alphabet, rate: float) -> str:
    chars = list(text)
    eligible = [i for i, ch in enumerate(chars) if ch in alphabet.homophones]
    han = sum(1 for ch in chars if is_han(ch))
    for i in rng.sample(eligible, min(len(eligible), round(rate * han))):
        chars[i] = rng.choice(alphabet.homophones[chars[i]])
    return "".join(chars)


def typos(text: str, rng: random.Random, alphabet: Alphabet, rate: float) -> str:
    out = []
    for ch in text:
        if ch == "\n" or rng.random() >= rate:
            out.append(ch)
            continue
        kind = rng.randrange(3)
        if kind == 0:
            continue  # deleted
        if kind == 1:
            out.append(alphabet.typo_char(ch, rng))  # replaced
        else:
            out.append(ch + alphabet.typo_char(ch, rng))  # inserted
    return "".join(out)


def pinyin_words(text: str, rng: random.Random, rate: float) -> str:
    import rjieba

    out = []
    for word in rjieba.cut(text):
        if not all(is_han(ch) for ch in word) or rng.random() >= rate:
            out.append(word)
            continue
        syllables = lazy_pinyin(word, style=Style.NORMAL)
        if len(word) > 1 and len(syllables) == len(word) and rng.random() < 0.5:
            k = rng.randrange(len(word))
            out.append(word[:k] + syllables[k] + word[k + 1 :])
        else:
            out.append("".join(syllables))
    return "".join(out)


def reorder_paragraphs(text: str, rng: random.Random) -> str:
    paras = split_paragraphs(text)
    original = list(paras)
    for _ in range(5):
        rng.shuffle(paras)
        if paras != original or len(paras) < 2:
            break
    return "\n".join(paras)


def shuffle_sentences(text: str, rng: random.Random) -> str:
    out = []
    for p in split_paragraphs(text):
        parts = sentences(p)
        rng.shuffle(parts)
        out.append("".join(parts))
    return "\n".join(out)


def interleave(a: str, b: str) -> str:
    pa, pb = split_paragraphs(a), split_paragraphs(b)
    out = []
    for i in range(max(len(pa), len(pb))):
        out.extend(pa[i : i + 1] + pb[i : i + 1])
    return "\n".join(out)


def split_pages(text: str, pages: int) -> list[str]:
    """Cut at paragraph boundaries into ``pages`` parts of about equal length."""
    paras = split_paragraphs(text)
    if len(paras) < pages:  # too few paragraphs: cut inside the text instead
        size = -(-len(text) // pages)
        return [text[i : i + size] for i in range(0, len(text), size)]
    total = sum(len(p) for p in paras)
    parts, current, length = [], [], 0
    for p in paras:
        current.append(p)
        length += len(p)
        if length >= total * (len(parts) + 1) / pages and len(parts) < pages - 1:
            parts.append("\n".join(current))
            current = []
    if current:
        parts.append("\n".join(current))
    return parts


def excerpt(text: str, start: int, length: int) -> str:
    """``length`` characters from ``start``, widened to whole sentences where possible."""
    begin = start
    while begin > 0 and text[begin - 1] not in _SENTENCE_END + "\n" and start - begin < 40:
        begin -= 1
    end = min(len(text), begin + length)
    stops = _SENTENCE_END + "\n"
    while end < len(text) and text[end - 1] not in stops and end - begin < length + 40:
        end += 1
    return text[begin:end].strip()


def han_excerpt(text: str, start: int, count: int) -> str:
    """The shortest slice of ``text`` from ``start`` holding ``count`` Han characters (after
    normalisation ``count`` tokens or more, what ``min_passage_chars`` counts); the whole rest
    of the text if it holds fewer."""
    seen = 0
    for end in range(start, len(text)):
        seen += is_han(text[end])
        if seen == count:
            return text[start : end + 1]
    return text[start:]


def embed(inner: str, filler: str, rng: random.Random) -> str:
    """Put ``inner`` at a random paragraph boundary of ``filler``."""
    paras = split_paragraphs(filler)
    k = rng.randint(0, len(paras))
    return "\n".join([*paras[:k], inner, *paras[k:]])
