"""The deployment files, checked without Docker or systemd running: the compose file's
services, images, commands, environment, health checks, volumes and start order; the image's
Dockerfile; the systemd units' roles, stop order, kill mode and hardening (and, where
``systemd-analyze`` is installed, its own verification); the health check command."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from tracker.cli import build_parser, main
from tracker.config import Settings, env_name

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
ROLES = {
    "scheduler": ["tracker", "schedule"],
    "crawler": ["tracker", "crawl-worker"],
    "console": ["tracker", "serve", "--host", "0.0.0.0", "--port", "8080"],
}
#: The environment variables tracker reads: its settings (the crawl's included), and the file.
TRACKER_ENV = {"TRACKER_CONFIG"} | {env_name(f.name) for f in fields(Settings)}


def assert_cli_command(argv: list[str]) -> None:
    """``argv`` is a tracker command line the CLI accepts."""
    assert argv[0].endswith("tracker"), argv
    build_parser().parse_args(argv[1:])  # exits 2 on an unknown command or option


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def test_compose_runs_every_role_on_mongodb_and_redis(compose):
    services = compose["services"]
    assert set(services) == {"mongo", "redis", *ROLES}
    volumes = set(compose["volumes"])

    mongo = services["mongo"]
    assert mongo["image"].startswith("mongo:")
    replica_set = mongo["command"][mongo["command"].index("--replSet") + 1]
    assert "rs.initiate" in " ".join(mongo["healthcheck"]["test"])  # a set of one, made once
    assert "mongo-data:/data/db" in mongo["volumes"]
    redis = services["redis"]
    assert redis["image"].startswith(("valkey/valkey:", "redis:"))
    assert {"--appendonly", "noeviction"} <= set(redis["command"])
    assert "redis-data:/data" in redis["volumes"]

    for role, command in ROLES.items():
        service = services[role]
        assert service["command"] == command
        assert_cli_command(service["command"])
        build = service["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()
        env = service["environment"]
        assert set(env) <= TRACKER_ENV, set(env) - TRACKER_ENV
        assert env["MONGO_URL"] == f"mongodb://mongo:27017/?replicaSet={replica_set}"
        assert env["REDIS_URL"].startswith("redis://redis:6379/")
        assert service["depends_on"] == {
            "mongo": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"},
        }
        assert service["restart"] == "unless-stopped"
        for volume in service["volumes"]:
            source = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", volume).split(":")[0]  # defaults
            if source.startswith(("./", "../")):  # a file or folder of the project
                assert (DEPLOY / source).exists(), volume
            else:
                assert source in volumes, volume
    assert "tracker-data:/var/lib/tracker" in services["scheduler"]["volumes"]
    assert services["console"]["ports"] == ["127.0.0.1:8080:8080"]
    # Long enough for a running crawl to end when stopped.
    assert services["scheduler"]["stop_grace_period"] == "30m"

    for name, service in services.items():
        check = service["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name
        if check["test"][1] == "tracker":
            assert_cli_command(check["test"][1:])


def test_compose_settings_load(compose, monkeypatch):
    """The environment and the settings file the compose file gives the tracker are valid."""
    env = compose["services"]["scheduler"]["environment"]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TRACKER_CONFIG")
    settings = Settings.load(DEPLOY / "tracker.example.toml")
    assert settings.mongo_url == env["MONGO_URL"]
    assert str(settings.data_dir) == env["TRACKER_DATA_DIR"]
    assert [site["name"] for site in settings.sites]


def test_dockerfile_builds_the_project_as_an_unprivileged_user():
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.M)
    assert re.search(r"^USER tracker$", dockerfile, re.M)
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8")
    for line in re.findall(r"^COPY (.+) \S+$", dockerfile, re.M):
        for source in line.split():
            assert (ROOT / source).exists(), source
            assert f"!{source.rstrip('/')}" in ignored.replace("/\n", "\n"), source


# ------------------------------------------------------------------------------- systemd


def read_unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A unit file as systemd reads it: sections of ``Key=value`` lines, keys repeatable."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
            continue
        key, _, value = line.partition("=")
        assert current is not None and _, f"{path.name}: {raw!r}"
        current.append((key.strip(), value.strip()))
    return sections


def values(unit: dict, section: str, key: str) -> list[str]:
    return [value for name, value in unit.get(section, []) if name == key]


def one(unit: dict, section: str, key: str) -> str:
    [value] = values(unit, section, key)
    return value


UNITS = sorted((DEPLOY / "systemd").glob("tracker*.service"))
HARDENING = {
    "UMask": "0077",
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "RestrictSUIDSGID": "yes",
    "CapabilityBoundingSet": "",
}


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_systemd_unit_is_hardened_and_part_of_the_target(path):
    unit = read_unit(path)
    service = dict(unit["Service"])
    for key, expected in HARDENING.items():
        assert one(unit, "Service", key) == expected, key
    assert service["User"] == "tracker"
    assert "/var/lib/tracker" in one(unit, "Service", "ReadWritePaths").split()
    assert service["KillMode"] in ("mixed", "control-group")
    assert one(unit, "Unit", "PartOf") == "tracker.target"
    assert one(unit, "Install", "WantedBy") == "tracker.target"
    start = one(unit, "Service", "ExecStart").split()
    assert start[0].startswith("/opt/tracker/.venv/bin/")
    if start[0].endswith("/tracker"):
        assert_cli_command(start)
    if path.name != "tracker-services.service":
        # Ordered after the embedded servers' unit: on stop, this stops before the servers.
        assert "tracker-services.service" in one(unit, "Unit", "After").split()
        assert "tracker-services.service" in one(unit, "Unit", "Wants").split()


def test_systemd_roles_stop_in_order():
    units = {path.name: read_unit(path) for path in UNITS}
    assert {
        "tracker-scheduler.service",
        "tracker-crawl@.service",
        "tracker-console.service",
    } <= set(units)
    scheduler = units["tracker-scheduler.service"]
    assert one(scheduler, "Service", "ExecStart").endswith("/tracker schedule")
    # SIGTERM to the scheduler alone: its running jobs finish before anything else is killed.
    assert one(scheduler, "Service", "KillMode") == "mixed"
    assert int(one(scheduler, "Service", "TimeoutStopSec")) >= 1800
    crawl = units["tracker-crawl@.service"]
    assert "%i" in one(crawl, "Unit", "Description")
    assert one(crawl, "Service", "ExecStart").endswith("/tracker crawl-worker")
    assert one(crawl, "Service", "KillMode") == "mixed"
    servers = units["tracker-services.service"]
    assert one(servers, "Service", "Type") == "oneshot"
    assert one(servers, "Service", "RemainAfterExit") == "yes"
    assert one(servers, "Service", "ExecStart").endswith("/tracker services start")
    assert one(servers, "Service", "ExecStop").endswith("/tracker services stop")
    target = read_unit(DEPLOY / "systemd" / "tracker.target")
    assert one(target, "Install", "WantedBy") == "multi-user.target"


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_systemd_analyze_verify_finds_nothing(tmp_path):
    """systemd's own reading of the units, with their programs where this checkout has them."""
    venv = str(Path(sys.executable).parent) + "/"
    for path in [*UNITS, DEPLOY / "systemd" / "tracker.target"]:
        text = path.read_text(encoding="utf-8").replace("/opt/tracker/.venv/bin/", venv)
        (tmp_path / path.name).write_text(text, encoding="utf-8")
    names = [p.name.replace("@.", "@1.") for p in [*UNITS, DEPLOY / "systemd" / "tracker.target"]]
    done = subprocess.run(
        ["systemd-analyze", "verify", *(f"./{name}" for name in names)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = [line for line in done.stderr.splitlines() if str(tmp_path) in line or "tracker" in line]
    assert done.returncode == 0 and said == [], done.stderr


# --------------------------------------------------------------------------- health check


def test_services_check_is_a_health_check(settings, monkeypatch, capsys):
    monkeypatch.setenv("MONGO_URL", settings.mongo_url)
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    assert main(["services", "check"]) == 0
    assert "answers" in capsys.readouterr().out
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    assert main(["services", "check"]) == 2
    assert capsys.readouterr().err.startswith("tracker: error: Redis at redis://127.0.0.1:1/0")


def test_console_health_check_passes_without_credentials(compose, settings, runtime):
    """The console's health check is an anonymous HTTP request that must succeed (urlopen
    raises on any 4xx/5xx): a page behind the sign-in answers 401 and left the container
    unhealthy for good."""
    from urllib.parse import urlsplit

    from fastapi.testclient import TestClient

    from tracker.console import create_app

    check = " ".join(compose["services"]["console"]["healthcheck"]["test"])
    url = re.search(r"urlopen\('([^']+)'", check).group(1)
    assert urlsplit(url).netloc == "127.0.0.1:8080"  # the port `tracker serve` is given
    with TestClient(create_app(settings, runtime)) as client:
        answer = client.get(urlsplit(url).path)  # redirects followed, as urlopen does
        assert 200 <= answer.status_code < 300, answer.status_code
        assert client.get("/").status_code == 401  # what the check asked for before
