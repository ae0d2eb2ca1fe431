"""Reading pages as a reader sees them, unit by unit: CSS visibility and pseudo-elements,
"next page" links of a chapter, forum posts, web-font glyphs, pages read in parts."""

from __future__ import annotations

import base64
import html
import random

import lxml.html
import pytest
from scrapy.http import HtmlResponse

from tests.sites_markup import font_available, obfuscated_font, obfuscation_chars
from tests.texts import prose
from tracker.crawling.resources import linked_resources
from tracker.reading import extract as extract_module
from tracker.reading.extract import PageContext, extract, read_document
from tracker.reading.pagination import next_part_link, part_of, same_chapter_title
from tracker.reading.posts import platform_posts, repeated_posts, with_posts
from tracker.reading.visibility import relevant_css, show_visible
from tracker.reading.webfont import (
    FontError,
    cached_glyphs,
    data_uri_bytes,
    decode_glyphs,
    font_face_urls,
    glyph_table,
)
from tracker.text.normalize import boilerplate_mask, normalize

# ------------------------------------------------------------------------------ visibility


def visible(body: str, head: str = "", sheets: dict[str, str] | None = None) -> str:
    root = lxml.html.fromstring(f"<html><head>{head}</head><body>{body}</body></html>")
    show_visible(root, sheets, "http://site.test/a/1.html")
    return "".join(root.xpath("//body")[0].text_content().split())


@pytest.mark.parametrize(
    "head, body, seen",
    [
        ("<style>.x{display:none}</style>", '天<span class="x">乱</span>地', "天地"),
        ("<style>#j{visibility:hidden}</style>", '天<b id="j">乱</b>地', "天地"),
        ("<style>div .f{font-size:0px}</style>", '<div>天<i class="f">乱</i>地</div>', "天地"),
        ("<style>.k{font:0/0 a}</style>", '天<i class="k">乱</i>地', "天地"),
        ("", '天<span style="OPACITY: 0">乱</span>地<span style="font-size:0">乱</span>', "天地"),
        ("", "天<span hidden>乱</span>地<span aria-hidden=true>乱</span>", "天地"),
        # The cascade: more specific, !important, inline, later rules win.
        (
            "<style>.x{display:none} p .x{display:inline}</style>",
            '<p>天<span class="x">玄</span></p>',
            "天玄",
        ),
        (
            "<style>.x{display:none!important} #y{display:inline}</style>",
            "天<b class=x id=y>乱</b>",
            "天",
        ),
        ("<style>.x{display:none}</style>", '天<b class=x style="display:inline">玄</b>', "天玄"),
        ("<style>.x{display:none} .x{display:block}</style>", "天<b class=x>玄</b>", "天玄"),
        # Inherited: a child may show itself again, but not out of display:none.
        (
            "",
            '<p style="visibility:hidden">乱<span style="visibility:visible">天</span>乱</p>',
            "天",
        ),
        ("", '<p style="display:none">乱<span style="display:inline">乱</span></p>天', "天"),
        ("", '<p style="font-size:0">乱<span style="font-size:16px">天</span></p>', "天"),
        # Not on a desktop screen: print media and narrow viewports.
        ("<style>@media print{.x{display:none}}</style>", "天<b class=x>玄</b>", "天玄"),
        (
            "<style>@media (max-width:600px){.x{display:none}}</style>",
            "天<b class=x>玄</b>",
            "天玄",
        ),
        ("<style>@media screen{.x{display:none}}</style>", "天<b class=x>乱</b>", "天"),
        ('<style media="print">.x{display:none}</style>', "天<b class=x>玄</b>", "天玄"),
        # Pseudo-elements: their content is text a reader sees.
        (
            '<style>.c::before{content:"天"} .d:after{content:attr(data-c)}</style>',
            '<i class=c></i>地<i class=d data-c="玄"></i>',
            "天地玄",
        ),
        ('<style>.c::before{content:"乱"} .h{display:none}</style>', '<i class="c h"></i>天', "天"),
    ],
)
def test_only_what_a_browser_shows_is_read(head, body, seen):
    assert visible(body, head) == seen


@pytest.mark.parametrize(
    "css",
    [
        ".x{display:none} .y{color:red;;; font: {bad} } }}} @media screen { .z{ display: none",
        "\x00\x01 garbage {{{{ ;;; ::: @@@ .x{display:none}",
        ".x{display:none}\n" + "a" * 50_000,
        "@import url(evil.css); .x{display:none} :not(:not(:not(.y))){display:none}",
        ".x{display:none} a:hover, p::first-line, ::selection {display:none}",
    ],
)
def test_broken_css_never_loses_the_page(css):
    text = visible('<p>天地玄黄<b class="x">乱</b>宇宙洪荒</p>', f"<style>{css}</style>")
    assert text.startswith("天地玄黄") and "宇宙洪荒" in text


