"""A text's sentence units (:func:`tracker.fingerprints.sentences.sentences_of`): hand-checked
examples, and every unit's fields and the flat arrays the alignment reads checked against
what they must be, computed here word by word from the lexicon's :meth:`Lexicon.canon`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests import rewrites as r
from tests.test_rewrites import BY_HAND
from tracker.fingerprints.lexicon import lexicon
from tracker.fingerprints.sentences import (
    CLAUSE_MARKS,
    LONG_UNIT_CHARS,
    MIN_CLAUSE_CHARS,
    SENTENCE_ENDS,
    Sentences,
    sentences_many,
    sentences_of,
)
from tracker.fingerprints.simhash import cut_lines
from tracker.text.normalize import normalize

NUMBERS = "2024年10月5日，三百二十名工人在臺北市見到了李明華。大家回到工廠！"
# one sentence of 3 clauses of 27, 27 and 22 characters: cut at both commas
CLAUSES = (
    "临江市政府昨天召开新闻发布会宣布全面启动老城区改造工程，"
    "首批改造涉及居民住宅一千二百户以及沿街商铺三百多家门面，"
    "预计明年年底之前全部完工并且交付居民正式使用。"
)
TEXTS = [
    "",
    "。。！",
    NUMBERS,
    CLAUSES,
    CLAUSES.replace("并且交付居民正式", "交付"),
    "第1章\n\n" + r.chapter(810, 14),
    r.news(811),
    BY_HAND[0][0],
    BY_HAND[0][1],
    "Breaking: 320 workers left, 12.5万 yuan paid; 1999年 三百 二十名 二〇二四年。",
]


def test_numbers_dates_names_and_traditional_characters_by_hand():
    text = normalize(NUMBERS)
    units = sentences_of(text).units
    assert [(u.start, u.end) for u in units] == [(0, 27), (27, 33)]
    assert text.chars[27:33] == "大家回到工厂"  # 工廠 folded to Simplified
    # 年/月/日 and 在/了 carry nothing; 三百二十 is one number; 台北市 and 李明华 are names
    assert units[0].words == ("2024", "10", "5", "三百二十名", "工人", "台北市", "见到", "李明华")
    lex = lexicon()
    anchors = {lex.canon(w).code for w in ("2024", "三百二十名", "台北市", "李明华")}
    assert units[0].anchors == anchors  # 10 and 5 are a month and a day: no evidence
    assert lex.canon("三百二十名").code == lex.canon("320").code
    assert units[1].words == ("大家", "回到", "工厂") and not units[1].anchors


def test_a_long_sentence_is_cut_at_its_clauses():
    text = normalize(CLAUSES)
    assert len(text.chars) > LONG_UNIT_CHARS
    units = sentences_of(text).units
    assert [(u.start, u.end) for u in units] == [(0, 27), (27, 54), (54, 76)]
    # a cut leaves MIN_CLAUSE_CHARS on both sides (16 after the second comma here)...
    shorter = normalize(CLAUSES.replace("并且交付居民正式", "交付"))
    assert [(u.start, u.end) for u in sentences_of(shorter).units] == [(0, 27), (27, 70)]
    # ...and a sentence below LONG_UNIT_CHARS is not cut
    short = normalize(CLAUSES[:40] + "。")
    assert [(u.start, u.end) for u in sentences_of(short).units] == [(0, len(short.chars))]


@pytest.mark.parametrize("text", ["", "。。！", "，，", "   \n\n"])
def test_a_text_without_words_has_no_units(text):
    sentences = sentences_of(normalize(text))
    assert len(sentences) == 0 and sentences.units == [] and not len(sentences.flat.codes)
    assert sentences.flat.ptr.tolist() == [0]
    empty = Sentences.empty(7)
    assert (len(empty), empty.chars, empty.units, empty.flat.ptr.tolist()) == (0, 7, [], [0])


def _spans(text) -> list[tuple[int, int]]:
    """Where a unit may start and end: at the folded characters after a sentence end, with the
    clause marks a long sentence may be cut at (a plain scan of the source)."""
    ends, clauses = set(), set()
    for k, ch in enumerate(text.source):
        if ch in SENTENCE_ENDS or ch in CLAUSE_MARKS:
            at = int(np.searchsorted(text.char_pos, k))
            (ends if ch in SENTENCE_ENDS else clauses).add(at)
    return sorted(ends | {len(text.chars)}), sorted(clauses)


@pytest.mark.parametrize("source", TEXTS)
def test_every_field_is_what_the_words_make_it(source):
    text = normalize(source)
    sentences = sentences_of(text)
    units, flat, lex = sentences.units, sentences.flat, lexicon()
    ends, clauses = _spans(text)
    assert len(sentences) == len(units) and sentences.chars == len(text.chars)
    last = 0
    for u in units:
        assert last <= u.start < u.end <= len(text.chars)
        assert u.end in ends or (u.end in clauses and u.end - u.start >= MIN_CLAUSE_CHARS)
        last = u.end
        # the content words in text order, inside the unit, each with its lexicon code
        at = u.start
        for word, code in zip(u.words, u.word_codes, strict=True):
            folded = word.replace(".", "")  # a decimal point put back (12.5万), not folded
            found = text.chars.find(folded, at)
            assert u.start <= found < u.end  # a word belongs to the unit it starts in
            at = found + len(folded)
            assert lex.canon(word).code == code
        canon = {lex.canon(w).code: lex.canon(w) for w in u.words}
        # distinct codes, rarest first (then by code), their weights, anchors and norm
        assert list(u.codes) == sorted(canon, key=lambda c: (-canon[c].weight, c))
        assert list(u.weights) == [canon[c].weight for c in u.codes]
        assert u.anchors == {c for c, x in canon.items() if x.anchor}
        assert u.norm == pytest.approx(math.sqrt(sum(w * w for w in u.weights)), rel=1e-12)
    # the flat arrays hold the same, unit by unit
    sizes = [len(u.codes) for u in units]
    assert flat.sizes.tolist() == sizes
    assert flat.ptr.tolist() == np.concatenate(([0], np.cumsum(sizes))).tolist()
    assert flat.unit.tolist() == [k for k, n in enumerate(sizes) for _ in range(n)]
    assert flat.codes.tolist() == [c for u in units for c in u.codes]
    assert flat.weights.tolist() == [w for u in units for w in u.weights]
    assert flat.anchor.tolist() == [c in u.anchors for u in units for c in u.codes]
    assert flat.norms.tolist() == [u.norm for u in units]
    assert flat.anchors.tolist() == [len(u.anchors) for u in units]
    assert sentences.starts.tolist() == [u.start for u in units]
    assert sentences.lengths.tolist() == [u.chars for u in units]
    # the same from the words cut beforehand (a master's stored cuts, a page's words)
    again = sentences_of(text, cut_lines(text.lines()))
    assert again.units == units and again.flat.codes.tolist() == flat.codes.tolist()


def _arrays(s: Sentences) -> list:
    """Everything a text's units hold, to compare two makings of them."""
    flat = [getattr(s.flat, f) for f in ("ptr", "unit", "codes", "weights", "anchor")]
    flat += [getattr(s.flat, f) for f in ("norms", "sizes", "anchors")]
    return [s.chars, s.words, s.starts, s.ends, s.content, s.content_codes, s.content_ptr, *flat]


@pytest.mark.parametrize("first", [[], ["", "。。！", "abc xyz。"]])
def test_a_batch_makes_each_text_s_units_as_alone(first):
    """:func:`sentences_many` of a batch (texts without units or content words among them,
    the same text twice) gives each text the units it has alone: the offsets of the texts
    before it are taken off; a batch of texts all without units gives each an empty one."""
    texts = [normalize(t) for t in [*first, *TEXTS, "abc xyz。", TEXTS[3], *first]]
    batch = sentences_many(texts, [None] * len(texts))
    assert len(batch) == len(texts)
    for text, made in zip(texts, batch, strict=True):
        alone = sentences_many([text], [None])[0]
        for a, b in zip(_arrays(made), _arrays(alone), strict=True):
            assert np.array_equal(np.asarray(a), np.asarray(b)), text.chars[:20]
    nothing = sentences_many([normalize(t) for t in ("", "。。！")], [None, None])
    assert [len(s) for s in nothing] == [0, 0] and sentences_many([], []) == []
