"""Whole books and long pages on the real servers: every chapter a page copies is reported,
with its evidence in the page's own offsets, and small shares are found wherever they sit."""

from __future__ import annotations

import itertools

import pytest

from tracker.fingerprints.document import text_simhash
from tracker.matching.library import MasterLibrary
from tracker.matching.segments import LONG_PAGE_TOKENS, SEGMENT_TOKENS, segments
from tracker.model import MasterDocument
from tracker.text.normalize import normalize

from . import disguise
from .texts import prose

BOOK = [prose(seed=1000 + i, chars=3000) for i in range(40)]
TITLES = [f"第{i + 1}章 风起第{i + 1}" for i in range(len(BOOK))]
IDS = [f"novel/{i + 1:04d}" for i in range(len(BOOK))]


@pytest.fixture()
def library(runtime) -> MasterLibrary:
    lib = MasterLibrary.from_runtime(runtime)
    lib.ingest(
        MasterDocument(doc_id, "novel", title, text)
        for doc_id, title, text in zip(IDS, TITLES, BOOK, strict=True)
    )
    return lib


def whole_book(chapters: list[str]) -> str:
    return "\n".join(f"{title}\n{text}" for title, text in zip(TITLES, chapters, strict=False))


def test_a_whole_book_on_one_page_reports_every_chapter_with_page_offsets(library):
    page = whole_book(BOOK)
    assert len(normalize(page)) > LONG_PAGE_TOKENS  # checked in segments
    seen: list[tuple[int, int]] = []
    found = library.detector().check(page, progress=lambda done, total: seen.append((done, total)))
    assert sorted(m.doc_id for m in found) == IDS
    for match in found:
        i = IDS.index(match.doc_id)
        start = page.index(BOOK[i])
        assert match.coverage > 0.99
        [span] = match.spans  # the chapter is one passage, whichever segments it fell in
        assert abs(span["page_start"] - start) <= 5
        assert abs(span["page_end"] - (start + len(BOOK[i]))) <= 5
        assert span["text"] == page[span["page_start"] : span["page_end"]][:2000]
        assert span["master_start"] <= 5 and span["master_end"] >= len(BOOK[i]) - 5
    # Progress: characters checked so far, from none to the whole page.
    assert seen[0] == (0, len(page)) and seen[-1] == (len(page), len(page))
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))


def test_a_book_run_together_without_titles_or_breaks(library):
    page = "".join(text.replace("\n", "") for text in BOOK[10:30])
    assert sorted(m.doc_id for m in library.detector().check(page)) == IDS[10:30]


def test_a_whole_book_in_traditional_with_ads(library):
    page = disguise.traditional(whole_book([disguise.with_ads(text) for text in BOOK]))
    found = library.detector().check(page)
    assert sorted(m.doc_id for m in found) == IDS
    assert all(m.coverage > 0.9 for m in found)


def test_a_chapter_straddling_two_windows_is_aligned_whole(library):
    filler = prose(seed=2000, chars=SEGMENT_TOKENS - 1500).replace("\n", "")
    chapter = BOOK[7].replace("\n", "")
    page = filler + chapter + prose(seed=2001, chars=SEGMENT_TOKENS).replace("\n", "")
    normalized = normalize(page)
    first, second = segments(len(normalized))[:2]
    start = int(normalized.token_start.searchsorted(len(filler)))
    end = start + len(normalize(chapter))
    assert start < second[0] < first[1] < end  # neither window holds the chapter whole
    [match] = library.detector().check(page)
    assert match.doc_id == IDS[7] and match.coverage > 0.99
    [span] = match.spans
    assert abs(span["page_start"] - len(filler)) <= 5
    assert abs(span["page_end"] - (len(filler) + len(chapter))) <= 5


def han(text: str, start: int, count: int) -> str:
    """The shortest slice of ``text`` from ``start`` holding ``count`` Han characters (after
    normalisation, ``count`` tokens: what ``min_passage_chars`` counts)."""
    end, seen = start, 0
    while seen < count:
        seen += "\u4e00" <= text[end] <= "\u9fff"
        end += 1
    return text[start:end]


