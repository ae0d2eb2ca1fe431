"""Unit tests of the crawl's parts, without a crawl: decoding, fault names, trap rules, the
site file, middlewares, extraction, news URL rules, and the unchanged-page pipeline (on the real
MongoDB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.http import HtmlResponse, Request, Response
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from pipelines.extract import ExtractPipeline
from pipelines.unchanged import UnchangedPagePipeline
from spiders.base import canonical_of, decode_page, error_kind, link_text, looks_truncated
from spiders.news import document_kind, is_article_url, is_list_url
from spiders.novel import NovelSpider
from spiders.siteconfig import SiteConfigError, load_site_config, parse_site_config
from tests.stages import process
from tests.texts import prose
from tracker.crawling.context import TrackerContext
from tracker.crawling.items import PageItem
from tracker.crawling.middlewares.proxy import ProxyListMiddleware, read_proxy_list
from tracker.crawling.middlewares.redirect import (
    MetaRefreshMiddleware,
    RedirectLoop,
    RedirectLoopMiddleware,
)
from tracker.crawling.middlewares.retry import backoff_delay
from tracker.crawling.middlewares.traps import (
    TrapGuardMiddleware,
    date_shape,
    repeated_segments,
    strip_session_ids,
)
from tracker.reading.extract import (
    WARM_UP_PAGE,
    WARM_UP_TEXT,
    ExtractionFailed,
    ExtractionRules,
    extract,
    extract_normalized,
    extract_pages,
    strip_boilerplate_lines,
    warm_up,
)
from tracker.stores.masters import MasterStore
from tracker.stores.pages import MatchStore, PageRecord, PageStore

CHAPTER = "第一章 风雪\n" + prose(11, 400)


# ------------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("charset", ["gbk", "gb2312", "gb18030", "big5", "utf-8"])
@pytest.mark.parametrize("where", ["header", "meta", "none"])
def test_decode_page_finds_the_charset_wherever_it_is(charset, where):
    text = "正體中文：風雪夜歸人" if charset == "big5" else "简体中文：风雪夜归人"
    meta = f'<meta charset="{charset}">' if where == "meta" else ""
    html = f"<html><head>{meta}</head><body><p>{text * 20}</p></body></html>"
    header = f"text/html; charset={charset}" if where == "header" else "text/html"
    page = decode_page(html.encode(charset), header)
    assert text in page.html
    assert page.wrong_charset is False


def test_decode_page_overrules_a_wrong_declaration_and_says_so():
    html = "<html><body><p>" + "风雪夜归人" * 30 + "</p></body></html>"
    page = decode_page(html.encode("gbk"), "text/html; charset=utf-8")
    assert "风雪夜归人" in page.html and page.encoding == "gb18030" and page.wrong_charset
    page = decode_page(html.encode("utf-8"), "text/html; charset=gbk")
    assert "风雪夜归人" in page.html and page.encoding == "utf-8" and page.wrong_charset
    page = decode_page(html.encode("utf-8"), "text/html; charset=iso-8859-1")
    assert "风雪夜归人" in page.html and page.wrong_charset


def test_decode_page_rejects_binary_and_forgives_a_cut_last_character():
    from tracker.text.encoding import DecodeError

    with pytest.raises(DecodeError, match="binary"):
        decode_page(b"\x89PNG\r\n\x1a\n\x00\x00\x00" + bytes(range(256)) * 4, "text/html")
    cut = "<html><body>风雪夜归人".encode()[:-1]
    assert decode_page(cut, "text/html; charset=utf-8").html.endswith("风雪夜归")
    assert looks_truncated("<html><body><p>半截") and not looks_truncated("<p>x</p></html>")


def _failure(exc: Exception) -> Failure:
    try:
        raise exc
    except Exception:
        return Failure()


def test_error_kinds():
    from scrapy.exceptions import DownloadCancelledError, DownloadTimeoutError
    from twisted.internet.error import ConnectionRefusedError

    response = Response("http://x/a", status=404)
    assert error_kind(_failure(HttpError(response))) == "http_404"
    assert error_kind(_failure(RedirectLoop("loop"))) == "redirect_loop"
    assert error_kind(_failure(IgnoreRequest("max redirections reached"))) == "redirect_loop"
    assert error_kind(_failure(IgnoreRequest("Forbidden by robots.txt"))) == "robots"
    assert error_kind(_failure(DownloadTimeoutError("took longer"))) == "timeout"
    assert error_kind(_failure(DownloadCancelledError("larger than download max size"))) == (
        "too_large"
    )
    assert error_kind(_failure(ConnectionRefusedError())) == "connection"
    assert error_kind(_failure(KeyError("x"))) == "key_error"


# ---------------------------------------------------------------------------------- traps


def test_session_ids_are_stripped():
    assert strip_session_ids("http://x/a.html;jsessionid=AB12?id=3#top") == "http://x/a.html?id=3"
    assert strip_session_ids("http://x/a?PHPSESSID=1&page=2&sid=9") == "http://x/a?page=2"
    assert strip_session_ids("http://x/a?page=2&b=1") == "http://x/a?page=2&b=1"


def test_trap_shapes():
    assert repeated_segments("http://x/a/b/a/b/a/", 2)
    assert not repeated_segments("http://x/book/1/1.html", 2)
    assert date_shape("http://x/calendar/2024-05.html") == date_shape(
        "http://x/calendar/1999-12.html"
    )
    assert date_shape("http://x/list?year=2024&month=5")
    assert date_shape("http://x/2024/05/01/1001.html") is None  # a dated article, not a calendar
    assert date_shape("http://x/book/20240501/1.html") is None


def test_trap_guard_caps_calendars_and_drops_loops():
    crawler = get_crawler(settings_dict={"TRACKER_TRAP_MAX_DATE_PAGES": 2})
    crawler.stats.open_spider()
    guard = TrapGuardMiddleware(crawler)
    response = HtmlResponse("http://x/", body=b"<html></html>")
    months = [Request(f"http://x/archive/2024-{m:02d}/") for m in range(1, 6)]
    kept = [guard.get_processed_request(r, response) for r in months]
    assert [r is not None for r in kept] == [True, True, False, False, False]
    assert guard.get_processed_request(months[0], response) is not None  # seen: still allowed
    assert guard.get_processed_request(Request("http://x/a/a/a/"), response) is None
    clean = guard.get_processed_request(Request("http://x/p?sid=123&id=1"), response)
    assert clean.url == "http://x/p?id=1"
    assert guard.get_processed_request(months[4], None) is months[4]  # start requests pass
    stats = crawler.stats.get_stats()
    assert stats["tracker/traps/calendar"] == 3
    assert stats["tracker/traps/repeated_path"] == 1
    assert stats["tracker/traps/session_id"] == 1


# ------------------------------------------------------------------------------ site file


def test_the_shipped_example_site_file_is_valid():
    config = load_site_config(Path(__file__).parent.parent / "sites" / "example.yaml")
    assert config.name == "example-biquge" and config.body_css == "div#content"
    assert config.is_page("https://www.example.com/book/1234/5_2.html")
    assert not config.is_page("https://www.example.com/book/1234/")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "bad name!"}, "name"),
        ({"start_urls": ["ftp://x/"]}, "start_urls: not an http"),
        ({"colour": "red"}, "colour: unknown setting"),
        ({"follow": {"allow": ["("]}}, "follow.allow: bad regular expression"),
        ({"body": {"css": "div[["}}, "body.css: bad CSS selector"),
        ({"body": {"xpath": "//div[@"}}, "body.xpath: bad XPATH selector"),
        ({"limits": {"max_pages": "many"}}, "limits.max_pages"),
        ({"limits": {"speed": 3}}, "limits.speed: unknown setting"),
        ({"robots": {"obey": False}}, "robots.reason: required"),
        ({"schedule": "every day"}, "schedule: not a 5-field cron"),
        ({"allowed_domains": ["other.org"]}, "outside allowed_domains"),
    ],
)
def test_site_file_errors_name_the_key(change, message):
    config = {"name": "ok", "start_urls": ["http://example.com/"], **change}
    with pytest.raises(SiteConfigError, match=message):
        parse_site_config(config, "sites/t.yaml")


def test_site_file_must_exist_and_be_yaml(tmp_path):
    with pytest.raises(SiteConfigError, match="not found"):
        load_site_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed", encoding="utf-8")
    with pytest.raises(SiteConfigError, match="not valid YAML"):
        load_site_config(bad)


# ---------------------------------------------------------------------------- middlewares


def test_proxies_rotate_and_failing_ones_rest():
    assert read_proxy_list("http://p1:8080 # office\nhttp://p2:8080,http://p3:8080\n") == [
        "http://p1:8080",
        "http://p2:8080",
        "http://p3:8080",
    ]
    crawler = get_crawler()
    crawler.stats.open_spider()
    now = [0.0]
    middleware = ProxyListMiddleware(
        ["http://p1", "http://p2"],
        crawler.stats,
        max_failures=2,
        ban_seconds=60,
        clock=lambda: now[0],
    )
    requests = [Request(f"http://x/{i}") for i in range(4)]
    for request in requests:
        middleware.process_request(request)
    assert [r.meta["proxy"] for r in requests] == ["http://p1", "http://p2"] * 2
    for _ in range(2):  # p1 fails twice in a row: it rests
        middleware.process_exception(requests[0], ConnectionError())
    picked = []
    for i in range(3):
        request = Request(f"http://x/r{i}")
        middleware.process_request(request)
        picked.append(request.meta["proxy"])
    assert picked == ["http://p2"] * 3
    now[0] = 61.0  # rested long enough
    chosen = {middleware.next_proxy() for _ in range(2)}
    assert chosen == {"http://p1", "http://p2"}
    own = Request("http://x/", meta={"proxy": "http://mine"})
    middleware.process_request(own)
    assert own.meta["proxy"] == "http://mine"
    assert crawler.stats.get_value("tracker/proxy/banned") == 1


def test_backoff_grows_exponentially_within_jitter_bounds():
    import random

    rng = random.Random(1)
    assert backoff_delay(0, 1.0, 60.0, rng) == 0
    for retries, full in [(1, 1.0), (2, 2.0), (3, 4.0), (10, 60.0)]:
        delay = backoff_delay(retries, 1.0, 60.0, rng)
        assert full / 2 <= delay <= full


def test_redirect_loop_is_caught_at_the_first_repeat():
    middleware = RedirectLoopMiddleware()
    request = Request("http://x/b", meta={"redirect_urls": ["http://x/a"]})
    back = Response("http://x/b", status=302, headers={"Location": "/a"})
    with pytest.raises(RedirectLoop):
        middleware.process_response(request, back)
    onward = Response("http://x/b", status=302, headers={"Location": "/c"})
    assert middleware.process_response(request, onward) is onward


@pytest.mark.parametrize(
    "tag, encoding",
    [
        ('<meta http-equiv="Refresh" content="0; url=/next.html">', "utf-8"),
        ('<meta http-equiv="refresh" content="0; url=/next.html">', "gb18030"),
        ('<meta http-equiv="refresh" content="0; url=/next.html">', "utf-16-le"),
    ],
)
def test_meta_refresh_is_followed_whatever_its_spelling_and_encoding(tag, encoding):
    """The raw-bytes look before Scrapy's must never hide a refresh Scrapy would follow."""
    middleware = MetaRefreshMiddleware.from_crawler(get_crawler())
    body = f"<html><head>{tag}<title>第一章</title></head><body>正文</body></html>"
    request = Request("http://x/a.html")
    response = HtmlResponse(request.url, body=body.encode(encoding), encoding=encoding)
    redirected = middleware.process_response(request, response)
    assert isinstance(redirected, Request) and redirected.url == "http://x/next.html"


