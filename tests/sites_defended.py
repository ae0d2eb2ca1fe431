"""Local pirate sites that defend themselves the way real ones do, served on 127.0.0.1 (the
reading half's defences, split chapters, hidden junk and web fonts, live elsewhere):

* :func:`script_site`: chapters loaded by script: an XHR for JSON, ``document.write(atob(…))``,
  a packed ``eval(function(p,a,c,k,e,d)…)``;
* :func:`static_text_site`: news pages with their text in the HTML, scripts that make them
  look like shells, and less text once rendered;
* :func:`ban_site`: answers bursts with 429 or 503 and ``Retry-After`` (seconds or an HTTP
  date), and bans one page for a day;
* :func:`challenge_site`: a Cloudflare-style challenge (503, ``cf-mitigated``, "Just a
  moment..."), a captcha form (200) and a geetest wall (403) in front of some chapters;
* :func:`decoy_site`: an innocent decoy for bot-like clients (a bot's User-Agent, a browser's
  without its headers, no Chinese in ``Accept-Language``);
* :func:`tls_decoy_site`: over HTTPS, the decoy for a client whose TLS handshake is not a
  browser's (it offers the ``DHE-RSA`` cipher suites OpenSSL offers and Chrome does not: the
  gist of a JA3 check).

Each returns a :class:`tests.sites.SitePlan` whose ``matched`` names the chapter pages a crawl
must find copying their master, ``extra["innocent"]`` the pages that copy none, and
``extra["unread"]`` the pages it must report unread.
"""

from __future__ import annotations

import base64
import html
import json
import re
import ssl
import threading
import time
import zlib
from collections import Counter, deque
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from tests.sites import Page, SitePlan, TestSite, book_masters, html_page, link_list, paragraphs
from tests.texts import prose


