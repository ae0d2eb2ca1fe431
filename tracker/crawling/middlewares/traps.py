"""Crawler-trap defences applied to every request a spider yields.

* **Session ids** in URLs (``;jsessionid=…``, ``?sid=…``, ``PHPSESSID``…) make every visit's
  links new to the duplicate filter; they are stripped, so each page has one URL.
* **Repeated path segments** (``/a/b/a/b/a/…``) come from relative links that resolve
  deeper forever; URLs where one segment occurs more than ``TRACKER_TRAP_MAX_SEGMENT_REPEATS``
  times are dropped.
* **Calendar and archive explosions** (``/calendar/2024-05.html`` linking to every month
  forever, ``?year=…&month=…``): URLs with a date under a calendar/archive word or in a date
  parameter are grouped by their shape (digits folded) and at most
  ``TRACKER_TRAP_MAX_DATE_PAGES`` distinct URLs of each shape are followed.
* **Overlong URLs** (more than ``TRACKER_TRAP_MAX_URL_LENGTH`` characters) are dropped.

Each dropped or rewritten request is counted as ``tracker/traps/<kind>``. Canonical URLs
(``<link rel="canonical">``) are handled by the spiders, which see the page.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from tracker.config import Settings

log = logging.getLogger(__name__)

SESSION_PARAMS = frozenset(
    (
        "sid",
        "sessid",
        "sessionid",
        "session_id",
        "session",
        "phpsessid",
        "jsessionid",
        "aspsessionid",
        "cfid",
        "cftoken",
        "zenid",
        "osCsid".lower(),
    )
)
_PATH_SESSION = re.compile(r";(?:jsessionid|phpsessid|sid|sessionid)=[^/?#]*", re.I)
_CALENDAR_WORDS = re.compile(
    r"calendar|archive|archives|date|day|month|year|cal|rili|riqi|history|guidang", re.I
)
_DATE_PARAMS = frozenset(("date", "day", "month", "year", "y", "m", "d", "ym", "ymd", "time"))
_DATE = re.compile(r"(?<!\d)(?:19|20)\d{2}(?:[-/_.]?(?:0?[1-9]|1[0-2]))(?:[-/_.]?\d{1,2})?(?!\d)")
_DIGITS = re.compile(r"\d+")


def strip_session_ids(url: str, params: frozenset[str] = SESSION_PARAMS) -> str:
    """``url`` without session-id path parameters, session-id query parameters and fragment."""
    parts = urlsplit(url)
    path = _PATH_SESSION.sub("", parts.path)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k.lower() not in params]
        if len(kept) != len(pairs):
            query = urlencode(kept)
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


def repeated_segments(url: str, max_repeats: int) -> bool:
    """True when one path segment occurs more than ``max_repeats`` times."""
    segments = [s for s in urlsplit(url).path.split("/") if s]
    counts: dict[str, int] = defaultdict(int)
    for segment in segments:
        counts[segment] += 1
        if counts[segment] > max_repeats:
            return True
    return False


def date_shape(url: str) -> str | None:
    """The URL's shape (host, digits folded) when it is a calendar/archive page, else None."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    dated_query = any(k.lower() in _DATE_PARAMS and _DIGITS.search(v) for k, v in query)
    dated_path = bool(_DATE.search(parts.path)) and bool(_CALENDAR_WORDS.search(parts.path))
    dated_query = dated_query or (
        bool(_DATE.search(parts.query)) and bool(_CALENDAR_WORDS.search(parts.path + parts.query))
    )
    if not (dated_path or dated_query):
        return None
    return _DIGITS.sub("0", f"{parts.netloc}{parts.path}?{parts.query}")


class TrapGuardMiddleware(BaseSpiderMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.stats = crawler.stats
        self.max_url_length = settings.getint(
            "TRACKER_TRAP_MAX_URL_LENGTH", Settings.trap_max_url_length
        )
        self.max_segment_repeats = settings.getint(
            "TRACKER_TRAP_MAX_SEGMENT_REPEATS", Settings.trap_max_segment_repeats
        )
        self.max_date_pages = settings.getint(
            "TRACKER_TRAP_MAX_DATE_PAGES", Settings.trap_max_date_pages
        )
        extra = {p.lower() for p in settings.getlist("TRACKER_TRAP_SESSION_PARAMS")}
        self.session_params = SESSION_PARAMS | extra
        self._date_pages: dict[str, set[str]] = defaultdict(set)

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if response is None:  # start requests are the operator's own
            return request
        url = strip_session_ids(request.url, self.session_params)
        if url != request.url.split("#", 1)[0]:
            self._count("session_id")
            request = request.replace(url=url)
        if len(url) > self.max_url_length:
            return self._drop("long_url", url)
        if repeated_segments(url, self.max_segment_repeats):
            return self._drop("repeated_path", url)
        shape = date_shape(url)
        if shape is not None:
            seen = self._date_pages[shape]
            if url not in seen:
                if len(seen) >= self.max_date_pages:
                    return self._drop("calendar", url)
                seen.add(url)
        return request

    def _count(self, kind: str) -> None:
        self.stats.inc_value(f"tracker/traps/{kind}")

    def _drop(self, kind: str, url: str) -> None:
        self._count(kind)
        log.debug("trap (%s): not following %s", kind, url)
        return None
