"""Find the rewritten copies among a batch of pages: candidates from the sentence keys,
proved by aligned sentences (:mod:`tracker.matching.rewrite`).

Runs in every check (``tracker check``, the crawl's pipelines and ``tracker rematch`` all go
through :class:`tracker.matching.detector.Detector`), after the verbatim detector: a master
found copied verbatim keeps its verbatim evidence and is not aligned again. A master is a
candidate when the page looks up ``MIN_VOTES`` of its sentence keys within ``LOCAL_UNITS``
sentences of one another; the ``MAX_CANDIDATES`` with the most, and at least
``RELATIVE_VOTES`` of the best one's, are aligned, each with the page's sentences within
``LOCAL_UNITS`` of its hits only (a long page is aligned where the passage can be). The
page's sentences inside its verbatim copies are neither looked up nor aligned (they are
explained already), and a page with fewer than ``MIN_OPEN_CHARS`` characters outside them is
not looked at.

A master a page names by one sentence key only is a candidate too when the verbatim stage's
index names it as well (an anchor shared: ``Candidates.anchor_votes``, two independent
signals where either alone is chance), but only as a *partial* copy
(:func:`tracker.matching.rewrite.is_partial_passage`). A rewritten part of a chapter inside
other text keeps few of its sentences' keys: its units are few, and a rewriter by hand swaps
the rare words the keys are made of (of the development windows of 30-50 % of a chapter
rewritten by hand, 28 of the 46 missed named one key). A rewrite of a whole master keeps
keys in proportion to its units; a page telling all of a short master with one key left is
another report of its facts. Such a candidate is loaded only if its unit sketch allows the
``MIN_PASSAGE_PAIRS`` of that passage (:func:`least_pairs`).

The masters found verbatim are aligned too, only so that :func:`own_pairs` drops the other
candidates' pairs they explain; so only when some other candidate's alignment could be a
rewrite at all (:func:`could_be_rewrite`, which taking pairs away cannot make true): on a
pirate page, a verbatim copy whose book's other chapters name a few keys, they are not.
A master's sentences are rebuilt from the words cut at ingest (:func:`stored_words`).

Before a candidate is loaded, the pairs it could align with the page are bounded from the
sketch of its units stored at ingest (:func:`pair_bounds`, :mod:`tracker.matching.
rewrite_bound`): in a large library most candidates share two rare word pairs with the page
by chance, and cannot be a rewrite. Those are loaded and aligned only when another candidate
of the page could be one (:func:`own_pairs` takes their pairs out of it), and not at all when
they could align nothing: the answers are those of aligning every candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from tracker.fingerprints.document import VERSION as FINGERPRINT_VERSION
from tracker.fingerprints.lexicon import lexicon
from tracker.fingerprints.sentences import Sentences, query_keys, sentences_many, unpack_cuts
from tracker.fingerprints.unit_sketch import UnitSketch, unpack_units
from tracker.index.master_index import MasterIndex
from tracker.matching.rewrite import (
    MIN_FRAGMENT_PAIRS,
    MIN_PAIRS,
    MIN_PASSAGE_PAIRS,
    MIN_REWRITE_CHARS,
    RewriteAlignment,
    align_sentences,
    could_be_rewrite,
    evidence,
    is_partial_passage,
    is_rewrite,
    own_pairs,
)
from tracker.matching.rewrite_bound import PageSide, most_pairs_of
from tracker.text.normalize import NormalizedText

if TYPE_CHECKING:
    from tracker.matching.detector import CachedMaster, MasterCache, Match

METHOD = "rewrite"
MIN_VOTES = 2
MAX_CANDIDATES = 4
RELATIVE_VOTES = 0.2
LOCAL_UNITS = 24  # page units (sentences) a rewritten passage's key hits are counted within
# the page's characters outside its verbatim copies below which no rewrite is looked for:
# half the master characters a rewrite must align (a rewriter rarely halves a text)
MIN_OPEN_CHARS = MIN_REWRITE_CHARS // 2


def stored_words(master: CachedMaster) -> list[str] | None:
    """A master's jieba words as cut at ingest (its ``cuts``: see
    :func:`tracker.fingerprints.sentences.pack_cuts`); None for a master stored without them,
    by another version of the fingerprints, or whose cuts do not fit its text (it is cut
    again)."""
    meta = master.meta
    if meta.get("version") != FINGERPRINT_VERSION:
        return None
    return unpack_cuts(meta.get("cuts"), master.text.chars)


def master_sentences(master: CachedMaster) -> Sentences:
    """A cached master's units, made once while it stays cached."""
    return masters_sentences([master])[0]


