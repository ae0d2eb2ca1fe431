"""Per-site crawl files (``sites/NAME.yaml``) for the ``site`` spider: reading and validation.

See ``sites/example.yaml`` for a documented example. Every error names the file and the key,
e.g. ``sites/x.yaml: limits.max_pages: expected a positive integer, got 'many'``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from parsel import Selector

from tracker.crawling.profiles import check_choice, check_impersonate
from tracker.crawling.rendering import MODES as RENDER_MODES

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_KEYS: dict[str, Any] = {
    "name": None,
    "description": None,
    "start_urls": None,
    "allowed_domains": None,
    "follow": {"allow": None, "deny": None},
    "pages": {"allow": None, "deny": None},
    "body": {"css": None, "xpath": None, "remove": None},
    "limits": {
        "max_pages": None,
        "max_depth": None,
        "concurrency": None,
        "delay": None,
        "timeout": None,
        "max_parts": None,
    },
    "robots": {"obey": None, "reason": None},
    "schedule": None,
    "render": None,
    "user_agent": None,
    "headers": None,
    "impersonate": None,
    "abuse_contact": None,
    "notice_language": None,
    "licensed": None,
}


class SiteConfigError(ValueError):
    """A site file is missing, not YAML, or does not describe a crawl."""


@dataclass(frozen=True)
class SiteConfig:
    name: str
    start_urls: list[str]
    allowed_domains: list[str]
    follow_allow: list[str] = field(default_factory=list)
    follow_deny: list[str] = field(default_factory=list)
    pages_allow: list[str] = field(default_factory=list)
    pages_deny: list[str] = field(default_factory=list)
    body_css: str | None = None
    body_xpath: str | None = None
    body_remove: list[str] = field(default_factory=list)
    max_pages: int | None = None
    max_depth: int | None = None
    concurrency: int | None = None
    delay: float | None = None
    timeout: float | None = None
    max_parts: int | None = None  # pages of one chapter joined (1: none)
    obey_robots: bool = True
    robots_reason: str = ""
    schedule: str | None = None
    description: str = ""
    source: str = ""
    # What a reader sees (tracker.crawling.rendering, tracker.crawling.profiles): None = the
    # crawl's settings (render auto, a browser profile picked by the host, no impersonation).
    render: str | None = None
    user_agent: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    impersonate: str | None = None
    abuse_contact: str = ""  # where `tracker notices send` mails the site's notices
    notice_language: str = ""  # zh or en: the language of its notices ("" = notice_language)
    # The site may carry the works (the rights holder's own, or licensed): discovery never
    # checks its pages (tracker.discovery.sites).
    licensed: bool = False

    @property
    def extraction_rules(self) -> dict[str, Any] | None:
        """The rules sent with every page (:class:`tracker.reading.extract.ExtractionRules`): the
        body selectors, and ``articles`` when ``pages.allow`` names the content pages (which are
        then never taken for lists)."""
        if not (self.body_css or self.body_xpath or self.body_remove or self.pages_allow):
            return None
        return {
            "css": self.body_css,
            "xpath": self.body_xpath,
            "remove": self.body_remove,
            "articles": bool(self.pages_allow),
        }

    def is_page(self, url: str) -> bool:
        """Whether a fetched URL is a content page to store (``pages`` patterns)."""
        if any(re.search(p, url) for p in self.pages_deny):
            return False
        return not self.pages_allow or any(re.search(p, url) for p in self.pages_allow)


def load_site_config(path: str | Path) -> SiteConfig:
    import yaml  # here: every crawl process loads this module, few read a site file (~20 ms)

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SiteConfigError(f"site file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SiteConfigError(f"cannot read site file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise SiteConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_site_config(data, str(path))


def parse_site_config(data: Any, source: str = "<site config>") -> SiteConfig:
    def fail(key: str, message: str) -> SiteConfigError:
        return SiteConfigError(f"{source}: {key}: {message}")

    if not isinstance(data, dict):
        raise SiteConfigError(f"{source}: expected a mapping of settings at the top level")
    _check_keys(data, _KEYS, "", fail)

    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise fail("name", f"required; letters, digits, '.', '_' or '-', got {name!r}")
    start_urls = _strings(data, "start_urls", fail, required=True)
    for url in start_urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise fail("start_urls", f"not an http(s) URL: {url!r}")
    domains = _strings(data, "allowed_domains", fail) or list(
        dict.fromkeys(urlsplit(u).hostname or "" for u in start_urls)
    )
    for url in start_urls:
        host = urlsplit(url).hostname or ""
        if not any(host == d or host.endswith("." + d) for d in domains):
            raise fail("start_urls", f"{url!r} is outside allowed_domains {domains}")

    follow, pages, body = (data.get(k) or {} for k in ("follow", "pages", "body"))
    patterns = {}
    for section, values in (("follow", follow), ("pages", pages)):
        for kind in ("allow", "deny"):
            key = f"{section}.{kind}"
            patterns[key] = _strings(values, kind, fail, label=key)
            for pattern in patterns[key]:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise fail(key, f"bad regular expression {pattern!r}: {exc}") from None

    css = _optional_str(body, "css", "body.css", fail)
    xpath = _optional_str(body, "xpath", "body.xpath", fail)
    remove = _strings(body, "remove", fail, label="body.remove")
    probe = Selector(text="<html><body></body></html>")
    for key, expr, kind in [("body.css", css, "css"), ("body.xpath", xpath, "xpath")] + [
        ("body.remove", r, "css") for r in remove
    ]:
        if expr:
            try:
                probe.css(expr) if kind == "css" else probe.xpath(expr)
            except Exception as exc:  # cssselect and lxml raise their own error types
                raise fail(key, f"bad {kind.upper()} selector {expr!r}: {exc}") from None

    limits = data.get("limits") or {}
    robots = data.get("robots") or {}
    obey = robots.get("obey", True)
    if not isinstance(obey, bool):
        raise fail("robots.obey", f"expected true or false, got {obey!r}")
    reason = _optional_str(robots, "reason", "robots.reason", fail) or ""
    if not obey and not reason.strip():
        raise fail("robots.reason", "required when robots.obey is false (it is logged and kept)")

    schedule = _optional_str(data, "schedule", "schedule", fail)
    if schedule:
        from apscheduler.triggers.cron import CronTrigger

        try:
            CronTrigger.from_crontab(schedule)
        except ValueError as exc:
            raise fail("schedule", f"not a 5-field cron expression {schedule!r}: {exc}") from None

    render = _optional_str(data, "render", "render", fail)
    if render is not None and render not in RENDER_MODES:
        raise fail("render", f"expected one of {', '.join(RENDER_MODES)}, got {render!r}")
    reader: dict[str, str | None] = {}
    for key, check in (("user_agent", check_choice), ("impersonate", check_impersonate)):
        value = data.get(key)
        if value is None:
            reader[key] = None
            continue
        try:
            reader[key] = check(value) if isinstance(value, str) else check("")
        except ValueError as exc:
            raise fail(key, str(exc)) from None
    headers = data.get("headers") or {}
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str | int) and "\n" not in str(v)
        for k, v in headers.items()
    ):
        raise fail("headers", f"expected a mapping of header names to values, got {headers!r}")
    contact = _optional_str(data, "abuse_contact", "abuse_contact", fail) or ""
    if contact and not re.fullmatch(r"[^@\s<>,]+@[^@\s<>,]+\.[^@\s<>,]+", contact):
        raise fail("abuse_contact", f"not an e-mail address: {contact!r}")

    language = (_optional_str(data, "notice_language", "notice_language", fail) or "").lower()
    if language not in ("", "zh", "en"):
        raise fail("notice_language", f"expected zh or en, got {language!r}")

    licensed = data.get("licensed", False)
    if not isinstance(licensed, bool):
        raise fail("licensed", f"expected true or false, got {licensed!r}")

    return SiteConfig(
        name=name,
        start_urls=start_urls,
        allowed_domains=[d.lower() for d in domains],
        follow_allow=patterns["follow.allow"],
        follow_deny=patterns["follow.deny"],
        pages_allow=patterns["pages.allow"],
        pages_deny=patterns["pages.deny"],
        body_css=css,
        body_xpath=xpath,
        body_remove=remove,
        max_pages=_number(limits, "max_pages", int, fail),
        max_depth=_number(limits, "max_depth", int, fail, minimum=0),
        concurrency=_number(limits, "concurrency", int, fail),
        delay=_number(limits, "delay", float, fail, minimum=0),
        timeout=_number(limits, "timeout", float, fail),
        max_parts=_number(limits, "max_parts", int, fail),
        obey_robots=obey,
        robots_reason=reason,
        schedule=schedule,
        description=str(data.get("description") or ""),
        source=source,
        render=render,
        user_agent=reader["user_agent"],
        headers={str(k): str(v) for k, v in headers.items()},
        impersonate=reader["impersonate"],
        abuse_contact=contact,
        notice_language=language,
        licensed=licensed,
    )


def _check_keys(data: dict, schema: dict, prefix: str, fail: Any) -> None:
    for key, value in data.items():
        label = f"{prefix}{key}"
        if key not in schema:
            raise fail(label, f"unknown setting (known: {', '.join(schema)})")
        if schema[key] is not None:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise fail(label, f"expected a mapping, got {type(value).__name__}")
            _check_keys(value, schema[key], f"{label}.", fail)


def _strings(
    data: dict, key: str, fail: Any, required: bool = False, label: str | None = None
) -> list[str]:
    label = label or key
    value = data.get(key)
    if value is None:
        if required:
            raise fail(label, "required")
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise fail(label, f"expected a string or a list of strings, got {value!r}")
    if required and not value:
        raise fail(label, "required")
    return [v.strip() for v in value]


def _optional_str(data: dict, key: str, label: str, fail: Any) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail(label, f"expected a string, got {value!r}")
    return value.strip() or None


def _number(data: dict, key: str, kind: type, fail: Any, minimum: float = 1) -> Any:
    value = data.get(key)
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        ok = ok and float(value).is_integer()
    if not ok or value < minimum:
        what = "an integer" if kind is int else "a number"
        raise fail(f"limits.{key}", f"expected {what} >= {minimum:g}, got {value!r}")
    return kind(value)
