"""`scrapy crawl novel -a start_url=…` against pirate sites that defend themselves
(tests/sites_defended.py): chapters loaded by script, read through Debian's Chromium; bursts
answered with 429/503 and Retry-After, waited out for that site only; challenge and captcha
pages, reported unread and never stored over a good copy; a decoy for bot-like clients. On each
site: recall ≥ 0.95, no wrong master, no innocent page flagged, every challenged URL unread.

The rendered crawl needs Chromium (apt ``chromium``) and skips without it; a browser that fails
to start needs only Playwright's driver."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.sites import Page, html_page, link_list
from tests.sites_defended import (
    DefendedSite,
    ban_site,
    challenge_site,
    decoy_site,
    outcome,
    script_site,
    static_text_site,
    tls_decoy_site,
)
from tests.test_crawl_novel import crawl
from tests.texts import prose
from tracker.matching.library import MasterLibrary
from tracker.stores.pages import PageRecord, PageStore

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("TRACKER_BROWSER_PATH") or shutil.which("chromium") or ""
needs_chromium = pytest.mark.skipif(
    not CHROMIUM or not Path(CHROMIUM).exists(),
    reason="no Chromium (apt install chromium, or TRACKER_BROWSER_PATH): rendering not tested",
)


def assert_read_well(result: dict, plan) -> None:
    assert result["recall"] >= 0.95, result["recall"]
    assert result["wrong"] == []
    assert result["innocent_flagged"] == []
    assert set(result["unread"]) == set(plan.extra["unread"]), result["unread"]


def run_record(runtime) -> dict:
    """The last crawl's record; every URL it fetched ended one way (tracker.crawling.outcomes)."""
    record = next(iter(runtime.db["crawl_runs"].find().sort("finished_at", -1)))
    urls = record["urls"]
    assert urls["fetched"] > 0
    assert urls["unaccounted"] == 0, urls
    assert urls["fetched"] == sum(urls[end] for end in ("stored", "unchanged", "unread", "skipped"))
    return record


@needs_chromium
def test_script_loaded_chapters_are_read_in_the_browser_and_the_site_remembered(
    runtime, settings, tmp_path
):
    plan = script_site()
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with plan.site:
        crawl("novel", settings, tmp_path, {"start_url": plan.site.url}, name="first")
        first = plan.site.fetched()
        result = outcome(plan, runtime.db)
        assert_read_well(result, plan)
        assert result["recall"] == 1.0
        for path in plan.extra["rendered"]:
            assert result["stored"][path]["text"], path
        assert first["/api/chapter/1.json"] >= 1  # fetched by the browser's script
        stats = run_record(runtime)["stats"]
        assert stats["tracker__render__pages"] >= len(plan.extra["rendered"])
        assert stats["tracker__render__learned"] == 1
        [learned] = list(runtime.db["render_sites"].find())
        assert learned["_id"] == "127.0.0.1" and learned["render"] is True
        # The next crawl renders the site's pages at once: each fetched once, no plain try.
        crawl("novel", settings, tmp_path, {"start_url": plan.site.url}, name="second")
        second = plan.site.fetched() - first
    for path in plan.extra["rendered"]:
        assert second[path] == 1, (path, second[path])
    assert "tracker__render__requested__empty" not in run_record(runtime)["stats"]


def test_a_browser_that_fails_to_start_leaves_the_pages_unread(runtime, settings, tmp_path):
    plan = script_site()
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    missing = tmp_path / "no-such-chromium"
    with plan.site:
        log = crawl(
            "novel",
            settings,
            tmp_path,
            {"start_url": plan.site.url},
            {"TRACKER_BROWSER_PATH": missing},
        )
    text = log.read_text(encoding="utf-8")
    assert f"TRACKER_BROWSER_PATH={missing}" in text and "could not start" in text
    result = outcome(plan, runtime.db)
    # The script pages are unread, never clean; the plain chapter is read and matched.
    assert result["unread"] == dict.fromkeys(plan.extra["rendered"], "render_unavailable")
    assert result["stored"]["/s/7.html"]["matched_doc_ids"] == plan.matched["/s/7.html"]
    assert not set(plan.extra["rendered"]) & set(result["stored"])
    assert run_record(runtime)["unread"] == {"render_unavailable": len(plan.extra["rendered"])}


