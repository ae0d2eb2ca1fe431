"""The one settings model: the configuration page's table is made from it, every TRACKER_X
variable is setting x, values are checked by name, and the crawl's Scrapy settings take their
defaults from the model (environment and file) while -s still overrides them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from tracker.config import CRAWL_SETTINGS, ConfigError, Settings, env_name
from tracker.crawling.crawl import crawl_environment
from tracker.reference import settings_table

PROJECT = Path(__file__).resolve().parents[1]


def page_settings() -> dict[str, tuple[str, str, str]]:
    """The configuration page's table, as generated from the model: setting -> (environment
    cell, default cell, meaning)."""
    page = (PROJECT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert "<!-- generated: settings table -->" in page, "the page no longer shows the table"
    rows: dict[str, tuple[str, str, str]] = {}
    for line in settings_table().splitlines()[2:]:
        name, env, default, meaning = (cell.strip() for cell in line.strip("|").split(" | ", 3))
        assert name not in rows, f"{name} has two rows"
        rows[name] = (env, default, meaning)
    return rows


def shown(value: object) -> str | None:
    """A default as the table writes it, or None when the table describes it in words."""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"`{value:g}`"
    if isinstance(value, str) and value:
        return f"`{value}`"
    return None  # none, a computed path, a list


def test_the_configuration_page_documents_every_setting_with_its_variable_and_default():
    rows = page_settings()
    model = {f.name: f for f in fields(Settings)}
    assert set(rows) == {f"`{name}`" for name in model}, "configuration page and model differ"
    defaults = Settings()
    for name, spec in model.items():
        env, default, meaning = rows[f"`{name}`"]
        assert env == f"`{env_name(name)}`", name
        assert len(meaning) >= 10, f"setting {name} says nothing of what it does (its doc)"
        expected = shown(getattr(defaults, name))
        if expected is not None:
            assert default == expected, (name, default, expected)
            assert "default_text" not in spec.metadata, f"{name}: its value is its default text"
        else:
            # no literal value but words: none, a path computed from another (`<data_dir>/…`)
            assert default == "none" or not re.fullmatch(r"`[^`<~]*`", default), (name, default)


def test_the_readme_no_longer_keeps_a_settings_table():
    """One place for the settings' documentation: the model (the page is made from it)."""
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert "| setting | environment | default | meaning |" not in readme


def test_every_tracker_variable_is_its_setting(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no ./tracker.toml
    for name in [key for key in os.environ if key.startswith("TRACKER_")]:
        monkeypatch.delenv(name)
    values = {
        "TRACKER_BATCH_SIZE": ("32", 32),
        "TRACKER_BATCH_DELAY": ("0.5", 0.5),
        "TRACKER_DISTRIBUTED": ("yes", True),
        "TRACKER_PROXIES": ("http://a:1, http://b:2", ("http://a:1", "http://b:2")),
        "TRACKER_TRAP_SESSION_PARAMS": (
            json.dumps(["a, with a comma", "b"]),
            ("a, with a comma", "b"),
        ),
        "TRACKER_RENDER": ("Never", "never"),
        "TRACKER_BAN_MAX_WAIT": ("120", 120.0),
        "TRACKER_MIN_COVERAGE": ("0.3", 0.3),
        "TRACKER_NOTICE_ATTACHMENTS": ("WACZ", "wacz"),
    }
    for key, (raw, _) in values.items():
        monkeypatch.setenv(key, raw)
    loaded = Settings.load()
    for key, (_, value) in values.items():
        name = key.removeprefix("TRACKER_").lower()
        assert getattr(loaded, name) == value, key


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"batch_size": 0}, "setting batch_size (TRACKER_BATCH_SIZE)=0 is out of range"),
        ({"min_coverage": 1.5}, "min_coverage (TRACKER_MIN_COVERAGE)=1.5 is out of range"),
        ({"index_bucket_bits": 30}, "it must be from 16 to 24"),
        ({"batch_size": "many"}, "batch_size (TRACKER_BATCH_SIZE)='many' is not a valid int"),
        ({"batch_size": 2.5}, "is not a valid int"),
        ({"distributed": "perhaps"}, "distributed (TRACKER_DISTRIBUTED)='perhaps'"),
        ({"render": "sometimes"}, "render (TRACKER_RENDER): 'sometimes' is not one of auto"),
        (
            {"notice_attachments": "zip"},
            "notice_attachments (TRACKER_NOTICE_ATTACHMENTS): 'zip' is not one of files, wacz",
        ),
        ({"proxies": 5}, "proxies (TRACKER_PROXIES)=5 is not a valid list of strings"),
        ({"batch_sise": 3}, "unknown setting(s): batch_sise (did you mean batch_size?)"),
    ],
)
def test_a_bad_value_in_the_file_names_the_setting_and_its_variable(
    values, words, tmp_path, monkeypatch
):
    monkeypatch.delenv("TRACKER_BATCH_SIZE", raising=False)
    path = tmp_path / "tracker.toml"
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()))
    with pytest.raises(ConfigError) as raised:
        Settings.load(path)
    assert words in str(raised.value)


