"""A local pirate-style website built from the bundled demo data, for ``tracker demo`` and tests.

:func:`build_site` writes static pages that copy the master sample the way 笔趣阁-style sites do
(ads inside the chapter text, a chapter split over two pages, a Traditional-character copy, a
reposted news article, GBK/GB18030 pages declared only in a ``<meta>`` tag) next to innocent
pages; the returned :class:`SiteManifest` says which pages copy which master documents.
:func:`serve` serves such a directory on 127.0.0.1 with an ephemeral port.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import html
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler
from importlib import resources
from pathlib import Path

from tracker.demo.server import LoopbackServer
from tracker.model import MasterDocument
from tracker.reading.readers import read_book, read_jsonl

BOOK_FILE = "红楼梦.txt"
NEWS_FILE = "news.jsonl"
INNOCENT_FILE = "innocent.txt"
SITE_NAME = "笔趣阁"
DOMAIN = "www.biqugexx.com"

# Ad lines injected between paragraphs; each one is dropped by tracker.text.normalize.
AD_LINES = (
    f"最快更新红楼梦最新章节，请记住本站域名 {DOMAIN}",
    f"天才一秒记住本站地址：{DOMAIN}。手机版阅读网址：m.biqugexx.com",
    f"{SITE_NAME} {DOMAIN}，最快更新红楼梦最新章节！",
    "百度搜索 笔趣阁 就能找到本站，无弹窗全文阅读！",
)
# Bracketed ads pasted into the middle of a paragraph.
INLINE_ADS = (f"（天才一秒记住本站地址：{DOMAIN}）", "【笔趣阁 无弹窗全文阅读】")
PAGE_BREAK_AD = "本章未完，点击下一页继续阅读。"
PREVIEW_AD = "防盗章节，正版订阅请到首发网址 www.qidian.com 阅读全文。"
NEWS_AD = "本文来自网络，如有侵权请联系本站删除。"
ALL_ADS = (*AD_LINES, *INLINE_ADS, PAGE_BREAK_AD, PREVIEW_AD, NEWS_AD)

_STACK = contextlib.ExitStack()
atexit.register(_STACK.close)


@functools.cache
def _data_path(name: str) -> Path:
    """A real filesystem path for a bundled data file (extracted if the package is zipped)."""
    resource = resources.files(__package__).joinpath("data", name)
    return _STACK.enter_context(resources.as_file(resource))


def master_paths() -> list[Path]:
    """The bundled master sample: the 红楼梦 book (6 回) and ``news.jsonl`` (3 articles)."""
    return [_data_path(BOOK_FILE), _data_path(NEWS_FILE)]


def master_documents() -> list[MasterDocument]:
    """The master sample as documents: ``红楼梦/1``…``6`` and ``news-1998-01-01``…``03``."""
    book, news = master_paths()
    return [*read_book(book), *read_jsonl(news)]


@dataclass
class SiteManifest:
    """What :func:`build_site` wrote.

    ``expected`` maps each page path (relative URL) that copies master text to the copied doc
    ids; ``innocent`` lists pages that must not be flagged; ``encodings`` gives each page's
    charset.
    """

    root: Path
    expected: dict[str, list[str]] = field(default_factory=dict)
    innocent: list[str] = field(default_factory=list)
    encodings: dict[str, str] = field(default_factory=dict)

    @property
    def pages(self) -> list[str]:
        return sorted({*self.expected, *self.innocent})


# --------------------------------------------------------------------------- page templates

_STYLE = """body{margin:0;background:#eee;font:14px/1.8 sans-serif}
.topbar,header,nav,footer{background:#fff;padding:4px 16px}nav a{margin-right:12px}
main{float:left;width:72%;background:#fbf6ec;padding:16px}
aside{float:right;width:20%;background:#fff;padding:8px}
footer{clear:both;font-size:12px;color:#888}#content{font-size:18px;line-height:2}"""


def _layout(
    title: str,
    main: str,
    *,
    root: str,
    charset: str = "utf-8",
    meta: str = "charset",
    keywords: str = "",
) -> str:
    """A full page around ``main`` (already HTML); ``root`` is the relative prefix to '/'."""
    if meta == "charset":
        head_meta = f'<meta charset="{charset}">'
    else:  # old-style declaration
        head_meta = f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">'
    esc = html.escape
    return f"""<!DOCTYPE html>
<html lang="zh-CN">
<head>
{head_meta}
<title>{esc(title)}_{SITE_NAME}</title>
<meta name="keywords" content="{esc(keywords or title)},{SITE_NAME},免费小说">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_STYLE}</style>
<script>var _site = "{DOMAIN}"; var bookid = 1;</script>
</head>
<body>
<div class="topbar">欢迎光临{SITE_NAME}，本站网址 {DOMAIN} 请牢记！
<a href="{root}about.html">关于本站</a></div>
<header><div class="logo"><a href="{root}index.html">{SITE_NAME}</a></div>
<form action="#" method="get"><input type="text" name="q" placeholder="书名/作者">
<button type="submit">搜索</button></form></header>
<nav><a href="{root}index.html">首页</a><a href="{root}book/1/index.html">古典名著</a>
<a href="{root}book/2/1.html">神魔小说</a><a href="{root}news/1.html">新闻资讯</a>
<a href="{root}about.html">联系我们</a></nav>
<main>
{main}
</main>
<aside class="sidebar"><h3>热门小说</h3><ul>
<li><a href="/book/1/index.html">红楼梦</a></li>
<li><a href="/book/2/1.html">西游记</a></li>
<li><a href="/news/1.html">今日要闻</a></li>
</ul><h3>推荐阅读</h3><ul><li><a href="/book/1/1.html">红楼梦 第一回</a></li>
<li><a href="/about.html">本站公告</a></li></ul></aside>
<footer>本站所有小说为转载作品，所有章节均由网友上传，转载至本站只是为了宣传，让更多读者欣赏。<br>
Copyright &copy; 2024 {SITE_NAME} {DOMAIN} All Rights Reserved.</footer>
<script>document.write('<div class="ad"></div>');</script>
</body>
</html>
"""


def _content_br(lines: Iterable[str]) -> str:
    """Chapter text the classic 笔趣阁 way: ``&nbsp;`` indents and ``<br />`` pairs."""
    return "<br /><br />".join(f"&nbsp;&nbsp;&nbsp;&nbsp;{html.escape(line)}" for line in lines)


def _content_p(lines: Iterable[str]) -> str:
    """Chapter text as paragraphs with full-width indentation."""
    return "\n".join(f"<p>\u3000\u3000{html.escape(line)}</p>" for line in lines)


def _paragraphs(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _with_ads(
    paragraphs: list[str], rng: random.Random, every: int = 6, inline: bool = True
) -> list[str]:
    """Ad lines around and after every ``every`` paragraphs, a bracketed ad in paragraph 3."""
    out: list[str] = [AD_LINES[0]]
    for i, para in enumerate(paragraphs, start=1):
        if inline and i == 3 and len(para) > 20:
            cut = len(para) // 2
            para = para[:cut] + rng.choice(INLINE_ADS) + para[cut:]
        out.append(para)
        if i % every == 0:
            out.append(AD_LINES[(i // every) % len(AD_LINES)])
    out.append(AD_LINES[1])
    return out


_PUNCT_SWAPS = {
    "，": ",",
    "：": ":",
    "；": ";",
    "？": "?",
    "！": "!",
    "．": "。",
    "。": "．",
    '"': "＂",
    "“": '"',
    "”": '"',
    "、": ",",
}


def _noisy(paragraph: str, rng: random.Random) -> str:
    """Punctuation swapped between full- and half-width forms, stray (full-width) spaces."""
    out = []
    for ch in paragraph:
        if ch in _PUNCT_SWAPS and rng.random() < 0.5:
            ch = _PUNCT_SWAPS[ch]
        out.append(ch)
        roll = rng.random()
        if roll < 0.03:
            out.append("\u3000")
        elif roll < 0.05:
            out.append(" ")
        elif roll < 0.055:
            out.append("\u200b")
    return "".join(out)


def _chapter_main(
    title: str, content: str, *, prev: str, nxt: str, index: str, next_label: str = "下一章"
) -> str:
    links = (
        f'<a href="{prev}">上一章</a> &larr; <a href="{index}">章节目录</a> &rarr; '
        f'<a href="{nxt}">{next_label}</a>'
    )
    return (
        f'<div class="bookname"><h1>{html.escape(title)}</h1>\n'
        f'<div class="bottem1">{links}</div></div>\n'
        f'<div id="content">{content}</div>\n<div class="bottem2">{links}</div>'
    )


# --------------------------------------------------------------------------------- the site


def build_site(root: Path) -> SiteManifest:
    """Write the demo pirate site into ``root`` and return what each page should be judged as."""
    import opencc  # imported lazily: only the site builder needs it

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    book, news_path = master_paths()
    chapters = list(read_book(book))
    news = {doc.doc_id: doc for doc in read_jsonl(news_path)}
    innocent_text = _data_path(INNOCENT_FILE).read_text(encoding="utf-8")
    manifest = SiteManifest(root=root)

    def write(path: str, page: str, charset: str = "utf-8") -> None:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(page.encode(charset, errors="xmlcharrefreplace"))
        manifest.encodings[path] = charset

    def chapter_page(
        n: int,
        content: str,
        *,
        title: str | None = None,
        charset: str = "utf-8",
        meta: str = "charset",
        nxt: str | None = None,
        next_label: str = "下一章",
    ) -> str:
        ch = chapters[n - 1]
        prev = f"{n - 1}.html" if n > 1 else "index.html"
        default_next = f"{n + 1}.html" if n < len(chapters) else "index.html"
        main = _chapter_main(
            title or ch.title,
            content,
            prev=prev,
            nxt=nxt or default_next,
            index="index.html",
            next_label=next_label,
        )
        return _layout(
            title or ch.title,
            main,
            root="../../",
            charset=charset,
            meta=meta,
            keywords=f"红楼梦,{ch.title}",
        )

    def expect(path: str, *doc_ids: str) -> None:
        manifest.expected[path] = list(doc_ids)

    # Chapter 1: the classic layout with ad lines, served as GBK declared in <meta charset>.
    rng = random.Random(1)
    content = _content_br(_with_ads(_paragraphs(chapters[0].text), rng))
    write("book/1/1.html", chapter_page(1, content, charset="gbk"), "gbk")
    expect("book/1/1.html", chapters[0].doc_id)

    # Chapter 2: full-width/half-width punctuation and whitespace noise, plus ads.
    rng = random.Random(2)
    noisy = [_noisy(p, rng) for p in _paragraphs(chapters[1].text)]
    write("book/1/2.html", chapter_page(2, _content_p(_with_ads(noisy, rng, every=5))))
    expect("book/1/2.html", chapters[1].doc_id)

    # Chapter 3: split over two pages joined by a 下一页 link (stored as one page).
    paras = _paragraphs(chapters[2].text)
    half, total = 0, 0
    while half < len(paras) and total < len(chapters[2].text) // 2:
        total += len(paras[half])
        half += 1
    rng = random.Random(3)
    first = [*_with_ads(paras[:half], rng, every=7, inline=False)[:-1], PAGE_BREAK_AD]
    write("book/1/3.html", chapter_page(3, _content_br(first), nxt="3_2.html", next_label="下一页"))
    second = _with_ads(paras[half:], rng, every=7, inline=False)
    write(
        "book/1/3_2.html",
        chapter_page(3, _content_br(second), title=f"{chapters[2].title}（第2/2页）"),
    )
    expect("book/1/3.html", chapters[2].doc_id)  # read whole: 3_2.html is one of its parts

    # Chapter 4: plain paragraphs with ads.
    rng = random.Random(4)
    content = _content_p(_with_ads(_paragraphs(chapters[3].text), rng))
    write("book/1/4.html", chapter_page(4, content))
    expect("book/1/4.html", chapters[3].doc_id)

    # Chapter 5: converted to Traditional characters, GB18030 declared the old http-equiv way.
    s2t = opencc.OpenCC("s2t")
    rng = random.Random(5)
    lines = [s2t.convert(line) for line in _with_ads(_paragraphs(chapters[4].text), rng)]
    write(
        "book/1/5.html",
        chapter_page(
            5,
            _content_br(lines),
            title=s2t.convert(chapters[4].title),
            charset="gb18030",
            meta="http-equiv",
        ),
        "gb18030",
    )
    expect("book/1/5.html", chapters[4].doc_id)

    # Chapter 6: a "preview" that copies only the first part of the chapter.
    paras = _paragraphs(chapters[5].text)
    preview, total = [], 0
    for para in paras:
        if total >= 1500:
            break
        preview.append(para)
        total += len(para)
    rng = random.Random(6)
    write("book/1/6.html", chapter_page(6, _content_p([*_with_ads(preview, rng)[:-1], PREVIEW_AD])))
    expect("book/1/6.html", chapters[5].doc_id)

    # Book 1 chapter list.
    items = "\n".join(
        f'<dd><a href="{n}.html">{html.escape(ch.title)}</a></dd>'
        for n, ch in enumerate(chapters, start=1)
    )
    main = (
        f'<div id="info"><h1>红楼梦</h1><p>作&nbsp;&nbsp;者：曹雪芹</p>'
        f"<p>状&nbsp;&nbsp;态：连载中　最后更新：{html.escape(chapters[-1].title)}</p>"
        "<p>简介：古典名著，本站提供在线阅读。喜欢本书请加入书架，方便下次阅读。</p></div>\n"
        f'<div id="list"><dl><dt>《红楼梦》正文卷</dt>\n{items}\n</dl></div>'
    )
    write("book/1/index.html", _layout("红楼梦最新章节列表", main, root="../../"))

    # The innocent page: a chapter of 西游记, which is not in the master library.
    heading, _, body = innocent_text.strip().partition("\n")
    rng = random.Random(7)
    main = _chapter_main(
        heading.strip(),
        _content_br(_with_ads(_paragraphs(body), rng)),
        prev="../../index.html",
        nxt="../../index.html",
        index="../../index.html",
    )
    write("book/2/1.html", _layout(heading.strip(), main, root="../../", keywords="西游记"))

    # A reposted news article with a portal's boilerplate around it.
    article = news["news-1998-01-02"]
    body_html = "\n".join(f"<p>{html.escape(p)}</p>" for p in _paragraphs(article.text))
    main = (
        f'<div class="article"><h1>{html.escape(article.title)}</h1>\n'
        '<div class="info">来源：网络转载　发布时间：2024-01-02 08:00　编辑：小编　'
        "阅读：<span>1024</span>次</div>\n"
        f'<div class="article-content">\n{body_html}\n<p>{html.escape(NEWS_AD)}</p>\n</div>\n'
        '<div class="share">分享到：微博 微信 QQ空间</div>\n'
        '<div class="related"><h3>相关阅读</h3><ul>'
        '<li><a href="../index.html">返回首页</a></li>'
        '<li><a href="../about.html">免责声明</a></li></ul></div></div>'
    )
    write("news/1.html", _layout(article.title, main, root="../", keywords="新闻,资讯"))
    expect("news/1.html", article.doc_id)

    # About page: no novel text at all.
    main = (
        "<h1>关于本站</h1>\n"
        f"<p>{SITE_NAME}是一个免费的在线阅读网站，收录各类小说与资讯，页面简洁，更新及时。</p>\n"
        "<p>本站内容均来自网友上传或互联网收集，仅供交流学习使用。如有侵犯您的权益，"
        "请发送邮件至 admin@biqugexx.com，我们将在三个工作日内处理。</p>\n"
        "<p>友情链接申请、广告合作请联系站长。</p>"
    )
    write("about.html", _layout("关于本站", main, root=""))

    # The catalogue.
    latest = "\n".join(
        f'<li><a href="book/1/{n}.html">{html.escape(ch.title)}</a></li>'
        for n, ch in enumerate(chapters, start=1)
    )
    main = (
        '<h2>古典名著</h2>\n<ul class="books">'
        '<li><a href="book/1/index.html">红楼梦</a> 作者：曹雪芹</li>'
        '<li><a href="book/2/1.html">西游记</a> 作者：吴承恩 '
        f"最新：{html.escape(heading.strip())}</li></ul>\n"
        f'<h2>最近更新</h2>\n<ul class="latest">\n{latest}\n</ul>\n'
        '<h2>新闻资讯</h2>\n<ul><li><a href="news/1.html">'
        f"{html.escape(article.title)}</a></li></ul>"
    )
    write("index.html", _layout(f"{SITE_NAME}_书友最值得收藏的网络小说阅读网", main, root=""))
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n", encoding="ascii")

    manifest.innocent = ["index.html", "book/1/index.html", "book/2/1.html", "about.html"]
    return manifest


# ------------------------------------------------------------------------------- the server


class _Handler(SimpleHTTPRequestHandler):
    """Static files; ``text/html`` without a charset (pages declare it in ``<meta>``)."""

    protocol_version = "HTTP/1.1"  # keep-alive, as any real site: no connection per page

    def guess_type(self, path: str | Path) -> str:
        suffix = Path(path).suffix.lower()
        if suffix in (".html", ".htm"):
            return "text/html"
        if suffix == ".txt":
            return "text/plain"
        return super().guess_type(path)

    def list_directory(self, path: str | Path) -> None:
        self.send_error(404, "Not Found")
        return None

    def log_message(self, format: str, *args: object) -> None:
        pass


class LocalSite(LoopbackServer):
    """A directory served over HTTP on 127.0.0.1 from a background thread."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        super().__init__(functools.partial(_Handler, directory=str(root)), name="demo-site")


def serve(root: Path) -> LocalSite:
    """Serve ``root`` on ``http://127.0.0.1:<ephemeral port>/`` until ``close()``."""
    return LocalSite(root)