def test_bursts_answered_with_429_and_503_are_waited_out_for_that_site_only(
    runtime, settings, tmp_path
):
    plan = ban_site()
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    other = DefendedSite()  # a plain site crawled alongside, under another host name
    listing = link_list((f"/o/{i}.html", "章") for i in range(8))
    other.pages["/"] = Page(html_page("别站", listing).encode())
    for i in range(8):
        page = html_page("章", f"<p>{prose(300 + i, 400)}</p>")
        other.pages[f"/o/{i}.html"] = Page(page.encode())
    other_url = f"http://localhost:{other.port}/"
    with plan.site, other:
        crawl(
            "novel",
            settings,
            tmp_path,
            {"start_url": f"{plan.site.url},{other_url}"},
            {"TRACKER_BAN_BACKOFF_BASE": 0.2, "CONCURRENT_REQUESTS_PER_DOMAIN": 4},
        )
        fetched_other = other.fetched()
    assert plan.extra["refusals"][0] >= 3  # the site did refuse bursts
    result = outcome(plan, runtime.db)
    assert_read_well(result, plan)
    assert result["recall"] == 1.0
    assert result["unread"] == {"/b/banned.html": "banned"}
    assert all(fetched_other[f"/o/{i}.html"] == 1 for i in range(8))
    assert run_record(runtime)["urls"]["unread_reasons"] == {"banned": 1}
    # The other site did not wait for this one: its pages were all fetched before this
    # site's last chapter was (a pause of the banned site's download slot only).
    other_done = max(t for ts in other.times.values() for t in ts)
    assert other_done < max(t for ts in plan.site.times.values() for t in ts)
    record = run_record(runtime)
    assert record["unread"] == {"banned": 1}
    assert record["stats"]["tracker__bans__retries"] >= 3


def test_challenged_pages_are_unread_never_clean_and_cleared_once_read(runtime, settings, tmp_path):
    plan = challenge_site()
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    base = plan.site.url.rstrip("/")
    good = plan.masters[2]  # /c/3.html, stored by an earlier crawl with its copy
    PageStore(runtime.db).save(PageRecord(url=f"{base}/c/3.html", text=good.text, title="旧"))
    with plan.site:
        crawl("novel", settings, tmp_path, {"start_url": plan.site.url}, name="challenged")
        result = outcome(plan, runtime.db)
        assert_read_well(result, plan)
        assert result["unread"] == {
            "/c/3.html": "challenge",
            "/c/4.html": "captcha",
            "/c/5.html": "captcha",
        }
        assert result["stored"]["/c/3.html"]["text"] == good.text  # not overwritten
        assert "/c/4.html" not in result["stored"]  # the captcha page stored as nothing
        assert run_record(runtime)["unread"] == {"captcha": 2, "challenge": 1}
        plan.extra["challenging"].clear()  # the site lets readers through again
        crawl("novel", settings, tmp_path, {"start_url": plan.site.url}, name="read")
    result = outcome(plan, runtime.db)
    assert result["unread"] == {}
    assert result["recall"] == 1.0 and result["wrong"] == [] and result["innocent_flagged"] == []
    assert runtime.db["unread_pages"].count_documents({}) == 0
    assert run_record(runtime)["stats"]["tracker__unread_cleared"] == 3


