"""The per-site body locator (tracker/reading/locator.py): pages read by it extract exactly as
trafilatura reads them, it is used only once learned and while pages verify, and a check that
disagrees forgets it."""

from __future__ import annotations

import html
from dataclasses import replace

import lxml.html

from tests.texts import prose
from tracker.reading.extract import element_text, extract, extract_normalized
from tracker.reading.locator import CHECK_EVERY, CONFIRM, BodyLocators

CHAPTER = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>第{n}章_书名_某小说站</title>
</head><body><div class="nav"><a href="/">首页</a> <a href="/list.html">目录</a></div>
<h1>第{n}章</h1><div id="content">{body}</div>
<div class="bottem"><a href="/p/{prev}.html">上一章</a> <a href="/p/{next}.html">下一章</a></div>
<div class="footer">本站所有小说均来自网友上传</div></body></html>"""

OTHER_TEMPLATE = """<html><head><meta charset="utf-8"><title>第{n}章</title></head><body>
<div class="main"><article><h2>第{n}章</h2>{paragraphs}</article></div>
<div class="side"><a href="/a">热门</a><a href="/b">推荐</a></div></body></html>"""


def chapter(n: int, extra: str = "") -> str:
    lines = prose(7_000 + n, 2500).splitlines()
    body = "<br /><br />".join(f"&nbsp;&nbsp;{html.escape(line)}" for line in lines)
    return CHAPTER.format(n=n, body=body + extra, prev=max(n - 1, 0), next=n + 1)


def other_template(n: int) -> str:
    lines = prose(9_000 + n, 2500).splitlines()
    paragraphs = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return OTHER_TEMPLATE.format(n=n, paragraphs=paragraphs)


def test_a_learned_locator_reads_the_sites_pages_as_trafilatura_does():
    locators = BodyLocators()
    pages = [chapter(n) for n in range(40)]
    for n, page in enumerate(pages):
        url = f"http://127.0.0.1:8001/p/{n}.html"
        alone = extract_normalized(page, url)
        located = extract_normalized(page, url, locators=locators)
        assert located.extracted == replace(alone.extracted, located=located.extracted.located)
        assert (located.content_hash, located.simhash) == (alone.content_hash, alone.simhash)
    read = [
        extract(page, f"http://127.0.0.1:8001/p/{n}.html", locators=locators).located
        for n, page in enumerate(pages)
    ]
    # trusted from the start now; one page in CHECK_EVERY goes to trafilatura to be checked
    assert sum(read) >= len(pages) - len(pages) // CHECK_EVERY - 1
    first = BodyLocators()
    used = [
        extract(page, f"http://127.0.0.1:8001/p/{n}.html", locators=first).located
        for n, page in enumerate(pages[:5])
    ]
    assert used[:CONFIRM] == [False] * CONFIRM and any(used[CONFIRM:])
    assert first.sites["127.0.0.1:8001"].path == "//div[@id='content']"


def test_a_page_that_does_not_verify_goes_to_trafilatura():
    locators = BodyLocators()
    for n in range(4):
        extract(chapter(n), f"http://127.0.0.1:8001/p/{n}.html", locators=locators)
    odd = chapter(50, extra='<br /><a href="/vip.html">订阅本章</a>')  # a tag never learned
    url = "http://127.0.0.1:8001/p/50.html"
    read = extract(odd, url, locators=locators)
    assert not read.located
    assert read.text == extract(odd, url).text
    short = CHAPTER.format(n=51, body="本章内容正在手打中，请稍后刷新。", prev=50, next=52)
    assert not extract(short, "http://127.0.0.1:8001/p/51.html", locators=locators).located
    # another site (another port) is not read with this site's locator
    other = extract(chapter(52), "http://127.0.0.1:8002/p/52.html", locators=locators)
    assert not other.located


def test_a_changed_template_is_learned_again():
    locators = BodyLocators()
    site = "http://127.0.0.1:8003/p/{}.html"
    for n in range(4):
        extract(chapter(n), site.format(n), locators=locators)
    for n in range(4, 12):
        page = other_template(n)
        read = extract(page, site.format(n), locators=locators)
        assert read.text == extract(page, site.format(n)).text
    assert locators.sites["127.0.0.1:8003"].path != "//div[@id='content']"


def test_a_check_that_disagrees_forgets_the_locator():
    locators = BodyLocators()
    pages = [lxml.html.fromstring(chapter(n)) for n in range(CONFIRM + CHECK_EVERY + 1)]
    texts = [element_text(page.get_element_by_id("content")) for page in pages]
    calls = []

    def trafilatura(k: int, text: str):
        return lambda: calls.append(k) or text

    for k in range(CONFIRM):
        assert locators.read("s", pages[k], trafilatura(k, texts[k]), element_text)[1] is False
    for k in range(CONFIRM, CONFIRM + CHECK_EVERY - 1):
        assert locators.read("s", pages[k], trafilatura(k, "?"), element_text) == (texts[k], True)
    check = CONFIRM + CHECK_EVERY - 1
    text, located = locators.read("s", pages[check], trafilatura(check, "另一段文字"), element_text)
    assert (text, located) == ("另一段文字", False) and calls[-1] == check
    assert "s" not in locators.sites  # forgotten: the next pages are trafilatura's
    last = CONFIRM + CHECK_EVERY
    assert locators.read("s", pages[last], trafilatura(last, texts[last]), element_text) == (
        texts[last],
        False,
    )
