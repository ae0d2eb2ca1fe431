"""Deploying the spiders to Scrapyd as users do: ``scrapyd-deploy`` builds the project's egg
from a clean copy of the project and uploads it (``addversion.json``) to a Scrapyd started on
127.0.0.1, which runs ``novel`` from the egg (``schedule.json``, ``listjobs.json``) against the
demo pirate site and the test servers: the pages are stored and matched as a crawl stores
them."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest

from tracker.demo.site import build_site, master_documents, serve
from tracker.matching.library import MasterLibrary

pytest.importorskip("scrapyd", reason="Scrapyd is in the test extra: pip install -e '.[test]'")
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
#: What the egg is built from: the project as a checkout holds it, nothing else.
PROJECT = ("scrapy.cfg", "setup.py", "pyproject.toml", "README.md")
PACKAGES = ("tracker", "spiders", "pipelines")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(base: str, endpoint: str, **fields: str | list[str]) -> dict:
    """A Scrapyd API call: GET with no fields, else a form POST."""
    data = urlencode(fields, doseq=True).encode() if fields else None
    with urlopen(base + endpoint, data=data, timeout=30) as answer:
        reply = json.load(answer)
    assert reply["status"] == "ok", reply
    return reply


@pytest.fixture()
def project(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the project whose ``scrapyd`` deploy target names the test's Scrapyd."""
    copy = tmp_path / "project"
    copy.mkdir()
    for name in PROJECT:
        shutil.copy(ROOT / name, copy / name)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    for variable in [v for v in os.environ if v.startswith("SCRAPY")]:
        monkeypatch.delenv(variable)
    return copy


@pytest.fixture()
def scrapyd(tmp_path: Path, server_env):
    """Scrapyd on a free loopback port, its files under ``tmp_path``, its jobs reaching the
    test servers through the environment they inherit."""
    home = tmp_path / "scrapyd"
    home.mkdir()
    port = free_port()
    (home / "scrapyd.conf").write_text(
        f"[scrapyd]\nbind_address = 127.0.0.1\nhttp_port = {port}\n"
        f"eggs_dir = {home}/eggs\nlogs_dir = {home}/logs\ndbs_dir = {home}/dbs\n"
        "items_dir =\npoll_interval = 0.5\nmax_proc = 1\n"
    )
    with (home / "scrapyd.log").open("wb") as log:
        process = subprocess.Popen(
            [str(BIN / "scrapyd")], cwd=home, env=server_env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                api(base, "daemonstatus.json")
                break
            except OSError:
                assert process.poll() is None, (home / "scrapyd.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "Scrapyd did not answer within 60 s"
                time.sleep(0.2)
        yield base, home
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # Scrapyd and any job it still runs
        process.wait(timeout=30)


def test_the_egg_deployed_to_scrapyd_runs_a_crawl(project, scrapyd, runtime, tmp_path):
    base, home = scrapyd
    deploy = str(BIN / "scrapyd-deploy")

    # The egg, built as `scrapyd-deploy` builds it: the packages, their data, the settings.
    egg = tmp_path / "tracker.egg"
    subprocess.run([deploy, "--build-egg", str(egg)], cwd=project, check=True, timeout=120)
    with zipfile.ZipFile(egg) as packed:
        names = set(packed.namelist())
        entry_points = packed.read("EGG-INFO/entry_points.txt").decode()
    assert {"spiders/novel.py", "pipelines/store.py", "tracker/demo/data/红楼梦.txt"} <= names
    assert not {name for name in names if name.startswith(("tests/", "bench/"))}
    assert "[scrapy]\nsettings = tracker.crawling.settings" in entry_points

    # Uploaded (addversion.json) to the scrapy.cfg target `scrapyd`, named for this Scrapyd.
    config = configparser.ConfigParser()
    config.read(project / "scrapy.cfg")
    assert config["deploy"]["project"] == "tracker"
    config["deploy:scrapyd"]["url"] = base
    with (project / "scrapy.cfg").open("w") as fh:
        config.write(fh)
    upload = subprocess.run(
        [deploy, "scrapyd", "--version", "1", "--egg", str(egg)],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert upload.returncode == 0, upload.stderr
    # Every spider of the project is in the egg (Scrapy's own loader counts the project's).
    spiders = _project_spiders()
    assert json.loads(upload.stdout)["spiders"] == len(spiders)
    listed = api(base, "listspiders.json?project=tracker")["spiders"]
    assert sorted(listed) == sorted(spiders)

    # A crawl scheduled through the API, run from the egg against the test servers.
    MasterLibrary.from_runtime(runtime).ingest(master_documents())
    manifest = build_site(tmp_path / "site")
    with serve(manifest.root) as site:
        job = api(
            base,
            "schedule.json",
            project="tracker",
            spider="novel",
            start_url=site.url,
            setting=["AUTOTHROTTLE_ENABLED=0"],
        )["jobid"]
        deadline = time.monotonic() + 120
        while True:
            jobs = api(base, "listjobs.json?project=tracker")
            if any(done["id"] == job for done in jobs["finished"]):
                break
            assert time.monotonic() < deadline, f"job {job} still {jobs}"
            time.sleep(0.5)

    log = (home / "logs" / "tracker" / "novel" / f"{job}.log").read_text(encoding="utf-8")
    found = {
        doc["_id"].removeprefix(site.url): sorted(doc.get("matched_doc_ids", []))
        for doc in runtime.db["pages"].find({}, {"matched_doc_ids": 1})
    }
    matched = {path: ids for path, ids in found.items() if ids}
    assert matched == {path: sorted(ids) for path, ids in manifest.expected.items()}, log[-3000:]
    innocent = set(found) - set(matched)
    assert innocent and innocent <= set(manifest.innocent)  # stored, not flagged
    [run] = list(runtime.db["crawl_runs"].find())
    assert (run["status"], run["reason"], run["scrapyd_job"]) == ("ok", "finished", job)


def _project_spiders() -> list[str]:
    """The spiders Scrapy finds in this project (``scrapy list``)."""
    from scrapy.spiderloader import SpiderLoader
    from scrapy.utils.project import get_project_settings

    names = SpiderLoader.from_settings(get_project_settings()).list()
    assert {"novel", "news", "site", "discover"} <= set(names)
    return names