def test_a_misspelt_variable_is_an_error_and_unrelated_ones_are_left_alone(monkeypatch):
    monkeypatch.setenv("TRACKER_IMAGE", "tracker:dev")  # deploy/compose.yaml's, not a setting
    Settings.load()
    monkeypatch.setenv("TRACKER_EXTRACT_PROCESES", "2")
    with pytest.raises(ConfigError, match="did you mean TRACKER_EXTRACT_PROCESSES"):
        Settings.load()


def scrapy_settings(env: dict[str, str], *overrides: str, cwd: Path) -> dict:
    """The crawl's TRACKER_* settings as ``scrapy`` sees them (its project settings and -s)."""
    code = (
        "import json, sys\n"
        "from scrapy.utils.project import get_project_settings\n"
        "s = get_project_settings()\n"
        "for pair in sys.argv[1:]:\n"
        "    k, v = pair.split('=', 1); s.set(k, v, priority='cmdline')\n"
        "print(json.dumps({k: s.get(k) for k in s if k.startswith(('TRACKER_', 'HTTPCACHE_E'))}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *overrides],
        env={
            **env,
            "PYTHONPATH": str(PROJECT),
            "SCRAPY_SETTINGS_MODULE": "tracker.crawling.settings",
        },
        cwd=cwd,
        capture_output=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_crawl_takes_its_knobs_from_the_model_and_s_overrides_them(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKER_", "SCRAPY"))}
    env["TRACKER_DATA_DIR"] = str(tmp_path / "data")
    defaults = scrapy_settings(env, cwd=tmp_path)
    model = Settings()
    for name in CRAWL_SETTINGS:
        key = "HTTPCACHE_ENABLED" if name == "httpcache" else f"TRACKER_{name.upper()}"
        value = getattr(model, name)
        assert defaults[key] == (list(value) if isinstance(value, tuple) else value), key
    # Every TRACKER_* setting of the Scrapy module is a setting of the model.
    own = {f"TRACKER_{name.upper()}" for name in CRAWL_SETTINGS}
    assert {k for k in defaults if k.startswith("TRACKER_")} <= own

    (tmp_path / "tracker.toml").write_text("batch_size = 32\nhttpcache = true\n")
    from_file = scrapy_settings(env, cwd=tmp_path)
    assert (from_file["TRACKER_BATCH_SIZE"], from_file["HTTPCACHE_ENABLED"]) == (32, True)
    from_env = scrapy_settings({**env, "TRACKER_BATCH_SIZE": "48"}, cwd=tmp_path)
    assert from_env["TRACKER_BATCH_SIZE"] == 48  # the environment wins over the file
    per_run = scrapy_settings(env, "TRACKER_BATCH_SIZE=64", cwd=tmp_path)
    assert int(per_run["TRACKER_BATCH_SIZE"]) == 64  # -s wins over both


def test_a_crawl_process_runs_with_exactly_the_callers_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("TRACKER_BATCH_SIZE", "99")  # of this process, not of the settings given
    settings = Settings(data_dir=tmp_path, batch_size=24, proxies=("http://p:1",))
    env = crawl_environment(settings)
    assert env["TRACKER_BATCH_SIZE"] == "24" and env["TRACKER_PROXIES"] == '["http://p:1"]'
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tracker.toml").write_text("batch_size = 7\n")  # the crawl's cwd has a file
    for key in [k for k in os.environ if k.startswith("TRACKER_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert Settings.load() == settings
