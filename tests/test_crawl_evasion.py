"""Markup cannot hide a page: crawls of sites that try.

* Pirate chapter pages whose ``<link rel="canonical">`` names an innocent page, each chapter
  linked only from the one before: every pirate page is stored, matched and followed.
* A site repeating a passage of a master on every page, so that the passage would be taken
  for site boilerplate and dropped: it is not, and every page is matched.
* A page crawled six times, its text changing a little each time: its own lines are counted
  once, never taken for the site's boilerplate.
"""

from __future__ import annotations

import html
import itertools

import pytest

from tests.sites import Page, TestSite, book_masters, chapter_p, html_page, link_list
from tests.test_crawl_novel import crawl
from tests.texts import prose
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument

pytestmark = pytest.mark.integration


def test_a_canonical_link_to_an_innocent_page_hides_nothing(runtime, settings, tmp_path):
    masters = book_masters(3, work="证据书")
    site = TestSite()
    site.pages["/"] = Page(html_page("书城", link_list([("/read/1.html", "开始阅读")])).encode())
    site.pages["/about/intro.html"] = Page(
        html_page("本站简介", chapter_p("本站简介", prose(4545, 1200))).encode()
    )
    innocent = '<link rel="canonical" href="/about/intro.html">'
    for i, master in enumerate(masters, start=1):
        onward = f'<a href="/read/{i + 1}.html">下一章</a>' if i < len(masters) else ""
        site.pages[f"/read/{i}.html"] = Page(
            html_page(
                master.title, chapter_p(master.title, master.text, onward), head=innocent
            ).encode()
        )
    MasterLibrary.from_runtime(runtime).ingest(masters)
    with site:
        crawl("novel", settings, tmp_path, {"start_url": site.url})
        fetched = site.fetched()
    for path in ("/", "/read/1.html", "/read/2.html", "/read/3.html", "/about/intro.html"):
        assert fetched[path] == 1, path
    base = site.url.rstrip("/")
    pages = {doc["_id"][len(base) :]: doc for doc in runtime.db["pages"].find()}
    assert {path: doc["matched_doc_ids"] for path, doc in pages.items()} == {
        "/read/1.html": [masters[0].doc_id],
        "/read/2.html": [masters[1].doc_id],
        "/read/3.html": [masters[2].doc_id],
        "/about/intro.html": [],  # the canonical, fetched once and stored for what it is
    }
    [run] = list(runtime.db["crawl_runs"].find())
    assert run["traps"]["canonical"] == 3


def test_a_master_passage_repeated_on_every_page_is_not_boilerplate(runtime, settings, tmp_path):
    master = MasterDocument("书/0001", "书", "第一章", prose(seed=71, chars=1600))
    passage = [line for line in master.text.splitlines() if len(line) <= 80][:8]
    stamp = "本书由某某文学网独家首发欢迎各位书友收藏"
    site = TestSite()
    n = 8
    site.pages["/"] = Page(
        html_page("书库", link_list((f"/p/{i}.html", f"第{i}页") for i in range(n))).encode()
    )
    for i in range(n):  # each page: the stamp, text of its own, then the same copied passage
        lines = [stamp, *prose(seed=200 + i, chars=500).splitlines(), *passage]
        body = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
        site.pages[f"/p/{i}.html"] = Page(html_page(f"第{i}页", f"<div>{body}</div>").encode())
    MasterLibrary.from_runtime(runtime).ingest([master])
    with site:
        crawl("novel", settings, tmp_path, {"start_url": site.url}, {"CONCURRENT_REQUESTS": 1})
    base = site.url.rstrip("/")
    pages = {doc["_id"][len(base) :]: doc for doc in runtime.db["pages"].find()}
    assert {path: doc["matched_doc_ids"] for path, doc in pages.items()} == {
        f"/p/{i}.html": [master.doc_id] for i in range(n)
    }
    [run] = list(runtime.db["crawl_runs"].find())
    # The stamp is the site's boilerplate from the fifth page on; the passage never is.
    assert run["stats"]["tracker__boilerplate_lines"] == n - 4


def test_recrawling_a_page_never_makes_its_own_lines_boilerplate(runtime, settings, tmp_path):
    master = MasterDocument("书/0002", "书", "第二章", prose(seed=72, chars=1200))
    own = [line for line in prose(seed=73, chars=600).splitlines() if len(line) <= 80]
    visits = itertools.count(1)
    site = TestSite()
    site.pages["/"] = Page(html_page("书库", link_list([("/own.html", "本页")])).encode())

    def own_page(path: str) -> Page:  # the page's own short lines, and a line that changes
        lines = [*own, f"本页已被阅读{next(visits)}次", *master.text.splitlines()]
        body = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
        return Page(html_page("本页", f"<div>{body}</div>").encode())

    site.route(r"^/own\.html$", own_page)
    MasterLibrary.from_runtime(runtime).ingest([master])
    with site:
        for crawl_no in range(6):
            crawl("novel", settings, tmp_path, {"start_url": site.url}, name=f"visit{crawl_no}")
    runs = list(runtime.db["crawl_runs"].find().sort("finished_at", 1))
    assert len(runs) == 6
    assert [run["stats"].get("tracker__pages_extracted") for run in runs] == [1] * 6
    assert [run["stats"].get("tracker__boilerplate_lines", 0) for run in runs] == [0] * 6