def test_a_linked_same_site_sheet_counts_and_is_reduced_to_what_matters():
    css = (
        "body{margin:0}\n.k2{font-size:0}\n"
        + "p{line-height:2}\n" * 100
        + '.c::before{content:"天"}'
    )
    kept = relevant_css(css)
    assert ".k2" in kept and ".c::before" in kept and "line-height" not in kept
    sheet = {"http://site.test/static/s.css": kept}
    body = '<i class="c"></i>地<em class="k2">乱</em>玄'
    assert visible(body, '<link rel="stylesheet" href="../static/s.css">', sheet) == "天地玄"
    assert visible(body, '<link rel="stylesheet" href="../static/other.css">', sheet) == "地乱玄"


def test_a_body_hidden_until_scripts_reveal_it_is_kept():
    article = prose(11, 600)
    body = f'<div id="js_content" style="visibility: hidden">{article}<span hidden>乱</span></div>'
    text = visible(body + "<p>微信扫一扫关注该公众号</p>")
    assert "".join(article.split()) in text and "乱" not in text


def test_hidden_junk_is_left_out_of_the_extracted_text(monkeypatch):
    master = prose(12, 1200)
    body = "".join(
        f"{html.escape(ch)}<span class=j>乱</span>" if k % 4 == 0 else html.escape(ch)
        for k, ch in enumerate(master)
    )
    page = (
        f"<html><head><style>.j{{display:none}}</style></head><body><div>{body}</div></body></html>"
    )
    assert normalize(master).chars in normalize(extract(page).text).chars
    # The same page read with every element shown: the junk is in (the check can fail).
    monkeypatch.setattr(
        extract_module,
        "show_visible",
        lambda *a: __import__("tracker.reading.visibility", fromlist=["Visibility"]).Visibility(),
    )
    assert normalize(master).chars not in normalize(extract(page).text).chars


# ------------------------------------------------------------------------------ pagination


@pytest.mark.parametrize(
    "current, onward, first, verdict",
    [
        ("2.html", "2_2.html", None, "yes"),
        ("2_2.html", "2_3.html", "2.html", "yes"),
        ("2_3.html", "3.html", "2.html", "no"),  # the next chapter
        ("3.html", "3.html?page=2", None, "yes"),
        ("t.php?tid=1&page=2", "t.php?tid=1&page=3", "t.php?tid=1", "yes"),
        ("thread-7-1-1.html", "thread-7-2-1.html", None, "yes"),
        ("4.html", "4-b.html", None, "maybe"),  # the titles decide
        ("4-b.html", "4-c.html", "4.html", "maybe"),
        ("4.html", "40.html", None, "no"),
        ("chapter_11.html", "chapter_12.html", None, "maybe"),  # chapters numbered so
        ("a?p=123", "a?p=124", None, "maybe"),
        ("123.html", "124.html", None, "no"),
        ("2.html", "2_3.html", None, "no"),  # not the next number
    ],
)
def test_which_url_continues_a_chapter(current, onward, first, verdict):
    base = "http://site.test/book/"
    assert part_of(base + onward, base + current, first and base + first) == verdict


def page(url: str, body: str, title: str = "第一章 开始", head: str = "") -> HtmlResponse:
    doc = f"<html><head><title>{title}_书城</title>{head}</head><body>{body}</body></html>"
    return HtmlResponse(url, body=doc.encode(), encoding="utf-8")


def test_the_next_page_link_is_never_the_next_chapter():
    here = "http://site.test/b/1.html"
    found = next_part_link(page(here, '<a href="2.html">下一章</a> <a href="1_2.html">下一页</a>'))
    assert found is not None and found.url.endswith("/1_2.html") and found.how == "text"
    assert next_part_link(page(here, '<a href="2.html">下一章</a> <a href="./">目录</a>')) is None
    found = next_part_link(page(here, "", head='<link rel="next" href="1.html?page=2">'))
    assert found is not None and found.how == "rel"
    found = next_part_link(page(here, '<a class="nxt" href="thread-1-2-1.html">»</a>'))
    assert found is not None and found.url.endswith("thread-1-2-1.html")
    assert (
        next_part_link(page(here, '<a href="#top">下一页</a><a href="1.html">下一页</a>')) is None
    )


