"""A local search engine answering SearXNG's JSON API on loopback, for the tests and the bench
(nothing there may reach the internet).

``GET /search?q=…&format=json`` answers SearXNG's real shape: ``{"query", "number_of_results",
"results": [{"url", "title", "content", "engine", "engines", "parsed_url", "template",
"positions", "score", "category", "publishedDate"}], "answers", "corrections", "infoboxes",
"suggestions", "unresponsive_engines": [[engine, reason]]}``; another ``format`` is refused
with 403, as an instance without the json format does. :attr:`SearchServer.replies` queues
scripted answers (a status, a ``Retry-After``, a delay, a raw body: empty, malformed, cut
short), served before the normal ones, so a test can play SearXNG's failure modes in order.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tracker.demo.server import LoopbackServer

#: ``query → result URLs`` (or ``(url, title, content)`` triples).
Results = Callable[[str], list[Any]]


@dataclass
class Reply:
    """One scripted answer: ``status``, ``headers``, ``delay`` seconds before it, and ``body``
    (None: the normal JSON answer, with ``unresponsive`` engines named in it)."""

    status: int = 200
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    unresponsive: list[tuple[str, str]] = field(default_factory=list)


def answer(query: str, results: list[Any], unresponsive: list[tuple[str, str]] = ()) -> dict:
    """SearXNG's JSON answer to ``query`` with ``results``."""
    items = []
    for position, result in enumerate(results, start=1):
        url, title, content = (result, "", "") if isinstance(result, str) else result
        parts = urlsplit(url)
        items.append(
            {
                "url": url,
                "title": title or url,
                "content": content,
                "engine": "bing",
                "engines": ["bing", "baidu"],
                "parsed_url": [parts.scheme, parts.netloc, parts.path, "", parts.query, ""],
                "template": "default.html",
                "positions": [position],
                "score": round(2.0 / position, 3),
                "category": "general",
                "publishedDate": None,
            }
        )
    return {
        "query": query,
        "number_of_results": len(items),
        "results": items,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [list(pair) for pair in unresponsive],
    }


class SearchServer(LoopbackServer):
    """SearXNG's JSON API on ``http://127.0.0.1:<port>/`` (see the module doc); every query
    received is in :attr:`queries`."""

    def __init__(self, results: Results | None = None) -> None:
        self.results: Results = results or (lambda query: [])
        self.replies: list[Reply] = []
        self.queries: list[str] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server._serve(self)

            def log_message(self, *args: object) -> None:
                pass

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that timed out hangs up

        super().__init__(Handler, Quiet, name="searxng")

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        params = parse_qs(parts.query)
        query = (params.get("q") or [""])[0]
        with self._lock:
            self.queries.append(query)
            reply = self.replies.pop(0) if self.replies else Reply()
        if reply.delay:
            time.sleep(reply.delay)
        if parts.path != "/search":
            status, body = 404, b"Not Found"
        elif (params.get("format") or ["html"])[0] != "json":
            status, body = 403, b"<html><body>403 Forbidden</body></html>"
        elif reply.body is not None:
            status, body = reply.status, reply.body
        else:
            status = reply.status
            data = answer(query, self.results(query) if status == 200 else [], reply.unresponsive)
            body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        try:
            request.send_response(status)
            request.send_header("Content-Type", "application/json; charset=utf-8")
            for name, value in reply.headers.items():
                request.send_header(name, value)
            request.send_header("Content-Length", str(len(body)))
            request.end_headers()
            request.wfile.write(body)
        except OSError:
            pass  # the client gave up (a timeout test)
