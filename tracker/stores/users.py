"""The web console's users in MongoDB (``users``): one document per user, ``_id`` = the name,
with the role, the password's hash, a session key and when it was created and last changed.

Names, roles and passwords are checked and hashed by :mod:`tracker.console.users`; this store
keeps what it is given and never returns a hash unless asked for one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import ASCENDING
from pymongo.database import Database


@dataclass(frozen=True)
class StoredUser:
    """A user as stored: its role (any string: the console refuses roles it does not know),
    session key and, when asked for, password hash (else empty)."""

    name: str
    role: Any
    session_key: str
    password_hash: str = ""


class UserStore:
    def __init__(self, db: Database) -> None:
        self.users = db["users"]

    def exists(self, name: str) -> bool:
        return self.users.find_one({"_id": name}, {"_id": 1}) is not None

    def save(
        self, name: str, role: str, password_hash: str, session_key: str, now: datetime
    ) -> None:
        """Create user ``name``, or give it this role, password hash and session key."""
        fields = {
            "role": role,
            "password_hash": password_hash,
            "session_key": session_key,
            "updated_at": now,
        }
        self.users.update_one(
            {"_id": name}, {"$set": fields, "$setOnInsert": {"created_at": now}}, upsert=True
        )

    def remove(self, name: str) -> bool:
        """Remove user ``name``; False when there is none."""
        return self.users.delete_one({"_id": name}).deleted_count > 0

    def listing(self) -> list[dict[str, Any]]:
        """Every user (``_id``, ``role``, ``created_at``, ``updated_at``), by name, without
        password hashes or session keys (a handful of documents: the empty filter's collection
        scan costs nothing here)."""
        found = self.users.find({}, {"password_hash": 0, "session_key": 0})
        return list(found.sort("_id", ASCENDING))

    def get(self, name: str, *, with_hash: bool = False) -> StoredUser | None:
        """User ``name`` (with its password hash when ``with_hash``), or None."""
        doc = self.users.find_one({"_id": name}, None if with_hash else _WITHOUT_HASH)
        if doc is None:
            return None
        return StoredUser(
            str(doc["_id"]),
            doc.get("role"),
            str(doc.get("session_key") or ""),
            str(doc.get("password_hash") or ""),
        )


_WITHOUT_HASH = {"role": 1, "session_key": 1}
