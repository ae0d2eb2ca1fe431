"""Takedown notices sent by mail: ``tracker notices send --site HOST``.

A site's notice lists its pages whose latest check still carried a match (each with the
master works and chapters it copies, the evidence passages, and the capture kept of it: time
and payload SHA-256), in the text of the daily report's drafts (:func:`tracker.reports.notices.
notice`), from ``notice_sender`` (else ``smtp_from``). It goes to ``--to`` or the site file's
``abuse_contact`` (:mod:`tracker.enforcement.sites`) by SMTP (:mod:`tracker.enforcement.mail`).

What makes it trustworthy:

* **Recorded before it is sent** (:class:`tracker.stores.notices.NoticeStore`): site, recipient,
  URLs, subject, ``Message-ID`` and the very text; marked sent when the SMTP server takes it,
  and only then are its URLs *noticed* (:class:`tracker.stores.takedowns.TakedownStore`), the
  start of their takedown tracking.
* **Never lost**: an SMTP server down, slow or answering garbage leaves the notice pending; the
  next ``notices send`` of the site (or the scheduler's ``takedown`` job) sends that same
  notice, same ``Message-ID``, before composing another.
* **Never repeated**: a URL noticed within ``notice_repeat_days``, or in a notice still
  pending, is left out of a new notice, unless ``resend``.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Any

from tracker.enforcement.mail import MailError, send
from tracker.reports.build import UNKNOWN_WORK
from tracker.reports.notices import notice
from tracker.stores.evidence import CaptureStore
from tracker.stores.masters import MasterStore
from tracker.stores.notices import NoticeStore
from tracker.stores.pages import MatchStore, PageStore
from tracker.stores.takedowns import TakedownStore


class NoticeError(ValueError):
    """A notice cannot be composed or addressed (no sender, no recipient, no SMTP server)."""


@dataclass
class Outcome:
    """What ``send_notices`` did: notices sent and still pending, and the URLs left out."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    composed: dict[str, Any] | None = None  # the new notice (also when only drafted)
    skipped_recent: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _when(moment: Any) -> str:
    if not isinstance(moment, datetime):
        return str(moment or "")
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%d %H:%M UTC")


def infringing_pages(db: Any, site: str) -> dict[str, dict[str, Any]]:
    """``url → {"copies", "evidence", "first_seen", "last_seen", "captured", "doc_ids"}`` for
    the site's pages with open matches, as :func:`tracker.reports.notices.notice` reads them."""
    urls = PageStore(db).matched_on(site)
    by_url: dict[str, list[dict]] = defaultdict(list)
    for match in MatchStore(db).open_of(urls):
        by_url[match["url"]].append(match)
    captures = {c["_id"]: c for c in CaptureStore(db).by_ids(
        m["capture_id"] for ms in by_url.values() for m in ms if m.get("capture_id")
    )}  # fmt: skip
    pages = {}
    for url, matches in sorted(by_url.items()):
        evidence = []
        for match in sorted(matches, key=lambda m: -float(m.get("score") or 0)):
            spans = sorted(match.get("spans") or (), key=lambda s: -len(s.get("text") or ""))
            if spans and spans[0].get("text"):
                evidence.append(" ".join(str(spans[0]["text"]).split()))
        capture = next(
            (captures[m["capture_id"]] for m in matches if m.get("capture_id") in captures), None
        )
        pages[url] = {
            "copies": [
                (
                    str(m.get("work") or "") or UNKNOWN_WORK,
                    str(m["doc_id"]),
                    str(m.get("title") or ""),
                )
                for m in matches
            ],
            "evidence": evidence,
            "first_seen": _when(min(m["first_seen"] for m in matches)),
            "last_seen": _when(max(m["last_seen"] for m in matches)),
            "captured": ((_when(capture["at"]), capture["payload_sha256"]) if capture else None),
            "doc_ids": sorted({str(m["doc_id"]) for m in matches}),
        }
    return pages


def message_of(record: dict[str, Any], smtp_from: str) -> EmailMessage:
    """The mail of a recorded notice (the same at every retry)."""
    message = EmailMessage()
    message["From"] = smtp_from
    message["To"] = record["to"]
    message["Subject"] = record["subject"]
    message["Date"] = format_datetime(record["created_at"])
    message["Message-ID"] = record["message_id"]
    message["X-Tracker-Notice"] = record["_id"]
    message.set_content(record["text"], charset="utf-8")
    return message


