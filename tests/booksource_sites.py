"""Local sites that readers reach only through their search box, and the Legado book-source
file that reads them, in the real format (as 阅读 exports it).

* :func:`html_site`: a GBK 笔趣阁-style site with no public index: a search form that POSTs
  ``searchkey`` in GBK, a result table, a book page listing its chapters, each chapter split
  over two pages (``下一页``) with the site's ad lines; beside each pirated book an innocent one
  with a similar name.
* :func:`json_site`: an app's JSON API: search, book, a table of contents in pages, chapters.
* :func:`legado_sources`: one JSOUP source for the first, one JSONPath source for the second,
  one that needs a script.
"""

from __future__ import annotations

import html
import json
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from tests.sites import chapter_br, html_page, paragraphs
from tests.texts import prose
from tracker.demo.server import LoopbackServer

CHAPTERS = 8
WORKS = {"星海归途": 100, "青云剑录": 200}  # work -> prose seed base
#: (status, content type, body) for a method, path, query and form.
Answer = tuple[int, str, bytes]
Handler = Callable[[str, str, dict[str, list[str]], bytes], Answer | None]


def chapters(work: str) -> list[tuple[str, str]]:
    base = WORKS[work]
    return [(f"第{k}章 {work}第{k}回", prose(base + k, 1200)) for k in range(1, CHAPTERS + 1)]


def book_text(work: str) -> str:
    """The master book ``tracker ingest`` reads."""
    body = "\n\n".join(f"{title}\n\n{text}" for title, text in chapters(work))
    return f"《{work}》\n\n{body}\n"