def test_a_bot_decoy_is_not_served_to_the_crawl(runtime, settings, tmp_path):
    plan = decoy_site()
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with plan.site:
        crawl("novel", settings, tmp_path, {"start_url": plan.site.url})
        assert plan.extra["decoys"] == {}  # every chapter was served as to a reader
        run_record(runtime)
        result = outcome(plan, runtime.db)
        assert_read_well(result, plan)
        assert result["recall"] == 1.0
        # The tracker's own product token gets the decoy: nothing is found.
        runtime.db["pages"].delete_many({})
        crawl(
            "novel",
            settings,
            tmp_path,
            {"start_url": plan.site.url, "user_agent": "tracker"},
            name="bot",
        )
    assert sum(plan.extra["decoys"].values()) == 7
    assert outcome(plan, runtime.db)["recall"] == 0.0


def test_tls_impersonation_is_an_opt_in_tier_of_the_site_file(runtime, settings, tmp_path):
    plan = tls_decoy_site(tmp_path)
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    config = tmp_path / "fingerprint.yaml"
    config.write_text(
        f"name: fingerprint\nstart_urls: ['{plan.site.url}']\nimpersonate: chrome\n",
        encoding="utf-8",
    )
    with plan.site:
        crawl("site", settings, tmp_path, {"config": config}, name="impersonated")
        assert plan.extra["decoys"] == {}  # a browser's handshake: the real chapters
        result = outcome(plan, runtime.db)
        assert_read_well(result, plan)
        assert result["recall"] == 1.0
        assert run_record(runtime)["stats"]["impersonate__request_bytes"] > 0
        # Without the tier, Scrapy's own TLS client offers OpenSSL's suites: the decoy.
        runtime.db["pages"].delete_many({})
        crawl("novel", settings, tmp_path, {"start_url": plan.site.url}, name="plain")
    assert sum(plan.extra["decoys"].values()) == 6
    assert outcome(plan, runtime.db)["recall"] == 0.0


@needs_chromium
def test_static_text_is_never_lost_to_rendering(runtime, settings, tmp_path):
    """A page judged a possible script shell is rendered; when the rendered page carries less
    text than the plain one, the plain one is read (the Xinhua case of issue 40)."""
    plan = static_text_site()
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with plan.site:
        crawl("novel", settings, tmp_path, {"start_url": plan.site.url})
        fetched = plan.site.fetched()
    result = outcome(plan, runtime.db)
    assert_read_well(result, plan)
    assert result["recall"] == 1.0
    for path in plan.extra["rendered_less"]:
        assert fetched[path] == 2  # plainly, then by the browser
        assert "打开客户端" not in result["stored"][path]["text"]
    record = run_record(runtime)
    assert record["stats"]["tracker__render__plain_kept"] == len(plan.extra["rendered_less"])
    assert "tracker__render__learned" not in record["stats"]  # the browser did not help
    # the index (a list), three articles and the menu's /about.html (404): each URL once,
    # however often fetched
    assert record["urls"]["fetched"] == 5
    assert record["urls"]["stored"] == 3
    assert record["urls"]["skipped_reasons"] == {"http_404": 1, "list_page": 1}


def test_static_text_is_read_when_the_browser_fails(runtime, settings, tmp_path):
    """A page with a body in its HTML that was to be rendered is read from that body when the
    browser cannot start (and asked for again next crawl)."""
    plan = static_text_site()
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    missing = tmp_path / "no-such-chromium"
    with plan.site:
        crawl(
            "novel",
            settings,
            tmp_path,
            {"start_url": plan.site.url},
            {"TRACKER_BROWSER_PATH": missing},
        )
    result = outcome(plan, runtime.db)
    assert result["stored"]["/n/1.html"]["matched_doc_ids"] == plan.matched["/n/1.html"]
    assert result["innocent_flagged"] == [] and result["wrong"] == []
    assert result["unread"] == dict.fromkeys(plan.extra["rendered_less"], "render_unavailable")
    record = run_record(runtime)
    assert record["stats"]["tracker__render__plain_read"] == len(plan.extra["rendered_less"])
    assert record["urls"]["stored"] == 3
