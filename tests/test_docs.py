"""The documentation stays true (issue 38): the README is a landing page holding the two set-up
commands CI runs; the site builds with ``mkdocs build --strict`` and loads nothing from the
internet; every ``tracker`` command the README and the pages show answers ``--help``; the pages
that name jobs, settings and exit statuses name what the commands' own help names."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import re
import subprocess
import sys
from dataclasses import fields
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tracker.cli import build_parser, settings_help
from tracker.cli.run_job import JOBS
from tracker.config import Settings
from tracker.reference import command_parsers, help_text

PROJECT = Path(__file__).resolve().parents[1]
DOCS = PROJECT / "docs"
DEMO = "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/tracker demo"
TESTS = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/pytest -q"
SETTINGS = {spec.name for spec in fields(Settings)}


def pages() -> dict[str, str]:
    """The README and every page of the site, by name."""
    texts = {"README.md": (PROJECT / "README.md").read_text(encoding="utf-8")}
    for path in sorted(DOCS.glob("*.md")):
        texts[f"docs/{path.name}"] = path.read_text(encoding="utf-8")
    return texts


def test_the_readme_is_a_landing_page_with_the_two_commands_ci_runs():
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert f"\n{DEMO}\n" in readme and f"\n{TESTS}\n" in readme
    ci = (PROJECT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().splitlines()[-1] == TESTS, "CI no longer runs the README's test command"


def test_every_page_is_in_the_navigation_and_the_site_is_offline():
    import yaml

    config = yaml.safe_load((PROJECT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["font"] is False  # no Google Fonts
    assert "repo_url" not in config  # no repository widget asking GitHub for its stars

    def listed(nav) -> set[str]:
        if isinstance(nav, str):
            return {nav}
        items = nav.values() if isinstance(nav, dict) else nav
        return set().union(*(listed(item) for item in items))

    assert listed(config["nav"]) == {path.name for path in DOCS.glob("*.md")}


class _Loads(HTMLParser):
    """What a page makes the browser fetch: scripts, stylesheets, icons, images, frames."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "video", "audio") and values.get("src"):
            self.urls.append(values["src"])
        if tag == "link" and values.get("href"):
            rel = (values.get("rel") or "").split()
            if not {"canonical", "alternate", "prev", "next"} & set(rel):
                self.urls.append(values["href"])


def test_the_site_builds_strictly_with_every_setting_and_command(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for page in site.glob("*.html"):
        parser = _Loads()
        parser.feed(page.read_text(encoding="utf-8"))
        remote = [url for url in parser.urls if re.match(r"(https?:)?//", url)]
        assert not remote, (page.name, remote)
    configuration = (site / "configuration.html").read_text(encoding="utf-8")
    missing = [name for name in SETTINGS if f"<code>{name}</code>" not in configuration]
    assert not missing, f"settings not on the configuration page: {missing}"
    cli = (site / "cli.html").read_text(encoding="utf-8")
    for name, _parser in command_parsers(build_parser()):
        assert f"<code>{name}</code>" in cli, name
    assert (site / "bench" / "full.png").is_file()


# ------------------------------------------------------------------ the commands the pages show

#: Global options before the command, and whether each takes a value.
GLOBAL = {"-v": False, "--verbose": False, "--config": True, "--data-dir": True}


def _code(text: str) -> list[str]:
    """The code of a Markdown text: each line of its fenced blocks, and its inline code."""
    code = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S):
        code += block.splitlines()
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    code += re.findall(r"`([^`\n]+)`", prose)
    return code


def shown_commands(text: str) -> set[tuple[str, ...]]:
    """Every ``tracker COMMAND [ACTION]`` in the code of a page: the words that name a command
    (and its sub-command or action), global options skipped. A ``tracker`` that is a user's
    name (``sudo -u tracker env …``), a path or a module is not a command."""
    shown = set()
    for line in _code(text):
        for match in re.finditer(r"(?<![\w./@$:-])tracker(?=[ \t])([^|#;&)`\n]*)", line):
            words = match.group(1).split()
            while words and words[0] in GLOBAL:
                words = words[2:] if GLOBAL[words[0]] else words[1:]
            if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]) or words[0] == "env":
                continue
            shown.add(tuple(words[:3]))
    return shown


def _resolve(words: tuple[str, ...]) -> tuple[list[str], argparse.ArgumentParser]:
    """The command path ``words`` name, checked against the parsers: the command, then a
    sub-command or an action among the choices of the first positional argument."""
    parser = build_parser()
    path: list[str] = []
    for position, word in enumerate(words):
        subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subcommands:
            choices = subcommands[0].choices
            if word not in choices:
                assert position > 0, f"`tracker {' '.join(words)}`: no command {word!r}"
                return path, parser
            path.append(word)
            parser = choices[word]
            continue
        positional = [a for a in parser._actions if not a.option_strings and a.choices]
        if positional and re.fullmatch(r"[a-z][a-z-]*", word):
            assert word in positional[0].choices, f"`tracker {' '.join(words)}`: {word!r}"
        return path, parser
    return path, parser


def test_every_tracker_command_the_pages_show_answers_help():
    shown = {words: name for name, text in pages().items() for words in shown_commands(text)}
    assert ("crawl", "novel", "-a") in shown  # the pages do show commands
    for words, page in sorted(shown.items()):
        path, _parser = _resolve(words)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([*path, "--help"])
        assert exit_.value.code == 0, (page, words)
        assert out.getvalue().startswith(f"usage: tracker {' '.join(path)}".rstrip()), page


