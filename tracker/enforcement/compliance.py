"""Compliance with takedown notices, read from the takedown records
(:class:`tracker.stores.takedowns.TakedownStore`): per site, at any moment, how many noticed URLs
were removed, are live, came back; the removal rate and the median time to removal; which sites
are non-compliant, and the list of their live URLs for search engines' delisting requests; per
URL, its takedown history (:func:`url_history`: each notice sent, to whom, its ``Message-ID``;
each removal; each return).

Pure functions of the records (but :func:`histories`, which reads them): the report (its
``takedown`` list, its pages' ``takedown``), ``tracker takedown status`` and the console read
the same figures, and reading changes nothing.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from tracker.enforcement.capture import mask_url
from tracker.stores.takedowns import LIVE, NOTICED, REMOVED


@dataclass(frozen=True)
class Compliance:
    """When a site is non-compliant: its removal rate under ``below`` once its first notice is
    ``after_days`` old."""

    below: float = 0.5
    after_days: int = 14

    @classmethod
    def of(cls, settings: Any) -> Compliance:
        return cls(float(settings.noncompliant_below), int(settings.noncompliant_after_days))


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def state_at(doc: dict[str, Any], moment: datetime) -> str:
    """A noticed URL's state at ``moment``: its last change until then."""
    state = NOTICED
    for change in doc.get("changes") or ():
        if _utc(change["at"]) <= moment:
            state = change["state"]
    return state


def takedown_figures(
    docs: list[dict[str, Any]], moment: datetime, compliance: Compliance | None = None
) -> list[dict[str, Any]]:
    """Per site, as things stood at ``moment``: ``{"site", "noticed", "removed", "live",
    "reappeared", "unchecked", "removal_rate", "median_hours_to_removal", "first_noticed",
    "noncompliant"}``, the sites with the most noticed URLs first. ``removal_rate`` is the
    share of the noticed URLs removed then; ``median_hours_to_removal`` the median time from a
    URL's first notice to its first removal, over the URLs removed by then; ``reappeared`` the
    URLs that came back after a removal. A site is ``noncompliant`` when its first notice is
    ``compliance.after_days`` old and its removal rate is under ``compliance.below``."""
    compliance = compliance or Compliance()
    moment = _utc(moment)
    sites: dict[str, dict[str, Any]] = {}
    hours: dict[str, list[float]] = defaultdict(list)
    for doc in docs:
        first = _utc(doc["first_noticed"])
        if first > moment:
            continue
        site = doc.get("site") or ""
        entry = sites.setdefault(
            site,
            {"site": site, "noticed": 0, "removed": 0, "live": 0, "reappeared": 0,
             "unchecked": 0, "first_noticed": first},
        )  # fmt: skip
        entry["noticed"] += 1
        entry["first_noticed"] = min(entry["first_noticed"], first)
        state = state_at(doc, moment)
        if state == REMOVED:
            entry["removed"] += 1
        elif state == LIVE:
            entry["live"] += 1
        else:
            entry["unchecked"] += 1
        changes = [c for c in doc.get("changes") or () if _utc(c["at"]) <= moment]
        removals = [_utc(c["at"]) for c in changes if c["state"] == REMOVED]
        if removals:
            hours[site].append((removals[0] - first).total_seconds() / 3600)
        if any(a["state"] == REMOVED and b["state"] == LIVE for a, b in pairwise(changes)):
            entry["reappeared"] += 1
    figures = []
    for site, entry in sites.items():
        rate = entry["removed"] / entry["noticed"]
        old_enough = moment - entry["first_noticed"] >= timedelta(days=compliance.after_days)
        figures.append(
            {
                **entry,
                "removal_rate": round(rate, 4),
                "median_hours_to_removal": (
                    round(statistics.median(hours[site]), 1) if hours[site] else None
                ),
                "first_noticed": entry["first_noticed"].isoformat(timespec="seconds"),
                "noncompliant": bool(old_enough and rate < compliance.below),
            }
        )
    figures.sort(key=lambda f: (-f["noticed"], f["site"]))
    return figures


