"""What the rewrite stage skips, and that skipping it changes nothing: a master's sentences
rebuilt from the jieba cuts stored at ingest (cut again when they are missing or do not fit),
and the masters found verbatim aligned only when another candidate could be a rewrite."""

from __future__ import annotations

import numpy as np
import pytest

from tests import rewrites as r
from tests.test_rewrites import BY_HAND
from tests.texts import OTHER_ARTICLE
from tracker.fingerprints import simhash
from tracker.fingerprints.document import VERSION, fingerprint
from tracker.fingerprints.sentences import pack_cuts, sentences_of, unpack_cuts
from tracker.matching import rewrites
from tracker.matching.detector import CachedMaster
from tracker.matching.library import MasterLibrary
from tracker.matching.rewrite import could_be_rewrite
from tracker.model import MasterDocument
from tracker.text.normalize import normalize

TEXTS = [r.news(700), r.chapter(701), BY_HAND[0][0], "第1章\n\n" + r.chapter(702, 12)]


@pytest.mark.parametrize("text", TEXTS)
def test_the_stored_cuts_are_the_jieba_words(text):
    normalized, fp = fingerprint(text)
    words = simhash.cut_lines(normalized.lines())
    assert fp.cuts == pack_cuts(words, len(normalized.chars))
    assert unpack_cuts(fp.cuts, normalized.chars) == words
    assert len(fp.cuts) == (len(normalized.chars) + 7) // 8  # an eighth of a byte a character


def _master(text: str, **meta) -> CachedMaster:
    return CachedMaster({"_id": "m", "version": VERSION, **meta}, normalize(text))


@pytest.mark.parametrize(
    "spoil",
    [
        lambda cuts, n: None,  # stored before cuts were
        lambda cuts, n: cuts[:-1],  # another length
        lambda cuts, n: bytes([cuts[0] & 0x7F]) + cuts[1:],  # no word at the first character
        lambda cuts, n: cuts[:-1] + bytes([cuts[-1] | 1]),  # a word past the last character
    ],
    ids=["missing", "length", "first", "past the end"],
)
def test_missing_or_wrong_cuts_are_cut_again(spoil):
    text = r.news(703)
    normalized, fp = fingerprint(text)
    assert len(normalized.chars) % 8  # the last byte has bits past the end
    expected = sentences_of(normalized)
    master = _master(text, cuts=spoil(fp.cuts, len(normalized.chars)))
    assert rewrites.stored_words(master) is None
    assert rewrites.master_sentences(master).units == expected.units


def test_cuts_of_another_fingerprint_version_are_not_used():
    text = r.news(704)
    normalized = normalize(text)
    shifted = _master(text, cuts=pack_cuts(["x"] * len(normalized.chars), len(normalized.chars)))
    assert rewrites.stored_words(shifted) is not None  # a cut of the right shape...
    shifted.meta["version"] = VERSION - 1  # ...stored by other code: not trusted
    assert rewrites.stored_words(shifted) is None
    assert rewrites.master_sentences(shifted).units == sentences_of(normalized).units


@pytest.fixture()
def library(runtime):
    lib = MasterLibrary.from_runtime(runtime)
    lib.ingest(
        [
            MasterDocument("news/503", "news", "n503", r.news(503)),
            MasterDocument("hand/1", "hand", "h1", BY_HAND[1][0]),
            MasterDocument("hand/2", "hand", "h2", BY_HAND[2][0]),
        ]
    )
    return lib


def test_a_stored_master_is_not_cut_again_and_gives_the_same_sentences(library, monkeypatch):
    detector = library.detector()
    ns = {d: p.n for d, p in detector.store.existing(["news/503", "hand/1"]).items()}
    loaded = detector.masters.load(list(ns.values()))
    expected = {n: sentences_of(m.text) for n, m in loaded.items()}
    assert all(m.meta.get("cuts") for m in loaded.values())
    assert "sentences" not in loaded[ns["hand/1"]].meta  # the index's keys are not loaded

    def refuse(lines):
        raise AssertionError("a stored master was cut again")

    monkeypatch.setattr(simhash, "cut_lines", refuse)
    for n, master in loaded.items():
        assert rewrites.master_sentences(master).units == expected[n].units


class _Counted:
    """A master cache that records which masters it is asked for."""

    def __init__(self, masters):
        self.masters, self.asked = masters, []

    def get(self, docs, **how):
        self.asked.extend(docs)
        return self.masters.get(docs, **how)


def _rewrites_of(library, monkeypatch, page_text: str, other: str, eager: bool):
    """:func:`rewrites.rewrites_of` of a page copying news/503 verbatim, with ``other`` the
    candidate beside it; the masters aligned and asked for. ``eager``: every candidate
    aligned, as before the verbatim masters were aligned lazily."""
    detector = library.detector()
    ns = {d: p.n for d, p in detector.store.existing(["news/503", other]).items()}
    verbatim, candidate = ns["news/503"], ns[other]
    page = normalize(page_text)
    units = sentences_of(page)
    every = np.arange(len(units))
    aligned = []
    align = rewrites.align_sentences

    def counted(page_units, master, among=None):
        aligned.append(next(n for n, m in loaded.items() if m.derived.get("sentences") is master))
        return align(page_units, master, among)

    monkeypatch.setattr(rewrites, "align_sentences", counted)
    if eager:
        monkeypatch.setattr(rewrites, "could_be_rewrite", lambda alignment: True)
    cache = _Counted(detector.masters)
    loaded = detector.masters.get([verbatim, candidate])  # to name what is aligned
    found = rewrites.rewrites_of(
        page,
        units,
        [verbatim, candidate],
        {verbatim},
        {verbatim: every, candidate: every},
        every,
        {candidate: loaded[candidate]},
        cache,
    )
    monkeypatch.undo()
    return [m.to_dict() for m in found], aligned, cache.asked, verbatim, candidate


def test_the_verbatim_master_is_not_aligned_when_no_other_could_be_a_rewrite(library, monkeypatch):
    page = r.news(503) + "\n" + OTHER_ARTICLE
    other = sentences_of(normalize(BY_HAND[2][0]))
    assert not could_be_rewrite(rewrites.align_sentences(sentences_of(normalize(page)), other))
    found, aligned, asked, verbatim, candidate = _rewrites_of(
        library, monkeypatch, page, "hand/2", eager=False
    )
    assert aligned == [candidate] and verbatim not in asked
    eager = _rewrites_of(library, monkeypatch, page, "hand/2", eager=True)
    assert eager[1] == [candidate, verbatim]  # as before: aligned, for nothing
    assert found == eager[0] == []


def test_the_verbatim_master_is_aligned_when_another_could_be_a_rewrite(library, monkeypatch):
    page = r.news(503) + "\n" + BY_HAND[1][1]
    found, aligned, asked, verbatim, candidate = _rewrites_of(
        library, monkeypatch, page, "hand/1", eager=False
    )
    assert sorted(aligned) == sorted([candidate, verbatim]) and verbatim in asked
    eager = _rewrites_of(library, monkeypatch, page, "hand/1", eager=True)
    assert found == eager[0] and [m["doc_id"] for m in found] == ["hand/1"]