def test_a_command_that_does_not_exist_is_caught():
    with pytest.raises(AssertionError):
        _resolve(("nosuch",))
    with pytest.raises(AssertionError):
        _resolve(("index", "explode"))
    assert shown_commands("sudo -u tracker env X=1 `tracker.toml` `tracker/config.py`") == set()
    assert shown_commands("`tracker -v --config a.toml report --format json`") == {
        ("report", "--format", "json")
    }


# --------------------------------------------------------- what the pages name, the help names


@functools.cache
def _helps() -> dict[str, str]:
    """Every command's ``--help`` by its name (``tracker index``), on one line."""
    return {
        name: " ".join(help_text(parser).split())
        for name, parser in command_parsers(build_parser())
    }


def _help(*path: str) -> str:
    return _helps()[" ".join(("tracker", *path))]


def _settings_named(text: str) -> set[str]:
    return {word for word in re.findall(r"`([a-z_]+)`", text) if word in SETTINGS}


#: The task pages and the commands each documents.
PAGE_COMMANDS = {
    "library.md": ("ingest", "index"),
    "crawling.md": ("crawl",),
    "discovery.md": ("discover",),
    "checking.md": ("check",),
    "report.md": ("report",),
    "console.md": ("serve", "user"),
    "evidence.md": ("evidence", "notices", "takedown"),
    "scheduling.md": ("schedule", "run-job"),
    "deployment.md": ("services",),
}


def _paragraphs(text: str) -> list[str]:
    """A page's paragraphs (blocks between blank lines), a table's rows each one of its own."""
    paragraphs = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = block.strip().splitlines()
        rows = lines and all(line.startswith("|") for line in lines)
        paragraphs += lines if rows else [block]
    return paragraphs


def unnamed_settings(page: str, text: str) -> list[str]:
    """The settings ``text``, a task page, names (in code: `name`) that the help of the commands
    it is about does not. A setting belongs to the commands of the page, so their help (that
    of their sub-commands included) names it, or ``tracker --help`` does for the settings
    every command reads; a paragraph that names a setting of another command links to that
    command's page (``[crawl](crawling.md)``), and that page's commands' help counts too."""
    missing = []
    for paragraph in _paragraphs(text):
        linked = re.findall(r"\]\(([a-z-]+\.md)(?:#[^)]*)?\)", paragraph)
        commands = {c for p in (page, *linked) for c in PAGE_COMMANDS.get(p, ())}
        helps = " ".join(
            text
            for name, text in _helps().items()
            if name == "tracker" or name.split()[1] in commands
        )
        missing += [
            name
            for name in sorted(_settings_named(paragraph))
            if not re.search(rf"(?<!\w){name}(?!\w)", helps)
        ]
    return sorted(set(missing))


@pytest.mark.parametrize("page", sorted(PAGE_COMMANDS))
def test_the_help_of_a_pages_commands_names_every_setting_the_page_names(page):
    """Issue 38: every --help names every setting that the page for it names (the rule:
    :func:`unnamed_settings`). The help's lists come from tuples of setting names that
    ``settings_help`` checks against the settings model."""
    missing = unnamed_settings(page, (DOCS / page).read_text(encoding="utf-8"))
    commands = " ".join(PAGE_COMMANDS[page])
    assert not missing, f"settings {page} names and no --help of {commands} does: {missing}"


def test_a_setting_named_on_the_wrong_page_or_misspelt_is_caught():
    assert unnamed_settings("report.md", "kept `check_warm_s` seconds") == ["check_warm_s"]
    assert unnamed_settings("report.md", "the [check](checking.md#x) keeps `check_warm_s`") == []
    assert unnamed_settings("report.md", "| `check_warm_s` | [check](checking.md) |") == []
    assert unnamed_settings("report.md", "[check](checking.md)\n\n`check_warm_s`") == [
        "check_warm_s"
    ]
    assert unnamed_settings("deployment.md", "every write waits for `mongo_write_concern`") == []
    assert unnamed_settings("crawling.md", "`render` and `render_wait`") == []
    with pytest.raises(ValueError, match="max_input_kb"):
        settings_help("max_input_mb", "max_input_kb")


def test_schedule_and_run_job_help_name_every_job_of_the_scheduling_page():
    page = (DOCS / "scheduling.md").read_text(encoding="utf-8")
    jobs = set(re.findall(r"^\| `([a-z:A-Z]+)` \|", page, flags=re.M))
    assert jobs == set(JOBS) and all(job in _help("schedule") for job in jobs)
    assert all(job in _help("run-job") for job in jobs)


def test_every_command_of_the_exit_codes_page_gives_its_exit_statuses_in_its_help():
    page = (DOCS / "errors.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (`tracker [^|]*(?:\\\|[^|]*)*)\|", page, flags=re.M)
    commands = {
        tuple(w for w in words if re.fullmatch(r"[a-z][a-z-]*", w))[:2]
        for row in rows
        for cell in re.findall(r"`tracker ([^`]+)`", row)
        for words in [cell.split()]
    }
    assert ("check",) in {c[:1] for c in commands} and len(commands) >= 10
    for command in commands:
        path, _parser = _resolve(command)
        text = _help(*path)
        if not re.search(r"exit status|exits? \d", text, flags=re.I):
            text = _help(*path[:1])  # a command's actions share their command's help
        assert re.search(r"exit status|exits? \d", text, flags=re.I), path