def test_a_page_without_meta_refresh_goes_on_unread_by_scrapy(monkeypatch):
    middleware = MetaRefreshMiddleware.from_crawler(get_crawler())
    looked = []
    monkeypatch.setattr(
        "scrapy.downloadermiddlewares.redirect.get_meta_refresh",
        lambda *a, **k: looked.append(a) or (None, None),
    )
    request = Request("http://x/a.html")
    plain = HtmlResponse(
        request.url,
        body='<html><head><meta http-equiv="Content-Type" content="text/html"></head>'
        "<body>正文</body></html>".encode(),
        encoding="utf-8",
    )
    assert middleware.process_response(request, plain) is plain
    assert looked == []


def test_crawl_stats_count_without_scrapys_access_shim():
    from tracker.crawling.stats import CrawlStatsCollector

    stats = CrawlStatsCollector(get_crawler())
    stats.inc_value("tracker/x")
    stats.inc_value("tracker/x", 2, spider=None)  # Scrapy's middlewares may still pass it
    stats.max_value("tracker/m", 3)
    assert stats.get_stats() == {"tracker/x": 3, "tracker/m": 3}


# ------------------------------------------------------------------------------ extraction


def test_the_warm_up_page_goes_through_extraction_and_hashing_whole():
    """What an extraction worker runs first must load what a page does: extracted as an
    article by trafilatura, its text segmented into a SimHash."""
    extracted = extract(WARM_UP_PAGE)
    assert extracted.extractor == "trafilatura" and not extracted.is_list
    assert extracted.text.endswith(WARM_UP_TEXT)  # after its title
    assert warm_up() != 0


