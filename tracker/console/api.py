"""The console's JSON API (drawn at ``/docs``; see docs/console.md).

Every route takes HTTP Basic or the session cookie; without either it answers 401. Lists are
paged (``page``, ``per_page``); a day's figures come from the day's report
(:mod:`tracker.console.figures`), a page's evidence from its stored matches.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from tracker.console import deps
from tracker.console.deps import (
    DateParam,
    Operator,
    PageParam,
    PerPageParam,
    ScoreParam,
    SiteParam,
    Viewer,
    WorkParam,
)
from tracker.console.evidence import page_matches
from tracker.console.figures import paged
from tracker.console.jobs import job_rows, known_job, start_job
from tracker.matching.checking import Answer
from tracker.stores.pages import PageStore

router = APIRouter(prefix="/api", tags=["api"])

MAX_URL = 4096


def json_response(value: Any, status_code: int = 200, headers: dict | None = None) -> Response:
    """``value`` as JSON, Chinese kept as is, times in ISO 8601."""
    body = json.dumps(value, ensure_ascii=False, default=_plain)
    return Response(body, status_code, headers, media_type="application/json")


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)  # ObjectId and the like


@router.get("/pages", summary="The infringing pages of a day")
def api_pages(
    request: Request,
    _: Viewer,
    date: DateParam = None,
    work: WorkParam = None,
    site: SiteParam = None,
    min_score: ScoreParam = None,
    page: PageParam = 1,
    per_page: PerPageParam = 100,
) -> Response:
    """``{"date", "pages": [...], "page", "per_page", "total"}``: the JSON report's ``pages``
    objects (``url, site, doc_ids, copies, score, coverage, first_seen, last_seen, new,
    group``), sorted by URL, filtered by work, site and minimum score."""
    day = deps.day_of(date)
    view = deps.console(request).reports.get(day)
    found = paged(view.pages(work=work, site=site, min_score=min_score), page, per_page)
    return json_response({"date": day.isoformat(), "pages": found.items, **found.to_dict()})


@router.get("/unread", summary="The pages a day's crawls could not read")
def api_unread(
    request: Request,
    _: Viewer,
    date: DateParam = None,
    site: SiteParam = None,
    page: PageParam = 1,
    per_page: PerPageParam = 100,
) -> Response:
    """``{"date", "sites": [{"site", "pages", "reasons": [{"reason", "pages"}], "first_seen",
    "last_seen"}], "unread": [...], "page", "per_page", "total"}``: the JSON report's
    ``unread`` pages (``url, site, reason, first_seen, last_seen, attempts``; challenged,
    banned, failed to render…: not clean, their content unknown), by site and URL, filtered
    by site; ``sites`` sums up the pages listed (all of them, not one page of the list)."""
    from tracker.reports.build import unread_sites

    day = deps.day_of(date)
    unread = deps.console(request).reports.get(day).unread(site)
    found = paged(unread, page, per_page)
    sites = [{k: v for k, v in s.items() if k != "entries"} for s in unread_sites(unread)]
    return json_response(
        {"date": day.isoformat(), "sites": sites, "unread": found.items, **found.to_dict()}
    )


@router.get("/page", summary="A stored page with its matches and evidence")
def api_page(
    request: Request, _: Viewer, url: Annotated[str, Query(min_length=1, max_length=MAX_URL)]
) -> Response:
    """``{"url", "site", "title", "first_seen", "last_seen", …, "matches": [{"doc_id", "work",
    "title", "score", "coverage", "method", "spans": [{"page_start", "page_end",
    "master_start", "master_end", "text"}], "active", "first_seen", "last_seen"}]}``; 404
    when the page is not stored."""
    db = deps.console(request).runtime.db
    doc = PageStore(db).details(url)
    if doc is None:
        raise HTTPException(404, "no such page is stored")
    page = {"url": doc.pop("_id"), **doc}
    return json_response({**page, "matches": page_matches(db, url)})


class CheckRequest(BaseModel):
    """One text, or one http(s) URL to fetch and check."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: str | None = Field(None, min_length=1, description="the text (or HTML) to check")
    url: str | None = Field(None, min_length=1, max_length=MAX_URL, description="http(s) URL")