def test_a_part_repeats_its_chapter_title():
    first = page("http://s.test/4.html", "", "第四章 风起（1/3）")
    assert same_chapter_title(first, page("http://s.test/4-b.html", "", "第四章 风起（2/3）"))
    assert same_chapter_title(first, page("http://s.test/4-b.html", "", "第四章 风起 第2页"))
    assert not same_chapter_title(first, page("http://s.test/5.html", "", "第五章 云涌"))


def test_a_page_notes_its_same_site_sheets_and_web_fonts():
    head = (
        '<link rel="stylesheet" href="/s.css"><link rel="stylesheet" href="http://cdn.test/x.css">'
        '<link rel="alternate stylesheet" href="/alt.css">'
        "<style>@font-face{font-family:f;src:url(/f.woff2) format('woff2'),"
        "url(data:font/woff;base64,AAAA)}</style>"
    )
    on_site = lambda url: url.startswith("http://site.test/")  # noqa: E731
    found = linked_resources(page("http://site.test/1.html", "天\ue001地", head=head), on_site)
    assert found == {
        "stylesheets": ["http://site.test/s.css"],
        "fonts": ["http://site.test/f.woff2", "data:font/woff;base64,AAAA"],
        "private_use": True,
    }
    assert linked_resources(page("http://site.test/1.html", "天地"), on_site) is None
    # in UTF-16 the raw bytes hold no ASCII "stylesheet": the links are read all the same
    utf16 = HtmlResponse(
        "http://site.test/2.html",
        body=f"<html><head>{head}</head><body>天地</body></html>".encode("utf-16"),
        encoding="utf-16",
    )
    assert linked_resources(utf16, on_site)["stylesheets"] == ["http://site.test/s.css"]
    # @import is case-blind in CSS, and found in UTF-16 pages too
    imports = "<style>@IMPORT url(/i.css); p{color:red}</style>"
    for encoding in ("utf-8", "utf-16"):
        doc = f"<html><head>{imports}</head><body>天地</body></html>"
        body = doc.encode(encoding)
        page_ = HtmlResponse("http://site.test/3.html", body=body, encoding=encoding)
        assert linked_resources(page_, on_site)["stylesheets"] == ["http://site.test/i.css"]


def test_the_stylesheet_links_are_every_link_element_with_href_and_rel_in_order():
    """Any spelling and place of ``<link>``: upper case, in the body, an empty ``href``; not
    one without ``rel`` or ``href``, an alternate or print sheet, nor another element."""
    head = (
        '<LINK REL="Stylesheet" HREF=" /a.css ">'
        '<link href="/no-rel.css"><link rel="stylesheet">'
        '<link rel="stylesheet" media="print" href="/print.css">'
        '<link rel="icon stylesheet" href="/b.css">'
        '<a rel="stylesheet" href="/anchor.css">x</a>'
    )
    body = (
        '<p>天地</p><link rel="stylesheet" href="c.css">'
        '<div><link rel="STYLESHEET" href=""></div>'
        '<link rel="stylesheet" href="/a.css">'
    )
    on_site = lambda url: url.startswith("http://site.test/")  # noqa: E731
    found = linked_resources(page("http://site.test/d/1.html", body, head=head), on_site)
    assert found is not None
    assert found["stylesheets"] == [
        "http://site.test/a.css",
        "http://site.test/b.css",
        "http://site.test/d/c.css",
        "http://site.test/d/1.html",  # href="": the page itself, as a browser would ask
    ]


# ----------------------------------------------------------------------------------- posts

DISCUZ = """<table><tr><td class="t_f" id="postmessage_1">{a}<div class="quote"><blockquote>
引用的内容很长很长很长很长很长很长很长</blockquote></div></td></tr></table>
<table><tr><td class="t_f" id="postmessage_2">{b}<div class="sign">签名档：欢迎光临</div>
</td></tr></table>"""


def test_every_post_of_a_discuz_thread_is_read_without_quotes_and_signatures():
    a, b = prose(21, 300), prose(22, 300)
    root = lxml.html.fromstring(f"<html><body>{DISCUZ.format(a=a, b=b)}</body></html>")
    platform, posts = platform_posts(root)
    assert platform == "discuz" and len(posts) == 2
    text = extract(f"<html><body>{DISCUZ.format(a=a, b=b)}</body></html>").text
    assert "".join(a.split()) in "".join(text.split()) and "".join(b.split()) in "".join(
        text.split()
    )
    assert "签名档" not in text and "引用的内容" not in text