def test_a_batch_of_pages_is_extracted_page_by_page_and_a_failure_stays_its_own():
    page = extract_normalized(WARM_UP_PAGE, "http://x/1.html")
    batch = [(WARM_UP_PAGE, "http://x/1.html", None, None), (None, "http://x/2.html", None, None)]
    batch *= 2
    first, broken, again, _ = extract_pages(batch)  # type: ignore[arg-type]
    for result in (first, again):
        assert result.extracted == page.extracted and result.simhash == page.simhash != 0
        assert result.normalized.chars == page.normalized.chars
    assert isinstance(broken, ExtractionFailed) and str(broken).startswith("TypeError: ")


def test_extraction_removes_boilerplate_lines_and_records_the_extractor():
    ad = "最快更新本书最新章节，请记住本站域名 www.biquge-test.com"
    body = "".join(f"<p>{line}</p>" for line in [ad, *CHAPTER.splitlines()])
    html = (
        f"<html><head><title>第一章 风雪_某书_笔趣阁</title></head><body><nav>首页 书架</nav>"
        f"<div id='content'><h1>第一章 风雪</h1>{body}<p class='wm'>水印 www.x.com</p></div>"
        "</body></html>"
    )
    auto = extract(html, "http://x/1.html")
    assert auto.extractor in ("trafilatura", "fallback") and ad not in auto.text
    assert auto.chapter_title == "第一章 风雪" and auto.metadata["title"].startswith("第一章")
    by_css = extract(html, None, ExtractionRules(css="#content", remove=(".wm",)))
    assert by_css.extractor == "css" and "水印" not in by_css.text and ad not in by_css.text
    missed = extract(html, None, ExtractionRules(xpath="//div[@id='none']"))
    assert missed.extractor in ("trafilatura", "fallback")
    assert extract("", None).extractor == "none"
    assert strip_boilerplate_lines(f"正文一行。\n{ad}\nwww.biquge-test.com\n正文二行。") == (
        "正文一行。\n正文二行。"
    )


