"""Takedown notices sent by mail: ``tracker notices send --site HOST``.

A site's notice lists its pages whose latest check still carried a match, written from a
template (:mod:`tracker.enforcement.notice_text`): by default a 侵权通知书 in Chinese with what
《信息网络传播权保护条例》 Article 14 asks for (the rights holder's name, contact and address:
``rights_holder_name``, ``_contact``, ``_address``; each work and the chapters copied, and the
URL; the preliminary evidence; the statement of responsibility), or with ``notice_language: en``
(the setting, or the site file's) an English DMCA-style notice. The preliminary evidence of
each URL is its capture (:mod:`tracker.enforcement.bundle`): when it was fetched, the SHA-256
of the response as served, the RFC 3161 time-stamp over its manifest (its time and TSA: a
capture not stamped yet is stamped when the notice is sent, with ``tsa_url``), the longest
copied passage, or for a rewritten copy (改写/洗稿) its three most telling aligned sentence
pairs, the page's beside the master's with the swapped words bracketed
(:mod:`tracker.reports.pairs`), and the bundle's name; the mail attaches each URL's
``manifest.json`` and ``timestamp.tsr``, or with ``notice_attachments: wacz`` its WACZ package
(:mod:`tracker.enforcement.wacz`), ``datapackage-digest.json`` and a token over it
(:func:`evidence_files`), which a recipient checks with openssl alone. Times
are written in ``display_timezone``. It goes from ``smtp_from`` to ``--to`` or the site file's
``abuse_contact`` (:mod:`tracker.enforcement.sites`) by SMTP (:mod:`tracker.enforcement.mail`).

What makes it trustworthy:

* **Well formed or not at all**: the addresses are checked (one address each, no line break),
  every value the notice shows is one line of plain text, the headers are the mail library's
  (encoded, never pasted), and the whole mail is built before it is recorded: a template that
  fails, a missing setting or a bad address is a :class:`NoticeError`, nothing sent.
* **Recorded before it is sent** (:class:`tracker.stores.notices.NoticeStore`): site, recipient,
  URLs, subject, ``Message-ID``, the very text and which evidence files it attaches; marked
  sent when the SMTP server takes it, and only then are its URLs *noticed*
  (:class:`tracker.stores.takedowns.TakedownStore`), the start of their takedown tracking.
* **Never lost**: an SMTP server down, slow or answering garbage leaves the notice pending; the
  next ``notices send`` of the site (or the scheduler's ``takedown`` job) sends that same
  notice, same ``Message-ID`` and attachments, before composing another (a WACZ records when
  it was made, so the WACZ files a notice names are kept, :func:`kept_folder`).
* **Never repeated**: a URL noticed within ``notice_repeat_days``, or in a notice still
  pending, is left out of a new notice, unless ``resend``. The drafts (``tracker report
  --format notices``) are composed by the same code from the same choice of URLs.
"""

from __future__ import annotations

import re
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

from tracker.enforcement.bundle import MANIFEST, TOKEN, EvidenceError, bundle_of
from tracker.enforcement.capture import mask_url
from tracker.enforcement.mail import MailError, send
from tracker.enforcement.notice_text import LANGUAGES, TemplateFailed, render_notice
from tracker.enforcement.timestamp import Tsa, verify_token
from tracker.enforcement.wacz import DIGEST, DIGEST_TOKEN, WaczError, write_wacz
from tracker.enforcement.warc import evidence_dir
from tracker.formats import when, zone_label
from tracker.model import ARTICLE, CHAPTER
from tracker.reports.build import INSERTED, UNKNOWN_WORK, chapter_ranges, evidence_passage
from tracker.reports.notices import plain
from tracker.reports.pairs import aligned_count, plain_marked, telling_pairs
from tracker.stores.evidence import CaptureStore
from tracker.stores.masters import MasterStore
from tracker.stores.notices import NoticeStore
from tracker.stores.pages import MatchStore, PageStore
from tracker.stores.site_settings import SiteSettingsStore
from tracker.stores.takedowns import TakedownStore