def url_history(
    doc: dict[str, Any], notices: dict[str, dict[str, Any]], moment: datetime | None = None
) -> dict[str, Any]:
    """A noticed URL's takedown history up to ``moment`` (default: all of it): ``{"state",
    "noticed": [{"at", "to", "message_id", "notice"}], "removed": [at], "reappeared": [at]}``,
    oldest first; ``notices`` are the notice records by id (those not sent are left out).
    Times are tz-aware UTC datetimes."""
    moment = _utc(moment) if moment is not None else None

    def until(at: Any) -> bool:
        return isinstance(at, datetime) and (moment is None or _utc(at) <= moment)

    noticed = []
    for notice_id in doc.get("notices") or ():
        record = notices.get(notice_id) or {}
        if record.get("sent_at") and until(record["sent_at"]):
            noticed.append(
                {
                    "at": _utc(record["sent_at"]),
                    "to": record.get("to") or "",
                    "message_id": record.get("message_id") or "",
                    "notice": notice_id,
                }
            )
    noticed.sort(key=lambda n: n["at"])  # fmt: skip
    changes = [c for c in doc.get("changes") or () if until(c.get("at"))]
    return {
        "state": state_at(doc, moment) if moment is not None else doc.get("state") or NOTICED,
        "noticed": noticed,
        "removed": [_utc(c["at"]) for c in changes if c["state"] == REMOVED],
        "reappeared": [
            _utc(b["at"])
            for a, b in pairwise(changes)
            if a["state"] == REMOVED and b["state"] == LIVE
        ],
    }


def histories(
    db: Any, urls: Iterable[str], moment: datetime | None = None
) -> dict[str, dict[str, Any]]:
    """:func:`url_history` of each of ``urls`` ever noticed (up to ``moment``)."""
    from tracker.stores.notices import NoticeStore
    from tracker.stores.takedowns import TakedownStore

    docs = TakedownStore(db).of_urls(urls)
    notices = NoticeStore(db).by_ids(n for doc in docs.values() for n in doc.get("notices") or ())
    found = {url: url_history(doc, notices, moment) for url, doc in docs.items()}
    return {url: history for url, history in found.items() if history["noticed"]}


def timeline(history: dict[str, Any]) -> list[dict[str, Any]]:
    """A URL's history as one list of events, oldest first: ``{"at", "event"}`` (``noticed``,
    with ``to`` and ``message_id``; ``removed``; ``reappeared``)."""
    events = [{**n, "event": "noticed"} for n in history["noticed"]]
    events += [{"at": at, "event": "removed"} for at in history["removed"]]
    events += [{"at": at, "event": "reappeared"} for at in history["reappeared"]]
    order = {"noticed": 0, "removed": 1, "reappeared": 2}
    return sorted(events, key=lambda e: (e["at"], order[e["event"]]))


def history_json(history: dict[str, Any]) -> dict[str, Any]:
    """:func:`url_history` with its times as ISO 8601 UTC strings."""
    return {
        "state": history["state"],
        "noticed": [{**n, "at": n["at"].isoformat(timespec="seconds")} for n in history["noticed"]],
        "removed": [at.isoformat(timespec="seconds") for at in history["removed"]],
        "reappeared": [at.isoformat(timespec="seconds") for at in history["reappeared"]],
    }


def delisting_rows(docs: list[dict[str, Any]], figures: list[dict[str, Any]]) -> list[list[str]]:
    """The live URLs of the non-compliant sites, for search engines' delisting requests:
    ``url, site, first_noticed, last_checked, state, doc_ids``."""
    flagged = {f["site"] for f in figures if f["noncompliant"]}
    rows = []
    for doc in sorted(docs, key=lambda d: (d.get("site") or "", d["_id"])):
        if doc.get("site") not in flagged or doc.get("state") == REMOVED:
            continue
        rows.append(
            [
                mask_url(doc["_id"]),
                doc.get("site") or "",
                _utc(doc["first_noticed"]).isoformat(timespec="seconds"),
                _utc(doc["checked_at"]).isoformat(timespec="seconds")
                if doc.get("checked_at")
                else "",
                doc.get("state") or NOTICED,
                " ".join(doc.get("doc_ids") or ()),
            ]
        )
    return rows


def delisting_csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["url", "site", "first_noticed", "last_checked", "state", "doc_ids"])
    writer.writerows(rows)
    return out.getvalue()