@pytest.mark.parametrize("where", [0.0, 0.5, 0.97])
def test_any_passage_of_100_characters_is_found_wherever_it_sits(runtime, where):
    library = MasterLibrary.from_runtime(runtime)
    news, chapter = prose(seed=5000, chars=800), prose(seed=5001, chars=6000)
    library.ingest(
        [
            MasterDocument("news/1", "news", "短讯", news),  # a short master: dense anchors
            MasterDocument("book/1", "book", "第1章", chapter),  # a long one: sparse anchors
        ]
    )
    filler = prose(seed=5002, chars=60_000)
    at = int(len(filler) * where)
    for doc_id, text in (("news/1", news), ("book/1", chapter)):
        for start in (0, 211, 400):
            passage = han(text, start, 100)
            page = filler[:at] + "\n" + passage + "\n" + filler[at:]
            [match] = library.detector().check(page)
            assert match.doc_id == doc_id
            [span] = match.spans
            assert abs(span["page_start"] - page.index(passage)) <= 3


def test_a_passage_pasted_across_a_heading_like_line_is_found_whole(runtime):
    """A long page is cut at its chapter headings: a 110-character passage with a line that
    looks like one in its middle must not fall apart into two halves too short to count."""
    library = MasterLibrary.from_runtime(runtime)
    chapter = prose(seed=5100, chars=6000)
    library.ingest([MasterDocument("book/1", "book", "第1章", chapter)])
    passage = han(chapter, 300, 110)
    middle = len(passage) // 2
    filler = prose(seed=5101, chars=60_000).replace("\n", "")
    at = int(SEGMENT_TOKENS * 0.75)  # a heading there ends the first segment
    page = filler[:at] + passage[:middle] + "\n第十二章 风云\n" + passage[middle:] + filler[at:]
    normalized = normalize(page)
    heading = int(normalized.token_start.searchsorted(page.index("第十二章")))
    assert segments(len(normalized), [heading])[0] == (0, heading)
    [match] = library.detector().check(page)
    assert match.doc_id == "book/1"
    assert abs(match.spans[0]["page_start"] - page.index(passage[:middle])) <= 3


def test_a_long_share_of_a_long_article_inside_other_news(runtime):
    library = MasterLibrary.from_runtime(runtime)
    article = prose(seed=6000, chars=6300)
    library.ingest([MasterDocument("news/long", "news", "长文", article)])
    passage = article[2000:3600]
    filler = prose(seed=6001, chars=4700)
    [match] = library.detector().check(filler[:2000] + passage + filler[2000:])
    assert match.doc_id == "news/long" and 0.2 < match.coverage < 0.3


def test_a_crawled_long_page_is_checked_in_segments_too(library):
    page = whole_book(BOOK[:20])
    normalized = normalize(page)
    found = library.detector().check_normalized(normalized, text_simhash(normalized))
    assert sorted(m.doc_id for m in found) == IDS[:20]


def test_formulas_a_news_library_repeats_prove_no_copy(runtime):
    """Three articles share the agency's formulas (a third of each); a page of other news that
    uses the same formulas covers a third of every one of them, in passages of 75 characters,
    and copies none. Their own parts, copied, are found."""
    library = MasterLibrary.from_runtime(runtime)
    formulas = [prose(seed=7000 + i, chars=75).replace("\n", "") for i in range(4)]
    own = {k: [prose(seed=7100 + 10 * k + i, chars=200) for i in range(3)] for k in range(3)}
    articles = {
        f"news/{k}": "".join(
            f + "\n" + (own[k][i] if i < 3 else "") for i, f in enumerate(formulas)
        )
        for k in range(3)
    }
    library.ingest(
        MasterDocument(doc_id, "news", doc_id, text) for doc_id, text in articles.items()
    )
    other = [prose(seed=7200 + i, chars=400) for i in range(4)]
    page = "".join(f + "\n" + o for f, o in zip(formulas, other, strict=True))
    assert library.detector().check(page) == []
    [match] = library.detector().check(other[0] + own[1][0] + own[1][1] + other[1])
    assert match.doc_id == "news/1"


def test_long_innocent_pages_and_quotes_are_not_flagged(library):
    quotes = "".join(f"书中写道：“{text[200:240]}”" for text in BOOK[:5])
    filler = prose(seed=4000, chars=80_000)
    page = filler[:20_000] + quotes + filler[20_000:]
    assert library.detector().check(page) == []