#: The settings a notice must name its rights holder with (Article 14).
RIGHTS_HOLDER = ("rights_holder_name", "rights_holder_contact", "rights_holder_address")
PLACEHOLDERS = {
    "zh": {
        "rights_holder_name": "[权利人名称：设置 rights_holder_name]",
        "rights_holder_contact": "[联系方式：设置 rights_holder_contact]",
        "rights_holder_address": "[地址：设置 rights_holder_address]",
    },
    "en": {
        "rights_holder_name": "[rights holder's name: set rights_holder_name]",
        "rights_holder_contact": "[contact: set rights_holder_contact]",
        "rights_holder_address": "[address: set rights_holder_address]",
    },
}
PLACEHOLDER_FROM = "sender@placeholder.invalid"  # a dry run without smtp_from
PLACEHOLDER_TO = "recipient@placeholder.invalid"  # a dry run without a recipient
TITLES_SHOWN = 3  # chapter titles named per work and page; the count and ranges say the rest
#: Media types of the evidence files attached.
MEDIA = {
    MANIFEST: ("application", "json"),
    TOKEN: ("application", "timestamp-reply"),
    ".wacz": ("application", "wacz"),
    DIGEST: ("application", "json"),
    DIGEST_TOKEN: ("application", "timestamp-reply"),
}
WACZ = "wacz"  # notice_attachments: the WACZ package instead of the manifest and its token


class NoticeError(ValueError):
    """A notice cannot be composed or addressed (no sender, recipient, rights holder or SMTP
    server; a bad address; a template that fails)."""


@dataclass
class Outcome:
    """What ``send_notices`` did: notices sent and still pending, and the URLs left out."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    composed: dict[str, Any] | None = None  # the new notice (also when only drafted)
    attachments: list[tuple[str, bytes]] = field(default_factory=list)  # the composed one's
    skipped_recent: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------ choosing


def infringing_pages(
    db: Any, site: str, urls: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """``url → {"copies": [(work, doc_id, title)], "passage", "pairs", "aligned", "capture",
    "doc_ids"}`` for the site's pages (those whose latest check carried a match, or ``urls``)
    with open matches (``capture``: the newest capture document a match names, or None;
    ``pairs``: a rewritten copy's most telling aligned sentence pairs, of the ``aligned`` its
    matches hold)."""
    urls = PageStore(db).matched_on(site) if urls is None else urls
    by_url: dict[str, list[dict]] = defaultdict(list)
    for match in MatchStore(db).open_of(urls):
        by_url[match["url"]].append(match)
    captures = {c["_id"]: c for c in CaptureStore(db).by_ids(
        m["capture_id"] for ms in by_url.values() for m in ms if m.get("capture_id")
    )}  # fmt: skip
    pages = {}
    for url, matches in sorted(by_url.items()):
        newest = sorted(
            (captures[m["capture_id"]] for m in matches if m.get("capture_id") in captures),
            key=lambda c: c["at"],
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
            "passage": evidence_passage(matches),
            "pairs": telling_pairs(matches),
            "aligned": aligned_count(matches),
            "capture": newest[-1] if newest else None,
            "doc_ids": sorted({str(m["doc_id"]) for m in matches}),
        }
    return pages


def choose_pages(
    db: Any,
    settings: Any,
    site: str,
    now: datetime,
    *,
    resend: bool = False,
    urls: Iterable[str] | None = None,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The site's pages a new notice names, and the URLs left out as noticed lately: every
    infringing page (:func:`infringing_pages`) but those noticed within
    ``notice_repeat_days`` or named by a notice still pending, unless ``resend``. The mail and
    the draft both list these (the draft of a day's report: of the day's pages, ``urls``)."""
    pages = infringing_pages(db, site, urls)
    in_pending = {url for record in NoticeStore(db).pending(site) for url in record["urls"]}
    recent = TakedownStore(db).last_noticed(pages)
    since = now - timedelta(days=settings.notice_repeat_days)
    chosen, skipped = {}, []
    for url, page in pages.items():
        if not resend and url in in_pending:
            continue
        noticed = recent.get(url)
        if not resend and noticed is not None and _utc(noticed) > since:
            skipped.append(url)
            continue
        chosen[url] = page
    return chosen, skipped


