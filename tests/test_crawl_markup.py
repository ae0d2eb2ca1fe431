"""Pages read as their readers see them: ``scrapy crawl novel`` of sites that split chapters
over pages, hide junk characters with CSS, draw characters with a web font, or post chapters
in forum threads (:mod:`tests.sites_markup`). Every copy is found (recall >= 0.95 per site, a
split chapter as one page with coverage >= 0.8), no wrong master and no innocent page. A
joined chapter's evidence holds every part; a part behind a challenge is unread; a chapter
written by scripts is read whole through the browser, as a reader sees it."""

from __future__ import annotations

import contextlib
import hashlib

import pytest

from tests.sites_markup import (
    font_available,
    forum_site,
    hidden_site,
    rendered_split_site,
    score,
    split_site,
    walled_part_site,
    webfont_site,
)
from tests.test_crawl_defended import needs_chromium
from tests.test_crawl_novel import crawl
from tracker.enforcement.warc import RecordRef, parse_records, read_member
from tracker.matching.library import MasterLibrary
from tracker.stores.evidence import CaptureStore
from tracker.text.normalize import normalize

pytestmark = pytest.mark.integration

MAX_PARTS = 10
needs_font = pytest.mark.skipif(
    not font_available(),
    reason="the Noto CJK fonts (Debian's fonts-noto-cjk) are not installed: no web font to cut",
)


def crawled(plan, runtime, settings, tmp_path):
    [(pages, fetched)], run = crawled_together([plan], runtime, settings, tmp_path)
    return pages, fetched, run


def crawled_together(plans, runtime, settings, tmp_path):
    """One crawl of the plans' sites (one start URL each): per site its stored pages by path
    and the requests it answered, and the run record."""
    for plan in plans:
        MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with contextlib.ExitStack() as sites:
        for plan in plans:
            sites.enter_context(plan.site)
        start = ",".join(plan.site.url for plan in plans)
        crawl("novel", settings, tmp_path, {"start_url": start}, {"TRACKER_MAX_PARTS": MAX_PARTS})
        fetched = [plan.site.fetched() for plan in plans]
    stored = list(runtime.db["pages"].find())
    found = []
    for plan, answered in zip(plans, fetched, strict=True):
        base = plan.site.url.rstrip("/")
        pages = {d["_id"][len(base) :]: d for d in stored if d["_id"].startswith(base + "/")}
        found.append((pages, answered))
    [run] = list(runtime.db["crawl_runs"].find())
    return found, run


def assert_found(plan, runtime) -> None:
    result = score(plan, runtime.db, plan.site.url)
    assert result.recall >= 0.95, result
    assert result.wrong == 0 and result.innocent_flagged == 0, result
    assert result.low_coverage == 0, result


def test_a_chapter_over_three_pages_is_one_page(runtime, settings, tmp_path):
    plan = split_site(MAX_PARTS)
    pages, fetched, run = crawled(plan, runtime, settings, tmp_path)
    assert set(pages) == plan.stored
    base = plan.site.url.rstrip("/")
    for path, parts in plan.extra["parts"].items():
        assert [url[len(base) :] for url in pages[path].get("parts", [])] == parts, path
    assert_found(plan, runtime)
    for path in ("/book/9/1.html", "/book/9/2.html", "/book/9/3.html", "/book/9/4.html"):
        [match] = runtime.db["matches"].find({"url": base + path})
        assert match["coverage"] >= 0.95, (path, match["coverage"])
    # Each part fetched once: the 下一页 of chapter 2's last page is chapter 3, crawled as a
    # chapter; the endless chain stops at the cap; the loop at the first page met again.
    assert fetched["/book/9/3.html"] == 1
    assert fetched["/book/9/5.html"] == 1 and fetched["/book/9/5_3.html"] == 1
    assert (
        max(int(p[len("/book/9/6_") : -5]) for p in fetched if p.startswith("/book/9/6_"))
        == MAX_PARTS
    )
    assert fetched["/book/9/7-b.html"] == 2  # fetched as a part, found another chapter
    stats = run["stats"]
    for key, count in plan.extra["stats"].items():
        assert stats.get(key) == count, key
    assert "/book/9/7-b.html" in pages and not pages["/book/9/7.html"].get("parts")
    # The evidence of a joined chapter holds every part as served: one WARC response a part.
    captures = CaptureStore(runtime.db)
    matched = {m["url"] for m in runtime.db["matches"].find()}
    joined = {p: parts for p, parts in plan.extra["parts"].items() if parts and base + p in matched}
    assert len(joined) >= 4, joined
    for path, parts in joined.items():
        urls = [base + path, *(base + part for part in parts)]
        capture = captures.latest(base + path)
        assert capture is not None, path
        assert [part["url"] for part in capture["parts"]] == urls, path
        for part, url in zip(capture["parts"], urls, strict=True):
            response = RecordRef.from_dict(part["records"][0])
            (record,) = parse_records(read_member(settings.data_dir / "evidence", response))
            assert record.target_uri == url and part["status"] == 200
            assert hashlib.sha256(record.payload).hexdigest() == part["sha256"]
        assert len({part["sha256"] for part in capture["parts"]}) == len(urls), path