def portal_page(main: str, n_links: int = 80) -> str:
    """A portal page: ``main`` among navigation and hot lists of long linked titles."""
    hot = "".join(
        f'<li><a href="/2024/05/{i:02d}/{i}.html">热点新闻标题第{i}条：某地发生一件大事</a></li>'
        for i in range(n_links)
    )
    nav = "".join(f'<a href="/c{i}/">频道{i}</a> ' for i in range(30))
    return (
        f"<html><head><title>标题_门户网</title></head><body><div class='nav'>{nav}</div>"
        f"{main}<div class='hot'><h3>热点</h3><ul>{hot}</ul></div></body></html>"
    )


def test_article_or_list_is_decided_on_the_extracted_main_text():
    body = "".join(f"<p>{line}</p>" for line in prose(12, 600).splitlines())
    article = portal_page(f"<article><h1>某地新闻</h1>{body}</article>")
    response = HtmlResponse("http://x/2024/05/01/1.html", body=article, encoding="utf-8")
    total, links = link_text(response)
    assert links > 0.6 * total  # the old whole-page rule dropped such pages as lists
    extracted = extract(article, response.url)
    assert not extracted.is_list and extracted.prose_chars >= 150
    intro = "<h1>某书</h1><p>简介：一本书。</p>"
    chapters = "".join(f'<li><a href="/b/{i}.html">第{i}章 风雪夜归人</a></li>' for i in range(80))
    catalogue = extract(f"<html><body>{intro}<ul>{chapters}</ul></body></html>", "http://x/b/")
    assert catalogue.is_list and catalogue.prose_chars < 150
    # WeChat: the body is hidden until scripts run; the profile blurb must not win.
    wechat = (
        "<html><body><div id='js_profile_qrcode'><p>微信号 abc 功能介绍 关注我们的公众号</p></div>"
        f"<div class='rich_media_content' id='js_content' style='visibility: hidden;'>{body}"
        "</div></body></html>"
    )
    extracted = extract(wechat, "https://mp.weixin.qq.com/s/x")
    assert extracted.extractor == "wechat" and prose(12, 600).splitlines()[-1] in extracted.text
    assert "微信号" not in extracted.text


