"""One HTTP exchange as the crawl saw it: what was asked, what was answered, when and from where.

The crawl keeps an :class:`Exchange` for every response it receives
(:class:`tracker.crawling.middlewares.exchange.ExchangeMiddleware`, before Scrapy decompresses the
body) and hands it on with the page (``PageItem["exchanges"]``: one per part of a page fetched
in several parts, a feed's response for each of its items). Only a page that matches has its
exchanges written as WARC records (:mod:`tracker.enforcement.warc`); the others are dropped with
the item, so the bytes are kept only as long as the page is in the pipelines.

What is kept, and what is not:

* the response exactly as served: status, headers (in order, names as Scrapy normalises them)
  and the body bytes as they came off the connection (still compressed when the server
  compressed them); ``Transfer-Encoding`` is left out of the stored header block, since the
  body is stored de-chunked;
* the request headers the crawl sent (User-Agent, Accept…, cookies the site set), with
  ``Host`` as sent; credentials of the tracker's own (``Authorization``,
  ``Proxy-Authorization``: a proxy's password) are never written, and a password in a URL is
  masked (:func:`mask_url`);
* the time the response was received, the server's IP address (``response.ip_address``) and
  the protocol.
"""

from __future__ import annotations

import hashlib
import time
import weakref
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: Request headers that carry the tracker's own credentials: never written anywhere.
SECRET_HEADERS = frozenset({b"authorization", b"proxy-authorization"})
#: Response headers describing the transfer, not the body as stored.
TRANSFER_HEADERS = frozenset({b"transfer-encoding"})

Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True, slots=True)
class Exchange:
    """A request and its response, the body as served."""

    url: str
    method: str
    request_headers: Headers
    status: int
    response_headers: Headers
    body: bytes
    at: float  # seconds since the epoch, when the response was received
    ip: str | None = None
    protocol: str = "HTTP/1.1"
    # the body's SHA-256, once it is asked for: the WARC record and the capture document both
    # want it, and a chapter's body is hashed once (not a field of the exchange as data)
    _digest: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def digest(self) -> bytes:
        """SHA-256 of the body as served (the WARC record's payload), computed once."""
        if self._digest is None:
            object.__setattr__(self, "_digest", hashlib.sha256(self.body).digest())
        return self._digest  # type: ignore[return-value]

    @property
    def sha256(self) -> str:
        """:attr:`digest` in hex."""
        return self.digest.hex()

    @property
    def user_agent(self) -> str:
        return header(self.request_headers, b"User-Agent")

    @classmethod
    def of(cls, request: Any, response: Any, at: float | None = None) -> Exchange:
        """The exchange of a Scrapy ``request`` and ``response`` as they are now (a copy of
        the header lists: later middlewares change them)."""
        sent = [
            (bytes(name), bytes(value))
            for name, values in request.headers.items()
            if bytes(name).lower() not in SECRET_HEADERS
            for value in values
        ]
        if not any(name.lower() == b"host" for name, _ in sent):
            sent.insert(0, (b"Host", (urlsplit(response.url).netloc.rsplit("@", 1)[-1]).encode()))
        received = [
            (bytes(name), bytes(value))
            for name, values in response.headers.items()
            if bytes(name).lower() not in TRANSFER_HEADERS
            for value in values
        ]
        ip = getattr(response, "ip_address", None)
        return cls(
            url=response.url,
            method=request.method,
            request_headers=sent,
            status=int(response.status),
            response_headers=received,
            body=response.body,
            at=time.time() if at is None else at,
            ip=str(ip) if ip is not None else None,
            protocol=getattr(response, "protocol", None) or "HTTP/1.1",
        )


#: The exchange kept for each request in flight, by the request object: not in its meta, which
#: a queued copy of the request would have to serialise. Used from the reactor's thread only.
_KEPT: weakref.WeakKeyDictionary[Any, Exchange] = weakref.WeakKeyDictionary()


def keep_exchange(request: Any, exchange: Exchange) -> None:
    _KEPT[request] = exchange


def exchange_data(exchange: Exchange) -> dict[str, Any]:
    """``exchange`` as plain data (a request's meta, which a distributed crawl queues as JSON:
    :mod:`tracker.crawling.request_codec`); :func:`exchange_from_data` makes it again."""
    return {f.name: getattr(exchange, f.name) for f in fields(Exchange) if f.init}


def exchange_from_data(data: dict[str, Any]) -> Exchange:
    headers = ("request_headers", "response_headers")
    return Exchange(**{**data, **{h: [tuple(pair) for pair in data[h]] for h in headers}})


def exchange_of(response: Any) -> Exchange:
    """The exchange the crawl kept for ``response``'s request (:func:`keep_exchange`), else
    one made from the response as it is now (its body possibly decompressed already)."""
    kept = _KEPT.get(response.request) if response.request is not None else None
    return kept if kept is not None else Exchange.of(response.request, response)


def header(headers: Headers, name: bytes) -> str:
    """The first value of header ``name`` (any case), as text; "" when absent."""
    wanted = name.lower()
    for key, value in headers:
        if key.lower() == wanted:
            return value.decode("latin-1")
    return ""


def headers_dict(headers: Headers) -> dict[str, str]:
    """Headers as ``{name: value}`` for people (repeated names joined by ``, ``)."""
    joined: dict[str, str] = {}
    for name, value in headers:
        key = name.decode("latin-1")
        text = value.decode("latin-1")
        joined[key] = f"{joined[key]}, {text}" if key in joined else text
    return joined


def mask_url(url: str) -> str:
    """``url`` with the password of its user info replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def payload_digest(exchanges: list[Exchange]) -> str:
    """The SHA-256 stored with a page's matches: of its body as served, or of its parts' bodies
    one after the other, hex."""
    if len(exchanges) == 1:
        return exchanges[0].sha256
    digest = hashlib.sha256()
    for exchange in exchanges:
        digest.update(exchange.body)
    return digest.hexdigest()


def capture_document(
    capture_id: str,
    url: str,
    content_hash: str | None,
    matches: list[dict[str, Any]],
    exchanges: list[Exchange],
    records: list[Any],
    stored_at: Any,
) -> dict[str, Any]:
    """The ``captures`` document of a matched page (see :mod:`tracker.stores.evidence`):
    ``records`` holds the page's WARC record references, response then request per part."""
    import tracker
    from tracker.model import site_of

    parts = []
    for k, exchange in enumerate(exchanges):
        parts.append(
            {
                "url": mask_url(exchange.url),
                "status": exchange.status,
                "at": _moment(exchange.at),
                "ip": exchange.ip,
                "user_agent": exchange.user_agent,
                "sha256": exchange.sha256,
                "length": len(exchange.body),
                "request_headers": headers_dict(exchange.request_headers),
                "response_headers": headers_dict(exchange.response_headers),
                "records": [ref.to_dict() for ref in records[2 * k : 2 * k + 2]],
            }
        )
    first = exchanges[0]
    return {
        "_id": capture_id,
        "url": url,
        "site": site_of(url),
        "at": _moment(first.at),
        "stored_at": stored_at,
        "status": first.status,
        "content_hash": content_hash or "",
        "payload_sha256": payload_digest(exchanges),
        "parts": parts,
        "matches": [
            {
                key: match.get(key)
                for key in ("doc_id", "work", "title", "score", "coverage", "method", "spans")
            }
            for match in matches
        ],
        "tracker_version": tracker.__version__,
        "screenshot": None,
        "stamp": {"state": "none"},
    }


def _moment(at: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC)
