"""MkDocs hook: the reference parts of the pages made from the code (tracker.reference) at every
build, so the settings table and the command-line reference cannot drift from it."""

from __future__ import annotations

from tracker.reference import fill


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    return fill(markdown)
