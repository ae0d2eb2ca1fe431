"""Long pages cut into segments, and passages found in several segments merged into one."""

from __future__ import annotations

import itertools

import numpy as np

from tracker.matching.align import Passage, align, merge
from tracker.matching.segments import (
    HEADING_OVERLAP_TOKENS,
    OVERLAP_TOKENS,
    SEGMENT_TOKENS,
    chapter_starts,
    segments,
)
from tracker.text.chapters import heading_offsets
from tracker.text.normalize import normalize

from .texts import prose


def test_windows_cover_the_page_and_overlap():
    ranges = segments(50_000)
    assert ranges[0][0] == 0 and ranges[-1][1] == 50_000
    assert all(end - start <= SEGMENT_TOKENS for start, end in ranges)
    for (_, end), (start, _) in itertools.pairwise(ranges):
        assert end - start == OVERLAP_TOKENS  # each window overlaps the next
    assert segments(100) == [(0, 100)]
    assert segments(0) == []


def test_windows_end_at_chapter_headings_in_their_second_half():
    half = SEGMENT_TOKENS // 2
    breaks = np.array([100, half + 10, SEGMENT_TOKENS - 5, SEGMENT_TOKENS + half - 500])
    ranges = segments(3 * SEGMENT_TOKENS, breaks)
    # The last heading in the window's second half ends it, and the next starts a little
    # before it (a passage pasted across a line that looks like a heading is not cut in two).
    assert ranges[0] == (0, SEGMENT_TOKENS - 5)
    assert ranges[1][0] == SEGMENT_TOKENS - 5 - HEADING_OVERLAP_TOKENS
    # Its only heading is in the first half of the second window: that one overlaps the next.
    assert ranges[1][1] == ranges[1][0] + SEGMENT_TOKENS
    assert ranges[2][0] == ranges[1][1] - OVERLAP_TOKENS
    assert ranges[-1][1] == 3 * SEGMENT_TOKENS


def test_heading_offsets_are_offsets_in_the_text_as_given():
    text = "前言一段\r\n第一章 开始\r\n正文甲乙丙\r\n第二章\r\n正文丁\n第3回　标题\n正文"
    offsets = heading_offsets(text)
    assert [text[o : o + 3] for o in offsets] == ["第一章", "第二章", "第3回"]
    page = normalize(text)
    starts = chapter_starts(page)
    assert [page.source[page.token_start[t]] for t in starts] == ["第", "第", "第"]


def test_passages_found_in_overlapping_segments_merge_into_one():
    # A chapter aligned in two overlapping windows: two views of one passage, one diagonal.
    first = Passage(page_start=1000, page_end=2000, master_start=0, master_end=1000, seeds=990)
    second = Passage(page_start=1800, page_end=4000, master_start=800, master_end=3000, seeds=2190)
    again = Passage(page_start=1000, page_end=2000, master_start=0, master_end=1000, seeds=990)
    elsewhere = Passage(page_start=9000, page_end=9200, master_start=100, master_end=300, seeds=190)
    alignment = merge([second, first, again, elsewhere], master_length=3000, page_length=10_000)
    ends = [(p.page_start, p.page_end, p.master_start, p.master_end) for p in alignment.passages]
    assert ends == [(1000, 4000, 0, 3000), (9000, 9200, 100, 300)]
    assert alignment.coverage == 1.0 and alignment.longest == 3000
    assert alignment.page_share == (3000 + 200) / 10_000


def test_merging_the_halves_of_a_split_alignment_gives_the_whole():
    master = normalize(prose(seed=7, chars=3000)).tokens
    page = np.concatenate([normalize(prose(seed=8, chars=1000)).tokens, master])
    whole = align(page, master)
    cut = len(page) // 2
    left, right = align(page[: cut + 200], master), align(page[cut - 200 :], master)
    shifted = [
        Passage(p.page_start + cut - 200, p.page_end + cut - 200, p.master_start, p.master_end, 0)
        for p in right.passages
    ]
    merged = merge([*left.passages, *shifted], len(master), len(page))
    assert merged.coverage == whole.coverage > 0.99
    assert merged.longest == whole.longest
