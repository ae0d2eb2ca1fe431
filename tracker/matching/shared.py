"""Evidence a page shares with several masters: a library's own formulas.

A news agency's articles repeat their house formulas: the list of leaders at an event, the
greetings "向广大工人、农民、知识分子和干部，向人民解放军指战员……". An unrelated article using the
same formulas aligns with every master that holds them, and with a formula-heavy short master
it may reach the partial-copy threshold (a fifth of the master, 200 tokens of evidence) without
copying anything of it. What marks a formula is that *several* masters explain the same region
of the page; a copied master explains a region of its own.

:func:`own_shares` measures, for each master aligned with a page, the share of its passages'
page tokens that no other aligned master covers as well. The detector weighs the evidence of the
partial-copy rule by it (a single copied passage of ``min_passage_chars``, or most of a
master, is a copy whatever else it matches). Masters that are versions of one another (the
same article registered twice, two editions of a chapter: the caller's ``versions`` test, the
detector's being their SimHashes within a few bits) do not discount each other, so a partial
copy of either is still reported; two articles sharing formulas are not versions, however
much of the page's evidence they share.

It is a sweep over the passages' page intervals: the elementary segments between interval ends
with the set of masters covering each, O(n log n) in the number of passages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

from tracker.matching.align import Alignment


def own_shares(
    alignments: Mapping[int, Alignment], versions: Callable[[int, int], bool]
) -> dict[int, float]:
    """For each master (key) with passages, the share of its page tokens that no other master
    of ``alignments`` also covers, masters ``versions(a, b)`` of it excepted (1.0: its
    evidence is its own)."""
    events: list[tuple[int, int, int]] = []  # (page token, +1 opens / -1 closes, master)
    for doc, alignment in alignments.items():
        for p in alignment.passages:
            if p.page_end > p.page_start:
                events += [(p.page_start, 1, doc), (p.page_end, -1, doc)]
    if not events:
        return {}
    events.sort()
    # Elementary segments: (length, the masters covering it), when at least one does.
    active: dict[int, int] = defaultdict(int)  # master -> its passages open here
    covered: dict[int, int] = defaultdict(int)
    shared: dict[int, int] = defaultdict(int)
    at = events[0][0]
    for position, step, doc in events:
        if position > at and active:
            length = position - at
            for d in active:
                covered[d] += length
                if any(other != d and not versions(d, other) for other in active):
                    shared[d] += length
        at = position
        active[doc] += step
        if not active[doc]:
            del active[doc]
    return {d: 1.0 - shared[d] / covered[d] for d in covered if covered[d]}