def test_hidden_characters_are_not_read_and_pseudo_elements_are(runtime, settings, tmp_path):
    plan = hidden_site()
    pages, fetched, run = crawled(plan, runtime, settings, tmp_path)
    assert set(pages) == plan.stored
    assert_found(plan, runtime)
    for path, clean in plan.extra["clean"].items():
        # Exactly the text a reader sees: no junk character, none of the pseudo-elements' lost.
        assert normalize(clean).chars in normalize(pages[path]["text"]).chars, plan.extra[
            "technique"
        ].get(path, path)
    assert fetched["/static/read.css"] == 1  # fetched once for the crawl
    assert pages["/read/6.html"]["reading"]["pseudo"] > 50
    assert pages["/read/1.html"]["reading"]["hidden"] > 100
    assert not run["stats"].get("tracker__reading__css_errors")


def test_a_part_behind_a_challenge_is_unread_and_its_chapter_kept(runtime, settings, tmp_path):
    plan = walled_part_site()
    pages, fetched, run = crawled(plan, runtime, settings, tmp_path)
    assert set(pages) == plan.stored
    base = plan.site.url.rstrip("/")
    for path in plan.stored:
        assert not pages[path].get("parts") and pages[path]["matched_doc_ids"], path
        assert pages[path]["parts_unread"] == [base + path.replace(".html", "_2.html")]
    unread = {d["_id"][len(base) :]: d["reason"] for d in runtime.db["unread_pages"].find()}
    assert sorted(unread) == plan.extra["unread"], unread
    assert all(fetched[path] == 1 for path in plan.extra["unread"])  # as a part, not again
    assert run["stats"]["tracker__parts__unread"] == 2


@needs_chromium
def test_a_script_written_chapter_over_pages_is_read_whole_and_as_a_reader_sees_it(
    runtime, settings, tmp_path
):
    """Rendering feeds the same reading: the rendered chapter's part is fetched through the
    browser too and joined, and the junk the page's CSS hides is dropped from the rendered
    DOM."""
    plan = rendered_split_site()
    pages, _, run = crawled(plan, runtime, settings, tmp_path)
    assert set(pages) == plan.stored
    assert_found(plan, runtime)
    base = plan.site.url.rstrip("/")
    for path, parts in plan.extra["parts"].items():
        assert [url[len(base) :] for url in pages[path].get("parts", [])] == parts, path
        assert pages[path]["reading"]["hidden"] > 100, path
        assert normalize(plan.extra["clean"][path]).chars == normalize(pages[path]["text"]).chars
        capture = CaptureStore(runtime.db).latest(base + path)
        assert [part["url"] for part in capture["parts"]] == [base + path, base + parts[0]]
    assert run["stats"]["tracker__render__pages"] >= 4  # both pages of both chapters


@needs_font
def test_web_font_characters_are_decoded(runtime, settings, tmp_path):
    plan = webfont_site("font", 0.12)
    pages, fetched, run = crawled(plan, runtime, settings, tmp_path)
    assert set(pages) == plan.stored
    assert_found(plan, runtime)
    for path in plan.matched:
        reading = pages[path]["reading"]
        assert reading["pua"] >= 0.9 * 0.12 * 1500, (path, reading)
        assert reading.get("pua_decoded", 0) >= 0.95 * reading["pua"], (path, reading)
    assert fetched["/fonts/read.woff2"] == 1  # once for the crawl
    decoded = run["stats"]["tracker__reading__webfont__glyphs_decoded"]
    assert decoded >= 0.95 * len(plan.extra["code_points"])


@needs_font
def test_characters_of_a_font_not_served_or_not_a_font_still_match(runtime, settings, tmp_path):
    plans = [  # sites of their own texts: all on 127.0.0.1, one site to the boilerplate counts
        webfont_site(served, 0.15, f"字体书{k}", seed=1000 + 100 * k)
        for k, served in enumerate(("missing", "garbage", "truncated"))
    ]
    found, run = crawled_together(plans, runtime, settings, tmp_path)
    for plan, (pages, fetched) in zip(plans, found, strict=True):
        served = plan.extra["served"]
        assert set(pages) == plan.stored, served
        assert_found(plan, runtime)
        for path in plan.matched:
            reading = pages[path]["reading"]
            assert reading["pua"] >= 0.9 * 0.15 * 1500 and not reading.get("pua_decoded")
        assert fetched["/fonts/read.woff2"] == 1, served  # once, whatever came back
    assert run["stats"]["tracker__reading__webfont__bad"] == 3  # each logged and counted


def test_forum_threads_are_read_post_by_post_and_page_by_page(runtime, settings, tmp_path):
    plan = forum_site()
    pages, fetched, _ = crawled(plan, runtime, settings, tmp_path)
    assert set(pages) == plan.stored
    base = plan.site.url.rstrip("/")
    for path, parts in plan.extra["parts"].items():
        assert [url[len(base) :] for url in pages[path]["parts"]] == parts, path
    assert_found(plan, runtime)
    discuz = pages["/thread-4242-1-1.html"]
    assert discuz["extractor"] == "discuz" and discuz["reading"]["posts"] == 12
    assert "本人作品，禁止转载" not in discuz["text"]  # signatures left out
    bbs = pages["/dispbbs.asp?boardid=5&id=2005&page=1"]
    assert bbs["extractor"] == "posts" and bbs["reading"]["posts"] >= 3  # the chapter pieces
    assert all(count == 1 for path, count in fetched.items() if path != "/robots.txt"), fetched
