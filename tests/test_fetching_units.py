"""Unit tests of what a crawl sends and what it could not read, without a crawl: browser
profiles, Retry-After and the ban middleware, challenge pages, the failures that leave a page
unread, the render decision and what it learns, and the unread pages' store and report (on the
real MongoDB)."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

import pytest
from scrapy.http import HtmlResponse, Request, Response
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.test import get_crawler
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.python.failure import Failure

from spiders.base import unread_reason
from spiders.novel import NovelSpider
from spiders.siteconfig import SiteConfigError, parse_site_config
from tracker.crawling.challenges import challenge_of
from tracker.crawling.middlewares.bans import BanMiddleware, retry_after
from tracker.crawling.middlewares.useragent import BrowserProfileMiddleware
from tracker.crawling.profiles import CHROME_MAJOR, PROFILES, chrome_brands, profile_for
from tracker.crawling.rendering import RenderPolicy, RenderUnavailable, find_browser, thin_reason
from tracker.reports import build_report
from tracker.stores.unread import UnreadStore

# ------------------------------------------------------------------------------- profiles


def test_client_hints_follow_chromiums_grease_rule():
    # As Chrome 120 and 124 send them.
    assert chrome_brands(120) == (
        '"Not_A Brand";v="8", "Chromium";v="120", "Google Chrome";v="120"'
    )
    assert chrome_brands(124) == (
        '"Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"'
    )


def test_each_site_gets_one_coherent_current_browser_profile():
    middleware = BrowserProfileMiddleware("auto", "tracker-bot", {})
    seen = {}
    for path in ("/", "/a.html", "/b.html"):
        request = Request(f"http://novel.example{path}")
        middleware.process_request(request)
        seen[path] = request.headers.to_unicode_dict()
    assert len({h["User-Agent"] for h in seen.values()}) == 1  # never rotated within a site
    headers = seen["/"]
    user_agent = headers["User-Agent"]
    assert f"Chrome/{CHROME_MAJOR}.0.0.0" in user_agent and "HeadlessChrome" not in user_agent
    assert f'v="{CHROME_MAJOR}"' in headers["Sec-CH-UA"]
    assert ("Edg/" in user_agent) == ("Microsoft Edge" in headers["Sec-CH-UA"])
    assert ("Macintosh" in user_agent) == (headers["Sec-CH-UA-Platform"] == '"macOS"')
    assert headers["Accept-Language"].startswith("zh-CN")
    assert headers["Accept"].startswith("text/html")
    assert headers["Sec-Fetch-Site"] == "none"  # typed in
    # The same site at the next crawl: the same profile (a hash, not a random pick).
    assert profile_for("novel.example", "auto", "x") == profile_for("novel.example", None, "x")
    assert {profile_for(f"site{i}.example", "auto", "x").name for i in range(40)} == set(PROFILES)


def test_a_link_is_same_origin_and_requests_keep_their_own_headers():
    middleware = BrowserProfileMiddleware("chrome-macos", "tracker-bot", {"X-Extra": "1"})
    request = Request(
        "http://novel.example/2.html",
        headers={"Referer": "http://novel.example/1.html", "Accept-Language": "en"},
    )
    middleware.process_request(request)
    headers = request.headers.to_unicode_dict()
    assert headers["Sec-Fetch-Site"] == "same-origin"
    assert headers["Accept-Language"] == "en"  # the request's own
    assert headers["X-Extra"] == "1"
    assert "Macintosh" in headers["User-Agent"]


def test_own_and_literal_user_agents_send_no_client_hints():
    for choice, expected in (("tracker", "tracker-bot"), ("MyReader/1.0", "MyReader/1.0")):
        request = Request("http://novel.example/")
        BrowserProfileMiddleware(choice, "tracker-bot", {}).process_request(request)
        headers = request.headers.to_unicode_dict()
        assert headers["User-Agent"] == expected
        assert "Sec-CH-UA" not in headers and "Sec-Fetch-Site" not in headers


def test_site_file_render_user_agent_and_impersonate_are_checked():
    base = {"name": "s", "start_urls": ["http://a.example/"]}
    site = parse_site_config(
        {**base, "render": "always", "user_agent": "edge-windows", "impersonate": "chrome"}
    )
    assert (site.render, site.user_agent, site.impersonate) == ("always", "edge-windows", "chrome")
    assert parse_site_config(base).render is None
    for key, value in (("render", "sometimes"), ("user_agent", ""), ("impersonate", "netscape")):
        with pytest.raises(SiteConfigError, match=key):
            parse_site_config({**base, key: value})
    with pytest.raises(ValueError, match="render"):
        NovelSpider(start_url="http://a.example/", render="maybe")


# ------------------------------------------------------------------------------- bans


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
    assert retry_after(b"120") == 120.0
    assert retry_after("Thu, 26 Nov 2026 12:00:30 GMT", now) == 30.0
    assert retry_after("Thu, 26 Nov 2026 11:00:00 GMT", now) == 0.0  # already past
    assert retry_after(None) is None and retry_after(b"soon") is None and retry_after("") is None


class _Downloader:
    def __init__(self) -> None:
        self.paused: list[tuple[str, float]] = []

    def get_slot_key(self, request: Request) -> str:
        return "novel.example"

    def pause(self, key: str, seconds: float) -> float:
        self.paused.append((key, seconds))
        return seconds


def _ban_middleware(**kwargs):
    crawler = get_crawler()
    crawler.stats.open_spider()
    downloader = _Downloader()
    crawler.engine = type("Engine", (), {"downloader": downloader})()
    return BanMiddleware(crawler, **kwargs), downloader, crawler.stats


def test_a_429_holds_the_site_for_its_retry_after_then_gives_up():
    middleware, downloader, stats = _ban_middleware(retries=2, base=0.5, maximum=4, longest=60)
    request = Request("http://novel.example/1.html")
    for tries in (1, 2):
        response = Response(request.url, status=429, headers={"Retry-After": "3"})
        retry = middleware.process_response(request, response)
        assert isinstance(retry, Request) and retry.dont_filter
        assert retry.meta["ban_retries"] == tries
        request = retry
    assert [key for key, _ in downloader.paused] == ["novel.example"] * 2
    assert all(seconds >= 3 for _, seconds in downloader.paused)  # at least what it asked
    final = Response(request.url, status=429)
    assert middleware.process_response(request, final) is final  # retries spent
    assert stats.get_value("tracker/bans/gave_up") == 1


def test_a_ban_for_longer_than_the_limit_is_not_waited_for():
    middleware, downloader, _ = _ban_middleware(longest=60)
    response = Response("http://novel.example/", status=503, headers={"Retry-After": "3600"})
    assert middleware.process_response(Request(response.url), response) is response
    assert downloader.paused == []


def test_without_retry_after_the_backoff_grows_and_a_challenge_is_not_retried():
    middleware, downloader, _ = _ban_middleware(retries=5, base=1, maximum=8)
    random.seed(3)
    request = Request("http://novel.example/")
    for _ in range(4):
        request = middleware.process_response(request, Response(request.url, status=503))
    waits = [seconds for _, seconds in downloader.paused]
    assert [0.5 <= w <= 1 for w in waits[:1]] == [True] and 4 <= waits[3] <= 8
    challenge = HtmlResponse(
        "http://novel.example/",
        status=503,
        body=b"<html><head><title>Just a moment...</title></head><body></body></html>",
    )
    assert middleware.process_response(Request(challenge.url), challenge) is challenge
    assert middleware.process_response(Request("http://x/"), Response("http://x/")).status == 200


# ------------------------------------------------------------------------------- challenges


CHAPTER = "<p>" + "天色已晚，他沿着河岸慢慢走回城里。" * 60 + "</p>"


@pytest.mark.parametrize(
    ("status", "headers", "html", "expected"),
    [
        (403, {"cf-mitigated": "challenge"}, "", "challenge"),
        (
            503,
            {},
            "<title>Just a moment...</title><script>window._cf_chl_opt={}</script>",
            "challenge",
        ),
        (200, {}, "<div id='captcha'>请输入验证码</div><form><input name=code></form>", "captcha"),
        (200, {}, "<script src='https://static.geetest.com/static/gt.js'></script>", "captcha"),
        (403, {}, "<div class='h-captcha' data-sitekey='x'></div>", "captcha"),
        (200, {}, CHAPTER + "<div class='g-recaptcha'></div>", None),  # a comment form's
        (200, {}, CHAPTER, None),
        (404, {}, "<html><body>Not Found</body></html>", None),
    ],
)
def test_challenge_and_captcha_pages_are_recognised(status, headers, html, expected):
    text_chars = 1200 if CHAPTER in html else 10
    assert challenge_of(status, headers, html, text_chars) == expected


def _failure(exc: Exception, request: Request) -> Failure:
    failure = Failure(exc)
    failure.request = request  # as Scrapy sets it for an errback
    return failure


def test_failures_that_leave_a_page_unread():
    request = Request("http://novel.example/1.html")

    def http(status: int, body: bytes = b"<html><body>x</body></html>", **headers) -> Failure:
        response = HtmlResponse(request.url, status=status, body=body, headers=headers)
        return _failure(HttpError(response), request)

    assert unread_reason(http(429)) == "banned"
    assert unread_reason(http(503)) == "banned"
    assert unread_reason(http(403)) == "forbidden"
    assert unread_reason(http(403, **{"cf-mitigated": "challenge"})) == "challenge"
    assert unread_reason(http(500)) == "http_500"
    assert unread_reason(http(404)) is None  # an answer: the page is gone
    assert unread_reason(_failure(TxTimeoutError(), request)) == "timeout"
    assert unread_reason(_failure(RenderUnavailable("no browser"), request)) == (
        "render_unavailable"
    )
    rendered = Request(request.url, meta={"playwright": True})
    assert unread_reason(_failure(RuntimeError("net::ERR_FAILED"), rendered)) == "render_failed"


# ------------------------------------------------------------------------------- rendering


def test_thin_pages_with_scripts_are_rendered_lists_and_plain_pages_are_not():
    shell = "<html><body><div id=content>加载中</div><script src=a.js></script>".encode()
    assert thin_reason(shell, text_chars=20, link_chars=30) == "empty"
    assert thin_reason(b"<html><body>short</body></html>", 20, 30) is None  # no script
    assert thin_reason(shell, text_chars=40, link_chars=2000) == "placeholder"  # 加载中
    assert thin_reason(b"<script></script>" + b"x", 40, 2000) is None  # a catalogue
    assert thin_reason(shell, text_chars=3000, link_chars=0) is None  # a chapter is there


def test_a_site_is_learned_to_need_rendering_once_renders_help():
    policy = RenderPolicy("auto", learn_after=3, learn_share=0.8)
    assert not policy.at_once("a.example")
    assert policy.rendered("a.example", True) is False
    assert policy.rendered("a.example", True) is False
    assert policy.rendered("a.example", True) is True
    assert policy.at_once("a.example") and policy.newly_learned == {"a.example": (3, 3)}
    for _ in range(5):  # renders that do not help teach nothing
        policy.rendered("b.example", False)
    assert not policy.at_once("b.example")
    assert RenderPolicy("always").at_once("c.example")
    never = RenderPolicy("never")
    assert not never.at_once("c.example") and never.wants(b"<script>", 0, 0) is None
    policy.unavailable = True
    assert not policy.at_once("a.example")  # no browser: plain fetches


def test_the_browser_is_the_setting_or_found_on_the_path(monkeypatch, tmp_path):
    assert find_browser("/opt/chrome/chrome") == "/opt/chrome/chrome"
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_browser("") is None
    fake = tmp_path / "chromium-browser"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert find_browser(None) == str(fake)


# ------------------------------------------------------------------------------- the record


@pytest.mark.integration
def test_unread_pages_are_recorded_listed_by_day_and_cleared_by_a_read(runtime):
    store = UnreadStore(runtime.db)
    day1 = datetime(2026, 11, 20, 3, tzinfo=UTC)
    day2 = day1 + timedelta(days=1)
    a, b, c = (f"http://pirate.example/{n}.html" for n in "abc")
    store.record_many([(a, "challenge"), (b, "banned")], day1)
    store.record_many([(a, "challenge"), (c, "timeout")], day2)
    store.clear([c], day2 + timedelta(hours=1))  # read later that day
    assert store.of_sites(["pirate.example", "other.example"]) == [a, b]
    [first_a, first_b] = store.on_day(date(2026, 11, 20))
    assert (first_a["url"], first_a["attempts"], first_b["reason"]) == (a, 1, "banned")
    [second] = store.on_day(date(2026, 11, 21))  # c was read after all: not listed
    assert second == {
        "url": a,
        "site": "pirate.example",
        "reason": "challenge",
        "first_seen": day1.isoformat(),
        "last_seen": day2.isoformat(),
        "attempts": 2,
    }
    report = build_report(runtime.db, date(2026, 11, 21))
    assert report["unread"] == [second]
    assert build_report(runtime.db, date(2026, 11, 19))["unread"] == []
