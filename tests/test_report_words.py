"""One word per meaning in the report (issue 28): a page's *copied share* of a master and a
work's *chapters found* are told apart, a chapter counts as copied only at the copied share the
README states (partly copied below it, counted apart), news works are counted in articles (as
stored at ingest, or read from an older library's text), evidence excerpts leave out the lines
the pirate inserted, and hostile page strings stay text in the HTML."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from tests.html_check import assert_inert, elements, links
from tracker.matching.detector import MOST_OF_THE_MASTER
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.reports import build_report, to_csv, to_html, to_json
from tracker.reports.build import COPIED_SHARE, INSERTED, copied_shares, copied_text
from tracker.reports.notices import to_notices
from tracker.stores.pages import MatchStore, PageRecord, PageStore
from tracker.text.chapters import document_kind

pytestmark = pytest.mark.integration

DAY = date(2031, 3, 4)
NOW = datetime(2031, 3, 4, 10, tzinfo=UTC)
BOOK = "山河志"
PAPER = "人民日报1998"
OLD_PAPER = "旧报"
NEWS_TEXT = "本报北京１２月３１日讯　记者报道：新年音乐会今晚在人民大会堂举行。" * 8
AD_LINE = "笔趣阁最快更新，请记住本站域名 www.biquge.com"
HOSTILE_TITLE = "<img src=x onerror=alert(1)>"
HOSTILE_QUOTES = "https://pirate.example/q?a=\"b\"&c='d'><script>alert(2)</script>"
SCRIPT_URL = "javascript:alert(3)//pirate"
CSP = "default-src 'none'; style-src 'unsafe-inline'"  # no script, nothing loaded


def match(doc_id: str, work: str, coverage: float, text: str) -> dict:
    return {
        "doc_id": doc_id,
        "work": work,
        "title": f"{work} {doc_id}",
        "score": coverage,
        "coverage": coverage,
        "method": "align",
        "spans": [
            {"page_start": 0, "page_end": len(text), "master_start": 0, "master_end": len(text),
             "text": text}
        ],
    }  # fmt: skip


@pytest.fixture()
def library(runtime, settings):
    """A book of four chapters and a newspaper's article, ingested; an older library's news
    master, stored without its kind."""
    chapters = [
        MasterDocument(f"{BOOK}/{n:04d}", BOOK, f"第{n}章", f"第{n}章的正文，山高水长。" * 30)
        for n in range(1, 5)
    ]
    article = MasterDocument("news-1998-01-01", PAPER, "北京举行新年音乐会", NEWS_TEXT)
    MasterLibrary.from_runtime(runtime).ingest([*chapters, article])
    runtime.db["masters"].insert_one(
        {"_id": "old-1", "n": 10_000, "work": OLD_PAPER, "title": "通稿",
         "text": "新华社北京１月５日电　" + NEWS_TEXT}
    )  # fmt: skip
    return runtime


@pytest.fixture()
def report(library):
    store = MatchStore(library.db)
    store.record(
        "https://pirate.example/book/1.html",
        [
            match(f"{BOOK}/0001", BOOK, 1.0, "第1章的正文，山高水长。" * 30),
            match(f"{BOOK}/0002", BOOK, 0.225, "第2章的正文，山高水长。" * 7),
        ],
        now=NOW,
    )
    store.record(
        "https://mirror.example/b/2",
        [match(f"{BOOK}/0002", BOOK, 0.9, "第2章的正文，山高水长。" * 27)],
        now=NOW,
    )
    store.record(
        "https://pirate.example/news/1.html",
        [match("news-1998-01-01", PAPER, 0.9, f"{NEWS_TEXT[:40]}\n{AD_LINE}\n{NEWS_TEXT[40:80]}")],
        now=NOW,
    )
    store.record(HOSTILE_QUOTES, [match("old-1", OLD_PAPER, 0.8, NEWS_TEXT[:60])], now=NOW)
    store.record(SCRIPT_URL, [match("old-1", OLD_PAPER, 0.7, NEWS_TEXT[:50])], now=NOW)
    PageStore(library.db).save(
        PageRecord(url=HOSTILE_QUOTES, text="x", title=HOSTILE_TITLE), now=NOW
    )
    return build_report(library.db, DAY, now=NOW)


def test_the_copied_threshold_is_the_detectors():
    assert COPIED_SHARE == MOST_OF_THE_MASTER == 0.5


def test_a_chapter_counts_as_copied_only_at_the_copied_share(report):
    book = next(w for w in report["works"] if w["work"] == BOOK)
    assert (book["unit"], book["chapters"], book["total_chapters"]) == ("chapter", 2, 4)
    assert book["found_share"] == book["coverage"] == 0.5  # the old key, kept
    # Chapter 2 is copied at 90% on the mirror: copied. On pirate.example only 22.5% of it.
    assert (book["copied_chapters"], book["partial_chapters"], book["partly_copied"]) == (2, 0, [])
    sites = {s["site"]: s for s in book["sites"]}
    counts = {s: (e["copied_chapters"], e["partial_chapters"]) for s, e in sites.items()}
    assert counts == {"pirate.example": (1, 1), "mirror.example": (1, 0)}


def test_partly_copied_chapters_are_listed_with_their_share(library):
    MatchStore(library.db).record(
        "https://pirate.example/book/9.html",
        [match(f"{BOOK}/0003", BOOK, 0.225, "第3章的正文，山高水长。" * 7)],
        now=NOW,
    )
    report = build_report(library.db, DAY, now=NOW)
    book = next(w for w in report["works"] if w["work"] == BOOK)
    assert (book["chapters"], book["copied_chapters"], book["partial_chapters"]) == (1, 0, 1)
    assert book["partly_copied"] == [
        {"doc_id": f"{BOOK}/0003", "title": f"{BOOK} {BOOK}/0003", "copied_share": 0.225}
    ]
    html = to_html(report)
    text = "".join(elements(html).text)
    assert "Chapters found: 1 of 4 chapters (25.0%): 0 copied, 1 partly." in text
    assert "partly copied, 22.5%" in text
    assert "Coverage" not in html  # the one word, two meanings, is gone from the page
    assert "<th>Copied share</th>" in html


def test_a_chapter_split_over_pages_is_copied_and_two_copies_of_a_part_are_not():
    def part(doc_id: str, coverage: float, start: int, end: int) -> dict:
        found = match(doc_id, BOOK, coverage, "x" * (end - start))
        found["spans"][0].update(master_start=start, master_end=end)
        return found

    thirds = [part("c1", 0.33, 0, 200), part("c1", 0.33, 200, 400), part("c1", 0.34, 400, 600)]
    twice = [part("c2", 0.3, 0, 180), part("c2", 0.3, 0, 180), part("c2", 0.1, 150, 200)]
    assert copied_shares(thirds + twice) == {"c1": 0.99, "c2": 0.3333}


def test_news_works_are_counted_in_articles(report, library, settings):
    assert document_kind(NEWS_TEXT) == "article" and document_kind("第一回 甄士隐") == "chapter"
    works = {w["work"]: w for w in report["works"]}
    assert works[PAPER]["unit"] == "article"
    assert works[OLD_PAPER]["unit"] == "article"  # stored without a kind: read from its text
    news_page = next(p for p in report["pages"] if p["url"].endswith("/news/1.html"))
    assert [c["label"] for c in news_page["copies"]] == [f"1 article of {PAPER}"]
    old = next(p for p in report["pages"] if p["url"] == HOSTILE_QUOTES)
    assert [c["label"] for c in old["copies"]] == [f"1 article of {OLD_PAPER}"]
    book_page = next(p for p in report["pages"] if p["url"].endswith("/book/1.html"))
    assert [c["label"] for c in book_page["copies"]] == [f"2 chapters of {BOOK} (1–2)"]
    html = to_html(report)
    assert "Articles found: 1 of 1 article (100.0%): 1 copied." in "".join(elements(html).text)
    notices = to_notices(report, library.db, replace(settings, notice_language="en"))
    assert f"Copies: 《{PAPER}》" in notices["pirate.example"]
    assert "chapter" not in notices["pirate.example"].split("《" + PAPER)[1].split("\n")[0]


def test_evidence_leaves_out_the_lines_the_pirate_inserted(report, library, settings):
    page = next(p for w in report["works"] for p in w["pages"] if p["url"].endswith("/news/1.html"))
    assert AD_LINE not in page["evidence"] and "biquge" not in page["evidence"]
    before, after = (" ".join(part.split()) for part in (NEWS_TEXT[:40], NEWS_TEXT[40:80]))
    assert page["evidence"] == f"{before} {INSERTED} {after}"  # whitespace collapsed
    notice = to_notices(report, library.db, replace(settings, notice_language="en"))
    notice = notice["pirate.example"]
    assert f"Evidence, as found on the page: > {before} {INSERTED} {after}" in notice
    assert "笔趣阁" not in notice and f"{INSERTED} in a passage: a line the site inserted" in notice
    assert "笔趣阁" not in to_html(report) and "笔趣阁" not in to_json(report)
    assert copied_text("正文一\n【笔趣阁 www.biquge.com】\n正文二") == f"正文一 {INSERTED} 正文二"
    assert copied_text("  没有广告的\n正文  ") == "没有广告的 正文"


def test_hostile_strings_stay_text_in_the_html_report(report):
    html = to_html(report)
    parsed = assert_inert(html)
    policy = {"http-equiv": "Content-Security-Policy", "content": CSP}
    assert ("meta", policy) in parsed.found
    assert not [tag for tag, _ in parsed.found if tag in ("script", "link")]
    assert HOSTILE_TITLE in parsed.text  # shown as the text it is
    assert HOSTILE_QUOTES in links(html)  # the quotes survive inside the attribute, escaped
    assert SCRIPT_URL not in links(html) and SCRIPT_URL in " ".join(parsed.text)
    assert all(url.startswith(("https://", "#group-")) for url in links(html))
    assert HOSTILE_QUOTES in {p["url"] for p in json.loads(to_json(report))["pages"]}
    assert HOSTILE_QUOTES in {row["url"] for row in csv.DictReader(io.StringIO(to_csv(report)))}
