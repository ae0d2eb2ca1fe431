"""Where a site's notices go: the ``abuse_contact`` of its site file (``sites/*.yaml``, see
``sites/example.yaml``).

A site file is found among the site files of the scheduler's ``sites`` (their ``config``
argument) and the ``sites/`` folder of the current directory; it is the site's when the host
is one of its ``allowed_domains`` (or a subdomain) or its start URLs' hosts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spiders.siteconfig import SiteConfig, SiteConfigError, load_site_config


def site_files(settings: Any) -> list[Path]:
    """The site files the tracker knows of: the scheduler's, then ``./sites/*.yaml``."""
    found: list[Path] = []
    for site in settings.sites or ():
        arguments = site.get("arguments") if isinstance(site, dict) else None
        if isinstance(arguments, dict) and arguments.get("config"):
            found.append(Path(str(arguments["config"])).expanduser())
    found += sorted(Path("sites").glob("*.y*ml"))
    return list(dict.fromkeys(found))


def site_config_for(settings: Any, host: str) -> SiteConfig | None:
    """The site file describing ``host`` (None when none does; unreadable files skipped)."""
    host = host.lower()
    for path in site_files(settings):
        try:
            config = load_site_config(path)
        except SiteConfigError:
            continue
        domains = set(config.allowed_domains)
        if any(host == d or host.endswith("." + d) for d in domains):
            return config
    return None


def abuse_contact(settings: Any, host: str) -> str | None:
    config = site_config_for(settings, host)
    return config.abuse_contact or None if config is not None else None
