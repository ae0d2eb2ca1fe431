"""A small record for the web console's tests: two chapters of the bundled 红楼梦 in the library,
crawled pages copying them (found by the real detector, so their evidence offsets are real) under
hostile titles, URLs and texts, pages today's crawls could not read (one under a hostile URL, one
with a hostile reason), and yesterday's stored report for the trend."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tracker.config import Settings
from tracker.index.storage import RedisStorage
from tracker.matching.library import MasterLibrary
from tracker.reading.readers import read_book
from tracker.reports.build import build_report
from tracker.servers.runtime import Runtime
from tracker.stores.pages import MatchStore, PageRecord, PageStore
from tracker.stores.reports import ReportStore
from tracker.stores.unread import UnreadStore

BOOK = Path(__file__).parents[1] / "tracker" / "demo" / "data" / "红楼梦.txt"
HOSTILE_TITLE = "<img src=x onerror=alert(1)>"
HOSTILE_LINE = '"><script>alert("text")</script><svg onload=alert(2)>'
HOSTILE_INLINE = "\"'></>"  # inside a copied passage: matching drops punctuation, so it stays in
HOSTILE_URL = 'https://pirate.example/book/1.html?x="><script>alert(3)</script>'
SCRIPT_URL = "javascript:alert(4)//pirate"
PLAIN_URL = "https://mirror.example/hlm/2.html"
UNREAD_URL = 'https://walled.example/ch/1.html?x="><img src=x onerror=alert(5)>'
UNREAD_REASON = '<script>alert("reason")</script>'  # a reason code is the crawl's; shown as text
UNREAD = [  # the pages today's crawls could not read
    (UNREAD_URL, "captcha"),
    ("https://walled.example/ch/2.html", "http_502"),
    ("https://pirate.example/book/9.html", UNREAD_REASON),
]
OPERATOR = ("olga", "operator-pass")
VIEWER = ("victor", "viewer-pass")


@dataclass(frozen=True)
class Seeded:
    settings: Settings
    runtime: Runtime
    today: str
    yesterday: str
    doc_ids: list[str]
    master_text: str  # the first chapter's
    copied_text: str  # the hostile page's text


def module_settings(server_settings: Settings, tag: str, **overrides) -> Settings:
    values = {"mongo_db": f"test_console_{tag}", "redis_prefix": f"testconsole{tag}:"}
    return replace(server_settings, **{**values, "console_cache_s": 0, **overrides})


def seed(settings: Settings) -> Seeded:
    from tracker.console.users import Users

    runtime = Runtime(settings)
    runtime.mongo.drop_database(settings.mongo_db)
    chapters = list(read_book(BOOK))[:2]
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(chapters)
    detector = library.detector(settings)
    pages, matches = PageStore(runtime.db), MatchStore(runtime.db)
    now = datetime.now(UTC)
    first, second = chapters[0].text, chapters[1].text
    middle = len(first) // 2
    hostile_text = (
        f"{first[:500]}{HOSTILE_INLINE}{first[500:middle]}\n{HOSTILE_LINE}\n{first[middle:]}"
    )
    crawled = [
        (HOSTILE_URL, hostile_text, HOSTILE_TITLE, now),
        (SCRIPT_URL, first, "javascript page", now),
        (PLAIN_URL, second, "第二回", now),
        (PLAIN_URL, second, "第二回", now - timedelta(days=1)),
    ]
    for url, text, title, when in crawled:
        found = [m.to_dict() for m in detector.check(text)]
        assert found, f"the seeded page {url} copies nothing"
        matches.record(url, found, now=when)
        record = PageRecord(url=url, text=text, title=title, matched=[m["doc_id"] for m in found])
        pages.save(record, now=when)
    UnreadStore(runtime.db).record_many(UNREAD, now=now)
    yesterday = (now - timedelta(days=1)).date()
    ReportStore(runtime.db).save(build_report(runtime.db, yesterday))
    users = Users(runtime.db)
    users.add(*OPERATOR[:1], "operator", OPERATOR[1])
    users.add(*VIEWER[:1], "viewer", VIEWER[1])
    return Seeded(
        settings,
        runtime,
        now.date().isoformat(),
        yesterday.isoformat(),
        [c.doc_id for c in chapters],
        first,
        hostile_text,
    )


def drop(seeded: Seeded) -> None:
    runtime = seeded.runtime
    runtime.mongo.drop_database(seeded.settings.mongo_db)
    RedisStorage(runtime.redis, seeded.settings.redis_prefix).clear()
    runtime.close()
