"""Alerts of new copies: a JSON POST to ``alert_webhook``, from an outbox, never holding up a
crawl.

The crawl's store stage queues an alert in the outbox (:class:`tracker.stores.alerts.AlertOutbox`)
for every match it stores for the first time, ahead of the match itself. An
:class:`AlertSender` thread in the crawl process (:class:`tracker.crawling.alerts.AlertExtension`)
sends what is due every ``alert_interval_s`` seconds and once more when the crawl closes; the
scheduler's daily ``takedown`` job sends whatever is left (a webhook that was down all crawl).

The body, one POST per batch::

    {"event": "new_copies", "sent_at": "2026-11-22T06:00:00+00:00",
     "copies": [{"id", "work", "url", "site", "doc_ids", "score", "first_seen"}]}

one copy per page and work, its ``doc_ids`` the chapters newly found there. Delivery is *at
least once*: a sender that dies between the POST and recording it sends the batch again, with
the same ``id`` per copy for the receiver to drop repeats. A POST answered by anything but
2xx, or not answered within ``TIMEOUT_S``, is retried after 5, 10, 20 … seconds (at most an
hour apart); the alerts stay in the outbox meanwhile, through crashes and restarts.

Time-stamps that stay pending are alerted too (:func:`alert_overdue_stamps`, by the daily
``takedown`` job and ``tracker evidence stamp --pending``): once a stamp has failed for more
than ``tsa_pending_alert_hours``, with the TSA's last answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tracker.enforcement.capture import mask_url
from tracker.model import site_of
from tracker.stores.alerts import AlertOutbox
from tracker.stores.evidence import CaptureStore

log = logging.getLogger(__name__)

TIMEOUT_S = 10.0
FIRST_RETRY_S = 5.0
MAX_RETRY_S = 3600.0
USER_AGENT = "tracker-alerts/1 (+copyright monitoring)"


def alert_documents(pairs: list[tuple[str, dict[str, Any]]], now: datetime) -> list[dict]:
    """The outbox entries of new matches ``(url, match)``."""
    return [
        {
            "_id": f"{url}\x00{match['doc_id']}",
            "url": url,
            "site": site_of(url),
            "doc_id": str(match["doc_id"]),
            "work": str(match.get("work") or ""),
            "title": str(match.get("title") or ""),
            "score": float(match.get("score") or 0.0),
            "first_seen": now,
        }
        for url, match in pairs
    ]


def copies(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Alerts grouped into copies: one per page and work, best score, earliest first seen."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for alert in sorted(alerts, key=lambda a: (a["url"], a["work"], a["doc_id"])):
        key = (alert["url"], alert["work"])
        copy = grouped.setdefault(
            key,
            {
                "work": alert["work"],
                "url": alert["url"],
                "site": alert["site"],
                "doc_ids": [],
                "score": 0.0,
                "first_seen": _iso(alert["first_seen"]),
            },
        )
        copy["doc_ids"].append(alert["doc_id"])
        copy["score"] = round(max(copy["score"], float(alert.get("score") or 0.0)), 4)
        copy["first_seen"] = min(copy["first_seen"], _iso(alert["first_seen"]))
    for copy in grouped.values():
        digest = hashlib.sha256("\x00".join([copy["url"], copy["work"], *copy["doc_ids"]]).encode())
        copy["id"] = digest.hexdigest()[:24]
    return [{"id": c.pop("id"), **c} for c in grouped.values()]


def _iso(moment: datetime) -> str:
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.isoformat(timespec="seconds")


class WebhookError(RuntimeError):
    """The webhook did not take the alerts."""


def post(url: str, body: dict[str, Any], timeout: float = TIMEOUT_S) -> int:
    """POST ``body`` as JSON; the status of a 2xx answer, else :class:`WebhookError`."""
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        raise WebhookError(f"{mask_url(url)} answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise WebhookError(f"{mask_url(url)}: {reason}") from None


class AlertSender:
    """Sends the outbox's due alerts to ``url``, in a thread of its own (:meth:`start`) or on
    demand (:meth:`flush`). ``outbox`` gives the outbox (a callable: the store may be rebuilt
    after a reconnection)."""

    def __init__(
        self,
        outbox: Callable[[], AlertOutbox],
        url: str,
        interval: float = 30.0,
        *,
        clock: Callable[[], datetime] | None = None,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self.outbox = outbox
        self.url = url
        self.interval = max(0.1, float(interval))
        self.clock = clock or (lambda: datetime.now(UTC))
        self.timeout = timeout
        self.claimer = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.sent = 0
        self.failures = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="alert-sender", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Send what is due now rather than at the next interval."""
        self._wake.set()

    def close(self, timeout: float = 15.0) -> None:
        """Stop the thread after one last send of what is due (at most ``timeout`` seconds
        in all); what is left stays in the outbox."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self._flush_logged()
        self._flush_logged()

    def _flush_logged(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # the store away: the alerts wait in the outbox
            log.warning("could not send alerts: %s", exc)

    def flush(self) -> dict[str, int]:
        """Claim the due alerts and POST them, a batch per POST; returns ``{"sent",
        "failed"}`` counts of alerts."""
        with self._lock:
            outbox = self.outbox()
            sent = failed = 0
            while True:
                now = self.clock()
                claimed = outbox.claim(self.claimer, now)
                if not claimed:
                    break
                body = {
                    "event": "new_copies",
                    "sent_at": now.isoformat(timespec="seconds"),
                    "copies": copies(claimed),
                }
                ids = [alert["_id"] for alert in claimed]
                try:
                    post(self.url, body, self.timeout)
                except WebhookError as exc:
                    tries = min(int(a.get("tries") or 0) for a in claimed)
                    delay = min(MAX_RETRY_S, FIRST_RETRY_S * 2**tries)
                    outbox.failed(ids, str(exc), now + timedelta(seconds=delay))
                    log.warning("alerts not delivered (retry in %.0f s): %s", delay, exc)
                    failed += len(ids)
                    self.failures += 1
                    break
                outbox.sent(ids, self.clock())
                sent += len(ids)
                self.sent += len(ids)
            return {"sent": sent, "failed": failed}


def alert_overdue_stamps(
    store: CaptureStore, url: str, hours: float, now: datetime, timeout: float = TIMEOUT_S
) -> int:
    """POST the time-stamps failing for more than ``hours`` and not alerted yet to ``url``
    (``alert_webhook``), one body for them all::

        {"event": "stamps_pending", "sent_at": ..., "stamps": [{"capture", "url", "site",
         "tsa", "error", "failing_since", "tries"}]}

    each with the TSA's last answer; they are marked alerted once the webhook took them (not
    alerted again while they stay pending). Returns how many were alerted;
    :class:`WebhookError` when the webhook did not take them (they are tried again next time).
    """
    fields = {"url": 1, "site": 1, "stamp.tsa": 1, "stamp.error": 1,
              "stamp.failing_since": 1, "stamp.tries": 1, "stamp.alerted_at": 1}  # fmt: skip
    due = [
        capture
        for capture in store.overdue(now - timedelta(hours=hours), fields)
        if not (capture.get("stamp") or {}).get("alerted_at")
    ]
    if not due:
        return 0
    stamps = [
        {
            "capture": capture["_id"],
            "url": mask_url(capture["url"]),
            "site": capture.get("site"),
            "tsa": capture["stamp"].get("tsa", ""),
            "error": capture["stamp"].get("error", ""),
            "failing_since": _iso(capture["stamp"]["failing_since"]),
            "tries": int(capture["stamp"].get("tries") or 0),
        }
        for capture in due
    ]
    body = {"event": "stamps_pending", "sent_at": _iso(now), "stamps": stamps}
    post(url, body, timeout)
    store.mark_alerted([capture["_id"] for capture in due], now)
    return len(due)