def test_repeated_posts_are_added_but_lists_of_links_are_not():
    replies = "".join(
        f'<table><tr><td>user{k}</td><td><div class="re_content" id="re_{k}">{prose(30 + k, 200)}'
        "</div></td></tr></table>"
        for k in range(5)
    )
    opening = f"<div class='topic'><h1>连载</h1><div id='content'>{prose(29, 300)}</div></div>"
    root = lxml.html.fromstring(f"<html><body>{opening}{replies}</body></html>")
    assert len(repeated_posts(root)) == 5
    links = "".join(
        f'<div class="item"><a href="/n/{k}.html">{prose(40 + k, 60)}</a>{prose(50 + k, 25)}</div>'
        for k in range(10)
    )
    assert repeated_posts(lxml.html.fromstring(f"<html><body>{links}</body></html>")) == []
    assert with_posts("短文一行", "帖子" * 10) == "短文一行\n" + "帖子" * 10
    assert with_posts("帖子帖子", "帖子帖子帖子") is None  # not twice as much


# -------------------------------------------------------------------------------- web fonts

needs_font = pytest.mark.skipif(
    not font_available(), reason="the Noto CJK fonts (Debian's fonts-noto-cjk) are not installed"
)


@needs_font
@pytest.mark.parametrize("flavor", ["woff2", "ttf"])
def test_the_glyphs_of_a_web_font_are_decoded(flavor):
    chars = obfuscation_chars([prose(61, 1500)], 0.15)
    font = obfuscated_font(chars, flavor)
    glyphs = decode_glyphs(font.data)
    right = sum(glyphs.get(cp) == ch for ch, cp in font.code_points.items())
    assert right >= 0.95 * len(chars) and len(glyphs) - right <= 0.01 * len(chars)
    assert cached_glyphs(font.data) == glyphs  # from the disk cache now
    assert glyph_table(font.data) == (glyphs, len(chars), None)


@needs_font
@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "empty"),
        (b"<html><body>404 Not Found</body></html>", "not a font"),
        (b"\x00\x01\x02garbage" * 100, "not a font"),
        (b"wOF2" + b"\x00" * 200, "cannot read"),
    ],
)
def test_a_font_that_is_not_a_font_is_an_error_not_a_crash(data, reason):
    with pytest.raises(FontError, match=reason):
        decode_glyphs(data)
    glyphs, private, error = glyph_table(data)
    assert (glyphs, private) == ({}, 0) and reason in error


