"""Domain types and helpers shared by every layer (readers, library, pipelines, stores, reports):
what a master document is, which site a URL belongs to, and the hash that tells whether a page's
text changed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class MasterDocument:
    """One chapter or article of the master library (母体库), as read from a file or a source."""

    doc_id: str
    work: str
    title: str
    text: str
    source: str = ""


#: What a master document is: a book's chapter or a news article (reports name them so).
CHAPTER, ARTICLE = "chapter", "article"


def site_of(url: str) -> str:
    """The site a page belongs to: its host name, lower-case."""
    return (urlsplit(url).hostname or "").lower()


def site_key(url: str) -> str:
    """A site as discovery registers it (:mod:`tracker.discovery`): the host, lower-case, and
    the port when the URL names one, so two sites on one host (on a test machine, or a pirate's
    mirror on another port) are two sites."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:  # a malformed port: the host alone
        port = None
    return f"{host}:{port}" if port else host


def is_licensed(url: str, licensed: Iterable[str]) -> bool:
    """Whether ``url`` is on one of the ``licensed`` sites: a ``host:port`` names that port
    only, a host every port and every subdomain."""
    key = site_key(url)
    host = (urlsplit(url).hostname or "").lower()
    for site in licensed:
        if ":" in site:
            if key == site:
                return True
        elif host == site or host.endswith("." + site):
            return True
    return False


def content_hash(text: str) -> str:
    """A 128-bit digest of a page's extracted text: equal digests, unchanged page."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