def test_canonical_targets():
    page = "http://x/a/1.html"
    assert canonical_of(page + "?from=home", "/a/1.html") == page
    assert canonical_of(page, "/a/1.html") is None  # itself
    assert canonical_of(page + ";jsessionid=ABCDEF0123", page) is None  # itself, session aside
    assert canonical_of(page, "/") is None and canonical_of(page, "http://x") is None  # home
    assert canonical_of(page, "javascript:void(0)") is None and canonical_of(page, " ") is None
    assert canonical_of(page, "https://other.test/b.html") == "https://other.test/b.html"


@pytest.mark.parametrize("encoding", ["utf-8", "gb18030", "utf-16-le"])
def test_a_canonical_link_is_followed_whatever_the_encoding(encoding):
    """The look for the word in the raw bytes, which spares most pages the XPath, must never
    hide a canonical link (UTF-16 does not write it as ASCII bytes)."""
    spider = NovelSpider.from_crawler(get_crawler(NovelSpider), start_url="http://x.test/")
    url = "http://x.test/a/1.html?from=list"

    def canonical(head: str) -> str | None:
        markup = f"<html><head>{head}</head><body><p>正文</p></body></html>"
        page = HtmlResponse(
            url, body=markup.encode(encoding), encoding=encoding, request=Request(url)
        )
        request = spider.canonical_request(page)
        return request.url if request is not None else None

    assert canonical('<link rel="canonical" href="/a/1.html">') == "http://x.test/a/1.html"
    assert canonical('<link rel="stylesheet" href="/a.css">') is None


