"""One way to HTML: Jinja2 templates (autoescaped, :mod:`tracker.html`). A guard that fails on
HTML written in Python strings anywhere in ``tracker/`` but the demo's pirate site, and on
template output that bypasses escaping."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "tracker"
EXEMPT = ("demo",)  # the demo's pirate site writes its pages as a pirate would
#: HTML and SVG elements: ``<name`` followed by a space, ``>`` or ``/``, or a closing tag.
ELEMENTS = " ".join(
    [
        "!doctype a abbr article aside b blockquote body br button caption circle code details",
        "div em embed footer form g h1 h2 h3 h4 h5 h6 head header hr html i iframe img input",
        "label li line link main mark meta nav object ol option p path polygon polyline pre",
        "rect script section select small span strong style sub summary sup svg table tbody td",
        "text textarea tfoot th thead title tr u ul",
    ]
).split()
TAG = re.compile(rf"</?(?:{'|'.join(re.escape(e) for e in ELEMENTS)})(?=[\s/>])", re.I)


def docstrings(tree: ast.AST) -> set[int]:
    """``id`` of the string constants that are docstrings (prose that may name a tag)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def html_strings(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every string or bytes literal (f-string parts included) of
    ``source`` that holds an HTML tag, docstrings left out."""
    tree = ast.parse(source)
    skip = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in skip:
            continue
        value = node.value
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if isinstance(value, str) and TAG.search(value):
            found.append((node.lineno, value))
    return found


def offenders(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] in EXEMPT:
            continue
        for line, text in html_strings(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(root.parent)}:{line}: {text[:60]!r}")
    return found


@pytest.mark.parametrize(
    "source",
    [
        'x = f"<td>{value}</td>"',
        'x = "<a href=\\"%s\\">" % url',
        "x = '<svg xmlns=\"http://www.w3.org/2000/svg\">' + body",
        'x = "<p>{}</p>".format(text)',
        'x = "".join(["<tr>", cell, "</tr>"])',
        'x = b"<html><body>"',
        'def f():\n    return f"""<section class="work">\n{rows}</section>"""',
    ],
)
def test_the_guard_catches_html_in_python_strings(source):
    assert html_strings(source), source


@pytest.mark.parametrize(
    "source",
    [
        '"""A docstring may name <br> and <meta> tags."""',
        'def f():\n    """Reads ``<link rel=canonical>``."""',
        'x = re.compile(r"</(?:body|html)\\s*>")',
        'x = "<data_dir>/inbox"',
        'x = "a < b and c > d"',
        'x = "<prefix>crawl:<crawl id>"',
    ],
)
def test_the_guard_lets_prose_and_patterns_pass(source):
    assert not html_strings(source), source


def test_no_html_is_built_in_python_strings_outside_the_demo():
    found = offenders(PACKAGE)
    assert not found, "HTML belongs in Jinja2 templates (tracker/html/):\n" + "\n".join(found)


def test_templates_never_bypass_escaping():
    """No template marks a value safe: everything a template prints is escaped."""
    templates = [
        p for p in PACKAGE.rglob("*.html") if p.relative_to(PACKAGE).parts[0] not in EXEMPT
    ]
    assert templates
    for path in templates:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\|\s*safe\b|autoescape\s+false", text), path
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] in EXEMPT:
            continue
        assert not re.search(r"\bMarkup\(|markupsafe", path.read_text(encoding="utf-8")), path
