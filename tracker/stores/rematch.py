"""The record of ``tracker rematch`` runs in MongoDB (``rematch_runs``).

A finished run leaves a *mark*: every page stored before ``covered_before`` has been matched
against the library up to ``version`` (either checked again by that run, or sharing no anchor
with any master changed since it was matched, so it cannot copy one). A page is therefore up to
date when its own ``matched_version`` or, if it was stored before the mark, the mark's version
has reached the library's: the crawl then need not match it again, and the next rematch starts
from the mark instead of from every page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pymongo import DESCENDING
from pymongo.database import Database


@dataclass(frozen=True)
class RematchMark:
    version: int
    covered_before: datetime

    def covers(self, page: dict[str, Any], version: int) -> bool:
        """Whether ``page`` (its ``matched_version`` and ``stored_at``) is up to date with
        library ``version``."""
        if int(page.get("matched_version") or 0) >= version:
            return True
        stored_at = page.get("stored_at")
        if stored_at is None or self.version < version:
            return False
        stored_at = stored_at.replace(tzinfo=UTC) if stored_at.tzinfo is None else stored_at
        return stored_at < self.covered_before


class RematchStore:
    """The runs (``rematch_runs``, newest first by ``finished_at``) and the latest finished
    run's mark (``rematch_mark``, one document: read on every crawled page, so no sort)."""

    def __init__(self, db: Database) -> None:
        self.runs = db["rematch_runs"]
        self.mark = db["rematch_mark"]

    def record(self, run: dict[str, Any]) -> None:
        self.runs.insert_one(run)
        if run.get("finished_at") is not None:
            fields = {"version": run["version"], "covered_before": run["covered_before"]}
            self.mark.replace_one({"_id": "mark"}, fields, upsert=True)

    def last(self) -> RematchMark | None:
        """The mark of the latest finished run."""
        doc = self.mark.find_one({"_id": "mark"})
        if doc is None:
            return None
        covered = doc["covered_before"]
        covered = covered.replace(tzinfo=UTC) if covered.tzinfo is None else covered
        return RematchMark(int(doc["version"]), covered)

    def history(self, limit: int = 20) -> list[dict[str, Any]]:
        return list(self.runs.find({}, sort=[("finished_at", DESCENDING)], limit=limit))
