"""The one settings model: every setting of the tracker, from a TOML file and the environment.

Precedence, highest first: the environment, the TOML file named by ``TRACKER_CONFIG`` (or
``./tracker.toml`` when present), then the defaults below. A setting ``x`` is ``x = …`` in the
file (flat, or under a ``[tracker]`` table) and ``TRACKER_X`` in the environment; only the
server URLs keep their usual names, ``MONGO_URL`` and ``REDIS_URL``. ``TRACKER_CONFIG``, the
file's path, is the one ``TRACKER_`` variable that is not a setting.

The crawl's knobs are settings too (:data:`CRAWL_SETTINGS`): the Scrapy settings module
(:mod:`tracker.crawling.settings`) takes its ``TRACKER_X`` defaults from this model, so
``TRACKER_BATCH_SIZE=32 scrapy crawl …`` and ``batch_size = 32`` in the file both work, and
``-s TRACKER_BATCH_SIZE=…`` still overrides them for one run.

Every value is checked when loaded: its type, its range, and the rules between settings; a
mistake is a :class:`ConfigError` naming the setting and its environment variable. Each setting
says what it does (:func:`setting`); the docs site's configuration page is generated from that
(``python -m tracker.reference``; a test holds the page to the model).

This module is the bottom layer of the tracker: it imports nothing of the rest.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(base) / "tracker"


def setting(
    default: Any,
    doc: str,
    *,
    range: tuple[float, float | None] | None = None,
    default_text: str | None = None,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A setting of the model: its default, what it does, and for a number its allowed range
    (``(low, high)``, ``high`` None: no upper bound). ``doc`` is the configuration page's own
    text (Markdown, generated from here by :mod:`tracker.reference`); ``default_text`` is how
    the page writes a default that is no literal value (``none``, ``<data_dir>/inbox``)."""
    metadata: dict[str, Any] = {"doc": doc}
    if range is not None:
        metadata["range"] = range
    if default_text is not None:
        metadata["default_text"] = default_text
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


#: The index's bucket bits a table (see tracker.index.layout, which reads its range here).
BUCKET_BITS_RANGE = (16, 24)