# ----------------------------------------------------------------------------------- composing


def notice_language(settings: Any, site: str, db: Any = None) -> str:
    """``zh`` or ``en``: what an operator set for the site in the console, else its site
    file's ``notice_language``, else the setting's."""
    from tracker.enforcement.sites import site_config_for

    language = SiteSettingsStore(db).notice_language(site) if db is not None else ""
    if not language:
        config = site_config_for(settings, site)
        language = (config.notice_language if config is not None else "") or ""
    language = language or settings.notice_language
    return language if language in LANGUAGES else LANGUAGES[0]


def checked_address(value: str, what: str) -> str:
    """``value`` as one mail address (``addr@host`` or ``Name <addr@host>``), or a
    :class:`NoticeError`: no line breaks or control characters, one address, a domain."""
    text = str(value).strip()
    if not text or re.search(r"[\x00-\x1f\x7f\u2028\u2029]", text):
        raise NoticeError(f"{what} {text!r}: not one mail address (a line break or control "
                          "character in it)")  # fmt: skip
    try:
        message = EmailMessage()
        message["To"] = text
        addresses = message["To"].addresses
    except (ValueError, TypeError, IndexError) as exc:
        raise NoticeError(f"{what} {text!r}: not a mail address ({exc})") from None
    if len(addresses) != 1 or not addresses[0].domain or not addresses[0].username:
        raise NoticeError(f"{what} {text!r}: not one mail address (user@host)")
    return str(addresses[0])


def _stamp_of(
    capture: dict[str, Any], manifest: bytes, token: bytes | None, tsa_url: str
) -> dict[str, Any]:
    """The stamp's time and TSA (who signed it, and where it was asked: the capture's TSA, or
    ``tsa_url`` for a stamp obtained just now), read from the token itself."""
    if token is None:
        return {}
    check = verify_token(token, manifest)
    if not check.ok or check.gen_time is None:
        return {}
    where = mask_url(str((capture.get("stamp") or {}).get("tsa") or tsa_url or ""))
    return {"time": check.gen_time, "tsa": ", ".join(p for p in (check.signer, where) if p)}


def evidence_files(
    bundle: Any, settings: Any, *, stamping: bool, warnings: list[str]
) -> dict[str, bytes]:
    """The files a notice attaches for a capture's bundle, by the names they are attached
    under (``evidence-ID-…``). By default (``notice_attachments: files``) ``manifest.json``
    and, once stamped, ``timestamp.tsr``: small, the WARC records stay with the rights holder
    and the manifest holds their SHA-256. With ``wacz``: the capture's WACZ package
    (``evidence-ID.wacz``, made as ``evidence export --format wacz`` makes it: the WARC records,
    the manifest and its token inside), its ``datapackage-digest.json`` and, with ``stamping``
    and a TSA, a token over that (a TSA failing is a warning: the WACZ goes without it). A
    :class:`~tracker.enforcement.wacz.WaczError` when py-wacz fails."""
    name = bundle_name(bundle.capture)
    if settings.notice_attachments != WACZ:
        return {f"{name}-{file}": bundle.files[file] for file in (MANIFEST, TOKEN)
                if file in bundle.files}  # fmt: skip
    tsa = Tsa.of(settings) if stamping else None
    with tempfile.TemporaryDirectory(prefix="tracker-notice-") as tmp:
        written = write_wacz(bundle, Path(tmp), tsa)
        files = {f"{name}.wacz": written.paths[0].read_bytes()}
        for file in (DIGEST, DIGEST_TOKEN):
            if (Path(tmp) / file).is_file():
                files[f"{name}-{file}"] = (Path(tmp) / file).read_bytes()
    if tsa is not None and not written.stamped:
        warnings.append(f"{mask_url(bundle.capture['url'])}: its WACZ goes without a time-stamp "
                        f"over {DIGEST}: {written.error}")  # fmt: skip
    return files


