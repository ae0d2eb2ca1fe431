"""Search engines behind one small interface: a query in, result URLs out, or a
:class:`SearchError` that says what went wrong.

:class:`SearxngEngine` speaks the JSON API of SearXNG, the self-hosted metasearch engine that
asks Baidu, Bing, Sogou, 360 and others at once: ``GET {search_url}/search?q=…&format=json``
answers ``{"query", "number_of_results", "results": [{"url", "title", "content", "engine",
"engines", "score", "category"}], "answers", "suggestions", "unresponsive_engines": [[engine,
reason]]}`` (the ``json`` format must be enabled in its ``settings.yml``: ``search.formats``).

Its real failure modes, and what a run does with each (:mod:`tracker.discovery.run`):

* **rate limits** (429, or 503 from a busy instance): the engine is asked again after its
  ``Retry-After`` or an exponential back-off with jitter (2, 4, 8… s, at most
  :data:`BACKOFF_MAX_S`), up
  to ``search_retries`` times; a wait over :data:`MAX_WAIT_S`, or the retries spent, is
  :data:`RATE_LIMITED`, and the run stops searching for the day;
* **timeouts**, **server errors**, a **connection refused**, an **empty body** or **malformed
  JSON**: a :class:`SearchError` naming the cause; the run logs it, leaves the query to be run
  again next time and goes on with the next;
* ``unresponsive_engines``: SearXNG's own engines that failed (a CAPTCHA, a timeout, an access
  denied): the results of those that answered are used, and the answer says which failed.

Another engine (a commercial search API) is another class with the same :meth:`search`.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

from tracker.crawling.middlewares.bans import retry_after
from tracker.crawling.middlewares.retry import backoff_delay

log = logging.getLogger(__name__)

BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 60.0
#: A Retry-After longer than this is a ban for the run: the engine is not waited for.
MAX_WAIT_S = 300.0
MAX_BODY = 8 << 20

# SearchError kinds.
RATE_LIMITED = "rate_limited"
TIMEOUT = "timeout"
CONNECTION = "connection"
HTTP = "http"
EMPTY = "empty"
MALFORMED = "malformed"
REFUSED = "refused"  # the instance does not serve the JSON format (403)


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str = ""
    content: str = ""
    engines: tuple[str, ...] = ()
    score: float = 0.0


@dataclass(frozen=True)
class SearchAnswer:
    """What the engine answered to one query: its results (http(s) URLs only, in the engine's
    order, each once) and the engines behind it that did not answer, ``(engine, reason)``."""

    query: str
    results: list[SearchResult] = field(default_factory=list)
    unresponsive: list[tuple[str, str]] = field(default_factory=list)
    number_of_results: int = 0


class SearchError(Exception):
    """A query the engine did not answer: ``kind`` (:data:`RATE_LIMITED`, :data:`TIMEOUT`…)
    and a message naming the engine and the cause."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class SearchEngine(Protocol):
    """What discovery needs of a search engine."""

    name: str

    def search(self, query: str) -> SearchAnswer:
        """The first page of results for ``query``, or :class:`SearchError`."""
        ...