@dataclass(frozen=True)
class Settings:
    data_dir: Path = setting(
        None,
        "embedded servers, reports, the warm checker's socket (`$XDG_DATA_HOME/tracker` when set)",
        factory=_default_data_dir,
        default_text="`~/.local/share/tracker`",
    )
    mongo_url: str | None = setting(
        None,
        "the MongoDB (`mongodb://` or `mongodb+srv://`); none: the embedded SecantusDB under the "
        "data directory",
        default_text="none",
    )
    redis_url: str | None = setting(
        None,
        "the Redis (`redis://`, `rediss://` or `unix://`); none: the embedded valkey under the "
        "data directory",
        default_text="none",
    )
    mongo_db: str = setting("tracker", "the database")
    redis_prefix: str = setting("tracker:", "the prefix of every Redis key")
    # REDIS_URL names a node of a Redis Cluster: the index spreads over its primaries (see
    # tracker.servers.redis_cluster). The embedded server is a single node: a cluster needs
    # REDIS_URL.
    redis_cluster: bool = setting(
        False,
        "`REDIS_URL` names a node of a Redis Cluster "
        "(see [Redis Cluster](deployment.md#redis-cluster))",
    )
    # The Redis of a distributed crawl's shared queue (scrapy-redis, which speaks to one server,
    # not a cluster); "" = REDIS_URL's server when it is not a cluster.
    crawl_redis_url: str = setting(
        "",
        "the Redis of a distributed crawl's queue; none: `REDIS_URL`'s server; required with "
        "`redis_cluster`",
        default_text="none",
    )
    # Write concern of every write (``majority``, or a number of members): "" = the URL's
    # ``w=``, else majority. Read preference of what only reads settled data (reports, lists):
    # "" = the URL's ``readPreference=``, else primary. See tracker.servers.runtime.
    mongo_write_concern: str = setting(
        "",
        "every write waits for this (`majority`, or a number of members)",
        default_text="the URL's `w=`, else `majority`",
    )
    mongo_read_preference: str = setting(
        "",
        "for reading reports and lists only (`secondaryPreferred`, `nearest`, …)",
        default_text="the URL's `readPreference=`, else `primary`",
    )

    # The layout of an index built from scratch (the first ingest, ``tracker index rebuild``):
    # 2^bits buckets a table (16-24; 16 + round(log2(chapters / 300,000)) keeps the records a
    # lookup reads per bucket as the library grows) and 32-bit master numbers past 16.7M. An
    # index keeps the layout it was built with (see tracker.index.layout).
    index_bucket_bits: int = setting(
        16,
        "the buckets a table starts with (2^N, 16–24) in an index built from scratch; tables then "
        "split as they fill, so a library needs no setting to stay fast; each split past the start"
        " leaves a lookup's chance matches twice as likely, and `tracker index stats` advises more"
        " bits and `tracker index rebuild` past four (16 + round(log2(chapters / 300,000)): 21 at "
        "10M, see [capacity](deployment.md#capacity))",
        range=BUCKET_BITS_RANGE,
    )
    index_wide_ids: bool = setting(
        False, "24-bit master numbers (16.7M masters); `true`: 32-bit, 6-byte postings"
    )
    # Days the stored pages' anchors are kept for tracker rematch (see tracker.index.page_index).
    page_index_days: int = setting(
        90,
        "the stored pages' anchors `tracker rematch` reads are kept this long (1–3650; see [late "
        "masters](how-it-works.md#the-record))",
        range=(1, 3650),
    )

    # Detection thresholds (see tracker.matching.detector for their meaning).
    min_coverage: float = setting(
        0.2,
        "report a master when this share of it is copied (with enough evidence, see [how it "
        "works](how-it-works.md#matching))…",
        range=(0.0, 1.0),
    )
    min_passage_chars: int = setting(
        100,
        "…or when one copied passage is this long (in characters after normalisation)",
        range=(1, None),
    )
    min_span_chars: int = setting(12, "shorter aligned passages are not evidence", range=(1, None))
    rewrite_detection: bool = setting(
        True,
        "rewritten copies (洗稿) found too: page sentences aligned with the masters' through "
        "synonym codes (see [checking](checking.md)); false: verbatim and disguised copies only",
    )

    # Scheduler (``tracker schedule``, see tracker.scheduler): master sources, job times, sites.
    drop_dir: str = setting(
        "", "new master files for the scheduler", default_text="`<data_dir>/inbox`"
    )
    master_source_url: str = setting("", "…on this server…", default_text="the tracker's own")
    master_source_db: str = setting("", "…and database", default_text="the tracker's own")
    master_source_collection: str = setting(
        "", "a MongoDB collection of new `{id, work, title, text}` documents…", default_text="none"
    )
    master_source_cursor: str = setting("_id", "the field new documents are read in order of")
    pull_cron: str = setting("*/10 * * * *", "when the scheduler pulls new masters")
    pull_batch_size: int = setting(200, "documents per cursor step", range=(1, None))
    report_time: str = setting("06:00", "the daily report, in `schedule_timezone`")
    schedule_timezone: str = setting("UTC", "the scheduler's time zone")
    misfire_grace_s: int = setting(
        3600, "a run later than this is skipped and recorded as `missed`", range=(1, None)
    )
    scheduler_lock_s: int = setting(
        30, "the acting scheduler's lock expires this long after it dies", range=(1, None)
    )
    max_running_jobs: int = setting(
        3,
        "jobs the scheduler runs at once; each site's crawl is one (see "
        "[capacity](deployment.md#capacity))",
        range=(1, None),
    )
    sites: tuple = setting(
        (),
        "the crawls: `[[sites]]` tables of `name`, `spider`, `cron`, `arguments`, `settings`, "
        "`timeout_s` (1800); a JSON list in the environment",
        default_text="none",
    )

    # Input of ``tracker check`` and ``ingest``: a larger file, page or text is refused.
    max_input_mb: int = setting(
        32, "a larger text, file, page or `.jsonl` line is refused (`--max-mb`)", range=(1, None)
    )
    master_trash_days: int = setting(
        30,
        "masters an ingest replaced or a command deleted are kept this many days; `tracker index "
        "restore-deleted` brings them back (0: not kept)",
        range=(0, None),
    )
    # A warm checker answers later checks for this long after the last (0: none; see
    # tracker.cli._warm).
    check_warm_s: int = setting(
        600,
        "a warm checker answers later checks for this long after the last (0: off)",
        range=(0, None),
    )

    # The web console (``tracker serve``, see tracker.console).
    console_allow_private_urls: bool = setting(
        False,
        "console checks fetch only public addresses (true: also loopback, private, link-local…)",
    )
    console_max_body_kb: int = setting(
        1024, "a larger request body to the console is refused (413)", range=(1, None)
    )
    console_cache_s: int = setting(
        60,
        "the console builds a day's figures again after this long (0: at every request)",
        range=(0, None),
    )
    console_session_hours: int = setting(12, "a console login lasts this long", range=(1, None))
    # Sign-in throttling (tracker.console.throttle): an account is locked after this many
    # failed sign-ins, a client address after that many (0: no limit), first for
    # console_login_lock_s seconds, then twice as long at each further failure, up to an hour.
    console_login_failures: int = setting(
        5,
        "failed sign-ins of an account before it is locked (0: no limit; see [password "
        "guessing](console.md#password-guessing))",
        range=(0, None),
    )
    console_login_address_failures: int = setting(
        50,
        "failed sign-ins from one client address before it is locked (0: no limit)",
        range=(0, None),
    )
    console_login_lock_s: int = setting(
        60,
        "the first lock, in seconds; each further failure doubles it, up to an hour",
        range=(1, None),
    )

    # The crawl (``scrapy crawl``): the Scrapy settings TRACKER_<NAME>, see CRAWL_SETTINGS and
    # tracker.crawling.settings. The pipelines' MongoDB and Redis work runs in worker threads,
    # in batches of up to batch_size pages, or what arrived within batch_delay seconds while
    # the worker was busy (pipelines/__init__.py).
    batch_size: int = setting(
        128,
        "crawl: a pipeline stage's MongoDB and Redis work goes in batches of up to this many "
        "pages…",
        range=(1, None),
    )
    batch_delay: float = setting(
        0.02,
        "…or of what came within this many seconds while its worker was busy",
        range=(0.0, None),
    )
    # Pages are extracted in this many worker processes (0: in a thread of the crawl
    # process), up to extract_batch pages a call (tracker.crawling.process_pool).
    extract_processes: int = setting(
        1,
        "crawl: pages are extracted in this many worker processes (0: in a thread of the crawl "
        "process)",
        range=(0, None),
    )
    extract_batch: int = setting(
        64, "crawl: pages sent to an extraction worker per call", range=(1, None)
    )
    extract_learned_body: bool = setting(
        True,
        "crawl: a site's body element learned from trafilatura's text reads its further pages "
        "while they verify (tracker.reading.locator)",
    )
    match_in_workers: bool = setting(
        True,
        "crawl: pages are checked in the extraction worker processes (a batch that fails there "
        "is checked in the crawl process)",
    )
    boilerplate_min_pages: int = setting(
        5,
        "crawl: a short line on this many of a site's pages is its boilerplate (at least 2)",
        range=(2, None),
    )
    min_text_chars: int = setting(
        80, "crawl: a page with less text (normalised) is navigation, not text", range=(0, None)
    )
    # Reading pages as a reader sees them: at most max_parts pages of one chapter or thread are
    # joined (1: none; spiders.base.TrackerSpider.read_parts), and resources_cached stylesheets
    # and web fonts are kept for the crawl (tracker.crawling.resources).
    max_parts: int = setting(
        50,
        "crawl: pages of one chapter or thread read and joined at most (1: none); per site "
        "`limits.max_parts` in its file",
        range=(1, None),
    )
    max_download_mb: int = setting(
        100,
        "crawl: a larger download file (a book as TXT, ZIP, 7z, RAR or EPUB) is not fetched and "
        "is listed unread",
        range=(1, None),
    )
    resources_cached: int = setting(
        512,
        "crawl: same-site stylesheets and web fonts kept for the crawl (least recently used "
        "dropped)",
        range=(1, None),
    )
    distributed: bool = setting(
        False,
        "crawl: share one request queue in Redis with every worker of the crawl (see [distributed "
        "crawling](crawling.md#distributed-crawling))",
    )
    httpcache: bool = setting(
        False, "crawl: Scrapy's HTTP cache (`HTTPCACHE_ENABLED`), for development"
    )
    # Proxies (tracker.crawling.middlewares.proxy): URLs, and/or a file of them.
    proxies: tuple[str, ...] = setting(
        (), "crawl: proxy URLs, used round robin", default_text="none"
    )
    proxy_file: str = setting("", "crawl: a file of proxy URLs, one a line", default_text="none")
    proxy_max_failures: int = setting(
        3, "crawl: a proxy failing this many times in a row rests…", range=(1, None)
    )
    proxy_ban_seconds: float = setting(300.0, "…for this long", range=(0.0, None))
    # What the crawl sends (tracker.crawling.profiles): "auto", a current desktop browser's
    # profile per site; a profile's name; "tracker" (the tracker's own User-Agent); or a literal
    # User-Agent. Per site: user_agent: in its file.
    browser_profile: str = setting(
        "auto",
        "crawl: what the crawl sends: `auto` (a current desktop browser's User-Agent and headers, "
        "one profile per site), a profile's name, `tracker` (the tracker's own User-Agent) or a "
        "literal User-Agent; per site `user_agent:` in its file",
    )
    # Script-rendered pages (tracker.crawling.rendering): auto (when a page's body is missing
    # and it has scripts; learned per site for render_learn_days), always or never; the
    # browser's executable ("" = chromium, chromium-browser or google-chrome on the PATH);
    # pages open at once; pages per browser context; seconds a page may keep loading.
    render: str = setting(
        "auto",
        "crawl: read pages in a headless browser `auto` (when a page's body is missing and it has "
        "scripts; learned per site), `always` or `never`; per site `render:` in its file",
    )
    browser_path: str = setting(
        "",
        "crawl: the headless browser's executable; none: the first of `chromium`, "
        "`chromium-browser`, `google-chrome` on the PATH (never downloaded)",
        default_text="none",
    )
    render_pages: int = setting(2, "crawl: pages open in the browser at once", range=(1, None))
    render_context_pages: int = setting(
        100, "crawl: pages read in one browser context before it is replaced", range=(1, None)
    )
    render_wait: float = setting(
        5.0, "crawl: seconds a rendered page may keep loading", range=(0.5, None)
    )
    render_learn_days: int = setting(
        30, "crawl: a site learned to need rendering is remembered this many days", range=(1, None)
    )
    # 429/503 (tracker.crawling.middlewares.bans): that site waits its Retry-After, else
    # ban_backoff_base · 2^(n-1) up to ban_backoff_max seconds, for ban_retries tries; a page
    # asked to wait longer than ban_max_wait is left unread for this crawl.
    ban_retries: int = setting(
        6,
        "crawl: a page answered 429 or 503 is asked again this many times, its site waiting its "
        "`Retry-After`…",
        range=(0, None),
    )
    ban_backoff_base: float = setting(
        1.0, "…or, without one, this many seconds, doubled at each try…", range=(0.0, None)
    )
    ban_backoff_max: float = setting(60.0, "…up to this many", range=(0.0, None))
    ban_max_wait: float = setting(
        600.0, "crawl: a page asked to wait longer is left unread for this crawl", range=(0.0, None)
    )
    # Crawler traps (tracker.crawling.middlewares.traps).
    trap_max_date_pages: int = setting(
        30, "crawl: calendar and archive URLs of one shape followed at most", range=(1, None)
    )
    trap_max_segment_repeats: int = setting(
        2, "crawl: a URL repeating one path segment more often is a loop, dropped", range=(1, None)
    )
    trap_max_url_length: int = setting(1000, "crawl: longer URLs are dropped", range=(1, None))
    trap_session_params: tuple[str, ...] = setting(
        (),
        "crawl: query parameters stripped as session ids, beside the usual ones",
        default_text="none",
    )

    # Enforcement (see tracker.enforcement): evidence captured by the crawl, time-stamped bundles,
    # notices sent by mail, takedown tracking, alerts of new copies.
    evidence_dir: str = setting(
        "",
        "the daily WARC files and screenshots of matched pages (shared storage for a crawl fleet "
        "on several hosts)",
        default_text="`<data_dir>/evidence`",
    )
    evidence_screenshots: bool = setting(
        False,
        "a PNG of each matched page (Chromium, the captured HTML rendered offline, scripts off)…",
    )
    evidence_screenshot_max: int = setting(
        200, "…at most this many a crawl process", range=(0, None)
    )
    tsa_url: str = setting(
        "",
        "an RFC 3161 time-stamping authority (`https://user:pass@…` for HTTP Basic); none: bundles"
        " have no token",
        default_text="none",
    )
    tsa_timeout_s: float = setting(30.0, "seconds the TSA is given", range=(0.1, None))
    tsa_ca_file: str = setting(
        "", "the TSA's CA (PEM): every token is verified up to it when stamped", default_text="none"
    )
    tsa_cert_file: str = setting(
        "",
        "the TSA's certificate (PEM), for tokens that carry none",
        default_text="none",
    )
    tsa_client_cert: str = setting(
        "",
        "a TLS client certificate and its key (PEM), for a TSA that asks for one",
        default_text="none",
    )
    tsa_pending_alert_hours: float = setting(
        24.0,
        "a stamp still failing after this long is alerted (webhook) and shown in the console",
        range=(0.0, None),
    )
    smtp_url: str = setting(
        "",
        "`smtp://user:pass@host:port` (STARTTLS when offered) or `smtps://…`: the server notices "
        "are sent through",
        default_text="none",
    )
    smtp_from: str = setting("", "the notices' From address", default_text="none")
    notice_sender: str = setting(
        "",
        "who the notice is from and signed by (name, address); none: `smtp_from`",
        default_text="none",
    )
    notice_repeat_days: int = setting(
        14, "a URL is not noticed again within this many days (`--resend`)", range=(0, None)
    )
    # The rights holder a notice names (《信息网络传播权保护条例》 Art. 14): required to send one.
    rights_holder_name: str = setting(
        "", "the rights holder a notice names (required to send one)", default_text="none"
    )
    rights_holder_contact: str = setting(
        "", "the rights holder's contact details (phone, e-mail) in notices", default_text="none"
    )
    rights_holder_address: str = setting(
        "", "the rights holder's postal address in notices", default_text="none"
    )
    notice_language: str = setting(
        "zh", "`zh`: a 侵权通知书 in Chinese; `en`: a DMCA-style notice (a site file may say)"
    )
    notice_attachments: str = setting(
        "files",
        "the evidence each notice mail attaches per URL: `files`, its `manifest.json` and "
        "`timestamp.tsr` (a few KB); `wacz`, its WACZ package with `datapackage-digest.json` and "
        "a token over it (the page's WARC inside: tens of KB to MBs a URL, mind the mail size "
        "limit of the recipient's server)",
    )
    display_timezone: str = setting(
        "Asia/Shanghai", "the time zone of the times in notices, the HTML report and the console"
    )
    takedown_cron: str = setting("0 5 * * *", "the daily takedown check, in `schedule_timezone`")
    takedown_delay_s: float = setting(
        1.0, "seconds between two re-fetches of one site", range=(0.0, None)
    )
    # A site removing less than this share of its noticed URLs this long after its first
    # notice is non-compliant.
    noncompliant_below: float = setting(
        0.5, "a site removing less than this share of its noticed URLs…", range=(0.0, 1.0)
    )
    noncompliant_after_days: int = setting(
        14, "…this many days after its first notice is flagged non-compliant", range=(0, None)
    )
    alert_webhook: str = setting("", "new copies POSTed here as JSON…", default_text="none")
    alert_interval_s: float = setting(
        30.0, "…this often during a crawl, and at its end", range=(0.1, None)
    )

    # Discovery (tracker.discovery): the pirate sites nobody named, found through a search engine
    # (SearXNG's JSON API at search_url), within a daily query budget, each query not run again
    # (each result URL not fetched again) within discover_requery_days; the sites found are
    # crawled from the page found, discover_max_pages a site, and the watched ones again after
    # each daily run (discover_cron). licensed_sites (hosts or host:port) are never checked.
    search_url: str = setting(
        "",
        "discovery: a SearXNG instance (its JSON API, `/search?q=…&format=json`); none: `tracker "
        "discover` has no engine to ask",
        default_text="none",
    )
    search_timeout_s: float = setting(
        20.0, "discovery: seconds the engine is given per query", range=(0.5, None)
    )
    search_retries: int = setting(
        3,
        "discovery: a query answered 429 or 503 is asked again this many times, after "
        "`Retry-After` or 2, 4, 8… s",
        range=(0, None),
    )
    licensed_sites: tuple[str, ...] = setting(
        (),
        "discovery: the rights holder's own and licensed sites (hosts, with their subdomains, or "
        "`host:port`), never checked; also `licensed: true` in a site file",
        default_text="none",
    )
    discover_cron: str = setting(
        "0 1 * * *",
        "the daily discovery run, then the crawl of the watched sites, in `schedule_timezone`",
    )
    discover_queries_per_day: int = setting(
        100, "discovery: queries sent to the engine a UTC day, at most", range=(1, None)
    )
    discover_queries_per_work: int = setting(
        10, "discovery: queries a work gets a run, at most", range=(1, None)
    )
    discover_requery_days: int = setting(
        7,
        "discovery: a query is not sent again, a result URL not fetched again, within this many "
        "days",
        range=(0, None),
    )
    discover_max_pages: int = setting(
        500,
        "discovery: pages of a site crawled a run from the page found (and of a watched site)",
        range=(1, None),
    )
    discover_priority: tuple[str, ...] = setting(
        (),
        "discovery: works searched first, in this order; then new works, then the least recently "
        "searched",
        default_text="none",
    )

    @classmethod
    def load(cls, path: str | os.PathLike | None = None, **overrides: Any) -> Settings:
        values: dict[str, Any] = {}
        config_path = path or os.environ.get("TRACKER_CONFIG")
        if not config_path and Path("tracker.toml").is_file():
            config_path = "tracker.toml"
        if config_path:
            values.update(_read_toml(Path(config_path)))
        values.update(_read_env())
        values.update({k: v for k, v in overrides.items() if v is not None})
        return _coerce(cls(), values)

    def environment(self) -> dict[str, str]:
        """Every setting (but those None) as the environment variable that sets it: what a
        child process (a crawl) needs to run with exactly these settings."""
        return {
            env_name(f.name): _as_env(value)
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None
        }