@pytest.mark.integration
def test_a_copy_of_its_canonical_is_stored_once_in_either_order(runtime):
    crawler = get_crawler()
    crawler.stats.open_spider()
    crawler._tracker_context = TrackerContext(runtime)
    pipeline = ExtractPipeline.from_crawler(crawler)

    def page(url: str, text: str, canonical: str | None = None) -> PageItem:
        head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
        body = "".join(f"<p>{line}</p>" for line in text.splitlines())
        return PageItem(url=url, html=f"<html><head>{head}</head><body>{body}</body></html>")

    text, other = prose(14, 500), prose(15, 500)
    # The variant first: kept; its canonical, with the same text, is then the copy dropped.
    assert process(pipeline, page("http://x/1.html?from=a", text, "/1.html"))
    with pytest.raises(DropItem, match="canonical"):
        process(pipeline, page("http://x/1.html", text))
    # The canonical first (here: stored by an earlier crawl): the variant is the copy.
    PageStore(runtime.db).save(PageRecord(url="http://x/2.html", text=text))
    with pytest.raises(DropItem, match="canonical"):
        process(pipeline, page("http://x/2.html?from=b", text, "/2.html"))
    # Another text than its canonical's: kept (markup does not hide a page), and so is the
    # canonical.
    assert process(pipeline, page("http://x/pirate/3.html", other, "/about.html"))
    assert process(pipeline, page("http://x/about.html", text))
    assert crawler.stats.get_value("tracker/pages_canonical_copy") == 2


# ------------------------------------------------------------------------------------ news


def test_news_url_and_document_rules():
    assert is_article_url("http://x/2024/05/01/1001.html")
    assert is_article_url("http://x/news/t20240501_123.html")
    assert is_article_url("http://x/article/abc-def")
    assert not is_article_url("http://x/tag/sports/")
    assert is_list_url("http://x/list/2.html") and is_list_url("http://x/news?page=2")
    assert document_kind(b'<?xml version="1.0"?><urlset xmlns="...">') == "sitemap"
    assert document_kind(b"<?xml version='1.0'?><rss version='2.0'>") == "feed"
    assert document_kind(b'<feed xmlns="http://www.w3.org/2005/Atom">') == "feed"
    assert document_kind(b"<!DOCTYPE html><html>") == "html"
    farm = HtmlResponse(
        "http://x/",
        body="<html><body>" + '<a href="/a">链接文字</a>' * 20 + "短</body></html>",
        encoding="utf-8",
    )
    article = HtmlResponse(
        "http://x/",
        body=f"<html><body><p>{CHAPTER}</p><a href='/'>首页</a></body></html>",
        encoding="utf-8",
    )
    (farm_total, farm_links), (text_total, text_links) = link_text(farm), link_text(article)
    assert farm_links > 0.9 * farm_total and text_links < 0.1 * text_total


def test_a_link_given_before_is_not_requested_again_unless_met_shallower():
    spider = NovelSpider.from_crawler(get_crawler(NovelSpider), start_url="http://x.test/")

    def followed(url: str, depth: int, *hrefs: str) -> list[str]:
        links = "".join(f'<a href="{href}">第{i}章</a>' for i, href in enumerate(hrefs))
        request = Request(url, meta={"depth": depth})
        page = HtmlResponse(
            url, body=f"<html><body>{links}</body></html>", encoding="utf-8", request=request
        )
        return [r.url for r in spider.follow(page)]

    assert followed("http://x.test/1.html", 1, "/2.html", "/list.html", "http://y.test/") == [
        "http://x.test/2.html",
        "http://x.test/list.html",
    ]
    # A chapter page's 上一章 / 目录 / 下一章: only the new link; off-site links still counted.
    assert followed("http://x.test/2.html", 2, "/1.html", "/list.html", "/3.html") == [
        "http://x.test/1.html",
        "http://x.test/3.html",
    ]
    assert followed("http://x.test/3.html", 3, "/2.html", "/3.html", "/4.html") == [
        "http://x.test/4.html"
    ]
    # Met again nearer the start than when first given (a depth limit may have dropped it).
    assert followed("http://x.test/", 0, "/4.html", "/2.html") == [
        "http://x.test/4.html",  # given at depth 4, now met at 1
        "http://x.test/2.html",  # given at 2, now at 1
    ]
    assert followed("http://x.test/5.html", 1, "/4.html", "/2.html") == []
    assert spider.crawler.stats.get_value("tracker/links_offsite") == 1


