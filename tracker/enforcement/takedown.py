"""Takedown tracking: is each noticed page gone, and does each site comply?

``tracker takedown check`` (and the scheduler's daily ``takedown`` job) fetches every URL a
notice was sent for again and classifies it:

* **removed**: HTTP 404, 410 or 451, a host that no longer resolves, or a page whose text no
  longer copies the masters it was noticed for (checked again with the detector: a page
  rewritten, emptied, or redirected to the home page);
* **live**: it still copies one of them;
* **reappeared**: live again after it was found removed (stay-down), counted per URL.

A URL that cannot be fetched for another reason (a timeout, a 5xx, a refused connection, a
challenge page's 403) keeps its state and is counted as unreachable: a site that is down for an
hour has not complied. Each change is stored with its time
(:class:`tracker.stores.takedowns.TakedownStore`), so the figures of any past day can be read
again (:mod:`tracker.enforcement.compliance`, the report's ``takedown``). A page found live is
captured again as evidence, as the crawl captures (WARC records, ``captures``), when it is first
found live after its notice and when it comes back: proof it stayed up.

Politeness: the checks of one site are made one after the other, ``takedown_delay_s`` apart,
with the User-Agent the crawl fetched the page with (else the crawl's own); up to
``SITES_AT_ONCE`` sites are checked at once.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from tracker.enforcement.capture import Exchange, capture_document
from tracker.enforcement.warc import EvidenceWriter, evidence_dir
from tracker.stores.evidence import CaptureStore
from tracker.stores.takedowns import LIVE, NOTICED, REMOVED, TakedownStore

log = logging.getLogger(__name__)

GONE_STATUSES = frozenset({404, 410, 451})
SITES_AT_ONCE = 4
TIMEOUT_S = 30.0
MAX_BYTES = 32 << 20


# ------------------------------------------------------------------------------------ fetching


@dataclass
class Fetched:
    url: str
    status: int | None  # None: not fetched (see ``error``)
    body: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    request_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    at: float = 0.0
    ip: str | None = None
    error: str = ""
    gone: bool = False  # the host no longer resolves


class _Answers(urllib.request.HTTPErrorProcessor):
    """Redirects followed; every other status is an answer to classify, not an exception."""

    def http_response(self, request, response):  # type: ignore[no-untyped-def]
        if 300 <= response.status < 400:
            return super().http_response(request, response)
        return response

    https_response = http_response


def fetch(url: str, user_agent: str, timeout: float = TIMEOUT_S) -> Fetched:
    """GET ``url`` following redirects (http and https only), as the crawl would."""
    headers = {"User-Agent": user_agent, "Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    opener = urllib.request.build_opener(_Answers)
    request = urllib.request.Request(url, headers=headers)
    sent = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in request.header_items()]
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(MAX_BYTES + 1)
            ip = _peer(response)
            status = int(response.status)
            received = [
                (k.encode("latin-1"), v.encode("latin-1", "replace"))
                for k, v in response.headers.items()
                if k.lower() != "transfer-encoding"
            ]
            final = response.geturl()
    except urllib.error.URLError as exc:
        reason = exc.reason
        gone = isinstance(reason, socket.gaierror) and reason.errno in (
            socket.EAI_NONAME,
            getattr(socket, "EAI_NODATA", socket.EAI_NONAME),
        )
        return Fetched(url, None, error=str(reason), gone=gone, at=time.time())
    except (TimeoutError, OSError, ValueError) as exc:
        return Fetched(url, None, error=str(exc) or type(exc).__name__, at=time.time())
    if len(body) > MAX_BYTES:
        return Fetched(url, None, error=f"larger than {MAX_BYTES >> 20} MiB", at=time.time())
    if not final.lower().startswith(("http://", "https://")):
        return Fetched(url, None, error=f"redirected to {final}", at=time.time())
    return Fetched(final, status, body, received, sent, time.time(), ip)


def _peer(response: Any) -> str | None:
    """The server's IP address, when the connection still says."""
    try:
        return str(response.fp.raw._sock.getpeername()[0])
    except (AttributeError, OSError, IndexError):
        return None


# ---------------------------------------------------------------------------------- checking


@dataclass
class Checked:
    url: str
    state: str | None  # removed, live, or None (unreachable: unchanged)
    status: int | None
    reason: str
    fetched: Fetched | None = None
    matches: list[dict[str, Any]] = field(default_factory=list)


