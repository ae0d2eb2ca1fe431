"""Cut a long page into segments that are matched a batch at a time.

A whole book on one page (a 全本 download) holds hundreds of chapters: looked up as one text,
its few best-voted masters crowd out the rest, and aligning it whole costs memory in proportion
to its length times its candidates. It is matched instead in segments of about
``SEGMENT_TOKENS`` tokens, so that every segment ranks its own candidates and memory stays
bounded whatever the page's length.

Segments end at a chapter heading when one lies in the second half of the window, and then the
next one starts ``HEADING_OVERLAP_TOKENS`` before it; otherwise they are windows overlapping by
``OVERLAP_TOKENS``. Either way a passage of up to the overlap lies whole inside one segment, and
any longer one has at least the overlap inside one: more than the ``min_passage_chars`` (100)
that make a single passage a copy, and enough anchors to make its master a candidate there. (A
heading is only a guess: a passage pasted across a line that looks like one, or a news master
with numbered sections, must not be cut in two halves too short to count.) The detector merges
the passages a master has in several segments (:func:`tracker.matching.align.merge`), so a
chapter cut by a segment boundary is still one passage.
"""

from __future__ import annotations

import numpy as np

from tracker.text.normalize import NormalizedText

SEGMENT_TOKENS = 8192
OVERLAP_TOKENS = 1024
HEADING_OVERLAP_TOKENS = 160  # > min_passage_chars; small, as a chapter rarely runs across
# Pages up to this length are looked up whole, as before segments existed (a chapter or a few).
LONG_PAGE_TOKENS = 12288


def chapter_starts(page: NormalizedText) -> np.ndarray:
    """Token offsets where the page's chapter headings start (ascending)."""
    # Imported here: its patterns take ~7 ms to compile, which a check of short pages (every
    # `tracker check`) never needs.
    from tracker.text.chapters import heading_offsets

    offsets = heading_offsets(page.source)
    if not offsets:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.searchsorted(page.token_start, offsets))


def segments(
    length: int,
    breaks: np.ndarray | None = None,
    size: int = SEGMENT_TOKENS,
    overlap: int = OVERLAP_TOKENS,
    heading_overlap: int = HEADING_OVERLAP_TOKENS,
) -> list[tuple[int, int]]:
    """Token ranges ``[start, end)`` covering ``[0, length)``: windows of ``size`` tokens,
    ended at the last of ``breaks`` (sorted token offsets) in their second half and then
    overlapping the next by ``heading_overlap``, else by ``overlap``."""
    breaks = np.zeros(0, dtype=np.int64) if breaks is None else np.asarray(breaks)
    out: list[tuple[int, int]] = []
    start = 0
    while start < length:
        end = start + size
        if end >= length:
            out.append((start, length))
            break
        at = int(np.searchsorted(breaks, end, side="right")) - 1
        if at >= 0 and breaks[at] > start + size // 2:
            cut = int(breaks[at])
            out.append((start, cut))
            start = cut - heading_overlap
        else:
            out.append((start, end))
            start = end - overlap
    return out
