"""What a reader's browser sends: one coherent browser profile per site.

Pirate sites serve bots a decoy (an innocent page, a shortened chapter, nothing), and tell
bots by what they send: a ``python-requests`` or ``Scrapy`` User-Agent, a browser's
User-Agent without its usual ``Accept``/``Accept-Language``/client-hint headers, or a
User-Agent that changes from one request to the next. So every request of a crawl to a site
carries one profile, a current desktop browser's User-Agent with the headers that browser
sends on a navigation (Chromium's order), chosen per site and kept for the whole crawl (and
from crawl to crawl: the choice is a hash of the host).

The client hints (``Sec-CH-UA``) follow Chromium's own rule for its "GREASE" brand
(``components/embedder_support/user_agent_utils.cc``: the brand's characters, version and
place in the list are drawn from the major version), so they are the ones that version sends.
``Sec-Fetch-Site`` follows the ``Referer``: ``none`` for a typed address (a start URL),
``same-origin`` for a link within the site.

robots.txt is still read for the tracker's own product token (``ROBOTSTXT_USER_AGENT``),
whatever a request's User-Agent says.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Chromium's stable major version when this was written (November 2026; Debian's
#: ``chromium`` package, which renders script-loaded pages, is 156 too). Raise it with the
#: browsers: a User-Agent a year old is itself a bot signal.
CHROME_MAJOR = 156

_GREASE_CHARS = (" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_")
_GREASE_VERSIONS = ("8", "99", "24")
_ORDERS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))

ACCEPT_DOCUMENT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,"
    "*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)
#: A reader in mainland China.
ACCEPT_LANGUAGE = "zh-CN,zh;q=0.9,en;q=0.8"


def chrome_brands(major: int, brand: str = "Google Chrome") -> str:
    """The ``Sec-CH-UA`` value Chromium ``major`` sends as ``brand``, GREASE brand included,
    e.g. ``"Not_A Brand";v="8", "Chromium";v="120", "Google Chrome";v="120"`` for 120."""
    size = len(_GREASE_CHARS)
    grease = f"Not{_GREASE_CHARS[major % size]}A{_GREASE_CHARS[(major + 1) % size]}Brand"
    listed = [(grease, _GREASE_VERSIONS[major % 3]), ("Chromium", str(major)), (brand, str(major))]
    order = _ORDERS[major % len(_ORDERS)]
    shuffled: list[tuple[str, str]] = [("", "")] * 3
    for position, entry in zip(order, listed, strict=True):
        shuffled[position] = entry
    return ", ".join(f'"{name}";v="{version}"' for name, version in shuffled)


@dataclass(frozen=True)
class BrowserProfile:
    """A browser's User-Agent and the headers it sends with a page navigation."""

    name: str
    user_agent: str
    headers: tuple[tuple[str, str], ...] = ()
    #: Whether it sends ``Sec-Fetch-*`` headers (every current browser; not a literal UA).
    fetch_metadata: bool = True

    def request_headers(self, url: str, referer: str | None) -> list[tuple[str, str]]:
        """The headers of a navigation to ``url`` from ``referer`` (None: typed in)."""
        headers = [*self.headers, ("User-Agent", self.user_agent)]
        if self.fetch_metadata:
            headers += [
                ("Sec-Fetch-Site", fetch_site(url, referer)),
                ("Sec-Fetch-Mode", "navigate"),
                ("Sec-Fetch-User", "?1"),
                ("Sec-Fetch-Dest", "document"),
                ("Priority", "u=0, i"),
            ]
        return headers


def _chromium(
    name: str, platform: str, system: str, brand: str, suffix: str = ""
) -> BrowserProfile:
    user_agent = (
        f"Mozilla/5.0 ({system}) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{CHROME_MAJOR}.0.0.0 Safari/537.36{suffix}"
    )
    return BrowserProfile(
        name,
        user_agent,
        (
            ("Sec-CH-UA", chrome_brands(CHROME_MAJOR, brand)),
            ("Sec-CH-UA-Mobile", "?0"),
            ("Sec-CH-UA-Platform", f'"{platform}"'),
            ("Upgrade-Insecure-Requests", "1"),
            ("Accept", ACCEPT_DOCUMENT),
            ("Accept-Language", ACCEPT_LANGUAGE),
        ),
    )


