"""Normalise text for fingerprinting while remembering where every character came from.

Steps: drop pirate boilerplate (ad and watermark lines, site URLs, bracketed ads inside
paragraphs); fold every character through :func:`tracker.text.tables.fold_table` (NFKC,
Traditional→Simplified, lower-case, punctuation/whitespace/zero-width removed); map characters
to tone-less pinyin syllables, reading runs of Latin letters as pinyin when they parse as such
("电zi书" → dian zi shu). Offsets into the original text are kept so that evidence passages can be
quoted exactly as they appear on the page.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from tracker.text import tables

# Phrases pirate sites inject into chapter text. Matched on the Simplified form of the text.
AD_PHRASES = (
    "最快更新",
    "更新最快",
    "最新章节",
    "请记住本站",
    "本站域名",
    "记住本站",
    "一秒记住",
    "笔趣阁",
    "手机阅读",
    "手机版阅读",
    "手机用户请",
    "本章未完",
    "点击下一页",
    "下一页继续",
    "加入书签",
    "投推荐票",
    "求月票",
    "求收藏",
    "无弹窗",
    "全文阅读",
    "免费阅读",
    "百度搜索",
    "书友群",
    "章节错误",
    "首发网址",
    "首发域名",
    "小说网",
    "阅读网",
    "txt下载",
    "本书来自",
    "本文来自",
    "请收藏本站",
    "天才壹秒",
    "天才一秒",
    "看最新",
    "追书神器",
    "正版订阅",
    "防盗章节",
)
MAX_AD_LINE_CHARS = 80
# Starts with a plain character class so the regex engine can skip CJK text quickly.
_URL = (
    r"[a-z0-9][a-z0-9.:/-]*"
    r"\.(?:com|net|org|cc|la|info|cn|me|co|tw|io|xyz|top|vip|tv|app)\b(?:/[^\s　]*)?"
)


@cache
def _ad_patterns() -> tuple[re.Pattern, re.Pattern]:
    phrases = "|".join(re.escape(p) for p in AD_PHRASES)
    bracket = re.compile(
        rf"[（(【\[《〔][^）)】\]》〕\n]{{0,40}}(?:{phrases}|{_URL})[^）)】\]》〕\n]{{0,40}}[）)】\]》〕]",
        re.IGNORECASE,
    )
    url = re.compile(_URL, re.IGNORECASE)
    return bracket, url


_BRACKET, _DOT = 1, 2
_LATIN = re.compile("[a-z]")  # in folded text: letters are lower-case
_PAIR_BITS = 16


def _pair_keys(cps: np.ndarray) -> np.ndarray:
    """A 16-bit hash of every two consecutive code points (multiplicative hashing)."""
    pair = (cps[:-1].astype(np.uint64) << np.uint64(21)) | cps[1:]
    return (pair * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - _PAIR_BITS)


@cache
def _scan_tables() -> tuple[np.ndarray, np.ndarray, dict[str, list[str]]]:
    """Flags of the characters the bracket and URL patterns start from, a bitmap of the hashed
    first two characters of every ad phrase (in any letter case), and the phrases by those two."""
    flags = np.zeros(tables.TABLE_SIZE, dtype=np.uint8)
    flags[[ord(c) for c in "（(【[《〔"]] |= _BRACKET
    flags[ord(".")] |= _DOT
    pairs = np.zeros(1 << _PAIR_BITS, dtype=bool)
    by_start: dict[str, list[str]] = {}
    for phrase in AD_PHRASES:
        variants = {phrase[:2], phrase[:2].upper(), phrase[:2].capitalize()}
        for head in variants:
            pairs[_pair_keys(codepoints(head))] = True
            by_start.setdefault(head, []).append(phrase.lower())
    return flags, pairs, by_start


def boilerplate_mask(text: str) -> np.ndarray:
    """Boolean mask over ``text``: True where a character belongs to injected boilerplate.

    Bracketed ads inside a paragraph are removed first, so that only lines which are ads
    themselves (an ad phrase with at most ``MAX_AD_LINE_CHARS`` characters on either side, not
    paragraphs carrying a bracketed ad) are dropped whole. Most texts carry none: vector tests
    on the code points (a bracket, a dot, the first two characters of a phrase) decide which
    regular expressions need to run at all.

    The mask is line by line: no pattern crosses a line break (the character classes leave
    it out, and an ad line is bounded by line breaks), and a line break is never masked. So
    the mask of some of a text's lines, joined by line breaks, is their masks joined
    (:func:`tracker.reading.extract.strip_boilerplate_lines` keeps it for the lines it keeps).
    """
    mask = np.zeros(len(text), dtype=bool)
    if len(text) < 2:
        return mask
    bracket, url = _ad_patterns()
    flags, pairs, by_start = _scan_tables()
    cps = tables.t2s_codepoints()[np.minimum(codepoints(text), tables.TABLE_SIZE - 1)]
    scan = cps.tobytes().decode("utf-32-le", "surrogatepass")
    present = np.bitwise_or.reduce(flags[cps])
    for pattern, flag in ((bracket, _BRACKET), (url, _DOT)):
        if present & flag:
            for m in pattern.finditer(scan):
                mask[m.start() : m.end()] = True
    for start in np.flatnonzero(pairs[_pair_keys(cps)]).tolist():
        if mask[start]:
            continue  # inside a bracketed ad already removed
        found = [
            p
            for p in by_start.get(scan[start : start + 2], ())
            if scan[start : start + len(p)].lower() == p
        ]
        if not found:
            continue
        end = start + min(map(len, found))
        line_start = scan.rfind("\n", 0, start) + 1
        line_end = scan.find("\n", end)
        line_end = len(scan) if line_end < 0 else line_end
        if start - line_start <= MAX_AD_LINE_CHARS and line_end - end <= MAX_AD_LINE_CHARS:
            mask[line_start:line_end] = True
    return mask


@dataclass(frozen=True)
class NormalizedText:
    """A text folded for matching.

    ``chars`` is the folded text (Simplified, lower-case, letters and digits only) and
    ``char_pos[i]`` the index in ``source`` of ``chars[i]``. ``tokens`` are pinyin syllable ids
    (see :mod:`tracker.text.tables`); ``token_start``/``token_end`` give each token's slice of
    ``source``.
    """

    source: str
    chars: str
    char_pos: np.ndarray
    tokens: np.ndarray
    token_start: np.ndarray
    token_end: np.ndarray

    def __len__(self) -> int:
        return len(self.tokens)

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """Source offsets covering tokens ``[start, end)``."""
        return int(self.token_start[start]), int(self.token_end[end - 1])

    def line_slices(self) -> list[tuple[int, int]]:
        """``(start, end)`` in ``chars`` of the folded characters of each line of ``source``
        that keeps any."""
        newlines = np.flatnonzero(codepoints(self.source) == 10)
        bounds = [0, *np.searchsorted(self.char_pos, newlines).tolist(), len(self.chars)]
        return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]

    def lines(self) -> list[str]:
        """The folded characters of each line of ``source`` that keeps any."""
        return [self.chars[a:b] for a, b in self.line_slices()]

    def without(self, drop: np.ndarray) -> NormalizedText | None:
        """This text with the characters ``drop`` masks (over ``source``) left out: what
        ``normalize(source, drop=drop)`` gives, without folding the text again; None when
        that needs the text folded again: runs of Latin letters are read as pinyin, and
        dropping characters may shorten or join them (a stray letter is harmless as long as
        its run stays as it was and no run was read as pinyin). ``self`` itself when ``drop``
        masks none of its characters."""
        keep = ~drop[self.char_pos]
        if keep.all():
            return self
        kept = codepoints(self.chars)
        if _LATIN.search(self.chars):
            letters = (kept >= 0x61) & (kept <= 0x7A)
            left = np.flatnonzero(keep)
            gaps = np.flatnonzero(np.diff(left) > 1)
            if (
                len(self.tokens) != len(self.chars)
                or (letters & ~keep).any()
                or (letters[left[gaps]] & letters[left[gaps + 1]]).any()
            ):
                return None
        char_pos = self.char_pos[keep]
        kept = kept[keep]
        return NormalizedText(
            self.source,
            kept.tobytes().decode("utf-32-le"),
            char_pos,
            self.tokens[keep],
            char_pos,
            char_pos + 1,
        )


def codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def normalize(
    text: str,
    strip_boilerplate: bool = True,
    drop: np.ndarray | None = None,
    boilerplate: np.ndarray | None = None,
) -> NormalizedText:
    """Fold ``text`` for matching; ``drop`` masks further characters (e.g. a site's own
    boilerplate lines, :mod:`tracker.text.site_boilerplate`) without changing any offset.
    ``boilerplate`` is ``boilerplate_mask(text)`` when the caller has it already (extraction
    computes it to drop ad lines): the text is not scanned again."""
    cps = codepoints(text)
    fold = tables.fold_table()
    folded = fold[np.minimum(cps, tables.TABLE_SIZE - 1)]
    folded[cps >= tables.TABLE_SIZE] = 0
    if strip_boilerplate:
        folded[boilerplate_mask(text) if boilerplate is None else boilerplate] = 0
    if drop is not None:
        folded[drop[: len(folded)]] = 0
    char_pos = np.flatnonzero(folded).astype(np.int32)
    kept = folded[char_pos]
    chars = kept.astype("<u4").tobytes().decode("utf-32-le")
    tokens = tables.syllable_table()[kept]
    token_start = char_pos
    token_end = char_pos + 1
    letters = (kept >= 0x61) & (kept <= 0x7A)
    if letters.any():
        tokens, token_start, token_end = _parse_pinyin_runs(
            chars, letters, tokens, token_start, token_end
        )
    return NormalizedText(text, chars, char_pos, tokens, token_start, token_end)


def _parse_pinyin_runs(
    chars: str, letters: np.ndarray, tokens: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replace runs of Latin letters that spell pinyin ("zi", "dianzi") by their syllable ids.

    A parsed run's syllables take the place of its letters: each syllable is one token at the
    position of its first letter, spanning the source of all its letters. Only the lookup of
    each run's syllables goes run by run (cached per distinct run)."""
    edges = np.flatnonzero(np.diff(np.r_[0, letters.view(np.int8), 0]))
    run_starts, run_ends = edges[0::2].tolist(), edges[1::2].tolist()
    parsed = [
        (start, end, found)
        for start, end in zip(run_starts, run_ends, strict=True)
        if (found := _pinyin_run(chars[start:end])) is not None
    ]
    if not parsed:
        return tokens, starts, ends
    ids = np.concatenate([found[0] for _, _, found in parsed])
    lengths = np.concatenate([found[1] for _, _, found in parsed])
    per_run = np.fromiter((len(found[0]) for _, _, found in parsed), np.int64, len(parsed))
    before = np.cumsum(lengths) - lengths  # letters before each syllable, over all runs
    run_base = np.repeat(before[np.cumsum(per_run) - per_run], per_run)
    first = np.repeat([start for start, _, _ in parsed], per_run) + before - run_base
    # Letters of parsed runs are dropped, but for each syllable's first letter.
    keep = np.ones(len(tokens), dtype=bool)
    for start, end, _ in parsed:
        keep[start:end] = False
    keep[first] = True
    last = np.arange(len(tokens))
    last[first] = first + lengths - 1
    tokens = tokens.copy()
    tokens[first] = ids
    kept = np.flatnonzero(keep)
    return tokens[kept], starts[kept], ends[last[kept]]


@lru_cache(maxsize=65536)
def _pinyin_run(run: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Syllable ids and lengths of a letter run that spells pinyin, else None."""
    syllables = segment_pinyin(run)
    if syllables is None:
        return None
    ids = tables.syllable_ids()
    return (
        np.array([ids[s] for s in syllables], dtype=np.int64),
        np.array([len(s) for s in syllables], dtype=np.int64),
    )


@lru_cache(maxsize=65536)
def segment_pinyin(run: str) -> tuple[str, ...] | None:
    """Split a letter run into pinyin syllables (fewest wins); None if it is not pinyin."""
    ids = tables.syllable_ids()
    n = len(run)
    if n > 60:
        return None
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for end in range(1, n + 1):
        for size in range(1, min(6, end) + 1):
            prefix = best[end - size]
            piece = run[end - size : end]
            if (
                prefix is not None
                and piece in ids
                and (best[end] is None or len(prefix) + 1 < len(best[end]))
            ):
                best[end] = [*prefix, piece]
    found = best[n]
    return None if found is None else tuple(found)
