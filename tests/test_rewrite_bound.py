"""The bound on what a candidate master's alignment could find (:mod:`tracker.matching.
rewrite_bound`), read from the sketch of its units stored at ingest (:mod:`tracker.
fingerprints.unit_sketch`): never below the pairs the alignment keeps, below a rewrite's
minimum for most masters a page only shares words with; and a check that skips the masters it
rules out answers as one that aligns them all."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests import rewrite_bound_reference as reference
from tests import rewrites as r
from tests import rewrites_hand
from tests.test_rewrites import BY_HAND
from tests.texts import ARTICLE, OTHER_ARTICLE
from tracker.fingerprints.document import fingerprint
from tracker.fingerprints.lexicon import lexicon
from tracker.fingerprints.sentences import Flat, Sentences, sentences_of
from tracker.fingerprints.unit_sketch import FORMAT, UnitSketch, pack_units, unpack_units
from tracker.matching import rewrite, rewrites
from tracker.matching.detector import MasterCache
from tracker.matching.library import MasterLibrary
from tracker.matching.rewrite import EXTEND_COSINE, MIN_PAIRS, align_sentences
from tracker.matching.rewrite_bound import PageSide, most_pairs, most_pairs_of
from tracker.model import MasterDocument
from tracker.text.normalize import normalize

NEWS = range(700, 706)
CHAPTERS = range(710, 713)


def _masters() -> list[str]:
    return (
        [r.news(s) for s in NEWS]
        + [r.chapter(s) for s in CHAPTERS]
        + [master for master, _ in BY_HAND]
    )


def _pages() -> list[str]:
    """Rewrites of the masters at every strength, by both tools, some inside other text;
    independent reports of the same events, commentary quoting them, other chapters."""
    pages = [copy for _, copy in BY_HAND]
    for k, text in enumerate(_masters()[: len(NEWS) + len(CHAPTERS)]):
        tool = r.DEV if k % 2 else r.HELD
        for strength in r.STRENGTHS:
            pages.append(r.rewrite(text, 8000 + k, tool, strength))
        rng = random.Random(k)
        inner = r.part(r.rewrite(text, 8100 + k, tool, "no8"), 0.4, rng)
        pages.append(r.embed(inner, r.chapter(9100 + k, 30), rng))
    for k, s in enumerate(NEWS):
        pages += [r.same_event(s, k), r.commentary(k, r.news(s))]
    pages += [r.chapter(9600 + k) for k in range(4)] + [ARTICLE, OTHER_ARTICLE]
    return pages


def _sketch(units):
    stamp = lexicon().stamp
    return unpack_units(pack_units(units.flat, stamp), stamp)


def test_the_sketch_keeps_each_units_size_norm_and_code_bits():
    units = sentences_of(normalize(r.news(700)))
    sketch = _sketch(units)
    assert sketch is not None and len(sketch) == len(units)
    assert (sketch.sizes == units.flat.sizes).all()
    assert (sketch.norms <= units.flat.norms).all()  # rounded down: a cosine bound stays one
    assert (units.flat.norms - sketch.norms < 1 / 256).all()
    assert (sketch.bits == (units.flat.codes & np.uint64(0xFFF))).all()  # 12 bits a code
    # each code's bits are found among its own unit's
    for u in range(len(units)):
        start, end = units.flat.ptr[u], units.flat.ptr[u + 1]
        held = set(sketch.sorted_bits[sketch.sorted_units == u].tolist())
        assert set(sketch.bits[start:end].tolist()) == held


@pytest.mark.parametrize(
    "spoil",
    [
        lambda packed: bytes([FORMAT + 1]) + packed[1:],  # another format
        lambda packed: packed[:1] + bytes([packed[1] ^ 1]) + packed[2:],  # another lexicon
        lambda packed: packed[:-2],  # a code short
        lambda packed: packed[:-1],  # half a code
        lambda packed: packed[:7],  # no more than a header
        lambda packed: b"",  # stored without one
    ],
    ids=["format", "lexicon", "short", "odd", "header", "missing"],
)
def test_a_sketch_made_otherwise_is_refused(spoil):
    stamp = lexicon().stamp
    packed = pack_units(sentences_of(normalize(r.news(701))).flat, stamp)
    assert unpack_units(packed, stamp) is not None
    assert unpack_units(spoil(packed), stamp) is None


def test_a_text_without_units_or_with_a_unit_too_long_has_no_sketch():
    assert pack_units(sentences_of(normalize("")).flat, lexicon().stamp) == b""
    # every sentence and clause mark taken out: one unit of more than 255 codes
    run_on = "".join(ch for ch in r.chapter(713, 200) if ch not in "。！？；，、：…\n")
    units = sentences_of(normalize(run_on))
    assert len(units) == 1 and units.flat.sizes[0] > 255
    assert pack_units(units.flat, lexicon().stamp) == b""


def test_fingerprints_carry_the_sketch_of_the_units():
    normalized, fp = fingerprint(r.chapter(712))
    expected = pack_units(sentences_of(normalized).flat, lexicon().stamp)
    assert fp.unit_sketch == expected and bytes(fp.to_mongo()["unit_sketch"]) == expected


def test_the_bound_is_never_below_the_pairs_aligned():
    """Every page with every master, all of the page and a window of it: the alignment never
    keeps more pairs than the bound allows. The rewrites align enough pairs to be one, so the
    bound is tested where it matters; most pairs of unrelated texts are ruled out."""
    masters = [sentences_of(normalize(t)) for t in _masters()]
    sketches = [_sketch(m) for m in masters]
    rng = np.random.default_rng(40)
    aligned, bounded, unrelated, ruled_out = 0, 0, 0, 0
    for text in _pages():
        page = sentences_of(normalize(text))
        side = PageSide.of(page)
        every = np.arange(len(page))
        window = np.sort(rng.choice(every, size=max(1, len(every) // 2), replace=False))
        for master, sketch in zip(masters, sketches, strict=True):
            for among in (every, window):
                pairs = len(align_sentences(page, master, among).pairs)
                most = most_pairs(side, among, sketch)
                assert most >= pairs, (text[:40], pairs, most)
                aligned += pairs >= MIN_PAIRS
                bounded += most >= MIN_PAIRS
                if not pairs:
                    unrelated += 1
                    ruled_out += most < MIN_PAIRS
    assert aligned >= 60  # the rewrites
    assert ruled_out > 0.8 * unrelated, (ruled_out, unrelated)


def test_the_bound_counts_the_pairs_between_two_pairs(monkeypatch):
    """30 % of chapter 07 of the hand set rewritten by hand: one of its pairs lies between two
    others at the gap thresholds, under the extension ones (the bound made without it was a
    pair short: 8 for 9 aligned)."""
    item = rewrites_hand.chapters()["07"]
    page = sentences_of(normalize(rewrites_hand.window(item["rewrite"], 0.3, random.Random(1))))
    master = sentences_of(normalize(item["master"]))
    every = np.arange(len(page))
    pairs = len(align_sentences(page, master, every).pairs)
    assert most_pairs(PageSide.of(page), every, _sketch(master)) >= pairs == 9
    monkeypatch.setattr(rewrite, "GAP_COSINE", EXTEND_COSINE)  # none between two pairs
    assert len(align_sentences(page, master, every).pairs) < pairs


def _text(units: list[list[int]], weight: dict[int, float]) -> Sentences:
    """A text of these units of codes (each unit's distinct codes, ``weight`` their IDF)."""
    codes = [sorted(set(u), key=lambda c: (-weight[c], c)) for u in units]
    sizes = np.array([len(u) for u in codes], dtype=np.int64)
    flat_codes = np.array([c for u in codes for c in u], dtype=np.uint64)
    weights = np.array([weight[c] for u in codes for c in u])
    unit = np.repeat(np.arange(len(units)), sizes)
    norms = np.sqrt(np.bincount(unit, weights**2, minlength=len(units)))
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    flat = Flat(ptr, unit, flat_codes, weights, unit < 0, norms, sizes, sizes * 0)
    starts = np.arange(len(units), dtype=np.int64) * 30
    none = np.zeros(0, dtype=np.int64)
    return Sentences(30 * len(units), flat, starts, starts + 30, [], none, flat_codes, none)


def _random_candidates(rng: np.random.Generator, pages: int) -> list:
    """Random pages, each with masters made from it (units' codes dropped, added, swapped;
    units split, merged, dropped, added), masters of other pages and unrelated ones; over a
    vocabulary of 3,000 codes whose 12 bits often collide (the sketch's chance matches)."""
    vocabulary = rng.integers(1, 2**62, size=3000, dtype=np.int64).astype(np.uint64)
    weight = {int(c): float(w) for c, w in zip(vocabulary, rng.uniform(0.5, 9, 3000), strict=True)}
    stamp = 7

    def words(k):
        return [int(c) for c in rng.choice(vocabulary, size=k)]

    def rewritten(units):
        out = []
        for u in units:
            u = [c for c in u if rng.random() > 0.2] + words(int(rng.integers(0, 3)))
            roll = rng.random()
            if roll < 0.1 and len(u) > 3:  # split
                out += [u[: len(u) // 2], u[len(u) // 2 :]]
            elif roll < 0.2 and out:  # merged with the one before
                out[-1] = out[-1] + u
            elif roll < 0.27:  # dropped
                continue
            elif roll < 0.34:  # one of the rewriter's own added
                out += [u, words(int(rng.integers(2, 12)))]
            else:
                out.append(u)
        return [u for u in out if u] or [words(4)]

    bounded, made = [], []
    for _ in range(pages):
        units = [words(int(rng.integers(1, 14))) for _ in range(int(rng.integers(1, 40)))]
        side = PageSide.of(_text(units, weight))
        masters = [rewritten(units) for _ in range(3)] + [rewritten(rewritten(units))]
        masters += [[words(int(rng.integers(1, 14))) for _ in range(int(rng.integers(1, 30)))]]
        made += masters
        sketches = [unpack_units(pack_units(_text(m, weight).flat, stamp), stamp) for m in made]
        every = np.arange(len(units))
        for sketch in [*sketches[-5:], sketches[int(rng.integers(len(sketches)))]]:
            scattered = np.sort(
                rng.choice(every, size=int(rng.integers(0, len(every) + 1)), replace=False)
            )
            start = int(rng.integers(0, len(every)))
            for among in (every, scattered, every[start : start + int(rng.integers(1, 12))]):
                bounded.append((side, among, sketch))
    return bounded


def _candidates_of_real_texts(rng: np.random.Generator) -> list:
    """Pages of the test texts (rewrites, reports of the same events, other chapters), whole
    and in windows (none, one unit, a run, scattered units), with the masters' sketches."""
    masters = [sentences_of(normalize(t)) for t in _masters()]
    sketches = [_sketch(m) for m in masters]
    empty = UnitSketch(np.zeros(1, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.uint16))
    bounded = []
    for text in _pages()[::3]:
        side = PageSide.of(sentences_of(normalize(text)))
        every = np.arange(len(side.units))
        start = int(rng.integers(0, max(1, len(every) - 3)))
        scattered = np.sort(rng.choice(every, size=len(every) // 3, replace=False))
        for among in (every, every[:0], every[start : start + 1], every[start : start + 9]):
            bounded += [(side, among, sketches[int(rng.integers(len(sketches)))])]
        bounded += [(side, scattered, s) for s in sketches[::4]] + [(side, every, empty)]
        bounded += [(side, every, s) for s in sketches]
    return bounded


@pytest.mark.parametrize("inputs", ["real", "random"])
def test_a_batch_is_bounded_as_the_reference_bounds_each_candidate_alone(inputs):
    """The batched bound (:func:`most_pairs_of`) against the bound computed one candidate at a
    time, as before batching (tests/rewrite_bound_reference.py, an independent matrix a
    candidate), without and with the matching that lowers it (there by a maximum flow on
    a dense matrix): equal for every candidate, whatever its neighbours in the batch or their
    order (no split, merge or extension across two candidates' matrices)."""
    rng = np.random.default_rng(46)
    bounded = _candidates_of_real_texts(rng) if inputs == "real" else _random_candidates(rng, 60)
    alone = [reference.most_pairs(*b) for b in bounded]
    matched = [reference.most_matched(*b) for b in bounded]
    # the batch holds many bounds that are not 0, and of many sizes; matching lowers some
    assert sum(m > 0 for m in alone) >= (30 if inputs == "real" else 300)
    assert len(set(alone)) >= 10
    assert sum(a > m for a, m in zip(alone, matched, strict=True)) >= 5
    assert most_pairs_of(bounded, matched=False) == alone
    assert most_pairs_of(bounded) == matched
    assert [most_pairs(*b) for b in bounded] == matched
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(bounded))
        assert most_pairs_of([bounded[i] for i in order]) == [matched[i] for i in order]
    assert most_pairs_of([]) == []


@pytest.fixture()
def library(runtime):
    """The masters, and other reports of their events: candidates of the pages on those
    events (the same names, places and numbers) that no page rewrites."""
    lib = MasterLibrary.from_runtime(runtime)
    lib.ingest(
        [MasterDocument(f"news/{s}", "news", f"n{s}", r.news(s)) for s in NEWS]
        + [
            MasterDocument(f"other/{s}", "other", f"o{s}", r.same_event(s, 50 + k))
            for k, s in enumerate(NEWS)
        ]
        + [MasterDocument(f"book/{s}", "book", f"c{s}", r.chapter(s)) for s in CHAPTERS]
        + [
            MasterDocument(f"hand/{k}", "hand", f"h{k}", master)
            for k, (master, _) in enumerate(BY_HAND)
        ]
    )
    return lib


def _checked(library, monkeypatch, pages: list[str], sketches: bool):
    """The answers to ``pages`` (with their evidence) and how many masters were aligned with
    them; ``sketches`` False: every master read as if stored without a sketch (each
    candidate aligned)."""
    aligned: list[int] = []
    align, read = rewrites.align_sentences, MasterCache.unit_sketches

    def counted(*args):
        aligned.append(1)
        return align(*args)

    def unsketched(self, docs):
        return {
            d: {k: v for k, v in m.items() if k != "unit_sketch"}
            for d, m in read(self, docs).items()
        }

    monkeypatch.setattr(rewrites, "align_sentences", counted)
    if not sketches:
        monkeypatch.setattr(MasterCache, "unit_sketches", unsketched)
    detector = library.detector()
    answers = [[m.to_dict() for m in ms] for ms in detector.check_many(pages)]
    monkeypatch.undo()
    return answers, len(aligned)


def test_a_check_skipping_ruled_out_masters_answers_the_same(library, monkeypatch):
    pages = [*_pages(), r.news(703) + "\n" + BY_HAND[1][1]]  # one beside a verbatim copy
    bounded, fewer = _checked(library, monkeypatch, pages, sketches=True)
    aligned, every = _checked(library, monkeypatch, pages, sketches=False)
    assert bounded == aligned
    assert sum(m["method"] == "rewrite" for ms in bounded for m in ms) >= 10
    assert fewer < every, (fewer, every)


def test_a_master_stored_without_a_sketch_is_aligned(library, monkeypatch):
    """A master ingested before sketches were (or by another lexicon) has no bound: it is
    loaded and aligned as before."""
    copy = BY_HAND[0][1]
    read = MasterCache.unit_sketches
    monkeypatch.setattr(
        MasterCache,
        "unit_sketches",
        lambda self, docs: {d: {**m, "unit_sketch": b"\x07"} for d, m in read(self, docs).items()},
    )
    aligned = []
    align = rewrites.align_sentences
    monkeypatch.setattr(rewrites, "align_sentences", lambda *a: aligned.append(1) or align(*a))
    [match] = library.detector().check(copy)
    assert (match.doc_id, match.method) == ("hand/0", "rewrite") and aligned