# -------------------------------------------------------------- the unchanged-page pipeline


@pytest.mark.integration
def test_unchanged_page_is_not_reprocessed_but_seen_again(runtime):
    crawler = get_crawler()
    crawler.stats.open_spider()
    crawler._tracker_context = TrackerContext(runtime)
    pipeline = UnchangedPagePipeline.from_crawler(crawler)
    url = "http://x/1.html"
    from datetime import UTC, datetime, timedelta

    yesterday = datetime.now(UTC) - timedelta(days=1)
    MatchStore(runtime.db).record(url, [{"doc_id": "书/0001", "score": 1.0}], now=yesterday)
    PageStore(runtime.db).save(
        PageRecord(url=url, text=CHAPTER, matched=["书/0001"]), now=yesterday
    )

    with pytest.raises(DropItem, match="unchanged"):
        process(pipeline, PageItem(url=url, text=CHAPTER, status=200))
    page = runtime.db["pages"].find_one({"_id": url})
    match = runtime.db["matches"].find_one({"url": url})
    assert page["last_seen"] > yesterday + timedelta(hours=23)
    assert match["last_seen"] > yesterday + timedelta(hours=23)
    assert match["first_seen"] < yesterday + timedelta(minutes=1)

    changed = PageItem(url=url, text=CHAPTER + "新增一段。", status=200)
    assert process(pipeline, changed) is changed  # goes on to be fingerprinted
    new = PageItem(url="http://x/2.html", text=CHAPTER, status=200)
    assert process(pipeline, new) is new
    cut = PageItem(url=url, text=CHAPTER[:100], status=200, truncated=True)
    with pytest.raises(DropItem, match="truncated"):
        process(pipeline, cut)
    assert runtime.db["pages"].find_one({"_id": url})["text"] == CHAPTER
    stats = crawler.stats.get_stats()
    assert stats["tracker/pages_unchanged"] == 1
    assert stats["tracker/matches_refreshed"] == 1
    assert stats["tracker/pages_truncated_kept"] == 1


@pytest.mark.integration
@pytest.mark.parametrize(
    ("state", "why"),
    [
        ({"matched": None}, "its matching failed"),
        ({"matched": ["书/0001"], "library_version": 1}, "the library changed since"),
        ({"matched": ["书/0001", "书/0002"], "library_version": 2}, "its matches disagree"),
    ],
)
def test_an_unchanged_page_is_matched_again_when_its_record_is_not_good(runtime, state, why):
    crawler = get_crawler()
    crawler.stats.open_spider()
    crawler._tracker_context = TrackerContext(runtime)
    masters = MasterStore(runtime.db)  # the library at version 2 (no masters needed here)
    masters.next_version(), masters.next_version()
    index = runtime.settings.redis_prefix + "ix:"
    runtime.redis.mset({index + "version": 2, index + "count": 0})
    pipeline = UnchangedPagePipeline.from_crawler(crawler)
    url = "http://x/1.html"
    MatchStore(runtime.db).record(url, [{"doc_id": "书/0001", "score": 1.0}])
    PageStore(runtime.db).save(PageRecord(url=url, text=CHAPTER, **state))
    item = PageItem(url=url, text=CHAPTER, status=200)
    assert process(pipeline, item) is item, why  # goes on to be matched again
    assert item["stored"]["content_hash"] == item["content_hash"]
