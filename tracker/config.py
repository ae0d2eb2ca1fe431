"""Settings from the environment and an optional TOML file.

Precedence, highest first: environment variables (``MONGO_URL``, ``REDIS_URL``,
``TRACKER_DATA_DIR``, ``TRACKER_<FIELD>`` for any other field), the TOML file named by
``TRACKER_CONFIG`` (or ``./tracker.toml`` when present), then the defaults below.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(base) / "tracker"


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
    index_bucket_bits: int = 16
    index_wide_ids: bool = False
    # Days the stored pages' anchors are kept for tracker rematch (see tracker.index.page_index).
    page_index_days: int = 90

    # Detection thresholds (see tracker.matching.detector for their meaning).
    simhash_max_distance: int = 3
    min_coverage: float = 0.2
    min_passage_chars: int = 100
    min_span_chars: int = 12

    # Scheduler (``tracker schedule``, see tracker.scheduler): master sources, job times, sites.
    drop_dir: str = ""  # drop folder of new .txt/.jsonl master files; "" = <data_dir>/inbox
    master_source_url: str = ""  # MongoDB holding new master documents; "" = mongo_url
    master_source_db: str = ""  # "" = mongo_db
    master_source_collection: str = ""  # "" = no MongoDB master source
    master_source_cursor: str = "_id"  # the source field new documents are ordered by
    pull_cron: str = "*/10 * * * *"
    pull_batch_size: int = 200  # documents ingested between two cursor commits
    report_time: str = "06:00"  # the daily report (of the previous day), in schedule_timezone
    schedule_timezone: str = "UTC"
    misfire_grace_s: int = 3600  # a run later than this after its time is skipped and logged
    scheduler_lock_s: int = 30  # expiry of the Redis lock held by the acting scheduler
    max_running_jobs: int = 3  # jobs the scheduler runs at once (each site's crawl is one)
    sites: tuple = ()  # [[sites]] tables: name, spider, cron, arguments, settings, timeout_s

    # Input of ``tracker check`` and ``ingest``: a larger file, page or text is refused.
    max_input_mb: int = 32
    # A warm checker answers later checks for this long after the last (0: none; see
    # tracker.cli._warm).
    check_warm_s: int = 600

    # The web console (``tracker serve``, see tracker.console).
    console_allow_private_urls: bool = False  # let checks fetch loopback/private addresses
    console_max_body_kb: int = 1024  # a larger request body is refused (413)
    console_cache_s: int = 60  # a day's figures are read again after this long
    console_session_hours: int = 12  # a login lasts this long

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
    env = os.environ
    values: dict[str, Any] = {}
    for name in ("MONGO_URL", "REDIS_URL"):
        if env.get(name):
            values[name.lower()] = env[name]
    for f in fields(Settings):
        key = f"TRACKER_{f.name.upper()}"
        if env.get(key):
            values[f.name] = env[key]
    return values


def _coerce(settings: Settings, values: dict[str, Any]) -> Settings:
    known = {f.name: f for f in fields(Settings)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    converted: dict[str, Any] = {}
    for name, raw in values.items():
        current = getattr(settings, name)
        try:
            if isinstance(current, Path) or name == "data_dir":
                converted[name] = Path(raw).expanduser()
            elif isinstance(current, bool):
                converted[name] = parse_bool(raw)
            elif isinstance(current, int):
                converted[name] = int(raw)
            elif isinstance(current, float):
                converted[name] = float(raw)
            elif isinstance(current, tuple):  # a TOML array of tables, or JSON from the env
                converted[name] = tuple(json.loads(raw) if isinstance(raw, str) else raw)
            else:
                converted[name] = str(raw) if raw is not None else None
        except (TypeError, ValueError):
            raise ConfigError(
                f"setting {_named(name)}={raw!r} is not a valid {type(current).__name__}"
            ) from None
    for name, check in _CHECKS.items():
        if converted.get(name) not in (None, ""):
            try:
                converted[name] = check(converted[name])
            except ValueError as exc:
                raise ConfigError(f"setting {_named(name)}: {exc}") from None
    for name, schemes in _URL_SCHEMES.items():
        url = converted.get(name)
        if url and not url.startswith(tuple(f"{scheme}://" for scheme in schemes)):
            from tracker.servers.services import mask_password

            raise ConfigError(
                f"setting {_named(name)}={mask_password(url)!r} is not a "
                f"{' or '.join(f'{scheme}://' for scheme in schemes)} URL; "
                f"fix it, or unset it to use the embedded server"
            )
    result = replace(settings, **converted)
    check_cluster(result)
    return result


def check_cluster(settings: Settings) -> None:
    """With ``redis_cluster``: a node to start from, and a key prefix without a hash tag."""
    if not settings.redis_cluster:
        return
    if not settings.redis_url:
        raise ConfigError(
            "setting redis_cluster (TRACKER_REDIS_CLUSTER) needs REDIS_URL: the URL of a "
            "node of the cluster (the embedded server is a single node)"
        )
    from tracker.servers.redis_cluster import check_prefix

    try:
        check_prefix(settings.redis_prefix)
    except ValueError as exc:
        raise ConfigError(f"setting {_named('redis_prefix')}: {exc}") from None


#: The URL schemes pymongo and redis-py accept.
_URL_SCHEMES = {
    "mongo_url": ("mongodb", "mongodb+srv"),
    "redis_url": ("redis", "rediss", "unix"),
    "crawl_redis_url": ("redis", "rediss", "unix"),
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
    "mongo_write_concern": lambda value: str(parse_write_concern(value)),
    "mongo_read_preference": parse_read_preference,
    "index_bucket_bits": lambda value: _index_layout(value).bucket_bits,
    "page_index_days": lambda value: _at_least_one(value, "days"),
}


def _at_least_one(value: int, unit: str) -> int:
    if int(value) < 1:
        raise ValueError(f"{value!r} is not a number of {unit} ≥ 1")
    return int(value)


def _index_layout(bucket_bits: int) -> Any:
    from tracker.index.layout import IndexLayout  # the index's own check of the range

    return IndexLayout(bucket_bits)


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
    env = name.upper() if name in ("mongo_url", "redis_url") else f"TRACKER_{name.upper()}"
    return f"{name} ({env})"


class ConfigError(ValueError):
    """A setting is missing, unknown or malformed."""
