"""Feeds read item by item (tracker.reading.feeds): RSS 2.0, RDF and Atom, escaped and inline HTML,
legacy encodings declared only in the XML prolog, and hostile XML."""

from __future__ import annotations

import html

import pytest

from tests.disguise import traditional
from tests.texts import prose
from tracker.reading.extract import extract
from tracker.reading.feeds import FeedError, looks_like_feed, parse_feed

FEED = "http://news.test/feed.xml"
BODY = prose(seed=90, chars=900)
PARAGRAPHS = "".join(f"<p>{p}</p>" for p in BODY.splitlines())


def rss(items: str, encoding: str = "utf-8") -> bytes:
    return (
        f'<?xml version="1.0" encoding="{encoding}"?>'
        '<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/">'
        f"<channel><title>新闻</title>{items}</channel></rss>"
    ).encode(encoding, errors="xmlcharrefreplace")


def test_rss_full_text_summaries_and_item_urls():
    body = rss(
        "<item><title>全文</title><link>http://news.test/a/1.html</link>"
        "<guid>news-1</guid><pubDate>Wed, 01 May 2024 08:00:00 +0800</pubDate>"
        f"<description>导语</description><content:encoded><![CDATA[{PARAGRAPHS}]]>"
        "</content:encoded></item>"
        "<item><title>摘要</title><link>http://news.test/a/2.html</link>"
        "<description>&lt;p&gt;一句话摘要。&lt;/p&gt;</description></item>"
        "<item><title>转载</title><link>http://other.test/x.html</link><guid>g/3?x=1</guid>"
        f"<description>{html.escape(PARAGRAPHS)}</description></item>"
        f"<item><title>无链接</title><description>{html.escape(PARAGRAPHS)}</description></item>"
    )
    full, summary, offsite, unlinked = parse_feed(body, FEED)
    assert full.full and not full.summary and full.guid == "news-1"
    assert full.page_url(FEED) == "http://news.test/a/1.html"
    text = extract(full.page_html(), full.page_url(FEED)).text
    assert BODY.splitlines()[0] in text and BODY.splitlines()[-1] in text
    assert summary.summary and summary.html == "<p>一句话摘要。</p>"  # entities unescaped
    # Off-site link: the copy is the feed's own, stored under the feed URL and the guid.
    assert offsite.page_url(FEED) == "http://news.test/feed.xml#g%2F3%3Fx%3D1"
    assert not offsite.full and not offsite.summary  # a long description: the whole text
    assert unlinked.link is None and unlinked.page_url(FEED).startswith(FEED + "#")
    assert len({item.page_url(FEED) for item in (full, summary, offsite, unlinked)}) == 4


def test_atom_escaped_html_xhtml_and_text_content():
    body = (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        "<title>站点</title>"
        '<entry><title type="html">&lt;b&gt;一&lt;/b&gt;</title><id>tag:news.test,2024:1</id>'
        '<link rel="self" href="/self/1"/><link rel="alternate" href="/2024/05/01/1.html"/>'
        f'<summary>摘要</summary><content type="html">{html.escape(PARAGRAPHS)}</content></entry>'
        '<entry><title>二</title><id>2</id><content type="xhtml">'
        f'<div xmlns="http://www.w3.org/1999/xhtml">{PARAGRAPHS}</div></content></entry>'
        f'<entry><title>三</title><id>3</id><content type="text">{BODY}</content></entry>'
        "</feed>"
    ).encode()
    escaped, xhtml, text = parse_feed(body, FEED)
    assert escaped.title == "一" and escaped.link == "http://news.test/2024/05/01/1.html"
    assert escaped.html == PARAGRAPHS and escaped.full
    assert "xmlns" not in xhtml.html and "<p>" in xhtml.html
    for item in (escaped, xhtml, text):
        extracted = extract(item.page_html(), item.page_url(FEED)).text
        assert all(line in extracted for line in BODY.splitlines()), item.title


def test_rdf_items_and_legacy_encodings_declared_in_the_prolog_only():
    rdf = (
        '<?xml version="1.0" encoding="gb2312"?>'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
        ' xmlns="http://purl.org/rss/1.0/" xmlns:content="http://purl.org/rss/1.0/modules/content/">'
        '<channel rdf:about="http://news.test/"><title>简体</title></channel>'
        '<item rdf:about="http://news.test/a/9.html"><title>简体新闻</title>'
        f"<link>http://news.test/a/9.html</link><content:encoded>{html.escape(PARAGRAPHS)}"
        "</content:encoded></item></rdf:RDF>"
    ).encode("gb2312", errors="xmlcharrefreplace")
    [item] = parse_feed(rdf, FEED, "application/xml")  # no charset in the header
    assert item.guid == "http://news.test/a/9.html" and item.title == "简体新闻"
    assert BODY.splitlines()[0] in item.html
    big5 = rss(
        f"<item><title>正體</title><description>{html.escape(traditional(BODY))}"
        "</description></item>",
        "big5",
    )
    [item] = parse_feed(big5, FEED)
    assert traditional(BODY).splitlines()[0] in item.html


def test_hostile_feeds_expand_nothing_and_fetch_nothing(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">'
        f'<!ENTITY xxe SYSTEM "file://{secret}">]>'
        "<rss><channel><item><title>&c;</title><description>x&xxe;y&c;</description>"
        "</item></channel></rss>"
    ).encode()
    [item] = parse_feed(bomb, FEED)
    assert "TOP-SECRET" not in item.html and "aaaa" not in item.html + item.title
    with pytest.raises(FeedError):
        parse_feed(b"<rss>" + b" " * (11 * 1024 * 1024), FEED)
    with pytest.raises(FeedError):
        parse_feed(b"\x89PNG\r\n\x1a\n\x00\x00\x00" + bytes(range(256)) * 8, FEED)
    assert looks_like_feed(b"<?xml version='1.0'?>\n<rss version='2.0'>")
    assert looks_like_feed(b'<feed xmlns="http://www.w3.org/2005/Atom">')
    assert not looks_like_feed(b"<!DOCTYPE html><html><body>feed</body></html>")