def send_notices(
    db: Any,
    settings: Any,
    site: str,
    *,
    to: str | None = None,
    dry_run: bool = False,
    resend: bool = False,
    retry_pending: bool = True,
    clock: Any = None,
) -> Outcome:
    """Send the site's pending notices, then a new one for its infringing pages not noticed
    within ``notice_repeat_days`` (all of them with ``resend``); with ``dry_run`` only compose
    it (``Outcome.composed``), sending and recording nothing. Raises :class:`NoticeError`
    when the notice cannot be addressed."""
    from tracker.enforcement.sites import abuse_contact

    now = (clock or (lambda: datetime.now(UTC)))()
    site = site.lower()
    smtp_from = settings.smtp_from
    if not smtp_from:
        raise NoticeError("no sender: set smtp_from (TRACKER_SMTP_FROM), the notices' From")
    recipient = to or abuse_contact(settings, site)
    if not recipient:
        raise NoticeError(
            f"no recipient for {site}: give --to ADDRESS, or abuse_contact in its site file"
        )
    if not dry_run and not settings.smtp_url:
        raise NoticeError("no SMTP server: set smtp_url (TRACKER_SMTP_URL), e.g. smtp://host:587")
    notices = NoticeStore(db)
    takedowns = TakedownStore(db)
    outcome = Outcome()
    pending = notices.pending(site)
    if retry_pending and not dry_run:
        for record in pending:
            _deliver(record, notices, takedowns, settings, outcome)
        pending = outcome.pending
    in_pending = {url for record in pending for url in record["urls"]}
    pages = infringing_pages(db, site)
    recent = takedowns.last_noticed(pages)
    since = now - timedelta(days=settings.notice_repeat_days)
    chosen = {}
    for url, page in pages.items():
        if url in in_pending and not resend:
            continue
        noticed = recent.get(url)
        if noticed is not None and not resend and _utc(noticed) > since:
            outcome.skipped_recent.append(url)
            continue
        chosen[url] = page
    if not chosen:
        return outcome
    sender = settings.notice_sender or smtp_from
    works = {work for page in chosen.values() for work, _, _ in page["copies"]}
    units = {work: unit for work, (_, unit) in MasterStore(db).works(works).items()}
    text = notice(site, chosen, now.date().isoformat(), units, sender=sender, recipient=recipient)
    domain = smtp_from.rsplit("@", 1)[-1] if "@" in smtp_from else None
    record = {
        "_id": uuid.uuid4().hex,
        "site": site,
        "to": recipient,
        "sender": sender,
        "subject": f"Copyright infringement notice: {len(chosen)} page(s) on {site}",
        "message_id": make_msgid("notice", domain=domain),
        "urls": sorted(chosen),
        "pages": [{"url": url, "doc_ids": chosen[url]["doc_ids"]} for url in sorted(chosen)],
        "text": text,
        "created_at": now,
    }
    outcome.composed = record
    if dry_run:
        return outcome
    notices.add(record)
    _deliver({**record, "state": "pending"}, notices, takedowns, settings, outcome)
    return outcome


def _deliver(
    record: dict[str, Any],
    notices: NoticeStore,
    takedowns: TakedownStore,
    settings: Any,
    outcome: Outcome,
) -> None:
    try:
        send(settings.smtp_url, message_of(record, settings.smtp_from))
    except MailError as exc:
        notices.failed(record["_id"], str(exc), datetime.now(UTC))
        outcome.pending.append(record)
        outcome.errors.append(str(exc))
        return
    at = datetime.now(UTC)
    notices.sent(record["_id"], at)
    doc_ids = {page["url"]: page["doc_ids"] for page in record.get("pages") or ()}
    takedowns.noticed({url: doc_ids.get(url, []) for url in record["urls"]}, record["_id"], at)
    outcome.sent.append(record)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def retry_pending(db: Any, settings: Any) -> Outcome:
    """Send every pending notice again (the scheduler's ``takedown`` job); composes none."""
    outcome = Outcome()
    if not settings.smtp_url or not settings.smtp_from:
        outcome.pending = NoticeStore(db).pending()
        return outcome
    notices, takedowns = NoticeStore(db), TakedownStore(db)
    for record in notices.pending():
        _deliver(record, notices, takedowns, settings, outcome)
    return outcome
