"""`scrapy crawl news` from a front page whose feeds carry whole articles: RSS 2.0 with
``content:encoded``, Atom with entity-escaped HTML and inline XHTML, and a GB2312 feed declared
only in its XML prolog. Every item with its own text is stored and matched as a page (under its
link, or ``FEED_URL#guid``); a summary's article is fetched instead; nothing else is."""

from __future__ import annotations

import html

import pytest

from tests.sites import Page, TestSite, article_page, html_page
from tests.test_crawl_novel import crawl
from tests.texts import prose
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument

pytestmark = pytest.mark.integration


def paragraphs(text: str) -> str:
    return "".join(f"<p>{line}</p>" for line in text.splitlines())


def feed_site() -> tuple[TestSite, list[MasterDocument], dict[str, str]]:
    masters = [
        MasterDocument(f"feed-{i}", "新闻", f"新闻{i}", prose(3000 + i, 900)) for i in range(1, 7)
    ]
    text = {i: masters[i - 1].text for i in range(1, 7)}
    site = TestSite()
    base = site.url.rstrip("/")
    head = "".join(
        f'<link rel="alternate" type="application/{kind}+xml" href="{path}">'
        for kind, path in (("rss", "/rss.xml"), ("atom", "/atom.xml"), ("rss", "/gb.xml"))
    )
    site.pages["/"] = Page(html_page("新闻网", "<p>首页</p>", head=head).encode())
    rss_head = (
        '<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>'
    )
    site.pages["/rss.xml"] = Page(
        (
            f'<?xml version="1.0" encoding="utf-8"?>{rss_head}<title>新闻</title>'
            # 1. Full text under an on-site link: stored under the link, the link not fetched.
            f"<item><title>一</title><link>{base}/2024/06/01/101.html</link>"
            f"<description>导语</description><content:encoded><![CDATA[{paragraphs(text[1])}]]>"
            "</content:encoded></item>"
            # 2. A summary: its article is fetched and stored instead.
            f"<item><title>二</title><link>{base}/2024/06/02/102.html</link>"
            "<description>一句话导语。</description></item>"
            # 3. Full text of an article on another site: stored under the feed's URL + guid.
            "<item><title>三</title><link>http://localhost:1/2024/06/03/103.html</link>"
            f"<guid>m3</guid><content:encoded>{html.escape(paragraphs(text[3]))}"
            "</content:encoded></item></channel></rss>"
        ).encode(),
        "application/rss+xml",
    )
    site.pages["/2024/06/02/102.html"] = Page(article_page("二", text[2]))
    site.pages["/atom.xml"] = Page(
        (
            '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
            "<title>站点</title>"
            '<entry><title>四</title><id>tag:test,2024:4</id><link href="/2024/06/04/104.html"/>'
            f'<content type="html">{html.escape(paragraphs(text[4]))}</content></entry>'
            '<entry><title>五</title><id>urn:uuid:5</id><content type="xhtml">'
            f'<div xmlns="http://www.w3.org/1999/xhtml">{paragraphs(text[5])}</div>'
            "</content></entry></feed>"
        ).encode(),
        "application/atom+xml",
    )
    site.pages["/gb.xml"] = Page(  # GB2312, said only in the XML prolog
        (
            f'<?xml version="1.0" encoding="gb2312"?>{rss_head}<title>简体</title>'
            f"<item><title>六</title><link>{base}/2024/06/06/106.html</link>"
            f"<content:encoded>{html.escape(paragraphs(text[6]))}</content:encoded></item>"
            "</channel></rss>"
        ).encode("gb2312", errors="xmlcharrefreplace"),
        "application/rss+xml",
    )
    stored = {
        "/2024/06/01/101.html": "feed-1",
        "/2024/06/02/102.html": "feed-2",
        "/rss.xml#m3": "feed-3",
        "/2024/06/04/104.html": "feed-4",
        "/atom.xml#urn%3Auuid%3A5": "feed-5",
        "/2024/06/06/106.html": "feed-6",
    }
    return site, masters, stored


def test_full_text_feeds_are_checked_item_by_item(runtime, settings, tmp_path):
    site, masters, expected = feed_site()
    MasterLibrary.from_runtime(runtime).ingest(masters)
    with site:
        crawl("news", settings, tmp_path, {"start_url": site.url})
        fetched = site.fetched()
    assert dict(fetched) == {
        "/robots.txt": 1,
        "/": 1,
        "/rss.xml": 1,
        "/atom.xml": 1,
        "/gb.xml": 1,
        "/2024/06/02/102.html": 1,  # the summary's article; full-text items' links are not
    }
    base = site.url.rstrip("/")
    pages = {doc["_id"][len(base) :]: doc for doc in runtime.db["pages"].find()}
    assert {path: doc["matched_doc_ids"] for path, doc in pages.items()} == {
        path: [doc_id] for path, doc_id in expected.items()
    }
    [run] = list(runtime.db["crawl_runs"].find())
    assert run["stats"]["tracker__feed_items"] == 5
    assert "bad_feed" not in run["errors"]