def wacz_names(capture: dict[str, Any]) -> list[str]:
    """The names a WACZ attachment goes under before a token is asked for (what the drafts
    name, without building the package)."""
    name = bundle_name(capture)
    return [f"{name}.wacz", f"{name}-{DIGEST}"]


def kept_folder(settings: Any, notice_id: str) -> Path:
    """Where the WACZ files a notice attaches are kept until it is sent (and after, as what was
    sent): ``<evidence_dir>/notices/ID/``, beside the evidence every machine shares."""
    return evidence_dir(settings) / "notices" / notice_id


def bundle_name(capture: dict[str, Any]) -> str:
    """The bundle's name, as the console's zip and ``evidence export`` folders name it."""
    return f"evidence-{capture['_id']}"


def _evidence(
    db: Any,
    settings: Any,
    page: dict[str, Any],
    *,
    stamping: bool,
    warnings: list[str],
    building: bool = True,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A page's preliminary evidence as the notice shows it, and the files it attaches (named
    as attached; not ``building``: a WACZ only named, not made)."""
    capture = page.get("capture")
    shown: dict[str, Any] = {"captured_at": None, "sha256": "", "stamp_time": "", "tsa": "",
                             "stamp_note": "", "bundle": "", "attachments": []}  # fmt: skip
    if capture is None:
        return shown, {}
    shown.update(captured_at=capture["at"], sha256=str(capture.get("payload_sha256") or ""))
    try:
        bundle = bundle_of(CaptureStore(db), settings, capture, stamping=stamping)
    except EvidenceError as exc:
        warnings.append(f"{mask_url(capture['url'])}: its evidence cannot be attached: {exc}")
        return shown, {}
    stamp = _stamp_of(capture, bundle.files[MANIFEST], bundle.files.get(TOKEN), settings.tsa_url)
    if stamp:
        shown.update(stamp_time=stamp["time"], tsa=stamp["tsa"])
    elif bundle.stamp_state == "pending":
        shown["stamp_note"] = "pending"
    elif settings.tsa_url and not stamping:
        shown["stamp_note"] = "at sending"
    else:
        shown["stamp_note"] = "none"
    if not building and settings.notice_attachments == WACZ:
        shown.update(bundle=bundle_name(capture), attachments=wacz_names(capture))
        return shown, {}
    try:
        files = evidence_files(bundle, settings, stamping=stamping, warnings=warnings)
    except WaczError as exc:
        warnings.append(f"{mask_url(capture['url'])}: its evidence cannot be attached: {exc}")
        files = {}
    shown.update(bundle=bundle_name(capture), attachments=sorted(files))
    return shown, files


STAMP_NOTES = {
    "zh": {
        "pending": "尚未取得（时间戳服务机构暂时无法访问，稍后补签）",
        "at sending": "发送时申请",
        "none": "无（未配置时间戳服务机构 tsa_url）",
    },
    "en": {
        "pending": "not obtained yet (the time-stamping authority failed; asked again later)",
        "at sending": "obtained when the notice is sent",
        "none": "none (no time-stamping authority configured: tsa_url)",
    },
}


def compose(
    db: Any,
    settings: Any,
    site: str,
    pages: dict[str, dict[str, Any]],
    now: datetime,
    *,
    sender: str | None,
    recipient: str | None,
    draft: bool,
    stamping: bool,
    warnings: list[str],
    building: bool = True,
) -> tuple[str, str, dict[str, Any], dict[str, bytes]]:
    """``(subject, text, evidence, files)`` of the notice of ``pages``: ``evidence`` maps each
    capture's id to the names of its files attached; ``files`` the attachments by name (not
    ``building``: WACZ files named, not made, as a draft needs)."""
    language = notice_language(settings, site, db)
    zone = settings.display_timezone
    holder = {}
    for key in RIGHTS_HOLDER:
        value = plain(getattr(settings, key) or "", 500)
        holder[key.removeprefix("rights_holder_")] = value or PLACEHOLDERS[language][key]
    works = sorted({work for page in pages.values() for work, _, _ in page["copies"]})
    units = {work: unit for work, (_, unit) in MasterStore(db).works(works).items()}
    shown_pages, files, evidence = [], {}, {}
    for number, (url, page) in enumerate(sorted(pages.items()), start=1):
        shown, attached = _evidence(db, settings, page, stamping=stamping, warnings=warnings,
                                    building=building)  # fmt: skip
        files.update(attached)
        if attached:
            evidence[page["capture"]["_id"]] = sorted(attached)
        note = shown["stamp_note"]
        shown_pages.append(
            {
                "number": number,
                "url": plain(url),
                "works": _works(page["copies"], units, language),
                "captured_at": when(shown["captured_at"], zone) if shown["captured_at"] else "",
                "sha256": plain(shown["sha256"]),
                "stamp_time": when(shown["stamp_time"], zone) if shown["stamp_time"] else "",
                "tsa": plain(shown["tsa"], 300),
                "stamp_note": STAMP_NOTES[language].get(note, "") if note else "",
                "bundle": shown["bundle"],
                "attachments": shown["attachments"],
                "passage": plain(page["passage"], 300),
                "aligned": page.get("aligned") or 0,
                "pairs": _pairs(page.get("pairs") or (), language),
            }
        )
    context = {
        "site": plain(site, 200),
        "date": when(now, zone),
        "zone": zone_label(zone, now),
        "holder": holder,
        "sender": plain(sender or "", 300),
        "recipient": plain(recipient or "", 300),
        "draft": draft,
        "pages": shown_pages,
        "works": [_work_name(work, language) for work in works],
        "inserted": INSERTED if any(INSERTED in p["passage"] for p in pages.values()) else "",
        "language": language,
        "attach": settings.notice_attachments,
    }
    try:
        subject, text = render_notice(settings.data_dir, language, context)
    except TemplateFailed as exc:
        raise NoticeError(str(exc)) from None
    return subject, text, evidence, files


#: How a notice brackets the words a rewritten copy swapped, by language.
SWAP_MARKS = {"zh": ("【", "】"), "en": ("[", "]")}


def _pairs(pairs: Iterable[dict[str, Any]], language: str) -> list[dict[str, str]]:
    """A rewritten copy's sentence pairs as a notice shows them: ``{"page", "master"}``, each
    one line of plain text with the swapped words bracketed."""
    shown = []
    for pair in pairs:
        ours, theirs = plain_marked(pair, *SWAP_MARKS[language])
        shown.append({"page": plain(ours, 300), "master": plain(theirs, 300)})
    return shown


def _work_name(work: str, language: str) -> str:
    if work == UNKNOWN_WORK:
        return "（作品名不详）" if language == "zh" else "(unknown work)"
    return f"《{plain(work, 120)}》"


def _works(
    copies: list[tuple[str, str, str]], units: dict[str, str], language: str
) -> list[dict[str, Any]]:
    """Per work a page copies: its name, unit, how many chapters (articles), their numbers'
    ranges (``1–8``) and the first titles."""
    by_work: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for work, doc_id, title in sorted(set(copies)):
        by_work[work].append((doc_id, title))
    found = []
    for work, chapters in sorted(by_work.items()):
        unit = units.get(work, CHAPTER)
        numbers = "" if unit == ARTICLE else chapter_ranges(d for d, _ in chapters)
        titles = [plain(title or doc_id, 120) for doc_id, title in chapters[:TITLES_SHOWN]]
        found.append(
            {"name": _work_name(work, language), "unit": unit, "count": len(chapters),
             "numbers": plain(numbers), "titles": titles}
        )  # fmt: skip
    return found


def draft_notice(
    db: Any,
    settings: Any,
    site: str,
    *,
    resend: bool = False,
    urls: Iterable[str] | None = None,
) -> str | None:
    """The draft of the notice ``notices send --site SITE`` would send now (the same choice of
    URLs, among ``urls`` when given; the same text and evidence; placeholders for what is not
    set), or None when it would send none. Reads only: nothing is stamped or stored."""
    now = datetime.now(UTC)
    pages, _ = choose_pages(db, settings, site, now, resend=resend, urls=urls)
    if not pages:
        return None
    recipient = _recipient(settings, site, None)
    _, text, _, _ = compose(db, settings, site, pages, now, sender=settings.notice_sender,
                            recipient=recipient, draft=True, stamping=False,
                            warnings=[], building=False)  # fmt: skip
    return text


# ------------------------------------------------------------------------------------- sending


def message_of(
    record: dict[str, Any], smtp_from: str, files: dict[str, bytes] | None = None
) -> EmailMessage:
    """The mail of a recorded notice (the same at every retry): its text, then its evidence
    files attached."""
    message = EmailMessage()
    message["From"] = smtp_from
    message["To"] = record["to"]
    message["Subject"] = plain(record["subject"], 200)
    message["Date"] = format_datetime(_utc(record["created_at"]))
    message["Message-ID"] = record["message_id"]
    message["X-Tracker-Notice"] = record["_id"]
    message.set_content(record["text"], charset="utf-8")
    for name, data in sorted((files or {}).items()):
        kind = next((ending for ending in MEDIA if name.endswith(ending)), "")
        maintype, subtype = MEDIA.get(kind, ("application", "octet-stream"))
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message


def attached_files(db: Any, settings: Any, record: dict[str, Any]) -> dict[str, bytes]:
    """The evidence files a recorded notice attaches, read again from its captures (the
    manifest and token are kept with each capture, so they are the bytes named when it was
    composed), or a WACZ notice's from :func:`kept_folder`. A
    :class:`~tracker.enforcement.bundle.EvidenceError` when one is gone."""
    evidence = record.get("evidence") or {}
    if record.get("attach") == WACZ:
        return _kept_files(settings, record)
    store = CaptureStore(db)
    files = {}
    for capture in store.by_ids(evidence):
        bundle = bundle_of(store, settings, capture, stamping=False)
        own = {name: data for name, data in bundle.files.items() if name in (MANIFEST, TOKEN)}
        own = {f"{bundle_name(capture)}-{name}": data for name, data in own.items()}
        for name in evidence[capture["_id"]]:
            if name not in own:
                raise EvidenceError(f"{name} of notice {record['_id']} can no longer be read")
            files[name] = own[name]
    missing = sum(len(names) for names in evidence.values()) - len(files)
    if missing:
        raise EvidenceError(f"{missing} evidence file(s) of notice {record['_id']} are gone")
    return files


def _kept_files(settings: Any, record: dict[str, Any]) -> dict[str, bytes]:
    folder = kept_folder(settings, record["_id"])
    files = {}
    for name in sorted(n for names in (record.get("evidence") or {}).values() for n in names):
        try:
            files[name] = (folder / name).read_bytes()
        except OSError as exc:
            raise EvidenceError(f"{name} of notice {record['_id']} can no longer be read "
                                f"({exc.strerror or exc})") from None  # fmt: skip
    return files


def _keep(settings: Any, record: dict[str, Any], files: dict[str, bytes]) -> None:
    """Keep a WACZ notice's files (:func:`kept_folder`) before it is recorded: a retry sends
    these very bytes."""
    folder = kept_folder(settings, record["_id"])
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
    except OSError as exc:
        raise NoticeError(f"the notice's WACZ files cannot be kept in {folder}: {exc}") from None


def _recipient(settings: Any, site: str, to: str | None) -> str | None:
    from tracker.enforcement.sites import abuse_contact

    return to or abuse_contact(settings, site)


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
    it (``Outcome.composed``, its files ``Outcome.attachments``), sending, stamping and
    recording nothing, with placeholders (and ``Outcome.warnings``) for a sender, recipient or
    rights holder not set. Raises :class:`NoticeError` when the notice cannot be addressed or
    composed."""
    now = (clock or (lambda: datetime.now(UTC)))()
    site = site.lower()
    outcome = Outcome()
    smtp_from, recipient = settings.smtp_from, _recipient(settings, site, to)
    missing = [
        f"{key} ({'TRACKER_' + key.upper()})" for key in RIGHTS_HOLDER if not getattr(settings, key)
    ]
    problems = []
    if not smtp_from:
        problems.append("no sender: set smtp_from (TRACKER_SMTP_FROM), the notices' From")
    if not recipient:
        problems.append(f"no recipient for {site}: give --to ADDRESS, or abuse_contact in its "
                        "site file")  # fmt: skip
    if missing:
        problems.append("no rights holder: a notice names the rights holder (《信息网络传播权保护"
                        f"条例》 Art. 14): set {', '.join(missing)}")  # fmt: skip
    if dry_run:
        outcome.warnings += problems
        smtp_from, recipient = smtp_from or PLACEHOLDER_FROM, recipient or PLACEHOLDER_TO
    elif problems:  # all of them at once, not one per try
        raise NoticeError("; ".join(problems))
    elif not settings.smtp_url:
        raise NoticeError("no SMTP server: set smtp_url (TRACKER_SMTP_URL), e.g. smtp://host:587")
    smtp_from = checked_address(smtp_from, "smtp_from")
    recipient = checked_address(recipient, "the recipient")
    notices = NoticeStore(db)
    takedowns = TakedownStore(db)
    if retry_pending and not dry_run:
        for record in notices.pending(site):
            _deliver(db, settings, record, notices, takedowns, outcome)
    chosen, outcome.skipped_recent = choose_pages(db, settings, site, now, resend=resend)
    if not chosen:
        return outcome
    sender = settings.notice_sender or smtp_from
    subject, text, evidence, files = compose(
        db, settings, site, chosen, now, sender=sender, recipient=recipient,
        draft=bool(dry_run and problems), stamping=not dry_run, warnings=outcome.warnings,
    )  # fmt: skip
    domain = smtp_from.rsplit("@", 1)[-1].rstrip(">") if "@" in smtp_from else None
    record = {
        "_id": uuid.uuid4().hex,
        "site": site,
        "to": recipient,
        "sender": sender,
        "subject": subject,
        "message_id": make_msgid("notice", domain=domain),
        "urls": sorted(chosen),
        "pages": [{"url": url, "doc_ids": chosen[url]["doc_ids"]} for url in sorted(chosen)],
        "text": text,
        "language": notice_language(settings, site, db),
        "evidence": evidence,
        "attach": settings.notice_attachments,
        "created_at": now,
    }
    try:  # the whole mail is made before anything is recorded: a bad one is never half sent
        message_of(record, smtp_from, files).as_bytes()
    except (ValueError, TypeError, LookupError) as exc:
        raise NoticeError(f"the notice's mail cannot be made: {exc}") from None
    outcome.composed, outcome.attachments = record, sorted(files.items())
    if dry_run:
        return outcome
    if record["attach"] == WACZ:
        _keep(settings, record, files)
    notices.add(record)
    _deliver(db, settings, {**record, "state": "pending"}, notices, takedowns, outcome, files)
    return outcome


def _deliver(
    db: Any,
    settings: Any,
    record: dict[str, Any],
    notices: NoticeStore,
    takedowns: TakedownStore,
    outcome: Outcome,
    files: dict[str, bytes] | None = None,
) -> None:
    try:
        if files is None:
            files = attached_files(db, settings, record)
        send(settings.smtp_url, message_of(record, settings.smtp_from, files))
    except (MailError, EvidenceError) as exc:
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
        _deliver(db, settings, record, notices, takedowns, outcome)
    return outcome


def readable(message: EmailMessage) -> str:
    """A mail as a person reads it: its headers decoded, its text, its attachments named (what
    ``notices send --dry-run`` prints)."""
    lines = [f"{name}: {message[name]}" for name in ("Subject", "From", "To", "Date")]
    lines.append("")
    body = message.get_body(("plain",))
    lines.append(body.get_content().rstrip("\n") if body is not None else "")
    attachments = list(message.iter_attachments())
    lines += ["", f"Attachments ({len(attachments)}):"]
    for part in attachments:
        data = part.get_payload(decode=True) or b""
        lines.append(f"  {part.get_filename()} ({part.get_content_type()}, {len(data)} bytes)")
    return "\n".join(lines) + "\n"