def masters_sentences(masters: Sequence[CachedMaster]) -> list[Sentences]:
    """:func:`master_sentences` of each of ``masters``, those not made yet made at once
    (:func:`tracker.fingerprints.sentences.sentences_many`)."""
    missing = [m for m in masters if m.derived.get("sentences") is None]
    if missing:
        made = sentences_many([m.text for m in missing], [stored_words(m) for m in missing])
        for master, sentences in zip(missing, made, strict=True):
            master.derived["sentences"] = sentences
    return [m.derived["sentences"] for m in masters]


def local_votes(units: np.ndarray) -> int:
    """The most of a master's key hits within ``LOCAL_UNITS`` page units of one another: a
    rewritten passage's hits sit together, a long page's chance ones are spread over it."""
    if not len(units):
        return 0
    reach = np.searchsorted(units, units + LOCAL_UNITS, side="right") - np.arange(len(units))
    return int(reach.max())


def near_hits(units: np.ndarray, length: int, among: np.ndarray | None = None) -> np.ndarray:
    """The page units within ``LOCAL_UNITS`` of a hit (where a rewritten passage can be), of
    those ``among`` these if given."""
    # +1 where a hit's reach opens, -1 past where it closes (bincount: np.add.at is slow)
    opens = np.bincount(np.maximum(units - LOCAL_UNITS, 0), minlength=length + 1)
    closes = np.bincount(np.minimum(units + LOCAL_UNITS + 1, length), minlength=length + 1)
    inside = np.cumsum(opens - closes)[:length] > 0
    # ``among``: page units, sorted (a mask picks them: np.intersect1d sorts both sides)
    return np.flatnonzero(inside) if among is None else among[inside[among]]


def ranked(
    hits: dict[int, np.ndarray], found: set[int], named: set[int] | frozenset[int] = frozenset()
) -> list[int]:
    """The candidates to align: the masters found copied verbatim (``found``: they may be
    aligned too, for :func:`tracker.matching.rewrite.own_pairs`), then the best by local
    votes, of ``MIN_VOTES`` or ``named`` (see the module's docstring)."""
    votes = {d: local_votes(units) for d, units in hits.items()}
    eligible = [d for d, v in votes.items() if d not in found and (v >= MIN_VOTES or d in named)]
    if not eligible:
        return []  # nothing to find beside the verbatim copies
    eligible.sort(key=lambda d: (-votes[d], d))
    floor = RELATIVE_VOTES * votes[eligible[0]]
    return sorted(d for d in found if d in hits) + [
        d for d in eligible[:MAX_CANDIDATES] if votes[d] >= floor
    ]


def open_units(sentences: Sentences, covered: np.ndarray | None) -> np.ndarray:
    """The units not inside a verbatim copy: less than half of their characters ``covered``
    (a mask over the folded characters). Only those can hold a rewritten copy of another
    master; the rest is explained already."""
    everything = np.arange(len(sentences))
    if covered is None or not covered.any() or not len(everything):
        return everything
    inside = np.r_[0, np.cumsum(covered, dtype=np.int64)]
    starts, ends = sentences.starts, sentences.ends
    return everything[2 * (inside[ends] - inside[starts]) < ends - starts]


def worth_looking(sentences: Sentences, units: np.ndarray) -> bool:
    """Whether ``units`` could hold a rewritten copy (:func:`is_rewrite` wants
    ``MIN_PAIRS`` aligned sentences, of ``MIN_REWRITE_CHARS`` in the master)."""
    if len(units) < MIN_PAIRS:
        return False
    return int(sentences.lengths[units].sum()) >= MIN_OPEN_CHARS