@needs_font
def test_a_truncated_web_font_is_an_error():
    font = obfuscated_font(obfuscation_chars([prose(62, 800)], 0.12))
    with pytest.raises(FontError):
        decode_glyphs(font.data[: len(font.data) // 2])


def test_font_faces_are_read_from_css():
    css = """@font-face { font-family: "fq"; src: url('/f/a.woff2') format("woff2"),
             url(../b.ttf) } @font-face{src:url(data:font/woff2;base64,d09GMg==)}
             .x{background:url(/bg.png)} @font-face { broken"""
    assert font_face_urls(css, "http://s.test/css/site.css") == [
        "http://s.test/f/a.woff2",
        "http://s.test/b.ttf",
        "data:font/woff2;base64,d09GMg==",
    ]
    assert data_uri_bytes("data:font/woff2;base64," + base64.b64encode(b"wOF2").decode()) == b"wOF2"
    with pytest.raises(FontError):
        data_uri_bytes("data:nothing")


def test_private_use_characters_are_counted_and_decoded_where_known():
    text = prose(63, 600)
    chars = sorted({ch for ch in text if "\u4e00" <= ch <= "\u9fff"})[:40]
    points = {ch: 0xE000 + k for k, ch in enumerate(chars)}
    obfuscated = "".join(chr(points[ch]) if ch in points else ch for ch in text)
    doc = f"<html><body><div>{html.escape(obfuscated)}</div></body></html>"
    private = sum(ch in points for ch in text)
    plain = extract(doc)
    assert plain.reading == {"pua": private}  # undecoded: left out, counted
    half = {points[ch]: ch for ch in chars[:20]}
    decoded = sum(ch in half.values() for ch in text)
    read = extract(doc, context=PageContext(glyphs=half))
    assert read.reading == {"pua": private, "pua_decoded": decoded}
    entities = doc.encode("ascii", "xmlcharrefreplace").decode()  # as character references
    assert extract(entities).reading["pua"] == private


# ----------------------------------------------------------------------------------- parts


def test_a_chapter_read_in_parts_is_one_text():
    texts = [prose(70 + k, 500) for k in range(3)]
    pages = [
        f"<html><head><title>第一章 {k}</title></head><body><div id=content>"
        + "".join(f"<p>{p}</p>" for p in t.splitlines())
        + "</div></body></html>"
        for k, t in enumerate(texts)
    ]
    parts = tuple((f"http://s.test/1_{k}.html", p) for k, p in enumerate(pages[1:], start=2))
    whole = read_document(pages[0], "http://s.test/1.html", None, PageContext(parts))
    flat = "".join(whole.text.split())
    assert all("".join(t.split()) in flat for t in texts)
    assert flat.index("".join(texts[1].split())) < flat.index("".join(texts[2].split()))
    assert whole.reading["parts"] == 3 and whole.title == "第一章 0"


# ------------------------------------------------------------------------ ad lines, masked once


def _ad_texts(seed: int, count: int) -> list[str]:
    """Random texts of prose lines, whole ad lines, ads inside lines that stay, blank and
    padded lines (an ad first or last as often as between)."""
    from tracker.demo.site import ALL_ADS

    prose_lines = [
        *prose(seed, 600).splitlines(),
        "  正文第二段，说的是往事。 ",
        "第三段（原文）。",
        "",
    ]
    inline = [
        "他走了进来，看见窗外的雨，又想起许多往事（天才一秒记住本站地址）然后慢慢坐下。",
        "文章里提到 www.example.cc 这个地址，可是正文还有很长很长的一段要说。",
        "他走了（天才一秒记住本站地址：biquge.com）进来。",
        "a",
    ]
    rng = random.Random(seed)
    pool = [*prose_lines, *inline, *ALL_ADS]
    return ["\n".join(rng.choices(pool, k=rng.randint(1, 12))) for _ in range(count)]


def test_the_ad_mask_extraction_keeps_is_the_mask_of_its_text():
    """Dropping ad lines hands normalisation the mask of the lines kept, so that the text is
    not scanned again: it must be what a scan of the text finds, whichever lines went."""
    for text in _ad_texts(11, 400):
        kept, mask = extract_module._strip_ad_lines(text)
        assert kept == extract_module.strip_boilerplate_lines(text)
        assert mask.tolist() == boilerplate_mask(kept).tolist()


def test_the_lines_dropped_as_ads_are_those_mostly_masked():
    """The lines ``_strip_ad_lines`` drops are, line by line, those whose visible characters
    are at least 60 % masked in a scan of the whole text (each line weighed alone)."""
    dropped_some = 0
    for text in _ad_texts(12, 400):
        lines = [line for raw in text.splitlines() if (line := raw.strip())]
        mask, start, kept = boilerplate_mask("\n".join(lines)).tolist(), 0, []
        for line in lines:
            on = mask[start : start + len(line)]
            visible = [not ch.isspace() for ch in line]
            hidden = sum(v and m for v, m in zip(visible, on, strict=True))
            if not (sum(visible) and hidden >= 0.6 * sum(visible)):
                kept.append(line)
            start += len(line) + 1
        assert extract_module._strip_ad_lines(text)[0] == "\n".join(kept)
        dropped_some += len(kept) < len(lines)
    assert dropped_some > 100


def test_a_page_normalized_with_the_mask_of_extraction_is_as_normalized_afresh():
    """extract_normalized (a crawl's worker) gives the normalised text that normalising the
    extracted text gives, for pages read whole and in parts."""
    rng = random.Random(5)
    texts = _ad_texts(23, 60)

    def page(k: int, text: str) -> str:
        lines = "<br>".join(html.escape(line) for line in text.splitlines())
        body = f"<div id=content>{lines}</div>"
        return f"<html><head><title>第{k}章</title></head><body>{body}</body></html>"

    for k in range(0, len(texts), 3):
        parts = tuple(
            (f"http://s.test/{k}_{j}.html", page(k, texts[k + j]))
            for j in range(1, rng.randint(1, 3))
            if k + j < len(texts)
        )
        for context in (None, PageContext(parts)):
            read = extract_module.extract_normalized(
                page(k, texts[k]), "http://s.test/1", None, context
            )
            afresh = normalize(read.extracted.text)
            assert read.normalized.chars == afresh.chars
            assert read.normalized.char_pos.tolist() == afresh.char_pos.tolist()
            assert read.normalized.tokens.tolist() == afresh.tokens.tolist()
