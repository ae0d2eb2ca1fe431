"""Per-code-point lookup tables that make normalisation vectorisable (built once per machine,
then loaded from the user's cache: :mod:`tracker.disk_cache`).

``FOLD[cp]`` is the code point that ``cp`` becomes after Unicode NFKC, Traditional→Simplified
(OpenCC, character level), and lower-casing; 0 when the character carries no content
(punctuation, symbols, whitespace, zero-width and other format characters).
``SYLLABLE[cp]`` is the tone-less pinyin syllable id of a folded character (1…N), or an id
≥ ``OTHER_BASE`` for letters and digits that have no pinyin. Homophones and Traditional
variants share a syllable id, so fingerprints built on syllables absorb 同音字 swaps.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from importlib import metadata

import numpy as np

from tracker.disk_cache import cached_arrays

TABLE_SIZE = 0x32000  # covers the BMP and CJK extensions B-G
TABLES_VERSION = 1  # raise when the way the tables are built changes
OTHER_BASE = 1024
_KEEP_CATEGORIES = ("L", "N")


_HANZI_RANGES = ((0x2E80, 0xA000), (0xF900, 0xFB00), (0x20000, TABLE_SIZE))


@cache
def _t2s_pairs() -> dict[int, int]:
    """Character-level Traditional→Simplified pairs from OpenCC (one char in, one char out)."""
    import opencc

    hanzi = [cp for lo, hi in _HANZI_RANGES for cp in range(lo, hi)]
    # OpenCC converts phrase by phrase; one character per line makes the conversion char-level.
    converted = opencc.OpenCC("t2s").convert("\n".join(map(chr, hanzi))).split("\n")
    if len(converted) != len(hanzi):  # never expected; fall back to no conversion
        return {}
    return {
        cp: ord(out)
        for cp, out in zip(hanzi, converted, strict=True)
        if len(out) == 1 and ord(out) != cp
    }


@cache
def _tables() -> dict[str, np.ndarray]:
    """All tables, built once per machine (1.5 s) and then loaded from the user's cache."""
    # Package versions from their metadata: importing pypinyin and opencc takes 0.3 s.
    key = ":".join(
        [
            str(TABLES_VERSION),
            unicodedata.unidata_version,
            metadata.version("opencc"),
            metadata.version("pypinyin"),
            hex(TABLE_SIZE),
            str(OTHER_BASE),
        ]
    )

    def build() -> dict[str, np.ndarray]:
        fold = _build_fold_table()
        syllables, names = _build_syllables(fold)
        return {
            "fold": fold,
            "t2s": _build_t2s_codepoints(),
            "syllables": syllables,
            "names": np.array(names, dtype=str),
        }

    return cached_arrays("text-tables", key, build)


def fold_table() -> np.ndarray:
    return _tables()["fold"]


def t2s_codepoints() -> np.ndarray:
    """Code point → its Simplified code point (itself when unchanged); length-preserving."""
    return _tables()["t2s"]


def syllable_table() -> np.ndarray:
    return _tables()["syllables"]


@cache
def syllable_names() -> tuple[str, ...]:
    """Syllable names in id order: ``syllable_names()[i - 1]`` is the name of id ``i``."""
    return tuple(_tables()["names"].tolist())


def _build_fold_table() -> np.ndarray:
    t2s = _t2s_pairs()
    table = np.zeros(TABLE_SIZE, dtype=np.uint32)
    for cp in range(TABLE_SIZE):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        folded = unicodedata.normalize("NFKC", chr(t2s.get(cp, cp))).lower()
        for out in folded:
            out = chr(t2s.get(ord(out), ord(out)))
            if unicodedata.category(out)[0] in _KEEP_CATEGORIES and ord(out) < TABLE_SIZE:
                table[cp] = ord(out)
                break
    return table


def _build_t2s_codepoints() -> np.ndarray:
    table = np.arange(TABLE_SIZE, dtype=np.uint32)
    table[0xD800:0xE000] = ord(" ")  # lone surrogates never reach a str decoder
    for traditional, simplified in _t2s_pairs().items():
        table[traditional] = simplified
    return table


def _build_syllables(fold: np.ndarray) -> tuple[np.ndarray, list[str]]:
    from pypinyin.pinyin_dict import pinyin_dict

    names: dict[str, int] = {}
    table = np.zeros(TABLE_SIZE, dtype=np.uint16)
    for cp, readings in pinyin_dict.items():
        if cp >= TABLE_SIZE:
            continue
        syllable = strip_tone(readings.split(",", 1)[0])
        if not syllable.isascii() or not syllable.isalpha():
            continue
        table[cp] = names.setdefault(syllable, len(names) + 1)
    # Code points that keep content but have no pinyin: letters, digits, other scripts.
    kept = np.nonzero((fold == np.arange(TABLE_SIZE)) & (table == 0))[0]
    table[kept] = OTHER_BASE + (kept % (65535 - OTHER_BASE)).astype(np.uint16)
    table[0] = 0
    return table, sorted(names, key=names.__getitem__)


@cache
def syllable_ids() -> dict[str, int]:
    return {name: i + 1 for i, name in enumerate(syllable_names())}


@cache
def first_letter_table() -> np.ndarray:
    """Syllable id → index of its first letter (0 = 'a' … 25 = 'z'); 255 for non-syllables."""
    table = np.full(65536, 255, dtype=np.uint8)
    for i, name in enumerate(syllable_names(), start=1):
        table[i] = ord(name[0]) - ord("a")
    return table


def strip_tone(syllable: str) -> str:
    decomposed = unicodedata.normalize("NFD", syllable)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return plain.replace("ü", "v").lower()
