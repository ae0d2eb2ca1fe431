"""The web console (``tracker serve``): the record in a browser, for the people who act on it.

A FastAPI application reading the same MongoDB as the rest of the tracker: a dashboard of the
day, the infringing pages with filters, the evidence of a page (its copied passages beside the
master's), works and sites, the scheduler's jobs, ad-hoc checks and report downloads, and a
JSON API for the same (``/docs``). Users and roles: :mod:`~tracker.console.users`; sign-in,
sessions and CSRF: :mod:`~tracker.console.auth`; what a day shows: :mod:`~.figures`.
"""

from tracker.console.app import create_app

__all__ = ["create_app"]