def pair_bounds(
    masters: MasterCache,
    page_units: Sequence[Sentences],
    chosen: Sequence[list[int]],
    skip: Sequence[set[int]],
    hits: Sequence[dict[int, np.ndarray]],
    opened: Sequence[np.ndarray],
) -> list[dict[int, int | None]]:
    """For each page, the most pairs each of its candidates but the verbatim ones could align
    (:func:`tracker.matching.rewrite_bound.most_pairs`, from the master's stored unit
    sketch; all of the batch's at once); None for a master without a sketch this code can
    read (no bound). Only the masters that exist are named (one query for all their sketches;
    the cached ones read)."""
    wanted = sorted(
        {d for docs, found in zip(chosen, skip, strict=True) for d in docs if d not in found}
    )
    stored = masters.unit_sketches(wanted)
    stamp = lexicon().stamp
    sketches: dict[int, UnitSketch | None] = {}
    for doc, meta in stored.items():
        fresh = meta.get("version") == FINGERPRINT_VERSION
        sketches[doc] = unpack_units(meta.get("unit_sketch") if fresh else None, stamp)
    bounds: list[dict[int, int | None]] = []
    asked: list[tuple[dict[int, int | None], int]] = []  # where each bound goes
    bounded: list[tuple[PageSide, np.ndarray, UnitSketch]] = []
    for units, docs, found, near, free in zip(page_units, chosen, skip, hits, opened, strict=True):
        mine: dict[int, int | None] = {}
        side = None
        for doc in docs:
            if doc in found or doc not in sketches:
                continue  # a verbatim copy, or no such master
            sketch = sketches[doc]
            mine[doc] = None
            if sketch is not None:
                side = side or PageSide.of(units)
                asked.append((mine, doc))
                bounded.append((side, near_hits(near[doc], len(units), free), sketch))
        bounds.append(mine)
    # the batch's candidates bounded at once (one set of array operations)
    for (mine, doc), most in zip(asked, most_pairs_of(bounded), strict=True):
        mine[doc] = most
    return bounds


def find_rewrites(
    index: MasterIndex,
    masters: MasterCache,
    pages: Sequence[NormalizedText],
    words: Sequence[list[str] | None],
    skip: Sequence[set[int]],
    covered: Sequence[np.ndarray | None] | None = None,
    named: Sequence[set[int]] | None = None,
) -> list[list[Match]]:
    """The rewritten copies of each page (``words``: its jieba words cut line by line, or
    None), but the masters in its ``skip`` (found copied verbatim: they keep that evidence);
    ``covered``: each page's folded characters inside those verbatim copies, whose sentences
    are not looked up nor aligned (:func:`open_units`); ``named``: the masters the verbatim
    stage's index names for each page, candidates with one sentence key (see the module's
    docstring)."""
    covered = covered or [None] * len(pages)
    # no room left for a rewrite on a page whose verbatim copies leave too few characters
    roomy = [
        k
        for k, mask in enumerate(covered)
        if mask is None or len(mask) - int(mask.sum()) >= MIN_OPEN_CHARS
    ]
    units = [Sentences.empty(len(page.chars)) for page in pages]
    opened = [np.zeros(0, dtype=np.int64) for _ in pages]
    made = sentences_many([pages[k] for k in roomy], [words[k] for k in roomy])
    for k, sentences in zip(roomy, made, strict=True):
        units[k] = sentences
        free = open_units(sentences, covered[k])
        opened[k] = free if worth_looking(sentences, free) else free[:0]
    queries = [query_keys(u, o) for u, o in zip(units, opened, strict=True)]
    hits = index.sentence_candidates(queries, also=named)
    named = named or [set() for _ in pages]
    chosen = [ranked(h, s, n) for h, s, n in zip(hits, skip, named, strict=True)]
    if not any(d not in found for docs, found in zip(chosen, skip, strict=True) for d in docs):
        return [[] for _ in pages]
    bounds = pair_bounds(masters, units, chosen, skip, hits, opened)
    # loaded first: the candidates that could be a rewrite (the others only if one is)
    first = sorted(
        {
            d
            for b, near in zip(bounds, hits, strict=True)
            for d, most in b.items()
            if could_pair(most, least_pairs(near[d]))
        }
    )
    loaded = masters.get(first, shingled=False) if first else {}  # no verbatim alignment
    masters_sentences(list(loaded.values()))  # their units, all at once
    return [
        rewrites_of(page, page_units, docs, verbatim, near, free, loaded, masters, most)
        for page, page_units, docs, verbatim, near, free, most in zip(
            pages, units, chosen, skip, hits, opened, bounds, strict=True
        )
    ]