#: The profiles a site may get, by name (``user_agent:`` in a site file names one).
PROFILES: dict[str, BrowserProfile] = {
    p.name: p
    for p in (
        _chromium("chrome-windows", "Windows", "Windows NT 10.0; Win64; x64", "Google Chrome"),
        _chromium("chrome-macos", "macOS", "Macintosh; Intel Mac OS X 10_15_7", "Google Chrome"),
        _chromium(
            "edge-windows",
            "Windows",
            "Windows NT 10.0; Win64; x64",
            "Microsoft Edge",
            f" Edg/{CHROME_MAJOR}.0.0.0",
        ),
    )
}
#: ``user_agent`` values that are not a profile's name: a site's pick by its host, and the
#: tracker's own product token (Scrapy's ``USER_AGENT``, for sites that permit the tracker).
AUTO, OWN = "auto", "tracker"


def fetch_site(url: str, referer: str | None) -> str:
    """``Sec-Fetch-Site`` of a navigation to ``url`` from ``referer``."""
    if not referer:
        return "none"
    to, came = urlsplit(url), urlsplit(referer)
    if (to.scheme, to.netloc) == (came.scheme, came.netloc):
        return "same-origin"
    if _registrable(to.hostname) == _registrable(came.hostname):
        return "same-site"
    return "cross-site"


def _registrable(host: str | None) -> str:
    """The last two labels of a host (an approximation of its registrable domain that is
    right for the sites a crawl stays on: a crawl never leaves its allowed domains)."""
    return ".".join((host or "").lower().split(".")[-2:])


def profile_for(site: str, choice: str | None, own_user_agent: str) -> BrowserProfile:
    """The profile of ``site`` (a host): ``choice`` names one of :data:`PROFILES`, or is
    ``auto`` (or empty: one of them by a hash of the host, the same at every crawl), ``tracker``
    (``own_user_agent``, nothing else), or a literal User-Agent string (sent with the usual
    ``Accept`` headers but no client hints, which would contradict it)."""
    choice = (choice or AUTO).strip()
    if choice == AUTO:
        names = sorted(PROFILES)
        return PROFILES[names[zlib.crc32(site.encode()) % len(names)]]
    if choice in PROFILES:
        return PROFILES[choice]
    if choice == OWN:
        return BrowserProfile(OWN, own_user_agent, fetch_metadata=False)
    return BrowserProfile(
        "custom",
        choice,
        (("Accept", ACCEPT_DOCUMENT), ("Accept-Language", ACCEPT_LANGUAGE)),
        fetch_metadata=False,
    )


def check_choice(choice: str) -> str:
    """``choice`` when it can name a profile (:func:`profile_for`); ValueError otherwise."""
    choice = choice.strip()
    if not choice or "\n" in choice or "\r" in choice or len(choice) > 500:
        raise ValueError(
            f"expected auto, tracker, one of {', '.join(sorted(PROFILES))} or a User-Agent "
            f"string (one line), got {choice!r}"
        )
    return choice


#: curl_cffi's impersonation targets: a browser family, optionally its version
#: (``chrome``, ``chrome131``, ``safari18_0``, ``edge``, ``firefox135``…).
_IMPERSONATE = re.compile(r"^(chrome|edge|safari|firefox|tor)(\d+[a-z0-9_]*)?$")


def check_impersonate(target: str) -> str:
    """``target`` when it names a browser curl_cffi can impersonate (its TLS and HTTP/2
    fingerprints: the opt-in tier of :mod:`tracker.crawling.handlers`); ValueError otherwise."""
    target = target.strip().lower()
    if not _IMPERSONATE.match(target):
        raise ValueError(
            f"expected a browser to impersonate (chrome, edge, safari, firefox, optionally "
            f"with a version: chrome131), got {target!r}"
        )
    return target