def run_check(console, text: str | None, url: str | None) -> Answer:
    """What ``tracker check --json`` prints for this text or URL."""
    checker = console.checker
    return checker.check(checker.read_request(text, url))


@router.post("/check", summary="Check a text or a URL (operators)")
async def api_check(request: Request, body: CheckRequest, _: Operator) -> Response:
    """The object ``tracker check --json`` prints: ``{"matches": [...]}`` (a feed:
    ``{"items": [{"id", "matches"}]}``). A URL is fetched only from public addresses unless
    the ``console_allow_private_urls`` setting allows the others. 409 when the master library
    is empty: nothing to check against."""
    _json_body(request)
    answer = await run_in_threadpool(run_check, deps.console(request), body.text, body.url)
    return Response(answer.to_json(), media_type="application/json")


def _json_body(request: Request) -> None:
    """API POSTs are JSON: another site's page cannot send that without a CORS preflight."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise HTTPException(415, "send Content-Type: application/json")


@router.get("/reports/{day}.{fmt}", summary="A day's report, or its notices as a zip")
def api_report(
    request: Request, _: Viewer, day: str, fmt: Literal["json", "csv", "html", "zip"]
) -> Response:
    """``DATE.json``, ``DATE.csv``, ``DATE.html`` (the formats of ``tracker report``) or
    ``DATE.zip``: the takedown notice drafts, one ``notice-SITE.txt`` per site."""
    from tracker.reports.daily import notice_files
    from tracker.reports.render import to_csv, to_html, to_json

    when = deps.day_of(day)
    report = deps.console(request).reports.get(when).report
    name = f"report-{when.isoformat()}.{fmt}"
    if fmt == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            console = deps.console(request)
            drafts = notice_files(report, console.runtime.read_db, console.settings)
            for file_name, text in drafts.items():
                archive.writestr(f"notices-{when.isoformat()}/{file_name}", text)
        body, media = buffer.getvalue(), "application/zip"
        name = f"notices-{when.isoformat()}.zip"
    elif fmt == "json":
        body, media = to_json(report), "application/json"
    elif fmt == "csv":
        body, media = to_csv(report, bom=True), "text/csv; charset=utf-8"
    else:
        zone = deps.console(request).settings.display_timezone
        body, media = to_html(report, zone), "text/html; charset=utf-8"
    disposition = "inline" if fmt == "html" else "attachment"
    headers = {"Content-Disposition": f'{disposition}; filename="{name}"'}
    return Response(body, media_type=media, headers=headers)


@router.get("/evidence", summary="A page's evidence bundle, as a zip")
def api_evidence(
    request: Request,
    _: Viewer,
    url: Annotated[str, Query(min_length=1, max_length=MAX_URL)],
    capture: Annotated[str | None, Query(max_length=64, pattern="^[0-9a-f]+$")] = None,
) -> Response:
    """The bundle ``tracker evidence export`` writes (``manifest.json``, the WARC records,
    the screenshot, ``timestamp.tsr`` once stamped, ``VERIFY.txt``) in a folder
    ``evidence-ID/`` of a zip: of the capture ``capture``, else the page's newest. Reading
    only: a capture not stamped yet comes without its token (``POST /api/evidence/stamp``).
    404 when the page was never captured."""
    from tracker.enforcement.bundle import EvidenceError, bundle_of, find_capture
    from tracker.stores.evidence import CaptureStore

    console = deps.console(request)
    store = CaptureStore(console.runtime.db)
    try:
        found = find_capture(store, url, capture)
    except EvidenceError as exc:
        raise HTTPException(404, str(exc)) from None
    try:
        bundle = bundle_of(store, console.settings, found, stamping=False)
    except EvidenceError as exc:
        raise HTTPException(422, str(exc)) from None
    folder = f"evidence-{found['_id']}"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in bundle.files.items():
            archive.writestr(f"{folder}/{name}", data)
    headers = {"Content-Disposition": f'attachment; filename="{folder}.zip"'}
    return Response(buffer.getvalue(), media_type="application/zip", headers=headers)


class StampRequest(BaseModel):
    """The page whose newest capture is to be time-stamped."""

    model_config = ConfigDict(extra="forbid", strict=True)
    url: str = Field(min_length=1, max_length=MAX_URL)


@router.post("/evidence/stamp", summary="Time-stamp a page's newest capture (operators)")
def api_stamp(request: Request, body: StampRequest, _: Operator) -> Response:
    """As ``tracker evidence stamp URL``: ``{"capture", "state": "stamped"|"pending", "error"}``
    (a TSA that failed leaves the stamp pending); 404 when the page was never captured, 422
    when no ``tsa_url`` is set."""
    from tracker.enforcement.bundle import EvidenceError, find_capture, stamp_captures
    from tracker.stores.evidence import CaptureStore

    _json_body(request)
    console = deps.console(request)
    if not console.settings.tsa_url:
        raise HTTPException(422, "no time-stamping authority: set tsa_url")
    store = CaptureStore(console.runtime.db)
    try:
        found = find_capture(store, body.url)
    except EvidenceError as exc:
        raise HTTPException(404, str(exc)) from None
    summary = stamp_captures(store, console.settings, [found])
    state = "stamped" if summary.stamped else "pending"
    error = "" if summary.stamped else summary.lines[-1].split(": ", 1)[-1]
    return json_response({"capture": found["_id"], "state": state, "error": error})


@router.get("/takedown", summary="Takedown tracking: compliance per site, a site's URLs")
def api_takedown(request: Request, _: Viewer, site: SiteParam = None) -> Response:
    """``{"takedown": [{"site", "noticed", "removed", "live", "reappeared", "unchecked",
    "removal_rate", "median_hours_to_removal", "first_noticed", "noncompliant"}]}`` as they
    stand now (the report's ``takedown``); with ``site``, also its noticed ``urls``: ``{"url",
    "state", "first_noticed", "last_noticed", "checked_at", "removed_at", "reappeared",
    "last_status", "doc_ids", "changes": [{"at", "state", "status", "reason"}]}``."""
    from tracker.enforcement.compliance import Compliance, takedown_figures
    from tracker.stores.takedowns import TakedownStore

    console = deps.console(request)
    docs = TakedownStore(console.runtime.read_db).all(site)
    answer: dict[str, Any] = {
        "takedown": takedown_figures(docs, datetime.now(UTC), Compliance.of(console.settings))
    }
    if site:
        keys = ("state", "first_noticed", "last_noticed", "checked_at", "removed_at",
                "reappeared", "last_status", "doc_ids", "changes")  # fmt: skip
        answer["urls"] = [
            {"url": doc["_id"], **{key: doc.get(key) for key in keys}}
            for doc in sorted(docs, key=lambda d: d["_id"])
        ]
    return json_response(answer)


@router.get("/jobs", summary="The scheduler's jobs, next and last runs")
def api_jobs(request: Request, _: Viewer) -> Response:
    """``{"acting_scheduler", "jobs": [{"job", "description", "schedule", "next_run",
    "scheduled", "last_run", "history"}]}``, as ``tracker schedule --list --json``."""
    console = deps.console(request)
    return json_response(job_rows(console.settings, console.runtime))


@router.post("/jobs/{name}/run", summary="Run a job now (operators)")
def api_run_job(request: Request, _: Operator, name: str) -> Response:
    """Starts ``tracker run-job NAME`` (never alongside the same job) and answers its ledger
    entry (``{"_id", "job", "status": "running", …}``), or its answer when it ended at once
    (``{"job", "status": "skipped", "error": "… is already running"}``)."""
    _json_body(request)
    console = deps.console(request)
    if not known_job(console.settings, name):
        raise HTTPException(404, f"no job named {name!r}")
    return json_response(start_job(console.settings, console.runtime, name, console.config))