def classify(
    url: str, fetched: Fetched, doc_ids: Iterable[str], check_text: Callable[[str], list]
) -> Checked:
    """What ``fetched`` says of the page ``url``, noticed for ``doc_ids`` (see the module
    doc); ``check_text`` is the detector's check of a text (its matches)."""
    if fetched.status is None:
        if fetched.gone:
            return Checked(url, REMOVED, None, f"the host no longer resolves ({fetched.error})")
        return Checked(url, None, None, f"unreachable: {fetched.error}")
    if fetched.status in GONE_STATUSES:
        return Checked(url, REMOVED, fetched.status, f"HTTP {fetched.status}")
    if fetched.status >= 400:
        return Checked(url, None, fetched.status, f"unreachable: HTTP {fetched.status}")
    from tracker.reading.readers import Input, InputError, input_text

    content_type = next(
        (v.decode("latin-1") for k, v in fetched.headers if k.lower() == b"content-type"), ""
    )
    media, _, rest = content_type.partition(";")
    charset = rest.partition("charset=")[2].strip(" \"'") or None
    try:
        page = Input(url, fetched.body, media.strip().lower(), charset, fetched.url)
        text = input_text(page)
    except InputError as exc:
        return Checked(url, REMOVED, fetched.status, f"no text copied any more ({exc})", fetched)
    wanted = set(doc_ids)
    matches = [m.to_dict() if hasattr(m, "to_dict") else m for m in check_text(text)]
    copied = [m for m in matches if not wanted or str(m["doc_id"]) in wanted]
    if copied:
        return Checked(url, LIVE, fetched.status, "still copies the masters noticed", fetched,
                       copied)  # fmt: skip
    return Checked(url, REMOVED, fetched.status, "its text no longer copies the masters noticed")


@dataclass
class CheckSummary:
    checked: int = 0
    removed: int = 0
    live: int = 0
    reappeared: int = 0  # came back in this check
    unreachable: int = 0
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # url, before, after

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "changes": len(self.changes)}


def check_takedowns(
    runtime: Any,
    settings: Any,
    *,
    site: str | None = None,
    clock: Callable[[], datetime] | None = None,
    stop: threading.Event | None = None,
) -> CheckSummary:
    """Check every noticed URL (of ``site``) now; store what changed."""
    from tracker.crawling.settings import USER_AGENT
    from tracker.matching.library import MasterLibrary

    clock = clock or (lambda: datetime.now(UTC))
    store = TakedownStore(runtime.db)
    docs = store.all(site)
    captures = CaptureStore(runtime.db)
    detector = MasterLibrary.from_runtime(runtime).detector(settings)
    detecting = threading.Lock()

    def check_text(text: str) -> list:
        with detecting:  # the detector checks one batch at a time
            return detector.check(text)

    agents = _user_agents(captures, [d["_id"] for d in docs])
    by_site: dict[str, list[dict]] = defaultdict(list)
    for doc in docs:
        by_site[doc.get("site") or ""].append(doc)
    delay = max(0.0, float(settings.takedown_delay_s))

    def check_site(docs: list[dict]) -> list[tuple[dict, Checked]]:
        results = []
        for k, doc in enumerate(docs):
            if stop is not None and stop.is_set():
                break
            if k and delay:
                time.sleep(delay)
            fetched = fetch(doc["_id"], agents.get(doc["_id"]) or USER_AGENT)
            doc_ids = doc.get("doc_ids") or ()
            results.append((doc, classify(doc["_id"], fetched, doc_ids, check_text)))
        return results

    with ThreadPoolExecutor(max_workers=SITES_AT_ONCE, thread_name_prefix="takedown") as pool:
        done = [pair for results in pool.map(check_site, by_site.values()) for pair in results]
    summary = CheckSummary()
    records = []
    live_pages = []
    for doc, checked in done:
        summary.checked += 1
        before = doc.get("state") or NOTICED
        if checked.state is None:
            summary.unreachable += 1
            continue
        at = clock()
        records.append((doc["_id"], checked.state, checked.status, checked.reason, at))
        if checked.state == REMOVED:
            summary.removed += 1
        else:
            summary.live += 1
            if before != LIVE:  # found up after its notice, or back: kept as evidence once
                live_pages.append(checked)
            if before == REMOVED:
                summary.reappeared += 1
        if checked.state != before:
            summary.changes.append((doc["_id"], before, checked.state))
    _capture_live(runtime, settings, live_pages)
    store.record_checks(records)
    return summary


def _user_agents(captures: CaptureStore, urls: list[str]) -> dict[str, str]:
    """The User-Agent each page was crawled with (its newest capture's)."""
    newest = captures.latest_of(urls, {"parts.user_agent": 1})
    return {
        url: (doc.get("parts") or [{}])[0].get("user_agent") or "" for url, doc in newest.items()
    }


def _capture_live(runtime: Any, settings: Any, pages: list[Checked]) -> None:
    """Keep the evidence of pages found live after their notice (WARC records and captures,
    as the crawl keeps them): they show the page stayed up."""
    pages = [page for page in pages if page.fetched is not None]
    if not pages:
        return
    exchanges = [
        Exchange(
            url=page.fetched.url,
            method="GET",
            request_headers=page.fetched.request_headers,
            status=int(page.fetched.status or 0),
            response_headers=page.fetched.headers,
            body=page.fetched.body,
            at=page.fetched.at,
            ip=page.fetched.ip,
        )
        for page in pages
    ]
    writer = EvidenceWriter(evidence_dir(settings))
    try:
        refs = writer.write([[exchange] for exchange in exchanges])
    except OSError as exc:
        log.error("could not keep the evidence of the pages still live: %s", exc)
        return
    finally:
        writer.close()
    now = datetime.now(UTC)
    documents = []
    for page, exchange, records in zip(pages, exchanges, refs, strict=True):
        document = capture_document(
            uuid.uuid4().hex, page.url, None, page.matches, [exchange], records, now
        )
        document["source"] = "takedown check"
        documents.append(document)
    CaptureStore(runtime.db).add_many(documents)
