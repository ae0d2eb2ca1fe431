"""Held-out defended sites: the techniques of :mod:`tests.sites_defended` and
:mod:`tests.sites_markup`, written by other hands in other templates, so that a crawl that reads
those sites well is checked against the shapes real pirate sites vary in.

* :func:`oldschool_split_site`: a 2008 table layout in upper-case tags, GB18030, ``<BR>``
  bodies; chapters split as ``/123/2.html`` (a folder per chapter), ``-2.html`` and
  ``?page=2``, "(1/3)" and "（二）" in the titles, a last part of a few dozen characters;
* :func:`modern_split_site`: div soup in Big5, 下一页 as a ``<button onclick>`` and as a link
  whose ``href`` a script fills in (the part URL only in the script), ``?page=2`` parts;
* :func:`hidden_css_site`: junk hidden by an external same-site stylesheet, nested spans,
  ``[hidden]``-style attribute selectors, descendant and compound selectors, ``!important``
  overrides, a visible rule overriding a hidden one, and junk that is Chinese text from other
  chapters of the same book;
* :func:`script_array_site`: text loaded by ``fetch()`` JSON as a list of lines, base64 in a
  ``data-`` attribute decoded by script, text assembled from an array (rendered);
* :func:`webfont_variants_site`: web fonts as WOFF, TTF and a ``data:`` URI, other glyph
  subsets, PUA characters inside spans;
* :func:`ban_variants_site`: 503 with ``Retry-After`` in seconds, 429 with an HTTP date;
* :func:`random_challenge_site`: a third of the chapters behind walls of other vendors;
* :func:`decoy_variants_site`: a decoy for a client without ``Accept-Language`` or with a
  non-browser User-Agent.

Each returns a :class:`tests.sites.SitePlan` (``matched``, ``stored``, ``extra["unread"]``,
``extra["innocent"]``, ``extra["min_coverage"]``); :func:`measure` scores a crawl.
"""

from __future__ import annotations

import base64
import html
import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from tests.sites import Page, SitePlan, TestSite, book_masters, encoded, paragraphs, split_text
from tests.sites_defended import DefendedSite
from tests.sites_markup import obfuscated_font, obfuscation_chars
from tests.texts import prose


def _parts(text: str, sizes: tuple[float, ...]) -> list[str]:
    """``text`` cut at paragraph boundaries into pieces of about ``sizes`` shares."""
    paras = paragraphs(text)
    out, start, total = [], 0, len(paras)
    for share in sizes[:-1]:
        end = max(start + 1, min(total - 1, start + round(share * total)))
        out.append("\n".join(paras[start:end]))
        start = end
    out.append("\n".join(paras[start:]))
    return out


def _robots(site: TestSite) -> None:
    site.pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")


def _home(site: TestSite, listing: Iterable[tuple[str, str]]) -> None:
    """The site's home page, a list of links to ``listing`` (path, title), and robots.txt."""
    items = "".join(f'<li><a href="{u}">{html.escape(t)}</a></li>' for u, t in listing)
    site.pages["/"] = Page(f"<html><body><ul>{items}</ul></body></html>".encode())
    _robots(site)


# ------------------------------------------------------------------- old-school split


def _old_page(title: str, text: str, pager: str, charset: str) -> bytes:
    body = "<BR><BR>".join("&nbsp;&nbsp;&nbsp;&nbsp;" + html.escape(p) for p in paragraphs(text))
    doc = (
        f'<HTML><HEAD><META http-equiv="Content-Type" content="text/html; charset={charset}">'
        f"<TITLE>{html.escape(title)} - 旧书屋</TITLE></HEAD><BODY bgColor=#f7f7f7>"
        '<TABLE width="960" border=0 align=center cellPadding=0 cellSpacing=0><TR>'
        '<TD class=nav><A href="/">首页</A> | <A href="/top.html">排行</A></TD></TR></TABLE>'
        '<TABLE width="960" align=center border=0><TR><TD align=center>'
        f"<FONT size=4><B>{html.escape(title)}</B></FONT></TD></TR><TR><TD>"
        '<TABLE width="100%"><TR><TD class=zw style="FONT-SIZE: 16px; LINE-HEIGHT: 180%">'
        f"{body}</TD></TR></TABLE></TD></TR><TR><TD align=center>{pager}</TD></TR></TABLE>"
        "<CENTER>本站所有小说均由网友上传 Copyright 2008 旧书屋</CENTER></BODY></HTML>"
    )
    return encoded(doc, charset)


def oldschool_split_site() -> SitePlan:
    """Three chapters over three pages each in three URL schemes (see the module doc), the
    last part short; one innocent chapter over two pages."""
    masters = book_masters(3, work="旧式分页书", chars=2600, seed=3100)
    site = TestSite()
    plan = SitePlan(site, masters)
    charset = "gb18030"
    schemes = [
        ["/txt/201.html", "/txt/201/2.html", "/txt/201/3.html"],
        ["/txt/202.html", "/txt/202-2.html", "/txt/202-3.html"],
        ["/txt/203.html", "/txt/203.html?page=2", "/txt/203.html?page=3"],
    ]
    chapters = [(m.title, m.text, urls) for m, urls in zip(masters, schemes, strict=True)]
    innocent = prose(3199, 2000)
    chapters.append(("第四章 闲谈", innocent, ["/txt/204.html", "/txt/204_2.html"]))
    listing = []
    for i, (title, text, urls) in enumerate(chapters):
        sizes = (0.5, 0.47, 0.03) if len(urls) == 3 else (0.5, 0.5)
        texts = _parts(text, sizes)
        nxt = chapters[i + 1][2][0] if i + 1 < len(chapters) else "/"
        for k, (url, part) in enumerate(zip(urls, texts, strict=True)):
            onward = (
                f'<A HREF="{urls[k + 1]}">下一页</A>'
                if k + 1 < len(urls)
                else f'<A HREF="{nxt}">下一章</A>'
            )
            pager = f'<A HREF="/txt/">返回目录</A> &nbsp; {onward}'
            shown = f"{title}({k + 1}/{len(urls)})" if i != 1 else f"{title}（{'一二三'[k]}）"
            site.pages[url] = Page(_old_page(shown, part, pager, charset))
        listing.append((urls[0], title))
        plan.extra.setdefault("parts", {})[urls[0]] = urls[1:]
    catalogue = "".join(f'<TR><TD><A HREF="{u}">{html.escape(t)}</A></TD></TR>' for u, t in listing)
    site.pages["/txt/"] = Page(
        encoded(f"<HTML><BODY><TABLE>{catalogue}</TABLE></BODY></HTML>", charset)
    )
    site.pages["/"] = Page(encoded('<HTML><BODY><A HREF="/txt/">目录</A></BODY></HTML>', charset))
    _robots(site)
    plan.matched = {urls[0]: [m.doc_id] for m, urls in zip(masters, schemes, strict=True)}
    plan.stored = {*plan.matched, "/txt/204.html"}
    plan.extra.update(innocent=["/txt/204.html"], unread=[], min_coverage=0.8)
    return plan


