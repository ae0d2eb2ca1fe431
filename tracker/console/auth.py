"""Who is asking: HTTP Basic on every route, or the session cookie the login form sets.

* **Sessions** are signed cookies (itsdangerous, HMAC-SHA1 over the payload with a key made
  once and kept in ``<data_dir>/console/secret``, mode 0600): ``{"u": name, "k": session key,
  "c": CSRF seed}``, checked against the user's current ``session_key`` on every request, so a
  removed user or a changed password ends them. The cookie is HttpOnly, SameSite=Lax (sent on
  links into the console, never on another site's POST) and Secure when served over https.
* **CSRF**: every form carries ``HMAC(key, name, seed)`` and every form POST must return it;
  the seed is the session's, or for HTTP Basic (which browsers also send by themselves) a fixed
  one per user. JSON API POSTs need ``Content-Type: application/json``, which another site's
  page cannot send without a CORS preflight that the console never grants.
* **HTTP Basic** verifications (argon2id, ~50 ms) are remembered for a minute under an HMAC of
  the name and password, so an API client sending them with each request is not slowed down.
* **Guessing** is throttled per account and per client address (:mod:`tracker.console.throttle`),
  for the sign-in form and HTTP Basic alike: a locked account or address is refused before any
  password is checked, remembered ones included.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request

from tracker.config import Settings
from tracker.console.throttle import LoginThrottle, Standing, Throttled
from tracker.console.users import User, Users
from tracker.servers.services import private_secret

SESSION_COOKIE = "tracker_session"
LOGIN_COOKIE = "tracker_login"  # the login form's own CSRF seed, before there is a session
BASIC_CACHE_S = 60.0
BASIC_CACHE_SIZE = 256


@dataclass(frozen=True)
class Principal:
    """An authenticated request: the user, how they proved it, and their forms' CSRF token."""

    user: User
    method: str  # "basic" or "session"
    csrf: str


class NotAuthenticated(Exception):
    """No valid credentials: 401 (the API) or the login form (pages)."""


class Forbidden(Exception):
    """Authenticated, but the action is an operator's: 403."""


def signing_key(settings: Settings) -> str:
    return private_secret(Path(settings.data_dir) / "console" / "secret", 32)


class Authenticator:
    def __init__(self, settings: Settings, users: Users, throttle: LoginThrottle) -> None:
        self.users = users
        self.throttle = throttle
        self.key = signing_key(settings).encode()
        self.max_age = max(1, settings.console_session_hours) * 3600
        self.sessions = URLSafeTimedSerializer(self.key, salt="tracker-console-session")
        self._basic: dict[str, tuple[float, User]] = {}
        self._basic_lock = threading.Lock()

    # ------------------------------------------------------------------------- requests

    def principal(self, request: Request) -> Principal | None:
        """The caller, from the ``Authorization: Basic`` header (which wins when both are
        sent) or the session cookie; None when neither is valid."""
        header = request.headers.get("authorization", "")
        if header[:6].lower() == "basic ":
            user = self._basic_user(header[6:].strip(), client_address(request))
            return Principal(user, "basic", self.csrf_token(user, "basic")) if user else None
        cookie = request.cookies.get(SESSION_COOKIE)
        if not cookie:
            return None
        try:
            data = self.sessions.loads(cookie, max_age=self.max_age)
        except BadSignature:  # also SignatureExpired
            return None
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), str) for k in ("u", "k", "c")
        ):
            return None
        user = self.users.get(data["u"])
        if user is None or not hmac.compare_digest(user.session_key, data["k"]):
            return None
        return Principal(user, "session", self.csrf_token(user, data["c"]))

    def session_cookie(self, user: User) -> str:
        payload = {"u": user.name, "k": user.session_key, "c": secrets.token_urlsafe(16)}
        return self.sessions.dumps(payload)

    def csrf_token(self, user: User, seed: str) -> str:
        message = f"csrf\x00{user.name}\x00{user.session_key}\x00{seed}".encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def login_token(self, seed: str) -> str:
        return hmac.new(self.key, f"login\x00{seed}".encode(), hashlib.sha256).hexdigest()

    @staticmethod
    def same(token: object, expected: str) -> bool:
        return isinstance(token, str) and hmac.compare_digest(token.encode(), expected.encode())

    # -------------------------------------------------------------------------- sign in

    def sign_in(self, name: str, password: str, address: str) -> User | None:
        """The user whose name and password these are, else None (a failure counted); raises
        :class:`Throttled` while the account or the address is locked."""
        return self._verify(name, password, address, self._unless_locked(name, address))

    def _unless_locked(self, name: str, address: str) -> Standing:
        standing = self.throttle.standing(name, address)
        if standing.wait > 0:
            raise Throttled(standing.wait)
        return standing

    def _verify(self, name: str, password: str, address: str, standing: Standing) -> User | None:
        user = self.users.verify(name, password)
        if user is None:
            wait = self.throttle.failed(name, address)
            if wait > 0:
                raise Throttled(wait)
            return None
        self._succeeded(user, standing)
        return user

    def _succeeded(self, user: User, standing: Standing) -> None:
        if standing.failures:  # a write only where there are failures to forget
            self.throttle.succeeded(user.name)

    # ---------------------------------------------------------------------------- basic

    def _basic_user(self, encoded: str, address: str) -> User | None:
        try:
            decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        name, colon, password = decoded.partition(":")
        if not colon:
            return None
        standing = self._unless_locked(name, address)  # a remembered password too
        digest = hmac.new(self.key, f"{name}\x00{password}".encode(), "sha256").hexdigest()
        now = time.monotonic()
        with self._basic_lock:
            cached = self._basic.get(digest)
        if cached and cached[0] > now:
            current = self.users.get(name)  # removed, or given a new password meanwhile?
            if current is not None and current.session_key == cached[1].session_key:
                self._succeeded(current, standing)
                return current
        user = self._verify(name, password, address, standing)
        with self._basic_lock:
            if user is None:
                self._basic.pop(digest, None)
                return None
            if len(self._basic) >= BASIC_CACHE_SIZE:
                self._basic = {k: v for k, v in self._basic.items() if v[0] > now}
                if len(self._basic) >= BASIC_CACHE_SIZE:
                    self._basic.clear()
            self._basic[digest] = (now + BASIC_CACHE_S, user)
        return user


def client_address(request: Request) -> str:
    """The client's address as uvicorn resolved it (behind a proxy trusted with
    ``--forwarded-allow-ips``, the address it forwards for; never a header sent by anyone
    else)."""
    return request.client.host if request.client else ""


def safe_next(target: object) -> str:
    """Where to go after logging in: a path of this console only (never ``//host`` or a
    URL)."""
    if (
        isinstance(target, str)
        and target.startswith("/")
        and not target.startswith(("//", "/\\"))
        and len(target) < 2000
        and all(32 < ord(c) < 127 for c in target)
    ):
        return target
    return "/"
