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

The masters found verbatim are aligned too, only so that :func:`own_pairs` drops the other
candidates' pairs they explain; so only when some other candidate's alignment could be a
rewrite at all (:func:`could_be_rewrite`, which taking pairs away cannot make true): on a
pirate page, a verbatim copy whose book's other chapters name a few keys, they are not.
A master's sentences are rebuilt from the words cut at ingest (:func:`stored_words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from tracker.fingerprints.document import VERSION as FINGERPRINT_VERSION
from tracker.fingerprints.sentences import Sentences, query_keys, sentences_of, unpack_cuts
from tracker.index.master_index import MasterIndex
from tracker.matching.rewrite import (
    MIN_PAIRS,
    MIN_REWRITE_CHARS,
    RewriteAlignment,
    align_sentences,
    could_be_rewrite,
    evidence,
    is_rewrite,
    own_pairs,
)
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
    found = master.derived.get("sentences")
    if found is None:
        found = master.derived["sentences"] = sentences_of(master.text, stored_words(master))
    return found


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
    near = np.zeros(length + 1, dtype=np.int32)
    np.add.at(near, np.maximum(units - LOCAL_UNITS, 0), 1)
    np.add.at(near, np.minimum(units + LOCAL_UNITS + 1, length), -1)
    found = np.flatnonzero(np.cumsum(near)[:length] > 0)
    return found if among is None else np.intersect1d(found, among)


def ranked(hits: dict[int, np.ndarray], found: set[int]) -> list[int]:
    """The candidates to align: the masters found copied verbatim (``found``: they may be
    aligned too, for :func:`tracker.matching.rewrite.own_pairs`), then the best by local
    votes."""
    votes = {d: local_votes(units) for d, units in hits.items()}
    eligible = [d for d, v in votes.items() if v >= MIN_VOTES and d not in found]
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


def find_rewrites(
    index: MasterIndex,
    masters: MasterCache,
    pages: Sequence[NormalizedText],
    words: Sequence[list[str] | None],
    skip: Sequence[set[int]],
    covered: Sequence[np.ndarray | None] | None = None,
) -> list[list[Match]]:
    """The rewritten copies of each page (``words``: its jieba words cut line by line, or
    None), but the masters in its ``skip`` (found copied verbatim: they keep that evidence);
    ``covered``: each page's folded characters inside those verbatim copies, whose sentences
    are not looked up nor aligned (:func:`open_units`)."""
    covered = covered or [None] * len(pages)
    units, opened = [], []
    for page, w, mask in zip(pages, words, covered, strict=True):
        if mask is not None and len(mask) - int(mask.sum()) < MIN_OPEN_CHARS:
            units.append(Sentences.empty(len(page.chars)))  # no room left for a rewrite
            opened.append(np.zeros(0, dtype=np.int64))
            continue
        sentences = sentences_of(page, w)
        units.append(sentences)
        free = open_units(sentences, mask)
        opened.append(free if worth_looking(sentences, free) else free[:0])
    hits = index.sentence_candidates([query_keys(u, o) for u, o in zip(units, opened, strict=True)])
    chosen = [ranked(h, s) for h, s in zip(hits, skip, strict=True)]
    wanted = sorted(
        {d for docs, found in zip(chosen, skip, strict=True) for d in docs if d not in found}
    )
    if not wanted:
        return [[] for _ in pages]
    loaded = masters.get(wanted)
    return [
        rewrites_of(page, page_units, docs, verbatim, near, free, loaded, masters)
        for page, page_units, docs, verbatim, near, free in zip(
            pages, units, chosen, skip, hits, opened, strict=True
        )
    ]


def rewrites_of(
    page: NormalizedText,
    page_units: Sentences,
    docs: list[int],
    verbatim: set[int],
    near: dict[int, np.ndarray],
    free: np.ndarray,
    loaded: dict[int, CachedMaster],
    masters: MasterCache,
) -> list[Match]:
    """The rewritten copies of one page among its candidates ``docs`` (:func:`ranked`), whose
    key hits are ``near``; ``free``: its units outside its verbatim copies (of ``verbatim``);
    the other candidates ``loaded``, the verbatim masters loaded only if needed."""
    from tracker.matching.detector import Match, versions_by_simhash

    def align(doc: int) -> RewriteAlignment:
        return align_sentences(
            page_units, sentences[doc], near_hits(near[doc], len(page_units), free)
        )

    others = [d for d in docs if d not in verbatim and d in loaded]
    sentences = {d: master_sentences(loaded[d]) for d in others}
    alignments = {d: align(d) for d in others}
    if not any(map(could_be_rewrite, alignments.values())):
        return []  # nor would any be with the pairs the verbatim masters explain taken out
    theirs = masters.get([d for d in docs if d in verbatim])
    loaded = {**loaded, **theirs}
    sentences.update({d: master_sentences(m) for d, m in theirs.items()})
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
        if doc in verbatim or not is_rewrite(replace(alignment, page_total=room)):
            continue
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