class AppSite(LoopbackServer):
    """Answers GET and POST through ``handler``; logs each request's method and path."""

    __test__ = False

    def __init__(self, handler: Handler) -> None:
        self.requests: list[str] = []
        self._lock = threading.Lock()
        site = self

        class Requests(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                site.serve(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                site.serve(self, self.rfile.read(length))

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.handler = handler
        super().__init__(Requests, name="booksource-site")

    def fetched(self) -> Counter[str]:
        with self._lock:
            return Counter(self.requests)

    def serve(self, request: BaseHTTPRequestHandler, body: bytes) -> None:
        parts = urlsplit(request.path)
        with self._lock:
            self.requests.append(f"{request.command} {request.path}")
        query = parse_qs(parts.query, encoding=request.headers.get("X-Charset") or "utf-8")
        answer = self.handler(request.command, parts.path, query, body)
        status, kind, data = answer or (404, "text/html", b"<html><body>Not Found</body></html>")
        try:
            request.send_response(status)
            request.send_header("Content-Type", kind)
            request.send_header("Content-Length", str(len(data)))
            request.end_headers()
            request.wfile.write(data)
        except OSError:
            request.close_connection = True


# ----------------------------------------------------------------------- the HTML site


Book = tuple[str, list[tuple[str, str]]]  # a work's name, its (title, text) chapters


def html_site(books: dict[str, Book] | None = None) -> AppSite:
    """The GBK site: book id -> work and chapters for the pirated books (default: both
    works), and an innocent book beside each (its name the work's plus 外传)."""
    books = books or {
        "1001": ("星海归途", chapters("星海归途")),
        "1002": ("青云剑录", chapters("青云剑录")),
    }
    catalogue: dict[str, Book] = {}
    for book_id, (work, listed) in books.items():
        catalogue[book_id] = (work, listed)
        innocent = [(f"第{k}章 外传{k}", prose(7000 + int(book_id) + k, 1200)) for k in (1, 2)]
        catalogue[str(int(book_id) + 500)] = (f"{work}外传", innocent)

    def page(title: str, main: str) -> Answer:
        text = html_page(title, main, meta_charset="gbk")
        return 200, "text/html; charset=gbk", text.encode("gbk", "xmlcharrefreplace")

    def handle(method: str, path: str, query: dict, body: bytes) -> Answer | None:
        if path == "/":
            return page("首页", "<form action='/modules/article/search.php'>搜索</form>")
        if path == "/modules/article/search.php" and method == "POST":
            key = parse_qs(body.decode("ascii"), encoding="gbk").get("searchkey", [""])[0]
            rows = "".join(
                f"<tr><td class='odd'><a href='/book/{bid}/'>{html.escape(name)}</a></td>"
                f"<td class='odd'>作者{bid}</td></tr>"
                for bid, (name, _) in catalogue.items()
                if key and key in name
            )
            table = f"<table class='grid'><tr><th>书名</th><th>作者</th></tr>{rows}</table>"
            return page(f"搜索 {key}", table)
        parts = path.strip("/").split("/")
        if len(parts) < 2 or parts[0] != "book" or parts[1] not in catalogue:
            return None
        name, listed = catalogue[parts[1]]
        if len(parts) == 2:
            links = "".join(
                f"<dd><a href='/book/{parts[1]}/{k}.html'>{html.escape(title)}</a></dd>"
                for k, (title, _) in enumerate(listed, 1)
            )
            info = f"<div id='info'><h1>{html.escape(name)}</h1></div>"
            return page(name, f"{info}<div id='list'><dl><dt>正文</dt>{links}</dl></div>")
        number, _, half = parts[2].removesuffix(".html").partition("_")
        k = int(number)
        if not 1 <= k <= len(listed):
            return None
        title, text = listed[k - 1]
        lines = paragraphs(text)
        middle = len(lines) // 2
        if half:
            shown = "\n".join(lines[middle:])
            links = f'<a href="/book/{parts[1]}/{k + 1}.html">下一章</a>' if k < len(listed) else ""
        else:
            shown = "\n".join(lines[:middle]) + "\n本章未完，请点击下一页继续阅读"
            links = f'<a href="/book/{parts[1]}/{k}_2.html">下一页</a>'
        return page(title, chapter_br(title, shown, links))

    return AppSite(handle)


# ----------------------------------------------------------------------- the JSON API


def json_site(books: dict[str, Book] | None = None, per_page: int = 3) -> AppSite:
    """An app's API: book id -> work and chapters (default: 星海归途), an innocent book
    beside them; the table of contents ``per_page`` chapters a page."""
    catalogue = dict(books or {"x7": ("星海归途", chapters("星海归途"))})
    catalogue["q9"] = ("星海", [("第1章 星海", prose(7900, 1200))])

    def answer(data: object) -> Answer:
        return 200, "application/json", json.dumps(data, ensure_ascii=False).encode()

    def handle(method: str, path: str, query: dict, body: bytes) -> Answer | None:
        first = {key: values[0] for key, values in query.items()}
        if path == "/api/search":
            key = first.get("keyword", "")
            found = [
                {"bookName": name, "bookId": bid, "author": "某人"}
                for bid, (name, _) in catalogue.items()
                if key and key in name
            ]
            return answer({"code": 200, "data": {"list": found, "page": first.get("page")}})
        bid = first.get("id", "")
        if bid not in catalogue:
            return None
        name, listed = catalogue[bid]
        if path == "/api/book":
            return answer({"code": 200, "data": {"name": name, "tocUrl": f"/api/toc?id={bid}"}})
        if path == "/api/toc":
            page = int(first.get("page") or 1)
            shown = listed[(page - 1) * per_page : page * per_page]
            more = page * per_page < len(listed)
            entries = [
                {"name": title, "bid": bid, "cid": (page - 1) * per_page + k}
                for k, (title, _) in enumerate(shown, 1)
            ]
            nxt = f"/api/toc?id={bid}&page={page + 1}" if more else None
            return answer({"code": 200, "data": {"chapters": entries, "next": nxt}})
        if path == "/api/content":
            cid = int(first.get("cid") or 0)
            if not 1 <= cid <= len(listed):
                return None
            title, text = listed[cid - 1]
            return answer({"code": 200, "data": {"title": title, "content": text}})
        return None

    return AppSite(handle)


# ----------------------------------------------------------------------- the source file


def jsoup_source(site: AppSite, name: str = "测试书城") -> dict:
    return {
        "bookSourceName": name,
        "bookSourceGroup": "笔趣阁",
        "bookSourceUrl": site.url.rstrip("/"),
        "bookSourceType": 0,
        "enabled": True,
        "header": '{"User-Agent": "Mozilla/5.0 (Linux; Android 10)"}',
        "searchUrl": '/modules/article/search.php,{"method":"POST",'
        '"body":"searchkey={{key}}&searchtype=articlename","charset":"gbk"}',
        "ruleSearch": {
            "bookList": "class.grid@tag.tr!0",
            "name": "tag.td.0@tag.a@text",
            "author": "tag.td.1@text",
            "bookUrl": "tag.td.0@tag.a@href",
        },
        "ruleBookInfo": {"name": "id.info@tag.h1@text", "tocUrl": ""},
        "ruleToc": {
            "chapterList": "id.list@tag.dd",
            "chapterName": "tag.a@text",
            "chapterUrl": "tag.a@href",
        },
        "ruleContent": {
            "content": "id.content@html",
            "nextContentUrl": "text.下一页@href",
            "replaceRegex": "##最快更新本书最新章节.*?com|本章未完.*",
        },
    }


def json_source(site: AppSite, name: str = "某某阅读API") -> dict:
    return {
        "bookSourceName": name,
        "bookSourceUrl": site.url.rstrip("/"),
        "bookSourceType": 0,
        "searchUrl": "/api/search?keyword={{key}}&page={{page}}",
        # Legado also takes a group written as a JSON string
        "ruleSearch": json.dumps(
            {
                "bookList": "$.data.list[*]",
                "name": "$.bookName",
                "author": "$.author",
                "bookUrl": "/api/book?id={{$.bookId}}",
            },
            ensure_ascii=False,
        ),
        "ruleBookInfo": {"tocUrl": "@Json:$.data.tocUrl"},
        "ruleToc": {
            "chapterList": "$.data.chapters[*]",
            "chapterName": "$.name",
            "chapterUrl": "/api/content?id={$.bid}&cid={$.cid}",
            "nextTocUrl": "$.data.next",
        },
        "ruleContent": {"content": "$.data.content"},
    }


def script_source() -> dict:
    return {
        "bookSourceName": "需要脚本的书源",
        "bookSourceUrl": "https://www.js-only.test",
        "bookSourceType": 0,
        "searchUrl": "/search?q={{key}}",
        "ruleSearch": {"bookList": "class.item", "name": "tag.h3@text", "bookUrl": "tag.a@href"},
        "ruleToc": {"chapterList": "id.list@tag.li", "chapterUrl": "tag.a@href"},
        "ruleContent": {"content": "id.txt@html", "webJs": "document.body.innerText"},
    }


def legado_sources(reading: AppSite, api: AppSite) -> str:
    """The three sources as Legado exports them: an indented JSON array."""
    sources = [jsoup_source(reading), json_source(api), script_source()]
    return json.dumps(sources, ensure_ascii=False, indent=2)
