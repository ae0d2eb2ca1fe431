"""The console's users: names and roles checked, passwords hashed with argon2id (argon2-cffi,
RFC 9106 parameters) and verified; stored by :class:`tracker.stores.users.UserStore`.

Roles: a *viewer* reads everything; an *operator* also checks texts and URLs and runs scheduler
jobs. ``session_key`` changes whenever the password or role does, which ends every session
signed before (see :mod:`tracker.console.auth`).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from pymongo.database import Database

from tracker.stores.users import StoredUser, UserStore

VIEWER, OPERATOR = "viewer", "operator"
ROLES = (VIEWER, OPERATOR)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
MIN_PASSWORD = 8
MAX_PASSWORD = 1024  # argon2 hashes any length; a megabyte "password" is only a way to load us

_HASHER = PasswordHasher()
# Verified when the name is unknown, so a wrong name costs the same time as a wrong password.
_DUMMY_HASH = _HASHER.hash(secrets.token_urlsafe(16))


class UserError(ValueError):
    """A user name, role or password is not acceptable; the message says why."""


@dataclass(frozen=True)
class User:
    name: str
    role: str
    session_key: str

    @property
    def is_operator(self) -> bool:
        return self.role == OPERATOR


class Users:
    def __init__(self, db: Database) -> None:
        self.store = UserStore(db)

    def add(self, name: str, role: str, password: str, *, replace: bool = False) -> User:
        """Create user ``name`` (or, with ``replace``, give an existing one a new password and
        role, which ends its sessions)."""
        check_name(name)
        if role not in ROLES:
            raise UserError(f"unknown role {role!r}: use {' or '.join(ROLES)}")
        if len(password) < MIN_PASSWORD:
            raise UserError(f"the password is shorter than {MIN_PASSWORD} characters")
        if len(password) > MAX_PASSWORD:
            raise UserError(f"the password is longer than {MAX_PASSWORD} characters")
        if not replace and self.store.exists(name):
            raise UserError(f"user {name!r} exists already (--replace gives it a new password)")
        session_key = secrets.token_urlsafe(12)
        self.store.save(name, role, _HASHER.hash(password), session_key, datetime.now(UTC))
        return User(name, role, session_key)

    def remove(self, name: str) -> bool:
        return self.store.remove(name)

    def list(self) -> list[dict[str, Any]]:
        """Every user, by name, without the password hashes."""
        return self.store.listing()

    def get(self, name: str) -> User | None:
        if not isinstance(name, str) or not NAME.fullmatch(name):
            return None
        stored = self.store.get(name)
        return _user(stored) if stored else None

    def verify(self, name: str, password: str) -> User | None:
        """The user whose name and password these are, else None (in the same time either
        way)."""
        stored = None
        if isinstance(name, str) and NAME.fullmatch(name) and len(password) <= MAX_PASSWORD:
            stored = self.store.get(name, with_hash=True)
        try:
            _HASHER.verify(stored.password_hash if stored else _DUMMY_HASH, password)
        except (VerificationError, InvalidHashError):
            return None
        return _user(stored) if stored else None


def check_name(name: str) -> None:
    if not NAME.fullmatch(name):
        raise UserError(
            f"invalid user name {name!r}: 1-64 letters, digits and _ . @ - (a letter or digit "
            "first)"
        )


def _user(stored: StoredUser) -> User | None:
    if stored.role not in ROLES:
        return None
    return User(stored.name, stored.role, stored.session_key)