class DefendedSite(TestSite):
    """A :class:`TestSite` whose routes can read the request's headers (:meth:`headers`) and
    that logs when each request came (``times``: path → monotonic times)."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self._current = threading.local()
        self.times: dict[str, list[float]] = {}

    def headers(self) -> dict[str, str]:
        """The headers of the request being answered (in a route), by lower-case name."""
        return getattr(self._current, "headers", {})

    def _serve(self, request) -> None:  # type: ignore[override]
        self._current.headers = {k.lower(): v for k, v in request.headers.items()}
        with self._lock:
            self.times.setdefault(request.path, []).append(time.monotonic())
        super()._serve(request)


def _masters(work: str, n: int):
    return book_masters(n, work=work, chars=1400)


def _chapter_html(text: str) -> str:
    return "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs(text))


def _shell(title: str, body: str, links: str = "") -> bytes:
    """A chapter page whose text is not in the HTML: ``body`` (a placeholder and scripts)."""
    main = (
        f'<div class="bookname"><h1>{html.escape(title)}</h1></div>{body}'
        f'<div class="bottem"><a href="/">目录</a> {links}</div>'
    )
    return html_page(title, main).encode()


def _plain(title: str, text: str) -> bytes:
    main = f'<h1>{html.escape(title)}</h1><div id="content">{_chapter_html(text)}</div>'
    return html_page(title, main).encode()


# ----------------------------------------------------------------------------- scripts


def pack(source: str) -> str:
    """``source`` in Dean Edwards' packer format, ``eval(function(p,a,c,k,e,d){…}(…))``: its
    words replaced by base-62 indexes into a word list, put back by the unpacker at run
    time (JavaScript's ``\\w`` is ASCII: Chinese text stays in the payload as it is)."""
    words = Counter(re.findall(r"\w+", source, flags=re.ASCII))
    ordered = [word for word, _ in words.most_common()]

    def encode(n: int) -> str:
        digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        return (encode(n // 62) if n >= 62 else "") + digits[n % 62]

    index = {word: encode(i) for i, word in enumerate(ordered)}
    payload = re.sub(r"\w+", lambda m: index[m[0]], source, flags=re.ASCII)
    payload = payload.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    unpacker = (
        "function(p,a,c,k,e,d){e=function(c){return(c<a?'':e(parseInt(c/a)))+((c=c%a)>35?"
        "String.fromCharCode(c+29):c.toString(36))};if(!''.replace(/^/,String)){while(c--)"
        "d[e(c)]=k[c]||e(c);k=[function(e){return d[e]}];e=function(){return'\\\\w+'};c=1};"
        "while(c--)if(k[c])p=p.replace(new RegExp('\\\\b'+e(c)+'\\\\b','g'),k[c]);return p}"
    )
    return (
        f"eval({unpacker}('{payload}',62,{len(ordered)},'{'|'.join(ordered)}'.split('|'),0,{{}}))"
    )


def script_site() -> SitePlan:
    """Six chapters whose text only a browser sees (two by XHR/JSON, two by
    ``document.write(atob(…))``, two by a packed ``eval``), one innocent chapter loaded by
    XHR, and one plain chapter page."""
    masters = _masters("脚本书", 7)
    site = DefendedSite()
    plan = SitePlan(site, masters)
    pages = site.pages
    innocent = prose(6161, 1400)
    chapters = []
    for i, master in enumerate(masters[:6], start=1):
        path = f"/s/{i}.html"
        chapters.append((path, master.title))
        if i <= 2:
            pages[f"/api/chapter/{i}.json"] = Page(
                json.dumps({"title": master.title, "html": _chapter_html(master.text)}).encode(),
                "application/json",
            )
            body = (
                '<div id="content">章节内容加载中…</div><script>'
                f"fetch('/api/chapter/{i}.json').then(r => r.json()).then(d => "
                "{document.getElementById('content').innerHTML = d.html;});</script>"
            )
        elif i <= 4:
            encoded = base64.b64encode(_chapter_html(master.text).encode()).decode()
            body = (
                '<div id="content"><script>document.write(new TextDecoder().decode('
                f"Uint8Array.from(atob('{encoded}'), c => c.charCodeAt(0))));</script></div>"
            )
        else:
            source = (
                "var box=document.getElementById('content');"
                f"box.innerHTML={json.dumps(_chapter_html(master.text), ensure_ascii=False)};"
            )
            body = f'<div id="content"></div><script>{pack(source)}</script>'
        pages[path] = Page(_shell(master.title, body))
    pages["/api/chapter/99.json"] = Page(
        json.dumps({"html": _chapter_html(innocent)}).encode(), "application/json"
    )
    pages["/s/99.html"] = Page(
        _shell(
            "第九十九章 闲话",
            '<div id="content">加载中…</div><script>'
            "fetch('/api/chapter/99.json').then(r => r.json()).then(d => "
            "{document.getElementById('content').innerHTML = d.html;});</script>",
        )
    )
    pages["/s/7.html"] = Page(_plain(masters[6].title, masters[6].text))  # no script at all
    chapters += [("/s/7.html", masters[6].title), ("/s/99.html", "第九十九章 闲话")]
    pages["/"] = Page(html_page("脚本书城", link_list(chapters)).encode())
    pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")
    plan.matched = {path: [m.doc_id] for (path, _), m in zip(chapters, masters, strict=False)}
    plan.extra["innocent"] = ["/s/99.html"]
    plan.extra["unread"] = []
    plan.extra["rendered"] = [path for path, _ in chapters if path != "/s/7.html"]
    return plan


def static_text_site() -> SitePlan:
    """News pages whose text is in the HTML and whose scripts make them look like shells (the
    Xinhua case, issue 40): a share box a script fills (an empty element looked up by id), and
    once rendered the article cut to a teaser ("打开客户端阅读全文"). ``/n/1.html`` copies a
    master, ``/n/2.html`` is innocent, ``/n/3.html`` copies one with no script at all. A
    crawl must read each from its static text (``extra["rendered_less"]``: rendered, with
    less text than plain)."""
    masters = book_masters(3, work="新闻稿", chars=850, seed=4040)
    site = DefendedSite()
    plan = SitePlan(site, masters)

    def article(title: str, text: str) -> bytes:
        main = (
            f'<h1>{html.escape(title)}</h1><div id="detail">{_chapter_html(text)}</div>'
            '<div id="share"></div><script>'
            "document.getElementById('share').innerHTML = '<a href=\"#\">分享到微博</a>';"
            "document.getElementById('detail').innerHTML = '<p>打开客户端，阅读全文</p>';"
            "</script>"
        )
        return html_page(title, main).encode()

    site.pages["/n/1.html"] = Page(article(masters[0].title, masters[0].text))
    site.pages["/n/2.html"] = Page(article("本地新闻", prose(4141, 850)))
    site.pages["/n/3.html"] = Page(_plain(masters[2].title, masters[2].text))
    links = [("/n/1.html", masters[0].title), ("/n/2.html", "本地新闻"), ("/n/3.html", "稿")]
    site.pages["/"] = Page(html_page("新闻网", link_list(links)).encode())
    site.pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")
    plan.matched = {"/n/1.html": [masters[0].doc_id], "/n/3.html": [masters[2].doc_id]}
    plan.extra["innocent"] = ["/n/2.html"]
    plan.extra["unread"] = []
    plan.extra["rendered_less"] = ["/n/1.html", "/n/2.html"]
    return plan


# -------------------------------------------------------------------------------- bans


def ban_site(burst: int = 3, window: float = 1.0) -> SitePlan:
    """Eight chapters and an innocent one on a site that allows ``burst`` requests in any
    ``window`` seconds and answers more with 429 (``Retry-After: 1``) or, every other time,
    503 with ``Retry-After`` as an HTTP date; ``/b/banned.html`` is refused for a day."""
    masters = _masters("限流书", 8)
    site = DefendedSite()
    plan = SitePlan(site, masters)
    recent: deque[float] = deque()
    refusals = [0]
    lock = threading.Lock()
    innocent = prose(7171, 1400)
    texts = {f"/b/{i}.html": (m.title, m.text) for i, m in enumerate(masters, start=1)}
    texts["/b/9.html"] = ("第九章 闲话", innocent)
    listing = [(path, title) for path, (title, _) in texts.items()]
    listing.append(("/b/banned.html", "第十章"))
    home = Page(html_page("限流书城", link_list(listing)).encode())

    def limited(path: str) -> Page | None:
        now = time.monotonic()
        with lock:
            while recent and now - recent[0] > window:
                recent.popleft()
            if len(recent) >= burst:
                refusals[0] += 1
                if refusals[0] % 2:
                    return Page(b"Too Many Requests", "text/plain", 429, {"Retry-After": "1"})
                later = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
                return Page(b"Service busy", "text/plain", 503, {"Retry-After": later})
            recent.append(now)
        if path == "/":
            return home
        if path == "/b/banned.html":
            return Page(b"banned", "text/plain", 429, {"Retry-After": "86400"})
        found = texts.get(path)
        return Page(_plain(*found)) if found else None

    site.route(r"^/(b/.*)?$", limited)
    site.pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")
    plan.matched = {f"/b/{i}.html": [m.doc_id] for i, m in enumerate(masters, start=1)}
    plan.extra["innocent"] = ["/b/9.html"]
    plan.extra["unread"] = ["/b/banned.html"]
    plan.extra["refusals"] = refusals
    return plan


# -------------------------------------------------------------------------- challenges

CF_CHALLENGE = (
    b"<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
    b"<noscript>Enable JavaScript and cookies to continue</noscript>"
    b"<script>window._cf_chl_opt={cvId:'3',cType:'managed'};</script>"
    b"<script src='/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1'></script>"
    b"</body></html>"
)
CAPTCHA_FORM = html_page(
    "安全验证",
    "<div class='verify'><h2>安全验证</h2><p>请输入验证码后继续访问</p>"
    "<form method='post' action='/verify'><img src='/captcha.png'>"
    "<input name='code'><button>提交</button></form></div>",
).encode()
GEETEST_WALL = (
    b"<html><head><script src='https://static.geetest.com/static/gt.js'></script></head>"
    b"<body><div id='captcha'></div><script>initGeetest({gt:'x'}, function(){});</script>"
    b"</body></html>"
)


def challenge_site() -> SitePlan:
    """Eight chapters and an innocent one; chapters 3, 4 and 5 sit behind a challenge (503,
    ``cf-mitigated: challenge``), a captcha form (200) and a geetest wall (403) while
    ``plan.extra["challenging"]`` is set."""
    masters = _masters("验证书", 8)
    site = DefendedSite()
    plan = SitePlan(site, masters)
    challenging = threading.Event()
    challenging.set()
    walls = {
        "/c/3.html": Page(CF_CHALLENGE, status=503, headers={"cf-mitigated": "challenge"}),
        "/c/4.html": Page(CAPTCHA_FORM),
        "/c/5.html": Page(GEETEST_WALL, status=403),
    }
    innocent = prose(8181, 1400)
    texts = {f"/c/{i}.html": (m.title, m.text) for i, m in enumerate(masters, start=1)}
    texts["/c/9.html"] = ("第九章 闲话", innocent)

    def chapter(path: str) -> Page | None:
        if challenging.is_set() and path in walls:
            return walls[path]
        found = texts.get(path)
        return Page(_plain(*found)) if found else None

    site.route(r"^/c/\d+\.html$", chapter)
    listing = [(path, title) for path, (title, _) in texts.items()]
    site.pages["/"] = Page(html_page("验证书城", link_list(listing)).encode())
    site.pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")
    plan.matched = {f"/c/{i}.html": [m.doc_id] for i, m in enumerate(masters, start=1)}
    plan.extra["innocent"] = ["/c/9.html"]
    plan.extra["unread"] = sorted(walls)
    plan.extra["challenging"] = challenging
    return plan


# ------------------------------------------------------------------------------- decoys

BOT_WORDS = re.compile(r"bot|spider|crawl|scrapy|python|curl|wget|headless|tracker", re.I)


def looks_like_a_bot(headers: dict[str, str]) -> bool:
    """What pirate sites check: a bot's User-Agent, a Chrome User-Agent without Chrome's
    client hints, no Chinese in ``Accept-Language``."""
    agent = headers.get("user-agent", "")
    if not agent or BOT_WORDS.search(agent):
        return True
    if "Chrome/" in agent and "sec-ch-ua" not in headers:
        return True
    return "zh" not in headers.get("accept-language", "")


def decoy_site() -> SitePlan:
    """Six chapters and an innocent one; a bot-like client (:func:`looks_like_a_bot`) gets,
    under the same URLs, a decoy: an innocent text of the same length."""
    site = DefendedSite()
    return _with_decoys(site, "诱饵书", "d", 6, lambda: looks_like_a_bot(site.headers()))


def _with_decoys(site: DefendedSite, work: str, folder: str, n: int, tell) -> SitePlan:
    """``n`` chapters of ``work`` and an innocent one under ``/folder/``, each served as a
    decoy (an innocent text of its length, counted in ``extra["decoys"]``) when ``tell()``
    says the client is a bot."""
    masters = _masters(work, n)
    plan = SitePlan(site, masters)
    texts = {f"/{folder}/{i}.html": (m.title, m.text) for i, m in enumerate(masters, start=1)}
    innocent = f"/{folder}/{n + 1}.html"
    texts[innocent] = ("闲话一章", prose(9191 + n, 1400))
    decoys: Counter[str] = Counter()

    def chapter(path: str) -> Page | None:
        found = texts.get(path)
        if found is None:
            return None
        if tell():
            decoys[path] += 1
            return Page(_plain(found[0], prose(zlib.crc32(path.encode()), len(found[1]))))
        return Page(_plain(*found))

    site.route(rf"^/{folder}/\d+\.html$", chapter)
    site.pages["/"] = Page(
        html_page(f"{work}城", link_list((p, t) for p, (t, _) in texts.items())).encode()
    )
    site.pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")
    plan.matched = {f"/{folder}/{i}.html": [m.doc_id] for i, m in enumerate(masters, start=1)}
    plan.extra.update(innocent=[innocent], unread=[], decoys=decoys)
    return plan


# ---------------------------------------------------------------------------- TLS decoy


def self_signed(directory) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key (PEM files in ``directory``)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(datetime(2020, 1, 1))
        .not_valid_after(datetime(2040, 1, 1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = f"{directory}/site.pem", f"{directory}/site.key"
    with open(cert_file, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_file, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_file, key_file


class TLSSite(DefendedSite):
    """A :class:`DefendedSite` over HTTPS (a self-signed certificate); routes can read the
    cipher suites the client offered (:meth:`offered`)."""

    __test__ = False

    def __init__(self, directory) -> None:
        super().__init__()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*self_signed(directory))
        context.set_ciphers("ALL:@SECLEVEL=0")  # so that every suite a client offers shows
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = self.url.replace("http://", "https://")

    def offered(self) -> list[str]:
        return getattr(self._current, "ciphers", [])

    def _serve(self, request) -> None:  # type: ignore[override]
        shared = request.connection.shared_ciphers() or []
        self._current.ciphers = [cipher for cipher, _, _ in shared]
        super()._serve(request)


def tls_decoy_site(directory) -> SitePlan:
    """Five chapters and an innocent one over HTTPS; a client whose handshake offers the
    ``DHE-RSA`` suites (OpenSSL's, as Scrapy's own client does; not Chrome's) gets a decoy."""
    site = TLSSite(directory)

    def not_a_browser() -> bool:
        return any(cipher.startswith("DHE-RSA") for cipher in site.offered())

    return _with_decoys(site, "指纹书", "t", 5, not_a_browser)


# ----------------------------------------------------------------------------- outcome


def outcome(plan: SitePlan, db, day=None) -> dict[str, object]:
    """What a crawl of ``plan``'s site found: ``recall`` (planned copies found carrying their
    master, among those not planned unread), ``wrong`` (pages carrying another master),
    ``innocent_flagged``, ``unread`` (path -> reason, the day's report) and ``stored`` (path
    -> the stored page)."""
    from tracker.reports import build_report

    base = plan.site.url.rstrip("/")
    stored = {
        doc["_id"][len(base) :]: doc for doc in db["pages"].find() if doc["_id"].startswith(base)
    }
    expected = {p: ids for p, ids in plan.matched.items() if p not in plan.extra["unread"]}
    found = sum(1 for p, ids in expected.items() if stored.get(p, {}).get("matched_doc_ids") == ids)
    wrong = [
        p
        for p, doc in stored.items()
        if doc.get("matched_doc_ids") and doc["matched_doc_ids"] != plan.matched.get(p)
    ]
    innocent = [p for p in plan.extra["innocent"] if stored.get(p, {}).get("matched_doc_ids")]
    report = build_report(db, day or datetime.now(UTC).date())
    unread = {e["url"][len(base) :]: e["reason"] for e in report["unread"]}
    return {
        "recall": found / len(expected) if expected else 1.0,
        "wrong": wrong,
        "innocent_flagged": innocent,
        "unread": unread,
        "stored": stored,
    }
