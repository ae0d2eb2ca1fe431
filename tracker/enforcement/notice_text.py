"""The text of a takedown notice, from Jinja2 templates: ``notice.zh.txt`` (a 侵权通知书, the
default) and ``notice.en.txt`` (an English DMCA-style notice, for hosts abroad), in
``tracker/enforcement/templates/``. A template of the same name in ``<data_dir>/templates/``
is used instead, so a legal team changes the wording without touching the package.

A template is given one line of plain text for every value (:func:`plain`: control and format
characters, line breaks among them, removed), so neither a crawled page (URLs, titles,
passages) nor a setting (the rights holder's address) can forge or hide a part of the notice.
It renders in Jinja2's sandbox, with undefined names an error; the subject is what it sets
as ``subject``. A template that does not render is a :class:`TemplateFailed` naming the file
and the line: the notice is then neither recorded nor sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracker.reports.notices import plain

TEMPLATES = Path(__file__).parent / "templates"
LANGUAGES = ("zh", "en")


class TemplateFailed(ValueError):
    """A notice template is missing, does not parse or fails to render."""


def template_name(language: str) -> str:
    return f"notice.{language}.txt"


def template_folders(data_dir: Path) -> list[Path]:
    """Where notice templates are looked for, first found first: the data directory's
    ``templates/``, then the package's."""
    return [Path(data_dir) / "templates", TEMPLATES]


def render_notice(data_dir: Path, language: str, context: dict[str, Any]) -> tuple[str, str]:
    """``(subject, text)`` of the notice ``context`` describes, in ``language``."""
    from jinja2 import FileSystemLoader, StrictUndefined, TemplateError, TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(
        loader=FileSystemLoader([str(folder) for folder in template_folders(data_dir)]),
        autoescape=False,  # plain text: the values are made plain lines instead (see above)
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    name = template_name(language)
    try:
        template = env.get_template(name)
    except TemplateSyntaxError as exc:
        raise TemplateFailed(
            f"the notice template {exc.filename or name}, line {exc.lineno}: {exc.message}"
        ) from None
    except TemplateError as exc:
        raise TemplateFailed(f"the notice template {name} cannot be read: {exc}") from None
    where = template.filename or name
    try:
        module = template.make_module(context)
        text = str(module)
    except Exception as exc:  # a template is code: anything it raises is its failure
        line = _template_line(exc, template.filename)
        at = f", line {line}" if line else ""
        what = exc.message if isinstance(exc, TemplateError) and exc.message else repr(exc)
        raise TemplateFailed(f"the notice template {where}{at} failed: {what}") from None
    subject = plain(getattr(module, "subject", ""), 200)
    if not subject:
        raise TemplateFailed(f"the notice template {where} sets no subject ({{% set subject %}})")
    lines = [line.rstrip() for line in text.splitlines()]
    if not any(lines):
        raise TemplateFailed(f"the notice template {where} wrote nothing")
    return subject, "\n".join(lines).strip("\n") + "\n"


def _template_line(exc: BaseException, filename: str | None) -> int | None:
    """The template's line where ``exc`` was raised (Jinja2 maps its frames to the template)."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if filename and tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
