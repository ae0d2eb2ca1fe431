"""`scrapy crawl news` from a front page and from a sitemap, and `scrapy crawl site` driven by a
per-site YAML file, each against a generated local site."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.sites import WATERMARK, configured_site, news_site
from tests.test_crawl_novel import crawl
from tracker.matching.library import MasterLibrary

pytestmark = pytest.mark.integration


def test_news_from_front_page_then_sitemap(runtime, settings, tmp_path):
    plan = news_site()
    x = plan.extra
    base = plan.site.url.rstrip("/")
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with plan.site:
        # 1. From the front page: its feed and its article links; list and tag pages skipped.
        crawl("news", settings, tmp_path, {"start_url": plan.site.url}, name="front")
        first = plan.site.fetched()
        # 2. From the sitemap index: its sitemap's articles (one already stored, unchanged).
        crawl("news", settings, tmp_path, {"start_url": plan.site.url + "sitemap.xml"}, name="map")
        both = plan.site.fetched()
    farm_links = {f"/2024/04/{i:02d}/9{i:03d}.html": 1 for i in range(1, 4)}
    assert dict(first) == {
        "/robots.txt": 1,
        "/": 1,
        "/feed.xml": 1,
        x["a"]: 1,
        x["b"]: 1,
        x["c"]: 1,
        x["e"]: 1,  # fetched, found to be a link farm, not stored
        **farm_links,
    }
    second = {path: both[path] - first.get(path, 0) for path in both}
    assert {path: n for path, n in second.items() if n} == {
        "/robots.txt": 1,
        "/sitemap.xml": 1,
        "/sitemap-articles.xml": 1,
        x["a"]: 1,
        x["d"]: 1,
    }
    pages = {doc["_id"][len(base) :]: doc for doc in runtime.db["pages"].find()}
    assert set(pages) == {x["a"], x["b"], x["c"], x["d"]}
    matched = {p: d["matched_doc_ids"] for p, d in pages.items() if d["matched_doc_ids"]}
    assert matched == {x["a"]: ["news-1"], x["c"]: ["news-2"], x["d"]: ["news-3"]}
    assert pages[x["a"]]["metadata"]["published"] == "2024-05-01T08:00:00+08:00"
    front, sitemap = runtime.db["crawl_runs"].find().sort("finished_at", 1)
    assert front["stats"]["tracker__skipped__list_page"] == 1  # the link farm
    assert front["errors"] == {"http_404": 3}
    assert sitemap["stats"]["tracker__skipped__list_page"] == 1  # the tag page in the sitemap
    assert sitemap["pages"]["unchanged"] == 1  # the article already stored by the first crawl


def write_site_file(path: Path, plan) -> Path:
    config = {
        "name": "configured-test",
        "start_urls": [plan.site.url],
        "allowed_domains": ["127.0.0.1"],
        "follow": {"allow": ["/novel/"], "deny": ["/comments"]},
        "pages": {"allow": [r"/novel/\d+/\d+\.html$"]},
        "body": {"css": "div.chapter-body", "remove": [".watermark"]},
        "limits": {"max_pages": 50, "max_depth": 3, "concurrency": 2, "delay": 0, "timeout": 10},
        "robots": {"obey": False, "reason": "test site: the owner asked for this crawl"},
        "schedule": "30 4 * * *",
    }
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def test_site_spider_follows_its_yaml_file(runtime, settings, tmp_path):
    plan = configured_site()
    base = plan.site.url.rstrip("/")
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with plan.site:
        config = write_site_file(tmp_path / "configured.yaml", plan)
        crawl("site", settings, tmp_path, {"config": config})
        fetched = plan.site.fetched()
    assert "/robots.txt" not in fetched  # robots.txt not obeyed, so not even read
    assert dict(fetched) == plan.fetched
    pages = {doc["_id"][len(base) :]: doc for doc in runtime.db["pages"].find()}
    assert set(pages) == plan.stored
    for path, master in zip(sorted(plan.stored), plan.masters, strict=True):
        assert pages[path]["extractor"] == "css"
        assert pages[path]["matched_doc_ids"] == [master.doc_id]
        assert WATERMARK not in pages[path]["text"]
        assert plan.extra["intro"].splitlines()[0] not in pages[path]["text"]
    [run] = list(runtime.db["crawl_runs"].find())
    assert run["site_config"] == "configured-test"
    assert run["robots_obeyed"] is False
    assert run["robots_reason"] == "test site: the owner asked for this crawl"
    assert run["stats"]["tracker__skipped__not_a_page"] == 2  # the home page and catalogue
