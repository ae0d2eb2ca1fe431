"""Which sites need a browser to be read, in MongoDB (``render_sites``).

With ``render: auto`` (the default) a crawl learns that a site's text is loaded by script:
its pages come thin (a placeholder, an empty container) and full once rendered by a headless
browser (:mod:`tracker.crawling.rendering`). The crawl then renders the site's pages at once,
and remembers it here for the next crawl: one document per site (``_id`` the host) with
``render`` (whether to render every page), when it was learned, and the pages that showed it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from pymongo.database import Database


class RenderStore:
    def __init__(self, db: Database) -> None:
        self.sites = db["render_sites"]

    def learned(self, sites: Iterable[str], max_age_days: float) -> set[str]:
        """The hosts among ``sites`` learned to need rendering in the last ``max_age_days``
        (a site may stop needing it: it is learned again after that)."""
        sites = sorted(set(sites))
        if not sites:
            return set()
        since = datetime.now(UTC) - timedelta(days=max_age_days)
        found = set()
        for doc in self.sites.find({"_id": {"$in": sites}}):
            learned_at = doc.get("learned_at")
            if learned_at is not None and learned_at.tzinfo is None:
                learned_at = learned_at.replace(tzinfo=UTC)
            if doc.get("render") and learned_at is not None and learned_at >= since:
                found.add(doc["_id"])
        return found

    def learn(self, site: str, rendered: int, helped: int, now: datetime | None = None) -> None:
        """``site`` needs rendering: of ``rendered`` thin pages, ``helped`` had their text only
        once rendered."""
        self.sites.replace_one(
            {"_id": site},
            {
                "render": True,
                "learned_at": now or datetime.now(UTC),
                "rendered": rendered,
                "helped": helped,
            },
            upsert=True,
        )
