"""Request dependencies shared by the API and the pages: the console, the caller and their
role, and validated query parameters (plain strings and numbers of bounded size: no value of a
request ever reaches MongoDB as an operator or a document)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request

from tracker.console.auth import Forbidden, NotAuthenticated, Principal

MAX_PER_PAGE = 500


def console(request: Request):
    return request.app.state.console


def viewer(request: Request) -> Principal:
    """Any signed-in user (401 or the login form otherwise)."""
    principal = console(request).auth.principal(request)
    if principal is None:
        raise NotAuthenticated
    request.state.principal = principal
    return principal


def operator(principal: Annotated[Principal, Depends(viewer)]) -> Principal:
    """A user with the operator role (403 for a viewer)."""
    if not principal.user.is_operator:
        raise Forbidden
    return principal


def day_of(value: str | None) -> date:
    """``YYYY-MM-DD`` (default: today, UTC) as a date; 422 when it is no date."""
    if value is None or value == "":
        return datetime.now(UTC).date()
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError
        return date.fromisoformat(value)
    except ValueError:
        raise HTTPException(422, f"invalid date {value!r}: expected YYYY-MM-DD") from None


Viewer = Annotated[Principal, Depends(viewer)]
Operator = Annotated[Principal, Depends(operator)]
DateParam = Annotated[
    str | None, Query(max_length=10, description="UTC day, YYYY-MM-DD (default: today)")
]
WorkParam = Annotated[str | None, Query(max_length=300, description="only pages copying it")]
SiteParam = Annotated[str | None, Query(max_length=300, description="only pages on this host")]
ScoreParam = Annotated[
    float | None, Query(ge=0.0, le=1.0, description="only pages scoring at least this")
]
PageParam = Annotated[int, Query(ge=1, le=1_000_000, description="page of the list, from 1")]
PerPageParam = Annotated[int, Query(ge=1, le=MAX_PER_PAGE, description="items per page")]
