"""The console's ASGI application: state, security headers, body limit, errors.

:func:`create_app` builds a FastAPI app on one :class:`Console` (settings, connections, users,
the day reports kept, the checker). Every response carries a Content-Security-Policy allowing
only the console's own scripts, styles and images (no inline script, no other origin), and
headers that keep it out of frames and referrers; every request body larger than
``console_max_body_kb`` is refused with 413 before it is read (a declared length) or as soon as
it passes the limit (a chunked one).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pymongo.database import Database
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracker import __version__
from tracker.config import Settings
from tracker.console.auth import Authenticator, Forbidden, NotAuthenticated
from tracker.console.figures import DayReports
from tracker.console.throttle import LoginThrottle, Throttled
from tracker.console.users import Users
from tracker.enforcement.compliance import Compliance
from tracker.html import STATIC as SHARED_STATIC  # the style the console shares with the report
from tracker.matching.checking import CheckingService, EmptyLibrary
from tracker.reading.readers import InputError
from tracker.servers.connect import describe
from tracker.servers.runtime import Runtime

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
}


@dataclass
class Console:
    """What every request of one console shares."""

    settings: Settings
    runtime: Runtime
    config: str | None = None  # the --config file, handed to the jobs it starts
    users_db: Database | None = None  # where the accounts are, if not runtime.db (serve --demo)
    users: Users = field(init=False)
    auth: Authenticator = field(init=False)
    reports: DayReports = field(init=False)
    checker: CheckingService = field(init=False)  # the Check page's and POST /api/check's

    def __post_init__(self) -> None:
        self.users = Users(self.users_db if self.users_db is not None else self.runtime.db)
        throttle = LoginThrottle.from_settings(self.runtime.redis, self.settings)
        self.auth = Authenticator(self.settings, self.users, throttle)
        self.reports = DayReports(
            self.runtime.db, self.settings.console_cache_s, Compliance.of(self.settings)
        )
        self.checker = CheckingService(self.settings, self.runtime)


def create_app(
    settings: Settings,
    runtime: Runtime | None = None,
    *,
    config: str | None = None,
    users_db: Database | None = None,
) -> FastAPI:
    """The console on ``runtime`` (made from ``settings`` when not given); its accounts in
    ``users_db`` when given (``tracker serve --demo``: the user's accounts, the demo's data)."""
    from tracker.console import api, views

    console = Console(settings, runtime or Runtime(settings), config, users_db)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if settings.console_cache_s > 0:
            console.reports.warm(datetime.now(UTC).date())  # the dashboard's, ready at once
        yield
        await run_in_threadpool(console.reports.wait_idle, 30)  # before connections close

    app = FastAPI(
        title="tracker console",
        summary="Infringing pages, evidence, checks, jobs and reports of the piracy tracker.",
        version=__version__,
        docs_url=None,  # drawn by views.docs with the bundled Swagger UI (no CDN, no inline JS)
        redoc_url=None,
        openapi_url=None,  # served behind the login by views
        lifespan=lifespan,
    )
    app.state.console = console
    app.include_router(api.router)
    app.include_router(views.router)
    swagger = _swagger_assets()
    if swagger is not None:  # before /static, which would answer its paths with 404
        app.mount("/static/swagger", StaticFiles(directory=swagger), name="swagger")
    app.mount("/static/shared", StaticFiles(directory=SHARED_STATIC), name="shared")
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    _errors(app)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit, limit=max(1, settings.console_max_body_kb) << 10)
    return app


def _swagger_assets() -> Path | None:
    """Swagger UI's files as the fastapi-offline package ships them."""
    try:
        import fastapi_offline
    except ImportError:
        return None
    folder = Path(fastapi_offline.__file__).parent / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/openapi.json"


def _errors(app: FastAPI) -> None:
    from tracker.console import views

    @app.exception_handler(NotAuthenticated)
    async def not_authenticated(request: Request, exc: NotAuthenticated) -> Response:
        if wants_json(request):
            return JSONResponse(
                {"error": "authentication required (HTTP Basic, or log in at /login)"},
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="tracker console", charset="UTF-8"'},
            )
        return views.login_page(request, status_code=401)

    @app.exception_handler(Throttled)
    async def throttled(request: Request, exc: Throttled) -> Response:
        headers = {"Retry-After": exc.retry_after}
        if wants_json(request):
            return JSONResponse({"error": exc.message}, status_code=429, headers=headers)
        response = views.login_page(request, 429, exc.message.capitalize() + ".")
        response.headers.update(headers)
        return response

    @app.exception_handler(Forbidden)
    async def forbidden(request: Request, exc: Forbidden) -> Response:
        return _error(request, 403, "this needs the operator role")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'request'}: {e.get('msg')}"
            for e in exc.errors()
        )
        return _error(request, 422, problems or "invalid request")

    @app.exception_handler(InputError)
    async def bad_input(request: Request, exc: InputError) -> Response:
        return _error(request, 422, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return _error(request, exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(EmptyLibrary)
    async def empty_library(request: Request, exc: EmptyLibrary) -> Response:
        return _error(request, 409, str(exc))

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> Response:
        message = describe(exc, request.app.state.console.settings)
        if message is None:
            log.exception("console error on %s", request.url.path)
            return _error(request, 500, "internal error (logged)")
        log.error("%s: %s", request.url.path, message)
        return _error(request, 503, message)


def _error(
    request: Request, status: int, message: str, headers: dict[str, str] | None = None
) -> Response:
    from tracker.console import views

    if wants_json(request):
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    return views.error_page(request, status, message)


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response, and ``no-store`` to those of
    authenticated requests (pages of the record must not linger in shared caches)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope.get("path", "").startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])]
                present = {k.lower() for k, _ in headers}
                for name, value in SECURITY_HEADERS.items():
                    if name.encode() not in present:
                        headers.append((name.encode(), value.encode()))
                if not static and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


class BodyLimit:
    """Refuses request bodies larger than ``limit`` bytes with 413: at once when the declared
    length is larger, else as soon as the body read passes it (the app is then told the client
    went away, and what it answers is dropped)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await self._refuse(send)
                return
        received = 0
        started = refused = False

        async def counted() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    if not started and not refused:
                        await self._refuse(send)
                    refused = True
                    return {"type": "http.disconnect"}  # the app stops reading: it is answered
            return message

        async def watch(message: Message) -> None:
            nonlocal started
            if refused:
                return  # answered 413 already
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watch)
        except Exception:
            if not refused:
                raise

    async def _refuse(self, send: Send) -> None:
        body = f'{{"error": "request body larger than {self.limit >> 10} KiB"}}'.encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
