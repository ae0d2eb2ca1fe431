"""The evidence of a page: each copied passage beside the master's, aligned and highlighted.

A match's ``spans`` hold, per copied passage, its character offsets in the page and in the
master and the page's text of it (:meth:`tracker.matching.detector.Detector._spans`); the
master's passage is cut from the master's stored text at its offsets. Inside a pair the shared
text is marked: both passages are folded as for matching (:func:`tracker.text.normalize.
normalize`: Traditional to Simplified, homophones to one pinyin syllable, punctuation and
noise dropped), the two syllable sequences aligned with :class:`difflib.SequenceMatcher`
(Ratcliff/Obershelp: longest common block first, then recursively either side), and each
matching block of syllables mapped back to the characters it came from. What is left unmarked
is what differs: an inserted ad line, a typo, a dropped sentence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from pymongo.database import Database

from tracker.reports.build import as_number
from tracker.stores.masters import MasterStore
from tracker.stores.pages import MatchStore
from tracker.text.normalize import normalize

MAX_PASSAGE_CHARS = 4000  # a longer master passage is cut (the page's is cut at 2,000 when found)
MIN_BLOCK = 2  # shorter common blocks of syllables are coincidences, not copying

Segment = tuple[str, bool]  # text, shared with the other side


@dataclass(frozen=True)
class Passage:
    page_start: int | None
    page_end: int | None
    master_start: int | None
    master_end: int | None
    page: list[Segment]
    master: list[Segment]
    shared: float  # share of the page passage's syllables found in the master's
    cut: bool  # a side was cut for display


def page_matches(db: Database, url: str) -> list[dict[str, Any]]:
    """The matches stored for page ``url`` (its ``url`` index), open ones first, best first."""
    found = MatchStore(db).of_page(url)
    found.sort(key=lambda m: (m.get("active") is False, -as_number(m.get("score")), m["doc_id"]))
    return found


def master_texts(db: Database, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``doc_id -> {"text", "title", "work"}`` of the masters still in the library."""
    return MasterStore(db).texts(doc_ids)


def passages(spans: Iterable[dict[str, Any]], master_text: str | None) -> list[Passage]:
    """Each span of a match beside the master's passage, with the shared text marked."""
    shown = []
    for span in spans:
        page_text = str(span.get("text") or "")
        start, end = span.get("master_start"), span.get("master_end")
        master = ""
        cut = False
        if master_text is not None and isinstance(start, int) and isinstance(end, int):
            master = master_text[max(0, start) : max(0, end)]
            if len(master) > MAX_PASSAGE_CHARS:
                master, cut = master[:MAX_PASSAGE_CHARS], True
        page_start, page_end = span.get("page_start"), span.get("page_end")
        if isinstance(page_start, int) and isinstance(page_end, int):
            cut = cut or page_end - page_start > len(page_text)
        page_marks, master_marks, shared = highlight(page_text, master)
        shown.append(
            Passage(page_start, page_end, start, end, page_marks, master_marks, shared, cut)
        )
    return shown


def highlight(page: str, master: str) -> tuple[list[Segment], list[Segment], float]:
    """Both texts cut into segments marked shared or not, and the share of the page's
    syllables that are shared."""
    if not page or not master:
        return [(page, False)] if page else [], [(master, False)] if master else [], 0.0
    left, right = normalize(page, strip_boilerplate=False), normalize(master, False)
    matcher = SequenceMatcher(None, left.tokens.tolist(), right.tokens.tolist(), autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size >= MIN_BLOCK]
    page_ranges = [left.source_span(b.a, b.a + b.size) for b in blocks]
    master_ranges = [right.source_span(b.b, b.b + b.size) for b in blocks]
    shared = sum(b.size for b in blocks) / max(1, len(left))
    return _segments(page, page_ranges), _segments(master, master_ranges), round(shared, 4)


def _segments(text: str, ranges: list[tuple[int, int]]) -> list[Segment]:
    segments: list[Segment] = []
    at = 0
    for start, end in sorted(ranges):
        start = max(start, at)
        if end <= start:
            continue
        if start > at:
            segments.append((text[at:start], False))
        segments.append((text[start:end], True))
        at = end
    if at < len(text):
        segments.append((text[at:], False))
    return segments
