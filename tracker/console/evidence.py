"""The evidence of a page: each copied passage beside the master's, aligned and highlighted.

A match's ``spans`` hold, per copied passage, its character offsets in the page and in the
master and the page's text of it (:meth:`tracker.matching.detector.Detector._spans`, at most
2,000 characters of it); the master's passage is cut from the master's stored text at its
offsets. Inside a pair the shared text is marked: both passages are folded as for matching
(:func:`tracker.text.normalize.normalize`: Traditional to Simplified, homophones to one
pinyin syllable, punctuation and noise dropped), the two syllable sequences aligned with
:class:`difflib.SequenceMatcher` (Ratcliff/Obershelp: longest common block first, then
recursively either side), and each matching block of syllables mapped back to the characters
it came from. What is left unmarked differs: a typo, a dropped sentence, or (marked as such) a
line the pirate site inserted, an ad or watermark its normaliser recognises.

A long passage is cut for display, and what is cut is never shown as differing: when the
page's side was cut (its stored text ends before the passage does), the master's side ends
where the last text aligned with the shown page text ends, and the other way round; each side
then says how many of its characters are not shown.
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
from tracker.text.normalize import boilerplate_mask, normalize

MAX_PASSAGE_CHARS = 4000  # a longer master passage is cut (the page's is cut at 2,000 when found)
MIN_BLOCK = 2  # shorter common blocks of syllables are coincidences, not copying
SAME, DIFFERS, INSERTED = "same", "differs", "inserted"

Segment = tuple[str, str]  # text, and SAME (shared with the other side), DIFFERS or INSERTED


@dataclass(frozen=True)
class Passage:
    page_start: int | None
    page_end: int | None
    master_start: int | None
    master_end: int | None
    page: list[Segment]
    master: list[Segment]
    shared: float  # share of the shown page passage's syllables found in the master's
    page_hidden: int = 0  # characters of the page's passage cut for display
    master_hidden: int = 0  # characters of the master's passage cut for display

    @property
    def cut(self) -> bool:
        """Whether a side was cut for display."""
        return bool(self.page_hidden or self.master_hidden)


def page_matches(db: Database, url: str) -> list[dict[str, Any]]:
    """The matches stored for page ``url`` (its ``url`` index), open ones first, best first."""
    found = MatchStore(db).of_page(url)
    found.sort(key=lambda m: (m.get("active") is False, -as_number(m.get("score")), m["doc_id"]))
    return found


def master_texts(db: Database, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``doc_id -> {"text", "title", "work"}`` of the masters still in the library."""
    return MasterStore(db).texts(doc_ids)


def passages(spans: Iterable[dict[str, Any]], master_text: str | None) -> list[Passage]:
    """Each span of a match beside the master's passage, with the shared text marked and what
    was cut for display counted."""
    shown = []
    for span in spans:
        page_text = str(span.get("text") or "")
        page_start, page_end = span.get("page_start"), span.get("page_end")
        page_length = len(page_text)
        if isinstance(page_start, int) and isinstance(page_end, int):
            page_length = max(page_length, page_end - page_start)
        start, end = span.get("master_start"), span.get("master_end")
        master = ""
        if master_text is not None and isinstance(start, int) and isinstance(end, int):
            master = master_text[max(0, start) : max(0, end)]
        page_side, master_side, shared = highlight(
            page_text,
            master[:MAX_PASSAGE_CHARS],
            page_cut=page_length > len(page_text),
            master_cut=len(master) > MAX_PASSAGE_CHARS,
        )
        shown.append(
            Passage(
                page_start,
                page_end,
                start,
                end,
                page_side,
                master_side,
                shared,
                page_hidden=page_length - _length(page_side),
                master_hidden=len(master) - _length(master_side),
            )
        )
    return shown


def highlight(
    page: str, master: str, *, page_cut: bool = False, master_cut: bool = False
) -> tuple[list[Segment], list[Segment], float]:
    """Both texts cut into segments, SAME where they share text, INSERTED where the page
    holds a line its site inserted, DIFFERS elsewhere, and the share of the page's syllables
    that are shared. When one side was cut for display (``page_cut``, ``master_cut``), the
    other is shown only up to the end of the last text aligned with it: the rest of it is not
    differing text but the continuation of what was cut."""
    if not page or not master:
        return _segments(page, []), [(master, DIFFERS)] if master else [], 0.0
    left, right = normalize(page, strip_boilerplate=False), normalize(master, False)
    matcher = SequenceMatcher(None, left.tokens.tolist(), right.tokens.tolist(), autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size >= MIN_BLOCK]
    page_ranges = [left.source_span(b.a, b.a + b.size) for b in blocks]
    master_ranges = [right.source_span(b.b, b.b + b.size) for b in blocks]
    if page_cut:
        master = master[: master_ranges[-1][1] if master_ranges else len(page)]
    if master_cut:
        page = page[: page_ranges[-1][1] if page_ranges else len(master)]
    shared = sum(b.size for b in blocks) / max(1, len(left))
    return _segments(page, page_ranges), _marked(master, master_ranges), round(shared, 4)


def _segments(page: str, ranges: list[tuple[int, int]]) -> list[Segment]:
    """The page's side: its shared ranges SAME, and of the rest the characters of inserted
    lines (:func:`tracker.text.normalize.boilerplate_mask`) INSERTED, the others DIFFERS."""
    inserted = boilerplate_mask(page)
    segments: list[Segment] = []
    for text, state, at in _runs(page, ranges):
        if state == SAME or not inserted[at : at + len(text)].any():
            segments.append((text, state))
            continue
        flags = inserted[at : at + len(text)].tolist()
        run = 0
        for i in range(1, len(text) + 1):
            if i == len(text) or flags[i] != flags[run]:
                segments.append((text[run:i], INSERTED if flags[run] else DIFFERS))
                run = i
    return segments


def _marked(text: str, ranges: list[tuple[int, int]]) -> list[Segment]:
    return [(part, state) for part, state, _ in _runs(text, ranges)]


def _runs(text: str, ranges: list[tuple[int, int]]) -> list[tuple[str, str, int]]:
    """``text`` cut at ``ranges`` (clipped to it): ``(part, SAME or DIFFERS, offset)``."""
    runs: list[tuple[str, str, int]] = []
    at = 0
    for start, end in sorted(ranges):
        start, end = max(start, at), min(end, len(text))
        if end <= start:
            continue
        if start > at:
            runs.append((text[at:start], DIFFERS, at))
        runs.append((text[start:end], SAME, start))
        at = end
    if at < len(text):
        runs.append((text[at:], DIFFERS, at))
    return runs


def _length(segments: list[Segment]) -> int:
    return sum(len(text) for text, _ in segments)
