"""The docs site's reference parts, made from the code so that they cannot drift from it.

- :func:`settings_table`: every setting of the one settings model (:mod:`tracker.config`), its
  environment variable, its default and what it does (the ``doc`` each setting carries);
- :func:`cli_reference`: every ``tracker`` command's ``--help``, as argparse prints it.

``docs/hooks.py`` puts them into the pages where the markers :data:`MARKERS` stand, at every
``mkdocs build`` or ``mkdocs serve``; ``python -m tracker.reference settings|cli`` prints them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import MISSING, Field, fields

from tracker.config import Settings, env_name

#: The width the help texts are wrapped at on the page (argparse reads ``COLUMNS``).
HELP_WIDTH = 100


def shown_default(spec: Field) -> str:
    """A setting's default as the table writes it: its literal value in code, or the words
    the setting gives for a default that is none or made from another (``<data_dir>/inbox``)."""
    if "default_text" in spec.metadata:
        return spec.metadata["default_text"]
    value = spec.default if spec.default is not MISSING else spec.default_factory()  # type: ignore[misc]
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"`{value:g}`"
    if isinstance(value, str) and value:
        return f"`{value}`"
    return "none"


def settings_rows() -> Iterator[tuple[str, str, str, str]]:
    """(setting, environment variable, default, meaning) of every setting, in model order."""
    for spec in fields(Settings):
        doc = spec.metadata.get("doc", "")
        yield f"`{spec.name}`", f"`{env_name(spec.name)}`", shown_default(spec), doc


def settings_table() -> str:
    """The configuration page's table: one row a setting."""
    lines = ["| setting | environment | default | meaning |", "|---|---|---|---|"]
    lines += [
        "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
        for row in settings_rows()
    ]
    return "\n".join(lines) + "\n"


def command_parsers(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``(name, parser)`` of a parser and of each of its sub-commands, depth first."""
    yield (prefix or parser.prog), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from command_parsers(sub, f"{prefix or parser.prog} {name}")


def help_text(parser: argparse.ArgumentParser) -> str:
    """A parser's ``--help``, wrapped at :data:`HELP_WIDTH` whatever the terminal."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_WIDTH)
    try:
        return parser.format_help()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def cli_reference() -> str:
    """Every command's ``--help``, a section each (``tracker``, ``tracker index``,
    ``tracker index stats``, …)."""
    from tracker.cli import build_parser

    parts = []
    for name, parser in command_parsers(build_parser()):
        level = "##" if name.count(" ") <= 1 else "###"
        parts.append(f"{level} `{name}`\n\n```text\n{help_text(parser).rstrip()}\n```\n")
    return "\n".join(parts)


#: The markers the docs pages hold, and what stands in for each.
MARKERS: dict[str, Callable[[], str]] = {
    "<!-- generated: settings table -->": settings_table,
    "<!-- generated: cli reference -->": cli_reference,
}


def fill(markdown: str) -> str:
    """A page's Markdown with each marker it holds replaced by what it stands for."""
    for marker, make in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


if __name__ == "__main__":
    which = {"settings": settings_table, "cli": cli_reference}
    if len(sys.argv) != 2 or sys.argv[1] not in which:
        sys.exit("usage: python -m tracker.reference settings|cli")
    sys.stdout.write(which[sys.argv[1]]())
