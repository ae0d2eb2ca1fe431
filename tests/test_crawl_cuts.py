"""The crawl's speed cuts (issue 40: the learned body locator, matching in the worker
processes) change nothing a crawl records: a pirate site crawled with them and without them
gives the same pages, the same matches and the same evidence."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from bench.crawl_throughput import build_pirate_site
from tests.test_crawl_novel import FAST, crawl_settings
from tracker.crawling.crawl import run_crawl
from tracker.demo.site import serve
from tracker.index.storage import RedisStorage
from tracker.matching.library import MasterLibrary
from tracker.servers.runtime import Runtime

pytestmark = pytest.mark.integration

WITHOUT_CUTS = {"TRACKER_EXTRACT_LEARNED_BODY": 0, "TRACKER_MATCH_IN_WORKERS": 0}
VOLATILE = {"_id", "capture_id", "crawl_id", "warc_file", "warc_offset", "record_id"}


def _stable(document: dict) -> dict:
    """``document`` without its ids, times and file positions (which differ run to run)."""
    return {
        key: _stable(value) if isinstance(value, dict) else value
        for key, value in document.items()
        if key not in VOLATILE and not isinstance(value, datetime)
    }


def _recorded(runtime: Runtime) -> tuple[dict, dict, dict]:
    db = runtime.db
    pages = {d["_id"]: (d["text"], d["content_hash"], d.get("simhash")) for d in db["pages"].find()}
    matches = {(d["url"], d["doc_id"]): _stable(d) for d in db["matches"].find()}
    captures = {  # the evidence, without what differs from one fetch to the next (times,
        # Date headers, WARC offsets)
        d["url"]: (
            d["content_hash"],
            d["payload_sha256"],
            d["matches"],
            [(p["url"], p["status"], p["sha256"], p["length"]) for p in d["parts"]],
        )
        for d in db["captures"].find()
    }
    return pages, matches, captures


def test_the_speed_cuts_change_no_page_match_or_evidence(settings, tmp_path):
    masters = build_pirate_site(tmp_path / "site", 40, copy_share=0.8)
    recorded, stats = [], []
    with serve(tmp_path / "site") as site:
        for n, extra in enumerate((WITHOUT_CUTS, {})):
            own = replace(
                settings,
                mongo_db=f"{settings.mongo_db}_cut{n}",
                redis_prefix=f"{settings.redis_prefix}cut{n}:",
            )
            runtime = Runtime(own)
            try:
                MasterLibrary.from_runtime(runtime).ingest(masters)
                code = run_crawl(
                    "novel",
                    crawl_settings(own),
                    arguments={"start_url": site.url},
                    scrapy_settings={**FAST, **extra},
                    log_file=tmp_path / f"crawl{n}.log",
                    timeout=300,
                )
                assert code == 0, (tmp_path / f"crawl{n}.log").read_text(encoding="utf-8")[-3000:]
                recorded.append(_recorded(runtime))
                stats.append(runtime.db["crawl_runs"].find_one()["stats"])
            finally:
                runtime.mongo.drop_database(own.mongo_db)
                RedisStorage(runtime.redis, own.redis_prefix).clear()
                runtime.close()
    (pages, matches, captures), (pages_cut, matches_cut, captures_cut) = recorded
    assert len(pages) == 40 and len({url for url, _ in matches}) == len(masters) == 32
    assert pages_cut == pages
    assert matches_cut == matches
    assert captures_cut == captures and len(captures) == 32
    # the cuts were at work: pages read by a learned locator, checked in the worker
    assert stats[1].get("tracker__reading__learned_body", 0) >= 20
    assert not stats[0].get("tracker__reading__learned_body")
    assert not stats[1].get("tracker__match__in_crawl_process")