# --------------------------------------------------------------------- modern split


def _modern_page(title: str, text: str, pager: str, script: str = "") -> bytes:
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs(text))
    doc = (
        '<!doctype html><html lang="zh-Hant"><head><meta charset="big5">'
        f'<meta name="viewport" content="width=device-width"><title>{html.escape(title)}'
        '｜新書網</title></head><body><div class="app"><div class="hd"><div class="logo">'
        '<a href="/">新書網</a></div></div><div class="wrap"><div class="box"><div class="tt">'
        f'<h2>{html.escape(title)}</h2></div><div class="rd" id="rd">{body}</div>'
        f'<div class="pg">{pager}</div></div></div><div class="ft">© 新書網</div></div>'
        f"{script}</body></html>"
    )
    return encoded(doc, "big5")


def modern_split_site() -> SitePlan:
    """Two chapters over three ``?page=N`` pages whose 下一页 is a ``<button onclick>``; one
    whose 下一页 ``href`` only a script writes; an innocent chapter (texts in Traditional
    script are not needed: Big5 carries these Simplified characters as references)."""
    masters = book_masters(3, work="新式分页书", chars=2400, seed=3200)
    site = TestSite()
    plan = SitePlan(site, masters)
    innocent = prose(3299, 1500)
    listing = []
    for i, master in enumerate(masters, start=1):
        base = f"/read/88/{i}.html"
        urls = [base, f"{base}?page=2", f"{base}?page=3"]
        for k, (url, part) in enumerate(zip(urls, split_text(master.text, 3), strict=True)):
            script = ""
            if k + 1 == len(urls):
                pager = f'<a href="/read/88/{i + 1}.html" class="btn">下一章</a>'
            elif i < 3:
                target = urls[k + 1]
                pager = (
                    '<button type="button" class="btn"'
                    f" onclick=\"location.href='{target}'\">下一页</button>"
                )
            else:
                pager = '<a id="pnext" class="btn" href="javascript:;">下一页</a>'
                script = (
                    "<script>var np='" + urls[k + 1] + "';"
                    "document.getElementById('pnext').href=np;</script>"
                )
            site.pages[url] = Page(_modern_page(master.title, part, pager, script))
        listing.append((base, master.title))
        plan.extra.setdefault("parts", {})[base] = urls[1:]
    site.pages["/read/88/4.html"] = Page(
        _modern_page("第四章 雜記", innocent, '<a href="/read/88/" class="btn">目錄</a>')
    )
    listing.append(("/read/88/4.html", "第四章 雜記"))
    items = "".join(f'<li><a href="{u}">{html.escape(t)}</a></li>' for u, t in listing)
    site.pages["/read/88/"] = Page(encoded(f"<html><body><ul>{items}</ul></body></html>", "big5"))
    site.pages["/"] = Page(b'<html><body><a href="/read/88/">list</a></body></html>')
    _robots(site)
    plan.matched = {f"/read/88/{i}.html": [m.doc_id] for i, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/read/88/4.html"}
    plan.extra.update(innocent=["/read/88/4.html"], unread=[], min_coverage=0.8)
    return plan


# ----------------------------------------------------------------------- hidden CSS


def hidden_css_site() -> SitePlan:
    """Five chapters with about 20 % hidden junk, each hidden another way (see the module
    doc); one innocent chapter with the same junk."""
    masters = book_masters(6, work="隐藏样式书", chars=1500, seed=3300)
    chapters, others = masters[:5], masters[5]
    site = TestSite()
    plan = SitePlan(site, chapters)
    rng = random.Random(3301)
    other_text = others.text.replace("\n", "")
    sheet = (
        "html,body{margin:0}\n.ct{font-size:18px}\n"
        "#txtbox .ct em.z{display:none}\n"  # descendant + compound
        ".ct span[data-k]{display:none}\n"  # attribute selector
        "[hidden]{display:none!important}\n"
        ".w1 .w2{visibility:hidden}\n"  # nested spans
        ".g{display:none}\n#txtbox .ct .g.v{display:inline}\n"  # a visible rule overrides
        ".t0{display:inline!important}\n.t1{display:none !important}\n"
    )

    def junk_other() -> str:
        start = rng.randrange(0, len(other_text) - 12)
        return other_text[start : start + rng.randint(3, 8)]

    hides = [
        lambda: f'<em class="z">{junk_other()}</em>',
        lambda: f'<span data-k="{rng.randint(1, 99)}">{junk_other()}</span>',
        lambda: f'<span class="w1">a<span class="w2">{junk_other()}</span></span>',
        lambda: f'<span class="t0 t1" style="display:inline">{junk_other()}</span>',
        lambda: f'<i hidden class="x">{junk_other()}</i>',
    ]
    listing = []

    def body_of(text: str, hide) -> str:
        out = []
        for p in paragraphs(text):
            line = []
            for ch in p:
                if rng.random() < 0.08:
                    line.append(f'<span class="g v">{html.escape(ch)}</span>')
                else:
                    line.append(html.escape(ch))
                if rng.random() < 0.05:
                    line.append(hide())
            out.append("".join(line))
        return "<br>\n".join(out)

    pages = [(m.title, m.text, hides[k]) for k, m in enumerate(chapters)]
    pages.append(("第七章 闲篇", prose(3399, 1400), hides[0]))
    for k, (title, text, hide) in enumerate(pages, start=1):
        # The w1 wrapper's "a" is junk too, hidden by nothing: keep it out of the text.
        body = body_of(text, hide).replace('<span class="w1">a<', '<span class="w1"><')
        doc = (
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            '<link type="text/css" rel="stylesheet" href="/css/m.css?v=3"></head><body>'
            f'<div class="top"><a href="/">首页</a></div><div id="txtbox"><h1>{html.escape(title)}'
            f'</h1><div class="ct">{body}</div></div><div class="foot">页脚</div></body></html>'
        )
        path = f"/b/7/{k}.html"
        site.pages[path] = Page(doc.encode("utf-8"))
        listing.append((path, title))
    site.pages["/css/m.css"] = Page(sheet.encode(), "text/css")
    _home(site, listing)
    plan.matched = {f"/b/7/{k}.html": [m.doc_id] for k, m in enumerate(chapters, start=1)}
    plan.stored = {*plan.matched, "/b/7/6.html"}
    plan.extra.update(innocent=["/b/7/6.html"], unread=[], min_coverage=0.9)
    plan.extra["other_master"] = others
    return plan


# ------------------------------------------------------------------- script loaders


def script_array_site() -> SitePlan:
    """Chapters whose text only a browser sees: ``fetch()`` of a JSON list of lines, base64 in
    a ``data-`` attribute, an array joined by script; an innocent chapter by ``fetch()``."""
    masters = book_masters(3, work="脚本数组书", chars=1400, seed=3400)
    site = TestSite()
    plan = SitePlan(site, masters)
    texts = [(m.title, m.text) for m in masters] + [("第四章 闲话", prose(3499, 1400))]
    listing = []
    for k, (title, text) in enumerate(texts, start=1):
        lines = paragraphs(text)
        kind = (k - 1) % 3
        if kind == 0:
            site.pages[f"/ajax/txt?id={k}"] = Page(
                json.dumps({"code": 0, "data": {"lines": lines}}, ensure_ascii=False).encode(),
                "application/json; charset=utf-8",
            )
            body = (
                '<article id="chapter"><p class="tip">正在加载...</p></article><script>'
                f"fetch('/ajax/txt?id={k}').then(function(r){{return r.json()}})"
                ".then(function(j){var a=document.getElementById('chapter');a.innerHTML='';"
                "j.data.lines.forEach(function(l){var p=document.createElement('p');"
                "p.textContent=l;a.appendChild(p);});});</script>"
            )
        elif kind == 1:
            payload = base64.b64encode("\n".join(lines).encode()).decode()
            body = (
                f'<article id="chapter" data-c="{payload}"></article><script>'
                "(function(){var a=document.getElementById('chapter');"
                "var s=new TextDecoder().decode(Uint8Array.from(atob(a.dataset.c),"
                "function(c){return c.charCodeAt(0)}));"
                "a.innerHTML=s.split('\\n').map(function(l){return '<p>'+l+'</p>'}).join('');"
                "})();</script>"
            )
        else:
            pieces = [p[i : i + 7] for p in lines for i in range(0, len(p), 7)] + []
            joined = []
            for p in lines:
                joined += [p[i : i + 7] for i in range(0, len(p), 7)] + ["\n"]
            body = (
                '<article id="chapter"></article><script>var _c='
                + json.dumps(joined, ensure_ascii=False)
                + ";document.getElementById('chapter').innerHTML=_c.join('')"
                ".split('\\n').map(function(l){return '<p>'+l+'</p>'}).join('');</script>"
            )
            del pieces
        doc = (
            '<!DOCTYPE html><html><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title></head><body><header><a href='/'>书城</a>"
            f"</header><main><h1>{html.escape(title)}</h1>{body}</main>"
            "<footer>版权所有</footer></body></html>"
        )
        path = f"/n/{k}"
        site.pages[path] = Page(doc.encode())
        listing.append((path, title))
    _home(site, listing)
    plan.matched = {f"/n/{k}": [m.doc_id] for k, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/n/4"}
    plan.extra.update(innocent=["/n/4"], unread=[], min_coverage=0.9)
    return plan


# ------------------------------------------------------------------------ web fonts


def webfont_variants_site() -> SitePlan:
    """Three chapters with 12-15 % of their characters at PUA code points, drawn by a WOFF
    font (relative URL in a stylesheet), a TTF and a ``data:`` URI WOFF2, each a different
    subset; PUA characters sit inside ``<span class="f">``."""
    masters = book_masters(3, work="字形书", chars=1500, seed=3500)
    innocent = prose(3599, 1400)
    site = TestSite()
    plan = SitePlan(site, masters)
    listing = []
    flavors = [("woff", 0.12, 41), (None, 0.15, 42), ("woff2", 0.13, 43)]
    texts = [(m.title, m.text) for m in masters] + [("第四章 外篇", innocent)]
    for k, (title, text) in enumerate(texts, start=1):
        flavor, share, seed = flavors[(k - 1) % 3]
        chars = obfuscation_chars([text], share, seed=seed)
        font = obfuscated_font(chars, flavor or "ttf", seed=seed)
        if k == 1 or k == 4:
            font_url = f"../font/f{k}.woff"
            site.pages[f"/font/f{k}.woff"] = Page(font.data, "application/font-woff")
            src = f"url('{font_url}') format('woff')"
            site.pages[f"/css/c{k}.css"] = Page(
                f"@font-face{{font-family:ff{k};src:{src}}}.f{{font-family:ff{k}}}".encode(),
                "text/css",
            )
            head = f'<link rel="stylesheet" href="/css/c{k}.css">'
        elif k == 2:
            site.pages["/s/x.ttf"] = Page(font.data, "font/ttf")
            head = (
                "<style>@font-face{font-family:\"dd\";src:url(/s/x.ttf) format('truetype')}"
                " .f{font-family:dd,serif}</style>"
            )
        else:
            data = base64.b64encode(font.data).decode()
            head = (
                "<style>@font-face{font-family:ee;src:url(data:font/woff2;base64,"
                f"{data}) format('woff2')}} .f{{font-family:ee}}</style>"
            )
        body = []
        for p in paragraphs(text):
            line = "".join(
                f'<span class="f">{chr(font.code_points[ch])}</span>'
                if ch in font.code_points
                else html.escape(ch)
                for ch in p
            )
            body.append(f"<p>{line}</p>")
        doc = (
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}'
            f"</title>{head}</head><body><h1>{html.escape(title)}</h1>"
            f'<div class="chapter-content">{"".join(body)}</div></body></html>'
        )
        path = f"/book/{k}/"
        site.pages[path] = Page(doc.encode())
        listing.append((path, title))
    _home(site, listing)
    plan.matched = {f"/book/{k}/": [m.doc_id] for k, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/book/4/"}
    plan.extra.update(innocent=["/book/4/"], unread=[], min_coverage=0.8)
    return plan


# ----------------------------------------------------------------------------- bans


def _simple_chapter(title: str, text: str) -> bytes:
    body = "<br/>".join(html.escape(p) for p in paragraphs(text))
    return (
        f'<html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head><body>'
        f'<div class="nr_title">{html.escape(title)}</div><div id="nr1">{body}</div>'
        '<div class="nr_page"><a href="/">目录</a></div></body></html>'
    ).encode()


def ban_variants_site(burst: int = 2, window: float = 1.0) -> SitePlan:
    """Seven chapters and an innocent one behind a limit of ``burst`` requests a ``window``:
    503 with ``Retry-After: 1`` (seconds), 429 with an HTTP date, and 429 without one."""
    masters = book_masters(7, work="限速书", chars=1300, seed=3600)
    site = DefendedSite()
    plan = SitePlan(site, masters)
    recent: deque[float] = deque()
    refusals = [0]
    lock = threading.Lock()
    texts = {f"/x/{i}.htm": (m.title, m.text) for i, m in enumerate(masters, start=1)}
    texts["/x/8.htm"] = ("第八章 外传", prose(3699, 1300))
    items = "".join(f'<li><a href="{p}">{html.escape(t)}</a></li>' for p, (t, _) in texts.items())
    home = Page(f"<html><body><ul>{items}</ul></body></html>".encode())

    def limited(path: str) -> Page | None:
        now = time.monotonic()
        with lock:
            while recent and now - recent[0] > window:
                recent.popleft()
            if len(recent) >= burst:
                refusals[0] += 1
                if refusals[0] % 3 == 0:
                    return Page(b"<h1>429</h1>", "text/html", 429)  # no Retry-After
                if refusals[0] % 2:
                    return Page(b"<h1>503</h1>", "text/html", 503, {"Retry-After": "1"})
                later = format_datetime(datetime.now(UTC) + timedelta(seconds=1), usegmt=True)
                return Page(b"slow down", "text/plain", 429, {"Retry-After": later})
            recent.append(now)
        if path == "/":
            return home
        found = texts.get(path)
        return Page(_simple_chapter(*found)) if found else None

    site.route(r"^/(x/.*)?$", limited)
    _robots(site)
    plan.matched = {f"/x/{i}.htm": [m.doc_id] for i, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/x/8.htm"}
    plan.extra.update(innocent=["/x/8.htm"], unread=[], refusals=refusals)
    return plan


# ------------------------------------------------------------------------ challenges

JSL_WALL = (
    b"<html><head><meta http-equiv='Content-Type' content='text/html; charset=utf-8'></head>"
    b"<body><script>document.cookie=('__jsl_clearance=1589;max-age=3600;path=/');"
    b"location.href=location.pathname+location.search</script></body></html>"
)
SLIDER_WALL = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>访问验证</title></head><body>'
    '<div class="box"><p>检测到您的访问异常，请拖动滑块完成验证</p><div id="nc"></div>'
    '<script src="/static/nc.js"></script></div></body></html>'
).encode()
TURNSTILE_WALL = (
    b'<!DOCTYPE html><html><head><title>Verify you are human</title><script src="https://'
    b'challenges.cloudflare.com/turnstile/v0/api.js" async defer></script></head><body>'
    b'<form method="POST"><div class="cf-turnstile" data-sitekey="0x4AAA"></div></form>'
    b"</body></html>"
)


def random_challenge_site() -> SitePlan:
    """Nine chapters and an innocent one; a random third of the chapters answer a wall
    (a ``__jsl_clearance`` script at 521, a slider captcha at 200, a Turnstile form at 403)."""
    masters = book_masters(9, work="随机验证书", chars=1300, seed=3700)
    site = TestSite()
    plan = SitePlan(site, masters)
    paths = [f"/chapter/{i}_{1000 + i * 7}.html" for i in range(1, 10)]
    walled = sorted(random.Random(3701).sample(paths, 3))
    walls = [
        Page(JSL_WALL, status=521),
        Page(SLIDER_WALL),
        Page(TURNSTILE_WALL, status=403),
    ]
    innocent = ("/chapter/99_1.html", "第十章 余话", prose(3799, 1300))
    return _behind_walls(plan, paths, dict(zip(walled, walls, strict=True)), innocent)


def _behind_walls(
    plan: SitePlan, paths: list[str], walls: dict[str, Page], innocent: tuple[str, str, str]
) -> SitePlan:
    """``plan``'s chapters at ``paths``, those in ``walls`` answering their wall instead, an
    innocent chapter (path, title, text) and the home page; what the crawl must find: every
    readable chapter matched, the walled ones unread."""
    site, masters = plan.site, plan.masters
    for path, master in zip(paths, masters, strict=True):
        site.pages[path] = Page(_simple_chapter(master.title, master.text))
    site.pages.update(walls)
    innocent_path, title, text = innocent
    site.pages[innocent_path] = Page(_simple_chapter(title, text))
    _home(site, [*zip(paths, (m.title for m in masters), strict=True), (innocent_path, title)])
    plan.matched = {p: [m.doc_id] for p, m in zip(paths, masters, strict=True)}
    plan.stored = {*(p for p in paths if p not in walls), innocent_path}
    plan.extra.update(innocent=[innocent_path], unread=sorted(walls), min_coverage=0.9)
    return plan


# ---------------------------------------------------------------------------- decoys


def decoy_variants_site() -> SitePlan:
    """Six chapters and an innocent one; a client without ``Accept-Language`` or whose
    User-Agent names no browser engine (``Gecko``/``AppleWebKit``) gets an innocent decoy."""
    masters = book_masters(6, work="伪装书", chars=1300, seed=3800)
    site = DefendedSite()
    plan = SitePlan(site, masters)
    texts = {f"/v/{i}.html": (m.title, m.text) for i, m in enumerate(masters, start=1)}
    texts["/v/7.html"] = ("第七章 杂谈", prose(3899, 1300))
    decoys: Counter[str] = Counter()

    def bot() -> bool:
        headers = site.headers()
        agent = headers.get("user-agent", "")
        if not headers.get("accept-language"):
            return True
        return not ("AppleWebKit" in agent or "Gecko/" in agent) or "Headless" in agent

    def chapter(path: str) -> Page | None:
        found = texts.get(path)
        if found is None:
            return None
        if bot():
            decoys[path] += 1
            return Page(_simple_chapter(found[0], prose(len(path) * 31 + 7, len(found[1]))))
        return Page(_simple_chapter(*found))

    site.route(r"^/v/\d+\.html$", chapter)
    items = "".join(f'<li><a href="{p}">{html.escape(t)}</a></li>' for p, (t, _) in texts.items())
    site.pages["/"] = Page(f"<html><body><ul>{items}</ul></body></html>".encode())
    _robots(site)
    plan.matched = {f"/v/{i}.html": [m.doc_id] for i, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/v/7.html"}
    plan.extra.update(innocent=["/v/7.html"], unread=[], decoys=decoys)
    return plan


# ----------------------------------------------------------------- more hiding, forums


def hidden_import_site() -> SitePlan:
    """Four chapters with junk hidden another way again: a sheet ``@import``-ed from a
    ``<style>`` block, a ``<style>`` inside the body, upper-case ``<FONT STYLE="FONT-SIZE:0PX">``,
    a ``visibility:hidden`` wrapper whose real text shows again through ``visibility:visible``
    (child combinator); an innocent chapter. The first chapter is served with its charset in
    the HTTP header only (GBK, no ``<meta>``)."""
    masters = book_masters(4, work="导入样式书", chars=1500, seed=3900)
    site = TestSite()
    plan = SitePlan(site, masters)
    rng = random.Random(3901)
    junk = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会"
    site.pages["/s/imp.css"] = Page(b"p .hh{display:none}\n.zz{color:#000}", "text/css")
    ways = [
        ('<style>@import url("/s/imp.css");</style>', lambda j: f'<span class="hh">{j}</span>'),
        ("", lambda j: f'<span class="qq">{j}</span>'),
        ("", lambda j: f'<FONT STYLE="FONT-SIZE:0PX;COLOR:#FFF">{j}</FONT>'),
        (
            "<style>.vh{visibility:hidden}.vh>b{visibility:visible}</style>",
            lambda j: f'<span class="vh">{j}<b></b></span>',
        ),
    ]
    texts = [(m.title, m.text) for m in masters] + [("第五章 闲笔", prose(3999, 1400))]
    listing = []
    for k, (title, text) in enumerate(texts, start=1):
        head, hide = ways[(k - 1) % 4]
        lines = []
        for p in paragraphs(text):
            out = []
            for ch in p:
                if k == 4 and rng.random() < 0.1:
                    # a real character inside the hidden wrapper, shown again by its <b>
                    out.append(
                        f'<span class="vh">{rng.choice(junk)}<b>{html.escape(ch)}</b></span>'
                    )
                    continue
                out.append(html.escape(ch))
                if rng.random() < 0.2:
                    out.append(hide(rng.choice(junk)))
            lines.append("<p>" + "".join(out) + "</p>")
        inner = "<style>.qq{display:none}</style>" if k == 2 else ""
        doc = (
            f"<html><head>{'' if k == 1 else '<meta charset=utf-8>'}"
            f"<title>{html.escape(title)}</title>{head}</head><body><div class=hd>导航</div>"
            f'<div class="main">{inner}<h1>{html.escape(title)}</h1><div id="chaptercontent">'
            f"{''.join(lines)}</div></div></body></html>"
        )
        path = f"/i/{k}.html"
        if k == 1:
            site.pages[path] = Page(encoded(doc, "gbk"), "text/html; charset=gbk")
        else:
            site.pages[path] = Page(doc.encode())
        listing.append((path, title))
    _home(site, listing)
    plan.matched = {f"/i/{k}.html": [m.doc_id] for k, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/i/5.html"}
    plan.extra.update(innocent=["/i/5.html"], unread=[], min_coverage=0.9)
    return plan


def tieba_site() -> SitePlan:
    """A tieba-style thread over three ``?pn=N`` pages, 30 floors a page (chapters posted a
    floor at a time between one-line replies, a floor a chapter cut in two), and a thread of
    chatter; each post a ``<div class="d_post_content j_d_post_content">``."""
    masters = book_masters(3, work="贴吧书", chars=1500, seed=4000)
    site = TestSite()
    plan = SitePlan(site, masters)
    rng = random.Random(4001)
    floors: list[tuple[str, str]] = []
    for master in masters:
        for piece in split_text(master.text, 2):
            floors.append(("楼主", piece))
            for _ in range(rng.randint(8, 12)):
                floors.append(
                    (f"吧友{rng.randint(1, 999)}", rng.choice(["顶", "好看", "插楼", "mark"]))
                )

    def thread_page(
        title: str, posts: list[tuple[str, str]], pn: int, last: int, tid: int
    ) -> bytes:
        rows = "".join(
            f'<div class="l_post j_l_post" data-field=\'{{"floor":{n}}}\'><div class="d_author">'
            f'<a class="p_author_name">{html.escape(user)}</a></div>'
            '<div class="d_post_content_main">'
            f'<div class="d_post_content j_d_post_content" id="post_content_{tid}{n}">'
            + "<br>".join(html.escape(p) for p in paragraphs(text))
            + f'</div></div><div class="core_reply_tail">{n}楼 2013-05-0{pn}</div></div>'
            for n, (user, text) in enumerate(posts, start=1 + (pn - 1) * 30)
        )
        pager = " ".join(
            f'<a href="/p/{tid}?pn={n}">{n}</a>' if n != pn else f"<span>{n}</span>"
            for n in range(1, last + 1)
        )
        if pn < last:
            pager += (
                f' <a href="/p/{tid}?pn={pn + 1}">下一页</a> <a href="/p/{tid}?pn={last}">尾页</a>'
            )
        doc = (
            '<!DOCTYPE html><html><head><meta charset="UTF-8">'
            f"<title>{html.escape(title)}_书吧_百度贴吧</title></head><body>"
            f'<div class="core_title"><h3 class="core_title_txt">{html.escape(title)}</h3></div>'
            f'<div class="l_pager pager_theme_4">{pager}</div><div id="j_p_postlist">{rows}'
            f'</div><div class="l_pager pager_theme_4">{pager}</div></body></html>'
        )
        return doc.encode()

    title = "【连载】贴吧书 全文更新"
    pages = [floors[i : i + 30] for i in range(0, len(floors), 30)]
    for pn, posts in enumerate(pages, start=1):
        url = "/p/5201314" if pn == 1 else f"/p/5201314?pn={pn}"
        site.pages[url] = Page(thread_page(title, posts, pn, len(pages), 5201314))
    chatter = [(f"路人{k}", prose(4100 + k, 120)) for k in range(20)]
    site.pages["/p/7777"] = Page(thread_page("今天吃什么", chatter, 1, 1, 7777))
    home = '<html><body><a href="/p/5201314">连载</a> <a href="/p/7777">闲聊</a></body></html>'
    site.pages["/"] = Page(home.encode())
    _robots(site)
    plan.matched = {"/p/5201314": [m.doc_id for m in masters]}
    plan.stored = {"/p/5201314", "/p/7777"}
    plan.extra.update(innocent=["/p/7777"], unread=[], min_coverage=0.8, pages=len(pages))
    return plan


def headless_decoy_script_site() -> SitePlan:
    """Chapters loaded by XHR from an API that serves a decoy to a headless browser (its
    User-Agent says ``HeadlessChrome``) or a request without ``Accept-Language``; an
    innocent chapter."""
    masters = book_masters(3, work="无头诱饵书", chars=1300, seed=4200)
    site = DefendedSite()
    plan = SitePlan(site, masters)
    texts = {str(k): (m.title, m.text) for k, m in enumerate(masters, start=1)}
    texts["4"] = ("第四章 余墨", prose(4299, 1300))
    decoys: Counter[str] = Counter()

    def api(path: str) -> Page | None:
        key = path.rsplit("=", 1)[-1]
        if key not in texts:
            return None
        headers = site.headers()
        text = texts[key][1]
        if "Headless" in headers.get("user-agent", "") or not headers.get("accept-language"):
            decoys[key] += 1
            text = prose(int(key) * 977, len(text))
        body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs(text))
        return Page(json.dumps({"content": body}, ensure_ascii=False).encode(), "application/json")

    site.route(r"^/api/read\?cid=\d+$", api)
    listing = []
    for key, (title, _) in texts.items():
        doc = (
            f'<html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head><body>'
            f'<h1>{html.escape(title)}</h1><div id="TextContent">请稍候，内容加载中</div><script>'
            "var x=new XMLHttpRequest();x.open('GET','/api/read?cid=" + key + "');"
            "x.onload=function(){document.getElementById('TextContent').innerHTML="
            "JSON.parse(x.responseText).content};x.send();</script></body></html>"
        )
        site.pages[f"/chapter/{key}.html"] = Page(doc.encode())
        listing.append((f"/chapter/{key}.html", title))
    _home(site, listing)
    plan.matched = {f"/chapter/{k}.html": [m.doc_id] for k, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/chapter/4.html"}
    plan.extra.update(innocent=["/chapter/4.html"], unread=[], decoys=decoys, min_coverage=0.9)
    return plan


def numbered_pager_site() -> SitePlan:
    """Chapters split over pages whose pager has no 下一页 text: page numbers only
    (``[1] [2] [3]`` to ``123_2.html``), and an image button (``<img alt="下一页">``) to
    ``/123/p2.html``-style... kept simple: ``?pn=2``; a short last part; an innocent chapter
    with a pager of its own."""
    masters = book_masters(2, work="页码书", chars=2400, seed=4300)
    site = TestSite()
    plan = SitePlan(site, masters)
    chapters = [(m.title, m.text) for m in masters] + [("第三章 杂谈", prose(4399, 1800))]
    listing = []
    for i, (title, text) in enumerate(chapters, start=1):
        first = f"/xs/{i}.html"
        urls = [first, f"/xs/{i}_2.html", f"/xs/{i}_3.html"]
        if i == 2:
            urls = [first, f"{first}?pn=2", f"{first}?pn=3"]
        for k, (url, part) in enumerate(zip(urls, _parts(text, (0.5, 0.45, 0.05)), strict=True)):
            if i == 2:
                pager = (
                    f'<a href="{urls[k + 1]}" class="btn"><img src="/i/n.gif" alt="下一页"></a>'
                    if k + 1 < len(urls)
                    else f'<a href="/xs/{i + 1}.html">下一章</a>'
                )
            else:
                pager = "".join(
                    f"<b>[{n + 1}]</b>" if n == k else f'<a href="{u}">[{n + 1}]</a>'
                    for n, u in enumerate(urls)
                )
            body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs(part))
            doc = (
                f'<html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
                f'<body><div id="main"><h1>{html.escape(title)}</h1><div id="content">{body}'
                f'</div><div class="pages">{pager}</div></div></body></html>'
            )
            site.pages[url] = Page(doc.encode())
        listing.append((first, title))
    _home(site, listing)
    plan.matched = {f"/xs/{i}.html": [m.doc_id] for i, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/xs/3.html"}
    plan.extra.update(innocent=["/xs/3.html"], unread=[], min_coverage=0.8)
    return plan


ACW_WALL = (
    b"<html><script>\nvar arg1='3B5C9F0A1D2E4F6071829394A5B6C7D8E9F00112';\n"
    b"var _0x4818=['\\x63\\x6f\\x6f\\x6b\\x69\\x65'];function setCookie(name,value){"
    b"var expiredate=new Date();expiredate.setTime(expiredate.getTime()+(3600*1000));"
    b"document.cookie=name+'='+value+';expires='+expiredate.toGMTString()+';max-age=3600;path=/';}"
    b"function reload(x){setCookie('acw_sc__v2',x);document.location.reload();}"
    b"</script></html>"
)
YUNSUO_WALL = (
    b'<html><head><meta charset="utf-8"><title></title></head><body>'
    b'<script type="text/javascript">function stringToHex(str){var val="";for(var i=0;'
    b"i<str.length;i++){val+=str.charCodeAt(i).toString(16);}return val;}"
    b"function YunSuoAutoJump(){var width=screen.width;var height=screen.height;"
    b'var screendate=width+","+height;location="/chapter/?security_verify_data="+'
    b"stringToHex(screendate);}</script><script>setTimeout(function(){YunSuoAutoJump()},50)"
    b"</script></body></html>"
)
SAFEDOG_WALL = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>网站防火墙</title></head><body>'
    '<div class="main"><h3>网站防火墙</h3><p>您的请求带有不合法参数，已被网站管理员设置拦截！</p>'
    "<p>可能原因：您提交的内容包含危险的攻击请求</p><p>如何解决：</p><ul><li>1）检查提交内容；"
    "</li><li>2）如网站托管，请联系空间提供商；</li><li>3）普通网站访客，请联系网站管理员；</li>"
    "</ul></div><div class=foot>网站防火墙 www.safedog.cn</div></body></html>"
).encode()


def waf_wall_site() -> SitePlan:
    """Nine chapters and an innocent one; three answer the walls of Chinese WAFs at 200: an
    Aliyun ``acw_sc__v2`` cookie script, a Yunsuo ``security_verify_data`` jump, a Safedog
    "网站防火墙" interception page."""
    masters = book_masters(9, work="防火墙书", chars=1300, seed=4400)
    site = TestSite()
    plan = SitePlan(site, masters)
    paths = [f"/html/{i}.shtml" for i in range(1, 10)]
    walled = sorted(random.Random(4401).sample(paths, 3))
    walls = [Page(wall) for wall in (ACW_WALL, YUNSUO_WALL, SAFEDOG_WALL)]
    innocent = ("/html/99.shtml", "第十章 附录", prose(4499, 1300))
    return _behind_walls(plan, paths, dict(zip(walled, walls, strict=True)), innocent)


def script_shell_site() -> SitePlan:
    """Chapters loaded by script into an empty container on pages that are not thin: a book
    synopsis, a site notice and a list of recommended books around it (some 600 visible
    characters, no "loading" phrase); an innocent chapter the same way (rendered)."""
    masters = book_masters(3, work="壳页书", chars=1400, seed=4500)
    site = TestSite()
    plan = SitePlan(site, masters)
    synopsis = prose(4590, 260)
    notice = (
        "本站所有小说为转载作品，所有章节均由网友上传，转载至本站只是为了宣传本书让更多读者欣赏。"
        "如果您发现本站有侵犯您版权的作品，请联系我们，我们会在第一时间删除。"
    )
    recommended = "".join(
        f'<li><a href="/book/{n}/">{prose(4600 + n, 8)}</a> {prose(4700 + n, 30)}</li>'
        for n in range(8)
    )
    texts = [(m.title, m.text) for m in masters] + [("第四章 插曲", prose(4599, 1400))]
    listing = []
    for k, (title, text) in enumerate(texts, start=1):
        payload = base64.b64encode(
            "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs(text)).encode()
        ).decode()
        doc = (
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}'
            "</title></head><body><div class='nav'><a href='/'>首页</a></div>"
            f"<div class='info'><h2>壳页书</h2><p>作者：佚名</p><p>{synopsis}</p></div>"
            f"<h1>{html.escape(title)}</h1><div id='content'></div>"
            f"<div class='notice'><p>{notice}</p></div>"
            f"<div class='rec'><h3>猜你喜欢</h3><ul>{recommended}</ul></div><script>"
            "document.getElementById('content').innerHTML=new TextDecoder().decode("
            f"Uint8Array.from(atob('{payload}'),function(c){{return c.charCodeAt(0)}}));"
            "</script></body></html>"
        )
        path = f"/shell/{k}.html"
        site.pages[path] = Page(doc.encode())
        listing.append((path, title))
    _home(site, listing)
    plan.matched = {f"/shell/{k}.html": [m.doc_id] for k, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/shell/4.html"}
    plan.extra.update(innocent=["/shell/4.html"], unread=[], min_coverage=0.9)
    return plan


def hidden_offscreen_site() -> SitePlan:
    """Three chapters with 20 % junk a reader does not see although it is displayed:
    ``color: transparent`` (a class), drawn off the screen (``position:absolute;
    left:-9999px``, inline), pushed out by ``text-indent:-9999em``; an innocent chapter."""
    masters = book_masters(3, work="离屏书", chars=1400, seed=4800)
    site = TestSite()
    plan = SitePlan(site, masters)
    rng = random.Random(4801)
    junk = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会"
    head = (
        "<style>.tc{color:transparent}.ti{display:inline-block;width:0;text-indent:-9999em}</style>"
    )
    ways = [
        lambda j: f'<span class="tc">{j}</span>',
        lambda j: f'<span style="position:absolute;left:-9999px;top:0">{j}</span>',
        lambda j: f'<span class="ti">{j}</span>',
    ]
    texts = [(m.title, m.text) for m in masters] + [("第四章 余谈", prose(4899, 1300))]
    listing = []
    for k, (title, text) in enumerate(texts, start=1):
        hide = ways[(k - 1) % 3]
        lines = []
        for p in paragraphs(text):
            out = []
            for ch in p:
                out.append(html.escape(ch))
                if rng.random() < 0.2:
                    out.append(hide(rng.choice(junk)))
            lines.append("".join(out))
        doc = (
            f'<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>{head}</head>'
            f'<body><h1>{html.escape(title)}</h1><div id="htmlContent">{"<br><br>".join(lines)}'
            "</div></body></html>"
        )
        path = f"/off/{k}.html"
        site.pages[path] = Page(doc.encode())
        listing.append((path, title))
    _home(site, listing)
    plan.matched = {f"/off/{k}.html": [m.doc_id] for k, m in enumerate(masters, start=1)}
    plan.stored = {*plan.matched, "/off/4.html"}
    plan.extra.update(innocent=["/off/4.html"], unread=[], min_coverage=0.9)
    return plan


# --------------------------------------------------------------------------- scoring

SITES = {
    "oldschool split (GB18030 tables, /123/2.html, -2.html, ?page=2, short last part)": (
        oldschool_split_site
    ),
    "modern split (Big5 div soup, button onclick, script-written href)": modern_split_site,
    "hidden CSS (external sheet, compound/attribute selectors, !important, other-chapter junk)": (
        hidden_css_site
    ),
    "script loaders (fetch JSON lines, data- base64, array join; rendered)": script_array_site,
    "web fonts (WOFF relative, TTF, data: WOFF2; other subsets)": webfont_variants_site,
    "bans (503 Retry-After seconds, 429 HTTP date)": ban_variants_site,
    "random challenges (jsl 521, slider 200, Turnstile 403)": random_challenge_site,
    "decoys (no Accept-Language, non-browser UA)": decoy_variants_site,
    "hidden 2 (@import, <style> in body, FONT-SIZE:0PX, visibility shown again; GBK by header)": (
        hidden_import_site
    ),
    "tieba thread (?pn=N, 30 floors a page)": tieba_site,
    "headless decoy behind XHR (rendered)": headless_decoy_script_site,
    "numbered pager ([1] [2] [3]) and image 下一页 button": numbered_pager_site,
    "WAF walls at 200 (Aliyun acw_sc__v2, Yunsuo, Safedog)": waf_wall_site,
    "script into an empty container on a page that is not thin (rendered)": script_shell_site,
    "hidden 3 (color:transparent, absolute left:-9999px, text-indent:-9999em)": (
        hidden_offscreen_site
    ),
}


def measure(plan: SitePlan, db, base: str) -> dict:
    """Recall (a page counts when it carries exactly its masters), min coverage, wrong ids,
    innocent pages flagged, planned unread pages missing from the report and extra ones."""
    from tracker.reports import build_report

    base = base.rstrip("/")
    stored = {
        doc["_id"][len(base) :]: doc for doc in db["pages"].find() if doc["_id"].startswith(base)
    }
    unread_planned = set(plan.extra.get("unread", ()))
    expected = {p: ids for p, ids in plan.matched.items() if p not in unread_planned}
    found = [p for p, ids in expected.items() if stored.get(p, {}).get("matched_doc_ids") == ids]
    coverages = []
    for path in found:
        for match in db["matches"].find({"url": base + path, "active": True}):
            if match["doc_id"] in expected[path]:
                coverages.append(match["coverage"])
    wrong = [
        p
        for p, doc in stored.items()
        if set(doc.get("matched_doc_ids") or ()) - set(plan.matched.get(p, ()))
    ]
    innocent = [
        p for p in plan.extra.get("innocent", ()) if stored.get(p, {}).get("matched_doc_ids")
    ]
    report = build_report(db, datetime.now(UTC).date())
    unread = {
        e["url"][len(base) :]: e["reason"] for e in report["unread"] if e["url"].startswith(base)
    }
    return {
        "recall": round(len(found) / len(expected), 3) if expected else 1.0,
        "missed": sorted(set(expected) - set(found)),
        "min_coverage": round(min(coverages), 3) if coverages else None,
        "wrong": wrong,
        "innocent_flagged": innocent,
        "unread_missing": sorted(unread_planned - set(unread)),
        "unread_extra": sorted(set(unread) - unread_planned),
    }
