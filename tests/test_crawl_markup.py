"""Pages read as their readers see them: ``scrapy crawl novel`` of sites that split chapters
over pages, hide junk characters with CSS, draw characters with a web font, or post chapters
in forum threads (:mod:`tests.sites_markup`). Every copy is found (recall >= 0.95 per site, a
split chapter as one page with coverage >= 0.8), no wrong master and no innocent page."""

from __future__ import annotations

import pytest

from tests.sites_markup import (
    font_available,
    forum_site,
    hidden_site,
    score,
    split_site,
    webfont_site,
)
from tests.test_crawl_novel import crawl
from tracker.matching.library import MasterLibrary
from tracker.text.normalize import normalize

pytestmark = pytest.mark.integration

MAX_PARTS = 10
needs_font = pytest.mark.skipif(
    not font_available(),
    reason="the Noto CJK fonts (Debian's fonts-noto-cjk) are not installed: no web font to cut",
)


def crawled(plan, runtime, settings, tmp_path, **extra):
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with plan.site:
        crawl(
            "novel",
            settings,
            tmp_path,
            {"start_url": plan.site.url},
            {"TRACKER_MAX_PARTS": MAX_PARTS, **extra},
        )
        fetched = plan.site.fetched()
    base = plan.site.url.rstrip("/")
    pages = {
        doc["_id"][len(base) :]: doc
        for doc in runtime.db["pages"].find()
        if doc["_id"].startswith(base + "/")
    }
    [run] = list(runtime.db["crawl_runs"].find())
    return pages, fetched, run


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


@needs_font
@pytest.mark.parametrize(
    "served, share",
    [("font", 0.12), ("missing", 0.12), ("garbage", 0.15), ("truncated", 0.15)],
)
def test_web_font_characters_match_decoded_or_not(runtime, settings, tmp_path, served, share):
    plan = webfont_site(served, share)
    pages, fetched, run = crawled(plan, runtime, settings, tmp_path)
    assert set(pages) == plan.stored
    assert_found(plan, runtime)
    stats = run["stats"]
    for path in plan.matched:
        reading = pages[path]["reading"]
        assert reading["pua"] >= 0.9 * share * 1500, (path, reading)
        if served == "font":
            assert reading.get("pua_decoded", 0) >= 0.95 * reading["pua"], (path, reading)
        else:
            assert not reading.get("pua_decoded"), (path, reading)
    assert fetched.get("/fonts/read.woff2", 0) == 1  # once for the crawl, whatever came back
    if served in ("garbage", "truncated"):
        assert stats["tracker__reading__webfont__bad"] == 1
    if served == "font":
        decoded = stats["tracker__reading__webfont__glyphs_decoded"]
        assert decoded >= 0.95 * len(plan.extra["code_points"])


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