#: The settings that are the crawl's Scrapy settings ``TRACKER_<NAME>`` (HTTPCACHE_ENABLED for
#: ``httpcache``): tracker.crawling.settings takes its defaults from them.
CRAWL_SETTINGS = (
    "batch_size",
    "batch_delay",
    "extract_processes",
    "extract_batch",
    "extract_learned_body",
    "match_in_workers",
    "boilerplate_min_pages",
    "min_text_chars",
    "max_parts",
    "max_download_mb",
    "resources_cached",
    "distributed",
    "httpcache",
    "proxies",
    "proxy_file",
    "proxy_max_failures",
    "proxy_ban_seconds",
    "browser_profile",
    "render",
    "browser_path",
    "render_pages",
    "render_context_pages",
    "render_wait",
    "render_learn_days",
    "ban_retries",
    "ban_backoff_base",
    "ban_backoff_max",
    "ban_max_wait",
    "trap_max_date_pages",
    "trap_max_segment_repeats",
    "trap_max_url_length",
    "trap_session_params",
    "discover_max_pages",
)
#: Environment variables with the prefix that are not settings: the settings file's path.
NOT_SETTINGS = frozenset({"TRACKER_CONFIG"})


def env_name(name: str) -> str:
    """The environment variable of setting ``name``."""
    return name.upper() if name in ("mongo_url", "redis_url") else f"TRACKER_{name.upper()}"