class SearxngEngine:
    """SearXNG's JSON API at ``url`` (see the module doc for its failure modes)."""

    name = "searxng"

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 20.0,
        retries: int = 3,
        backoff_base: float = BACKOFF_BASE_S,
        backoff_max: float = BACKOFF_MAX_S,
        max_wait: float = MAX_WAIT_S,
        sleep: Callable[[float], Any] = time.sleep,
        language: str = "zh-CN",
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff_base, self.backoff_max, self.max_wait = backoff_base, backoff_max, max_wait
        self.sleep = sleep
        self.language = language
        self.waited = 0.0  # seconds spent backing off, for the run's figures

    @property
    def where(self) -> str:
        """The engine's address for messages, a password in it masked."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        return f"SearXNG at {parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}"

    def search(self, query: str) -> SearchAnswer:
        params = {"q": query, "format": "json", "pageno": 1, "language": self.language}
        request = urllib.request.Request(
            f"{self.url}/search?{urlencode(params)}",
            headers={"Accept": "application/json", "User-Agent": "tracker-discovery"},
        )
        for attempt in range(self.retries + 1):
            try:
                return self._answer(query, self._fetch(request))
            except _Busy as busy:
                wait = busy.retry_after
                if wait is None:  # exponential, with equal jitter (as a crawl backs off)
                    wait = backoff_delay(attempt + 1, self.backoff_base, self.backoff_max)
                if attempt == self.retries or wait > self.max_wait:
                    raise SearchError(
                        RATE_LIMITED,
                        f"{self.where} is rate-limiting (HTTP {busy.status}) "
                        + (f"and asks for {wait:.0f}s" if wait > self.max_wait
                           else f"after {attempt + 1} tries"),
                    ) from None  # fmt: skip
                log.warning("%s answered %s; asking again in %.1fs", self.where, busy.status, wait)
                self.waited += wait
                self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _fetch(self, request: urllib.request.Request) -> bytes:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read(MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            status = exc.code
            if status in (429, 503):
                raise _Busy(status, retry_after(exc.headers.get("Retry-After"))) from None
            if status == 403:
                raise SearchError(
                    REFUSED,
                    f"{self.where} refused the query (HTTP 403): enable the json format in its "
                    "settings.yml (search: formats: [html, json])",
                ) from None
            raise SearchError(HTTP, f"{self.where} answered HTTP {status}") from None
        except TimeoutError:
            raise SearchError(TIMEOUT, self._timed_out()) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise SearchError(TIMEOUT, self._timed_out()) from None
            raise SearchError(CONNECTION, f"{self.where} cannot be reached: {reason}") from None
        except (OSError, http.client.HTTPException) as exc:  # reset, cut short, garbled
            raise SearchError(CONNECTION, f"{self.where}: the connection failed: {exc}") from None

    def _timed_out(self) -> str:
        return f"{self.where} did not answer in {self.timeout:g}s"

    def _answer(self, query: str, body: bytes) -> SearchAnswer:
        if not body.strip():
            raise SearchError(EMPTY, f"{self.where} answered an empty page")
        if len(body) > MAX_BODY:
            raise SearchError(MALFORMED, f"{self.where} answered more than {MAX_BODY >> 20} MiB")
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SearchError(
                MALFORMED, f"{self.where} answered something that is not JSON ({exc})"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise SearchError(MALFORMED, f"{self.where} answered JSON without a results list")
        results, seen = [], set()
        for item in data["results"]:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            url = item["url"].strip()
            if urlsplit(url).scheme not in ("http", "https") or url in seen:
                continue
            seen.add(url)
            engines = item.get("engines") or [item.get("engine")]
            results.append(
                SearchResult(
                    url=url,
                    title=str(item.get("title") or ""),
                    content=str(item.get("content") or ""),
                    engines=tuple(str(e) for e in engines if e),
                    score=_number(item.get("score")),
                )
            )
        unresponsive = []
        for entry in data.get("unresponsive_engines") or ():
            if isinstance(entry, list | tuple) and entry:
                unresponsive.append((str(entry[0]), str(entry[1]) if len(entry) > 1 else ""))
        return SearchAnswer(
            query=query,
            results=results,
            unresponsive=unresponsive,
            number_of_results=int(_number(data.get("number_of_results"))),
        )


class _Busy(Exception):
    def __init__(self, status: int, retry_after: float | None) -> None:
        self.status, self.retry_after = status, retry_after


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def engine_for(settings: Any) -> SearchEngine:
    """The search engine the settings name (``search_url``: a SearXNG)."""
    return SearxngEngine(
        settings.search_url, timeout=settings.search_timeout_s, retries=settings.search_retries
    )