def named_once(units: np.ndarray) -> bool:
    """Whether a candidate whose key hits are on the page ``units`` has fewer than
    ``MIN_VOTES`` of them (a candidate only as the verbatim index names it too: a partial
    copy, see the module's docstring)."""
    return local_votes(units) < MIN_VOTES


def least_pairs(units: np.ndarray) -> int:
    """The pairs a candidate whose key hits are on the page ``units`` must align to be a
    rewrite: ``MIN_PAIRS``, or, :func:`named_once`, the ``MIN_PASSAGE_PAIRS`` of the partial
    passage it can only be found as."""
    return MIN_PASSAGE_PAIRS if named_once(units) else MIN_PAIRS


def could_pair(most: int | None, least: int) -> bool:
    """Whether a candidate bounded to ``most`` pairs (None: unbounded) may align ``least``."""
    return most is None or most >= least


def rewrites_of(
    page: NormalizedText,
    page_units: Sentences,
    docs: list[int],
    verbatim: set[int],
    near: dict[int, np.ndarray],
    free: np.ndarray,
    loaded: dict[int, CachedMaster],
    masters: MasterCache,
    bounds: dict[int, int | None] | None = None,
) -> list[Match]:
    """The rewritten copies of one page among its candidates ``docs`` (:func:`ranked`), whose
    key hits are ``near``; ``free``: its units outside its verbatim copies (of ``verbatim``);
    ``bounds``: the most pairs each other candidate could align (:func:`pair_bounds`; none
    bounded if not given), those that could be a rewrite ``loaded``. The candidates that
    could not, but could align some pairs, and the verbatim masters, are loaded and aligned
    only if one of those is a possible rewrite (:func:`tracker.matching.rewrite.own_pairs`
    takes their pairs out of it); those that could align nothing never are."""
    from tracker.matching.detector import Match, versions_by_simhash

    def align(doc: int) -> RewriteAlignment:
        return align_sentences(
            page_units, sentences[doc], near_hits(near[doc], len(page_units), free)
        )

    if bounds is None:
        bounds = {d: None for d in docs if d not in verbatim}
    others = [d for d in docs if could_pair(bounds.get(d, 0), least_pairs(near[d])) and d in loaded]
    sentences = {d: master_sentences(loaded[d]) for d in others}
    alignments = {d: align(d) for d in others}
    if not any(map(could_be_rewrite, alignments.values())):
        return []  # nor would any be with the pairs the verbatim masters explain taken out
    rest = [
        d
        for d in docs
        if d in verbatim
        or (d not in alignments and could_pair(bounds.get(d, 0), MIN_FRAGMENT_PAIRS))
    ]
    theirs = masters.get(rest, shingled=False)
    loaded = {**loaded, **theirs}
    sentences.update(zip(theirs, masters_sentences(list(theirs.values())), strict=True))
    alignments.update({d: align(d) for d in theirs})
    order = [d for d in docs if d in alignments]
    aligned = own_pairs(
        {d: alignments[d] for d in order},
        page_units,
        sentences,
        versions_by_simhash({d: loaded[d].meta for d in order}),
    )
    found = []
    # the page's room for a rewrite: its characters outside the verbatim copies
    room = int(page_units.lengths[free].sum())
    for doc, alignment in aligned.items():
        alignment = replace(alignment, page_total=room)
        if doc in verbatim or not is_rewrite(alignment):
            continue
        if named_once(near[doc]) and not is_partial_passage(alignment):
            continue  # a partial copy only
        master, units = loaded[doc], sentences[doc]
        shorter = max(1, min(page_units.chars, units.chars))
        found.append(
            Match(
                doc_id=master.meta["_id"],
                work=master.meta.get("work", ""),
                title=master.meta.get("title", ""),
                score=round(min(1.0, alignment.master_chars / shorter), 4),
                coverage=round(alignment.coverage, 4),
                method=METHOD,
                spans=evidence(alignment, page, page_units, master.text, units),
            )
        )
    return found
