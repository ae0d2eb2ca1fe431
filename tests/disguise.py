"""Pirate disguises for test fixtures: ads, Traditional characters, homophones, typos, noise,
pinyin spelled in letters, reordered paragraphs and sentences, interleaved chapters."""

from __future__ import annotations

import random
import re

import opencc
import rjieba
from pypinyin import lazy_pinyin

from tracker.text.tables import syllable_table

ADS = (
    "最快更新本书最新章节，请记住本站域名 www.biquge-test.com",
    "天才一秒记住本站地址，手机阅读更方便",
)


def with_ads(text: str, every: int = 3) -> str:
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % every == every - 1:
            out.append(ADS[i % len(ADS)])
    return "\n".join(out)


def traditional(text: str) -> str:
    return opencc.OpenCC("s2t").convert(text)


def _homophones() -> dict[int, list[str]]:
    table = syllable_table()
    groups: dict[int, list[str]] = {}
    for cp in range(0x4E00, 0x9FA6):
        groups.setdefault(int(table[cp]), []).append(chr(cp))
    return groups


def homophones(text: str, rate: float, seed: int = 0) -> str:
    rng = random.Random(seed)
    table, groups = syllable_table(), _homophones()
    out = []
    for ch in text:
        group = groups.get(int(table[ord(ch)])) if "\u4e00" <= ch <= "\u9fa5" else None
        out.append(rng.choice(group) if group and rng.random() < rate else ch)
    return "".join(out)


def typos(text: str, rate: float, seed: int = 0) -> str:
    """OCR-like noise: a ``rate`` share of characters inserted, deleted or replaced."""
    rng = random.Random(seed)
    out = []
    for ch in text:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(chr(rng.randint(0x4E00, 0x9FA5)))
            continue
        out.append(ch)
        if r < rate:
            out.append(chr(rng.randint(0x4E00, 0x9FA5)))
    return "".join(out)


def punctuation_noise(text: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    noise = (" ", "\u3000", "\u200b", "·", "~", "，")
    return "".join(ch + (rng.choice(noise) if rng.random() < 0.1 else "") for ch in text)


def pinyin_words(text: str, rate: float, seed: int = 0) -> str:
    """A ``rate`` share of the jieba words written in tone-less pinyin letters ("电zi书")."""
    rng = random.Random(seed)
    return "".join(
        "".join(lazy_pinyin(word)) if rng.random() < rate and word.isalpha() else word
        for word in rjieba.cut(text)
    )


def reorder_paragraphs(text: str, seed: int = 0) -> str:
    paragraphs = text.split("\n")
    random.Random(seed).shuffle(paragraphs)
    return "\n".join(paragraphs)


def shuffle_sentences(text: str, seed: int = 0) -> str:
    """Sentences shuffled inside each paragraph."""
    rng = random.Random(seed)
    out = []
    for paragraph in text.split("\n"):
        sentences = re.findall(r"[^。！？]+[。！？]?", paragraph)
        rng.shuffle(sentences)
        out.append("".join(sentences))
    return "\n".join(out)


def interleave(first: str, second: str) -> str:
    """Paragraphs of two chapters alternating."""
    a, b = first.split("\n"), second.split("\n")
    mixed = [p for pair in zip(a, b, strict=False) for p in pair]
    longer = a if len(a) > len(b) else b
    return "\n".join(mixed + longer[min(len(a), len(b)) :])
