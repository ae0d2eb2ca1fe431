"""The per-site body locator (tracker/reading/locator.py): pages read by it extract exactly as
trafilatura reads them, it is used only once learned and while pages verify, and a check that
disagrees forgets it."""

from __future__ import annotations

import html
import random
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


# ------------------------------------------------------- element_text in XSLT, as a walk reads it


def _walked_text(element) -> str:
    """``element_text`` as a walk in Python reads it (its implementation before the XSLT one):
    the reference the stylesheet must equal."""
    blocks = ("p", "div", "br", "li", "h1", "h2", "h3", "h4", "tr", "section", "article", "dd")
    parts: list[str] = []

    def walk(node) -> None:
        tag = node.tag if isinstance(node.tag, str) else ""
        if tag in ("script", "style", "noscript"):
            parts.append(node.tail or "")
            return
        parts.append("\n" if tag in blocks else "")
        parts.append(node.text or "" if tag else "")
        for child in node:
            walk(child)
        parts.append("\n" if tag in blocks else "")
        parts.append(node.tail or "")

    parts.append(element.text or "")
    for child in element:
        walk(child)
    lines = (line.strip() for line in "".join(parts).splitlines())
    return "\n".join(line for line in lines if line)


_TAGS = (
    "p",
    "div",
    "br",
    "span",
    "a",
    "b",
    "li",
    "ul",
    "h1",
    "h4",
    "h5",
    "tr",
    "td",
    "table",
    "section",
    "dd",
    "dl",
    "script",
    "style",
    "noscript",
    "font",
    "em",
    "o:p",
    "svg",
)
_TEXTS = (
    "",
    "",
    " ",
    "\n",
    "  正文，一段话。 ",
    "第一章",
    "\u3000\u3000他说：“走吧。”\n",
    "a b",
    "&",
    "\t",
    "x\r\ny",
    "\xa0",
)


def _random_markup(rng: random.Random, depth: int = 0) -> str:
    out = [rng.choice(_TEXTS)]
    for _ in range(rng.randint(0, 4 if depth < 4 else 0)):
        roll = rng.random()
        if roll < 0.1:
            out.append(f"<!--{rng.choice(_TEXTS)}-->")
        elif roll < 0.15:
            out.append("<?php echo 1 ?>")
        else:
            tag = rng.choice(_TAGS)
            inner = (
                html.escape(rng.choice(_TEXTS))
                if tag in ("script", "style")
                else (_random_markup(rng, depth + 1))
            )
            out.append(f"<{tag}>{inner}</{tag}>" if tag != "br" else "<br>")
        out.append(html.escape(rng.choice(_TEXTS)))
    return "".join(out)


def test_element_text_reads_every_element_as_the_walk_does():
    rng = random.Random(40)
    checked = 0
    for _ in range(300):
        page = lxml.html.document_fromstring(
            f"<html><body><div id='x'>{_random_markup(rng)}</div></body></html>"
        )
        for node in page.iter():
            assert element_text(node) == _walked_text(node), lxml.html.tostring(node)
            checked += 1
    assert checked > 3000


def test_element_text_of_a_page_with_two_roots_is_the_first_roots():
    # A page stitched from fragments: lxml keeps what follows </html> as a second top-level
    # element, which the first root's text must not take in.
    page = lxml.html.document_fromstring(
        "<html><body><p>一</p></body></html><!--x--><html><body><p>二</p></body></html>"
    )
    assert element_text(page) == _walked_text(page) == "一"
    for node in page.getroottree().getroot().itersiblings():
        if isinstance(node.tag, str):
            assert element_text(node) == _walked_text(node) == "二"


def test_element_text_reads_the_saved_real_pages_as_the_walk_does():
    import gzip
    from pathlib import Path

    pages = Path(__file__).parent / "fixtures" / "pages"
    checked = 0
    for path in sorted(pages.glob("html/*.html.gz")):
        root = lxml.html.document_fromstring(gzip.decompress(path.read_bytes()))
        for node in root.iter("div", "body", "article", "td", "ul", "p", "section"):
            assert element_text(node) == _walked_text(node), path.name
            checked += 1
    assert checked > 1000