def _as_env(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return json.dumps(list(value), ensure_ascii=False)
    return str(value)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    # Accept both a flat file and one with a [tracker] table.
    return dict(data.get("tracker", data))


def _read_env() -> dict[str, Any]:
    """The settings the environment sets; a ``TRACKER_`` variable that is a near miss of a
    setting's (a typo) is an error rather than silently nothing."""
    env = os.environ
    names = {env_name(f.name): f.name for f in fields(Settings)}
    values = {names[key]: value for key, value in env.items() if key in names and value}
    for key in env:
        if key.startswith("TRACKER_") and key not in names and key not in NOT_SETTINGS:
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.85)
            if close:
                raise ConfigError(
                    f"{key} is not a setting: did you mean {close[0]} ({names[close[0]]})?"
                )
    return values


def _coerce(settings: Settings, values: dict[str, Any]) -> Settings:
    known = {f.name: f for f in fields(Settings)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        hints = [
            f"{name} (did you mean {close[0]}?)"
            if (close := difflib.get_close_matches(name, known, n=1, cutoff=0.8))
            else name
            for name in unknown
        ]
        raise ConfigError(f"unknown setting(s): {', '.join(hints)}")
    converted: dict[str, Any] = {}
    for name, raw in values.items():
        converted[name] = _convert(known[name], raw)
    for name, check in _CHECKS.items():
        if converted.get(name):
            try:
                converted[name] = check(converted[name])
            except ValueError as exc:
                raise ConfigError(f"setting {_named(name)}: {exc}") from None
    for name, schemes in _URL_SCHEMES.items():
        url = converted.get(name)
        if url and not url.startswith(tuple(f"{scheme}://" for scheme in schemes)):
            raise ConfigError(
                f"setting {_named(name)}={mask_password(url)!r} is not a "
                f"{' or '.join(f'{scheme}://' for scheme in schemes)} URL; "
                f"fix it, or unset it to use the embedded server"
            )
    for name, schemes in _SERVICE_SCHEMES.items():
        url = converted.get(name)
        if url and not url.lower().startswith(tuple(f"{scheme}://" for scheme in schemes)):
            raise ConfigError(
                f"setting {_named(name)} must be a "
                f"{' or '.join(f'{scheme}://' for scheme in schemes)} URL"
            )
    result = replace(settings, **converted)
    check_cluster(result)
    return result


def checked(name: str, raw: Any) -> Any:
    """``raw`` as setting ``name`` takes it (a crawl's ``-s TRACKER_X=…``), or ConfigError."""
    return _convert(next(f for f in fields(Settings) if f.name == name), raw)


def _convert(spec: Field, raw: Any) -> Any:
    """``raw`` (a TOML value, or an environment variable's text) as the setting's type, in its
    range."""
    kind, name = str(spec.type), spec.name
    try:
        if name == "data_dir":
            return Path(raw).expanduser()
        if kind == "bool":
            return parse_bool(raw)
        if kind == "tuple[str, ...]":
            return _strings(raw)
        if kind == "tuple":  # a TOML array of tables, or JSON from the environment
            return tuple(json.loads(raw) if isinstance(raw, str) else raw)
        if kind in ("int", "float"):
            if isinstance(raw, bool) or (kind == "int" and isinstance(raw, float)):
                raise ValueError(raw)
            value = int(raw) if kind == "int" else float(raw)
        else:
            return str(raw) if raw is not None else None
    except (TypeError, ValueError):
        what = {"tuple[str, ...]": "list of strings", "tuple": "list of tables"}.get(kind, kind)
        raise ConfigError(f"setting {_named(name)}={raw!r} is not a valid {what}") from None
    low, high = spec.metadata.get("range", (None, None))
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise ConfigError(f"setting {_named(name)}={raw!r} is out of range: it must be {span}")
    return value


def _strings(raw: Any) -> tuple[str, ...]:
    """A list of strings: a TOML array, or from the environment a JSON array or (when it does
    not start with ``[``) comma-separated values."""
    if isinstance(raw, str):
        text = raw.strip()
        raw = json.loads(text) if text.startswith("[") else text.split(",")
    if not isinstance(raw, list | tuple) or not all(isinstance(s, str) for s in raw):
        raise ValueError(raw)
    return tuple(s.strip() for s in raw if s.strip())


def check_cluster(settings: Settings) -> None:
    """With ``redis_cluster``: a node to start from, and a key prefix without a hash tag."""
    if not settings.redis_cluster:
        return
    if not settings.redis_url:
        raise ConfigError(
            "setting redis_cluster (TRACKER_REDIS_CLUSTER) needs REDIS_URL: the URL of a "
            "node of the cluster (the embedded server is a single node)"
        )
    try:
        check_prefix(settings.redis_prefix)
    except ValueError as exc:
        raise ConfigError(f"setting {_named('redis_prefix')}: {exc}") from None


def check_prefix(prefix: str) -> None:
    """A key prefix for a Redis Cluster: a hash tag in it would put every key in one slot."""
    if "{" in prefix or "}" in prefix:
        raise ValueError(
            f"redis_prefix {prefix!r} holds a brace: on a Redis Cluster it would be a hash tag "
            "putting every key on one node; choose a prefix without { }"
        )


def mask_password(url: str) -> str:
    """``url`` with the password of its user-info part replaced by ``***``, for messages."""
    return re.sub(r"(?<=://)([^:/@]*):[^@/]*@", r"\1:***@", url)


#: The URL schemes pymongo and redis-py accept.
_URL_SCHEMES = {
    "mongo_url": ("mongodb", "mongodb+srv"),
    "redis_url": ("redis", "rediss", "unix"),
    "crawl_redis_url": ("redis", "rediss", "unix"),
}
#: The enforcement services' URL schemes (their value is not repeated: it may hold a password).
_SERVICE_SCHEMES = {
    "tsa_url": ("http", "https"),
    "smtp_url": ("smtp", "smtps"),
    "alert_webhook": ("http", "https"),
    "search_url": ("http", "https"),
}
#: MongoDB's read preference modes, by their lower-case names.
READ_PREFERENCES = ("primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest")


def parse_write_concern(value: object) -> str | int:
    """``majority`` or a number of replica set members ≥ 1 (an unacknowledged ``0`` would
    lose what the crawl counts as stored)."""
    word = str(value).strip()
    if word.lower() == "majority":
        return "majority"
    if word.isdigit() and int(word) >= 1:
        return int(word)
    raise ValueError(f"{value!r} is not a write concern (use majority, or a number of members ≥ 1)")


def parse_read_preference(value: object) -> str:
    """One of MongoDB's read preference modes (any case), in its canonical spelling."""
    names = {name.lower(): name for name in READ_PREFERENCES}
    try:
        return names[str(value).strip().lower()]
    except KeyError:
        raise ValueError(
            f"{value!r} is not a read preference ({', '.join(READ_PREFERENCES)})"
        ) from None


_CHECKS = {
    "render": lambda value: _one_of(value, ("auto", "always", "never")),
    "mongo_write_concern": lambda value: str(parse_write_concern(value)),
    "mongo_read_preference": parse_read_preference,
    "licensed_sites": lambda values: tuple(parse_site(value) for value in values),
    "notice_language": lambda value: _one_of(value, NOTICE_LANGUAGES),
    "notice_attachments": lambda value: _one_of(value, NOTICE_ATTACHMENTS),
    "display_timezone": lambda value: parse_timezone(value),
}
NOTICE_LANGUAGES = ("zh", "en")
NOTICE_ATTACHMENTS = ("files", "wacz")


def parse_timezone(value: str) -> str:
    """An IANA time zone name (``Asia/Shanghai``, ``UTC``), as the tz database knows it."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = str(value).strip()
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{value!r} is not a time zone name (e.g. Asia/Shanghai, UTC)") from None
    return name


def parse_site(value: str) -> str:
    """A site as ``licensed_sites`` names it: a host (its subdomains included) or
    ``host:port``, lower-case; a URL is taken for its host and port."""
    text = str(value).strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0].rsplit("@", 1)[-1]
    host, _, port = text.partition(":")
    if not re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", host) or (
        port and not (port.isdigit() and 0 < int(port) < 65536)
    ):
        raise ValueError(f"{value!r} is not a host or host:port")
    return f"{host}:{int(port)}" if port else host


def _one_of(value: str, choices: tuple[str, ...]) -> str:
    word = str(value).strip().lower()
    if word not in choices:
        raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
    return word


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def parse_bool(value: object) -> bool:
    """The project's one reading of a yes/no setting or argument (environment variables,
    TOML, spider arguments): 1/true/yes/on or 0/false/no/off (any case; empty is false).
    Anything else raises ValueError: a typo must not silently mean "no"."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{value!r} is not a yes/no value (use true/false, 1/0, yes/no, on/off)")


def _named(name: str) -> str:
    """A setting with the environment variable that sets it, for messages."""
    return f"{name} ({env_name(name)})"


class ConfigError(ValueError):
    """A setting is missing, unknown or malformed."""
