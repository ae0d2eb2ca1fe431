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
mistake is a :class:`ConfigError` naming the setting and its environment variable. The README's
Configuration table documents every setting, one row each (a test holds the two together).

This module is the bottom layer of the tracker: it imports nothing of the rest.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(base) / "tracker"


def _within(default: Any, low: float, high: float | None = None) -> Any:
    """A numeric setting with its allowed range (``high`` None: no upper bound)."""
    return field(default=default, metadata={"range": (low, high)})


#: The index's bucket bits a table (see tracker.index.layout, which reads its range here).
BUCKET_BITS_RANGE = (16, 24)


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=_default_data_dir)
    mongo_url: str | None = None  # None: start the embedded SecantusDB under data_dir
    redis_url: str | None = None  # None: start the embedded valkey under data_dir
    mongo_db: str = "tracker"
    redis_prefix: str = "tracker:"
    # REDIS_URL names a node of a Redis Cluster: the index spreads over its primaries (see
    # tracker.servers.redis_cluster). The embedded server is a single node: a cluster needs
    # REDIS_URL.
    redis_cluster: bool = False
    # The Redis of a distributed crawl's shared queue (scrapy-redis, which speaks to one server,
    # not a cluster); "" = REDIS_URL's server when it is not a cluster.
    crawl_redis_url: str = ""
    # Write concern of every write (``majority``, or a number of members): "" = the URL's
    # ``w=``, else majority. Read preference of what only reads settled data (reports, lists):
    # "" = the URL's ``readPreference=``, else primary. See tracker.servers.runtime.
    mongo_write_concern: str = ""
    mongo_read_preference: str = ""

    # The layout of an index built from scratch (the first ingest, ``tracker index rebuild``):
    # 2^bits buckets a table (16-24; 16 + round(log2(chapters / 300,000)) keeps the records a
    # lookup reads per bucket as the library grows) and 32-bit master numbers past 16.7M. An
    # index keeps the layout it was built with (see tracker.index.layout).
    index_bucket_bits: int = _within(16, *BUCKET_BITS_RANGE)
    index_wide_ids: bool = False
    # Days the stored pages' anchors are kept for tracker rematch (see tracker.index.page_index).
    page_index_days: int = _within(90, 1, 3650)

    # Detection thresholds (see tracker.matching.detector for their meaning).
    min_coverage: float = _within(0.2, 0.0, 1.0)
    min_passage_chars: int = _within(100, 1)
    min_span_chars: int = _within(12, 1)
    # Rewritten copies (洗稿): pages' sentences aligned with masters' (tracker.matching.rewrite).
    rewrite_detection: bool = True

    # Scheduler (``tracker schedule``, see tracker.scheduler): master sources, job times, sites.
    drop_dir: str = ""  # drop folder of new .txt/.jsonl master files; "" = <data_dir>/inbox
    master_source_url: str = ""  # MongoDB holding new master documents; "" = mongo_url
    master_source_db: str = ""  # "" = mongo_db
    master_source_collection: str = ""  # "" = no MongoDB master source
    master_source_cursor: str = "_id"  # the source field new documents are ordered by
    pull_cron: str = "*/10 * * * *"
    pull_batch_size: int = _within(200, 1)  # documents ingested between two cursor commits
    report_time: str = "06:00"  # the daily report (of the previous day), in schedule_timezone
    schedule_timezone: str = "UTC"
    misfire_grace_s: int = _within(3600, 1)  # a run this late after its time is skipped
    scheduler_lock_s: int = _within(30, 1)  # expiry of the Redis lock of the acting scheduler
    max_running_jobs: int = _within(3, 1)  # jobs the scheduler runs at once (a site's crawl: one)
    sites: tuple = ()  # [[sites]] tables: name, spider, cron, arguments, settings, timeout_s

    # Input of ``tracker check`` and ``ingest``: a larger file, page or text is refused.
    max_input_mb: int = _within(32, 1)
    # A warm checker answers later checks for this long after the last (0: none; see
    # tracker.cli._warm).
    check_warm_s: int = _within(600, 0)

    # The web console (``tracker serve``, see tracker.console).
    console_allow_private_urls: bool = False  # let checks fetch loopback/private addresses
    console_max_body_kb: int = _within(1024, 1)  # a larger request body is refused (413)
    console_cache_s: int = _within(60, 0)  # a day's figures are read again after this long
    console_session_hours: int = _within(12, 1)  # a login lasts this long
    # Sign-in throttling (tracker.console.throttle): an account is locked after this many
    # failed sign-ins, a client address after that many (0: no limit), first for
    # console_login_lock_s seconds, then twice as long at each further failure, up to an hour.
    console_login_failures: int = _within(5, 0)
    console_login_address_failures: int = _within(50, 0)
    console_login_lock_s: int = _within(60, 1)

    # The crawl (``scrapy crawl``): the Scrapy settings TRACKER_<NAME>, see CRAWL_SETTINGS and
    # tracker.crawling.settings. The pipelines' MongoDB and Redis work runs in worker threads,
    # in batches of up to batch_size pages, or what arrived within batch_delay seconds while
    # the worker was busy (pipelines/__init__.py).
    batch_size: int = _within(16, 1)
    batch_delay: float = _within(0.02, 0.0)
    # Pages are extracted in this many worker processes (0: in a thread of the crawl
    # process), up to extract_batch pages a call (tracker.crawling.process_pool).
    extract_processes: int = _within(1, 0)
    extract_batch: int = _within(16, 1)
    boilerplate_min_pages: int = _within(5, 2)  # a short line on this many pages: boilerplate
    min_text_chars: int = _within(80, 0)  # shorter pages are navigation, not text
    # Reading pages as a reader sees them: at most max_parts pages of one chapter or thread are
    # joined (1: none; spiders.base.TrackerSpider.read_parts), and resources_cached stylesheets
    # and web fonts are kept for the crawl (tracker.crawling.resources).
    max_parts: int = _within(50, 1)
    resources_cached: int = _within(512, 1)
    distributed: bool = False  # one request queue in Redis (tracker.crawling.distributed)
    httpcache: bool = False  # Scrapy's HTTPCACHE_ENABLED, for development
    # Proxies (tracker.crawling.middlewares.proxy): URLs, and/or a file of them.
    proxies: tuple[str, ...] = ()
    proxy_file: str = ""
    proxy_max_failures: int = _within(3, 1)
    proxy_ban_seconds: float = _within(300.0, 0.0)
    # What the crawl sends (tracker.crawling.profiles): "auto", a current desktop browser's
    # profile per site; a profile's name; "tracker" (the tracker's own User-Agent); or a literal
    # User-Agent. Per site: user_agent: in its file.
    browser_profile: str = "auto"
    # Script-rendered pages (tracker.crawling.rendering): auto (when a page's body is missing
    # and it has scripts; learned per site for render_learn_days), always or never; the
    # browser's executable ("" = chromium, chromium-browser or google-chrome on the PATH);
    # pages open at once; pages per browser context; seconds a page may keep loading.
    render: str = "auto"
    browser_path: str = ""
    render_pages: int = _within(2, 1)
    render_context_pages: int = _within(100, 1)
    render_wait: float = _within(5.0, 0.5)
    render_learn_days: int = _within(30, 1)
    # 429/503 (tracker.crawling.middlewares.bans): that site waits its Retry-After, else
    # ban_backoff_base · 2^(n-1) up to ban_backoff_max seconds, for ban_retries tries; a page
    # asked to wait longer than ban_max_wait is left unread for this crawl.
    ban_retries: int = _within(6, 0)
    ban_backoff_base: float = _within(1.0, 0.0)
    ban_backoff_max: float = _within(60.0, 0.0)
    ban_max_wait: float = _within(600.0, 0.0)
    # Crawler traps (tracker.crawling.middlewares.traps).
    trap_max_date_pages: int = _within(30, 1)
    trap_max_segment_repeats: int = _within(2, 1)
    trap_max_url_length: int = _within(1000, 1)
    trap_session_params: tuple[str, ...] = ()

    # Enforcement (see tracker.enforcement): evidence captured by the crawl, time-stamped bundles,
    # notices sent by mail, takedown tracking, alerts of new copies.
    evidence_dir: str = ""  # daily WARC files of matched pages; "" = <data_dir>/evidence
    evidence_screenshots: bool = False  # a PNG of each matched page, rendered offline
    evidence_screenshot_max: int = _within(200, 0)  # screenshots a crawl process takes at most
    tsa_url: str = ""  # an RFC 3161 time-stamping authority; "" = bundles without a token
    tsa_timeout_s: float = _within(30.0, 0.1)
    tsa_ca_file: str = ""  # the TSA's CA (PEM): tokens verified up to it when stamped
    smtp_url: str = ""  # smtp://user:pass@host:port (STARTTLS when offered) or smtps://…
    smtp_from: str = ""  # the notices' From address
    notice_sender: str = ""  # who the notice is from (name, address); "" = smtp_from
    notice_repeat_days: int = _within(14, 0)  # a URL is not noticed again within this many days
    takedown_cron: str = "0 5 * * *"  # the daily takedown check, in schedule_timezone
    takedown_delay_s: float = _within(1.0, 0.0)  # pause between two re-fetches of one site
    # A site removing less than this share of its noticed URLs this long after its first
    # notice is non-compliant.
    noncompliant_below: float = _within(0.5, 0.0, 1.0)
    noncompliant_after_days: int = _within(14, 0)
    alert_webhook: str = ""  # new copies are POSTed here as JSON
    alert_interval_s: float = _within(30.0, 0.1)  # a crawl sends new copies this often, and at end

    # Discovery (tracker.discovery): the pirate sites nobody named, found through a search engine
    # (SearXNG's JSON API at search_url), within a daily query budget, each query not run again
    # (each result URL not fetched again) within discover_requery_days; the sites found are
    # crawled from the page found, discover_max_pages a site, and the watched ones again after
    # each daily run (discover_cron). licensed_sites (hosts or host:port) are never checked.
    search_url: str = ""
    search_timeout_s: float = _within(20.0, 0.5)
    search_retries: int = _within(3, 0)  # a query answered 429 or 5xx is asked again, backing off
    licensed_sites: tuple[str, ...] = ()
    discover_cron: str = "0 1 * * *"
    discover_queries_per_day: int = _within(100, 1)
    discover_queries_per_work: int = _within(10, 1)
    discover_requery_days: int = _within(7, 0)
    discover_max_pages: int = _within(500, 1)
    discover_priority: tuple[str, ...] = ()  # works searched first, in this order

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
    "boilerplate_min_pages",
    "min_text_chars",
    "max_parts",
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


def _convert(setting: Field, raw: Any) -> Any:
    """``raw`` (a TOML value, or an environment variable's text) as the setting's type, in its
    range."""
    kind, name = str(setting.type), setting.name
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
    low, high = setting.metadata.get("range", (None, None))
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
}


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
