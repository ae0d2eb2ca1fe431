"""The console's pages: server-rendered Jinja2 templates (``tracker/html/templates/console/``,
in the environment of :mod:`tracker.html`, the report's too), every value escaped (autoescape
on for every template), links only for http(s) URLs, forms carrying their CSRF token."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.datastructures import FormData

from tracker.config import NOTICE_LANGUAGES
from tracker.console import deps
from tracker.console.api import MAX_URL, json_response, run_check
from tracker.console.auth import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    Principal,
    client_address,
    safe_next,
)
from tracker.console.deps import DateParam, Operator, PageParam, ScoreParam, SiteParam, Viewer
from tracker.console.deps import WorkParam as WorkFilter
from tracker.console.evidence import master_texts, page_matches, passages
from tracker.console.figures import Paged, paged
from tracker.console.jobs import job_rows, known_job, start_job
from tracker.console.throttle import Throttled
from tracker.enforcement.compliance import histories, timeline
from tracker.html import display_zone, environment
from tracker.matching.checking import EmptyLibrary
from tracker.reading.readers import InputError
from tracker.reports.build import COPIED_SHARE, unread_sites
from tracker.reports.charts import daily_bars, report_charts, sparkline
from tracker.stores.crawl_runs import CrawlRunStore
from tracker.stores.discovery import CANDIDATE, SiteRegistry
from tracker.stores.discovery import STATES as SITE_STATES
from tracker.stores.evidence import CaptureStore
from tracker.stores.job_runs import RUNNING, JobRunStore
from tracker.stores.pages import PageStore
from tracker.stores.reports import ReportStore
from tracker.stores.site_settings import SiteSettingsStore

router = APIRouter(include_in_schema=False)

PER_PAGE = 50
MATCHES_PER_PAGE = 10
CHAPTERS_PER_PAGE = 100
RUNS_PER_PAGE = 20
MAX_FORM_FIELDS = 10

templates = Jinja2Templates(env=environment())
TEMPLATES = "console/"  # the console's folder of tracker/html/templates

WorkName = Annotated[str, Query(min_length=1, max_length=300)]
SiteName = Annotated[str, Query(min_length=1, max_length=300)]
StateParam = Annotated[str | None, Query(max_length=20)]


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    principal: Principal | None = getattr(request.state, "principal", None)
    with display_zone(deps.console(request).settings.display_timezone):  # drawn right here
        return templates.TemplateResponse(
            request,
            TEMPLATES + template,
            {"principal": principal, "user": principal.user if principal else None, **context},
            status_code=status_code,
        )


async def form_of(request: Request, principal: Principal) -> FormData:
    """The POSTed form, once its CSRF token is checked (403 otherwise)."""
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    if not deps.console(request).auth.same(form.get("csrf"), principal.csrf):
        raise HTTPException(403, "the form is out of date or not from this console: reload it")
    return form


def field(form: FormData, name: str, limit: int) -> str:
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise HTTPException(422, f"{name}: expected text")
    if len(value) > limit:
        raise HTTPException(422, f"{name}: longer than {limit} characters")
    return value


# ------------------------------------------------------------------------------ sign in/out


def login_page(
    request: Request, status_code: int = 200, error: str | None = None, target: str = ""
) -> HTMLResponse:
    """The login form (also the answer to a page asked for without credentials: 401)."""
    auth = deps.console(request).auth
    seed = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(16)
    if not target:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        target = "/" if target.startswith("/login") else target
    response = templates.TemplateResponse(
        request,
        TEMPLATES + "login.html",
        {
            "principal": None,
            "user": None,
            "token": auth.login_token(seed),
            "next": safe_next(target),
            "error": error,
        },
        status_code=status_code,
    )
    response.set_cookie(
        LOGIN_COOKIE, seed, httponly=True, samesite="strict", secure=_https(request)
    )
    return response


@router.get("/login")
def login(request: Request) -> HTMLResponse:
    return login_page(request)


@router.post("/login")
async def login_submit(request: Request) -> Response:
    console = deps.console(request)
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    target = safe_next(form.get("next"))
    seed = request.cookies.get(LOGIN_COOKIE, "")
    if not seed or not console.auth.same(form.get("token"), console.auth.login_token(seed)):
        return login_page(request, 403, "The form had expired: sign in again.", target)
    name, password = form.get("name"), form.get("password")
    user = None
    if isinstance(name, str) and isinstance(password, str):
        address = client_address(request)
        try:
            user = await run_in_threadpool(console.auth.sign_in, name.strip(), password, address)
        except Throttled as locked:
            response = login_page(request, 429, locked.message.capitalize() + ".", target)
            response.headers["Retry-After"] = locked.retry_after
            return response
    if user is None:
        return login_page(request, 401, "Wrong name or password.", target)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        console.auth.session_cookie(user),
        max_age=console.auth.max_age,
        httponly=True,
        samesite="lax",
        secure=_https(request),
    )
    response.delete_cookie(LOGIN_COOKIE)
    return response


@router.post("/logout")
async def logout(request: Request, principal: Viewer) -> Response:
    await form_of(request, principal)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="lax", secure=_https(request))
    return response


def _https(request: Request) -> bool:
    return request.url.scheme == "https"


# ---------------------------------------------------------------------------------- pages


@router.get("/")
def dashboard(request: Request, _: Viewer, date: DateParam = None) -> HTMLResponse:
    day = deps.day_of(date)
    view = deps.console(request).reports.get(day)
    report = view.report
    new_pages = [p for p in report["pages"] if p["new"]]
    console = deps.console(request)
    hours = console.settings.tsa_pending_alert_hours
    overdue = CaptureStore(console.runtime.db).overdue(
        datetime.now(UTC) - timedelta(hours=hours),
        {"url": 1, "stamp.error": 1, "stamp.failing_since": 1, "stamp.tries": 1},
    )
    return render(
        request,
        "dashboard.html",
        overdue_stamps=overdue[:20],
        overdue_total=len(overdue),
        overdue_hours=hours,
        nav="dashboard",
        day=day.isoformat(),
        report=report,
        charts=report_charts(report),
        new_pages=new_pages[:10],
        new_total=len(new_pages),
        titles=view.titles,
        top_sites=report["sites"][:10],
        top_works=report["works"][:10],
    )


@router.get("/pages")
def pages(
    request: Request,
    _: Viewer,
    date: DateParam = None,
    work: WorkFilter = None,
    site: SiteParam = None,
    min_score: ScoreParam = None,
    page: PageParam = 1,
) -> HTMLResponse:
    day = deps.day_of(date)
    view = deps.console(request).reports.get(day)
    found = paged(view.pages(work=work, site=site, min_score=min_score), page, PER_PAGE)
    filters = {"date": day.isoformat(), "work": work, "site": site, "min_score": min_score}
    return render(
        request,
        "pages.html",
        nav="pages",
        day=day.isoformat(),
        found=found,
        titles=view.titles,
        works=sorted(w["work"] for w in view.report["works"]),
        sites=sorted(s["site"] for s in view.report["sites"]),
        filters=filters,
        query={k: v for k, v in filters.items() if v not in (None, "")},
    )


@router.get("/unread")
def unread(
    request: Request, _: Viewer, date: DateParam = None, site: SiteParam = None, page: PageParam = 1
) -> HTMLResponse:
    day = deps.day_of(date)
    view = deps.console(request).reports.get(day)
    found = view.unread(site)
    filters = {"date": day.isoformat(), "site": site}
    return render(
        request,
        "unread.html",
        nav="unread",
        day=day.isoformat(),
        sites=unread_sites(found),
        all_sites=sorted({u["site"] for u in view.unread() if u["site"]}),
        found=paged(found, page, PER_PAGE),
        filters=filters,
        query={k: v for k, v in filters.items() if v not in (None, "")},
    )


@router.get("/page")
def evidence(
    request: Request,
    _: Viewer,
    url: Annotated[str, Query(min_length=1, max_length=MAX_URL)],
    page: PageParam = 1,
) -> HTMLResponse:
    db = deps.console(request).runtime.db
    doc = PageStore(db).details(url)
    matches = page_matches(db, url)
    if doc is None and not matches:
        raise HTTPException(404, "no such page is stored")
    shown = paged(matches, page, MATCHES_PER_PAGE)
    masters = master_texts(db, (m["doc_id"] for m in shown.items))
    rows = [
        {
            **match,
            "master": masters.get(str(match["doc_id"])),
            "passages": passages(
                match.get("spans") or [],
                (masters.get(str(match["doc_id"])) or {}).get("text"),
            ),
        }
        for match in shown.items
    ]
    fields = {"at": 1, "status": 1, "payload_sha256": 1, "stamp.state": 1, "screenshot": 1,
              "stamp.error": 1, "stamp.tsa": 1, "stamp.failing_since": 1}  # fmt: skip
    history = histories(db, [url]).get(url)
    return render(
        request,
        "page.html",
        nav="pages",
        url=url,
        page=doc or {},
        found=shown,
        rows=rows,
        query={"url": url},
        captures=CaptureStore(db).of_url(url, {**fields, "source": 1}),
        takedown=history,
        events=timeline(history) if history else [],
    )


@router.get("/works")
def works(request: Request, _: Viewer, date: DateParam = None, page: PageParam = 1):
    day = deps.day_of(date)
    report = deps.console(request).reports.get(day).report
    return render(
        request,
        "works.html",
        nav="works",
        day=day.isoformat(),
        found=paged(report["works"], page, PER_PAGE),
        query={"date": day.isoformat()},
    )


@router.get("/work")
def work(
    request: Request,
    _: Viewer,
    name: WorkName,
    date: DateParam = None,
    page: PageParam = 1,
    chapters: PageParam = 1,
) -> HTMLResponse:
    day = deps.day_of(date)
    view = deps.console(request).reports.get(day)
    entry = view.work(name)
    if entry is None:
        raise HTTPException(404, f"no page copied this work on {day.isoformat()}")
    return render(
        request,
        "work.html",
        nav="works",
        day=day.isoformat(),
        work=entry,
        found=paged(entry["pages"], page, PER_PAGE),
        chapters=paged(entry["chapters_found"], chapters, CHAPTERS_PER_PAGE),
        copied_share=COPIED_SHARE,
        query={"name": name, "date": day.isoformat(), "page": page, "chapters": chapters},
    )


@router.get("/sites")
def sites(request: Request, _: Viewer, date: DateParam = None, page: PageParam = 1):
    day = deps.day_of(date)
    console = deps.console(request)
    report = console.reports.get(day).report
    runs = crawl_runs(console.runtime.db, None, 1)
    return render(
        request,
        "sites.html",
        nav="sites",
        day=day.isoformat(),
        found=paged(report["sites"], page, PER_PAGE),
        sparkline=lambda trend: sparkline([t["pages"] for t in trend]),
        takedown=report.get("takedown", []),
        unread=unread_sites(report.get("unread") or ()),
        unread_total=len(report.get("unread") or ()),
        runs=runs[:RUNS_PER_PAGE],
        query={"date": day.isoformat()},
    )


@router.get("/site")
def site(
    request: Request, _: Viewer, name: SiteName, date: DateParam = None, page: PageParam = 1
) -> HTMLResponse:
    day = deps.day_of(date)
    console = deps.console(request)
    view = console.reports.get(day)
    entry = view.site(name)
    runs = crawl_runs(console.runtime.db, name, page)
    trend = entry["trend"] if entry else []
    chart = daily_bars(
        [(t["date"], t["pages"], None) for t in trend],
        title=f"Infringing pages per day on this site, last {len(trend)} days",
    )
    compliance = next((t for t in view.report.get("takedown", ()) if t["site"] == name), None)
    works = {}
    for w in view.report["works"]:
        for s in w["sites"]:
            if s["site"] == name:
                works[w["work"]] = (s, w)
    from tracker.enforcement.notices import notice_language

    return render(
        request,
        "site.html",
        nav="sites",
        notice_language=notice_language(console.settings, name, console.runtime.db),
        languages=NOTICE_LANGUAGES,
        day=day.isoformat(),
        name=name,
        site=entry,
        chart=chart if entry else "",
        works=works,
        pages=view.pages(site=name)[:PER_PAGE],
        titles=view.titles,
        runs=runs[:RUNS_PER_PAGE],
        more_runs=len(runs) > RUNS_PER_PAGE,
        page=page,
        compliance=compliance,
        unread=view.unread(name),
        per_page=PER_PAGE,
    )


@router.post("/site/notice-language")
async def set_notice_language(request: Request, principal: Operator) -> Response:
    """The language of a site's notices (``zh``, ``en``; empty: its site file's, else the
    setting's), over its site file's."""
    form = await form_of(request, principal)
    site, language = field(form, "site", 300).strip().lower(), field(form, "language", 10)
    if not site or language not in ("", *NOTICE_LANGUAGES):
        raise HTTPException(422, f"language: one of {', '.join(NOTICE_LANGUAGES)}, or empty")
    store = SiteSettingsStore(deps.console(request).runtime.db)
    store.set_notice_language(site, language, principal.user.name, datetime.now(UTC))
    return RedirectResponse(f"/site?{urlencode({'name': site})}", status_code=303)


def crawl_runs(db, site: str | None, page: int) -> list[dict[str, Any]]:
    """The latest crawl runs (of ``site``), newest first: one page and the next run."""
    return CrawlRunStore(db).latest(site, (page - 1) * RUNS_PER_PAGE, RUNS_PER_PAGE + 1)


@router.get("/jobs")
def jobs(request: Request, _: Viewer) -> HTMLResponse:
    console = deps.console(request)
    return render(request, "jobs.html", nav="jobs", **job_rows(console.settings, console.runtime))


@router.post("/jobs/run")
async def run_job(request: Request, principal: Operator) -> Response:
    form = await form_of(request, principal)
    name = field(form, "job", 200)
    console = deps.console(request)
    if not known_job(console.settings, name):
        raise HTTPException(404, f"no job named {name!r}")
    record = await run_in_threadpool(
        start_job, console.settings, console.runtime, name, console.config
    )
    if record.get("_id"):
        return RedirectResponse(f"/run?id={_quote(str(record['_id']))}", status_code=303)
    return render(request, "run.html", nav="jobs", run=record, refresh=False)


@router.get("/run")
def run(
    request: Request, _: Viewer, id: Annotated[str, Query(min_length=1, max_length=300)]
) -> HTMLResponse:
    record = JobRunStore(deps.console(request).runtime.db).get(id)
    if record is None:
        raise HTTPException(404, "no such run in the ledger")
    return render(
        request, "run.html", nav="jobs", run=record, refresh=record.get("status") == RUNNING
    )


@router.get("/discovered")
def discovered(request: Request, _: Viewer, state: StateParam = None) -> HTMLResponse:
    """The sites discovery found carrying copies (candidates first), each with the query that
    found it; an operator marks each watched, ignored or licensed."""
    registry = SiteRegistry(deps.console(request).runtime.read_db)
    if state is not None and state not in SITE_STATES:
        raise HTTPException(422, f"state: one of {', '.join(SITE_STATES)}")
    found = registry.with_state(state) if state else registry.all()
    found.sort(key=lambda doc: (doc.get("state") != CANDIDATE, doc["_id"]))
    return render(
        request, "discovered.html", nav="discovered", sites=found, states=SITE_STATES, state=state
    )


@router.post("/discovered/mark")
async def mark_discovered(request: Request, principal: Operator) -> Response:
    form = await form_of(request, principal)
    site, state = field(form, "site", 300), field(form, "state", 20)
    if state not in SITE_STATES:
        raise HTTPException(422, f"state: one of {', '.join(SITE_STATES)}")
    registry = SiteRegistry(deps.console(request).runtime.db)
    if registry.get(site) is None:
        raise HTTPException(404, "no such discovered site")
    registry.mark(site, state, principal.user.name, datetime.now(UTC))
    return RedirectResponse("/discovered", status_code=303)


@router.get("/check")
def check_form(request: Request, _: Operator) -> HTMLResponse:
    return render(request, "check.html", nav="check", result=None, text="", url="")


@router.post("/check")
async def check_submit(request: Request, principal: Operator) -> HTMLResponse:
    form = await form_of(request, principal)
    console = deps.console(request)
    text, url = field(form, "text", 1 << 30), field(form, "url", MAX_URL).strip()
    try:
        if text.strip() and url:
            raise InputError("give either a text or a URL, not both")
        checked = await run_in_threadpool(
            run_check, console, text if text.strip() else None, url or None
        )
    except (InputError, EmptyLibrary) as exc:
        return render(
            request, "check.html", 409 if isinstance(exc, EmptyLibrary) else 422, nav="check",
            result=None, error=str(exc), text=text, url=url,
        )  # fmt: skip
    answer = json.loads(checked.to_json())  # as the API answers it, then with the passages
    items = answer["items"] if "items" in answer else [{"id": None, "matches": answer["matches"]}]
    masters = master_texts(
        console.runtime.db, (m["doc_id"] for item in items for m in item["matches"])
    )
    for item in items:
        for match in item["matches"]:
            master = masters.get(str(match["doc_id"]))
            match["passages"] = passages(match["spans"], (master or {}).get("text"))
    return render(
        request, "check.html", nav="check", result=items, answer=answer, text=text, url=url
    )


@router.get("/reports")
def reports(request: Request, _: Viewer, page: PageParam = 1) -> HTMLResponse:
    store = ReportStore(deps.console(request).runtime.db)
    total = store.count()
    stored = store.latest((page - 1) * PER_PAGE, PER_PAGE)
    return render(
        request,
        "reports.html",
        nav="reports",
        today=datetime.now(UTC).date().isoformat(),
        found=Paged(stored, page, PER_PAGE, total),
        query={},
    )


@router.get("/docs")
def docs(request: Request, _: Viewer) -> HTMLResponse:
    return render(request, "docs.html", nav="api")


@router.get("/openapi.json")
def openapi(request: Request, _: Viewer) -> Response:
    return json_response(request.app.openapi())


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", status, status=status, message=message)


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")
