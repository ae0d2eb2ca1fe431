"""The deployment files, checked without Docker or systemd running: the compose file's
services, images, commands, environment, health checks, volumes and start order; the image's
Dockerfile; the systemd units' roles, stop order, kill mode and hardening (and, where
``systemd-analyze`` is installed, its own verification); the health check command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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


#: The passwords deploy/.env holds (as its documented command makes them: hex).
PASSWORDS = {
    "MONGO_PASSWORD": "5ca1ab1e" * 6,
    "REDIS_PASSWORD": "0ddba11" * 6,
    "SEARXNG_SECRET": "5eed" * 12,
}


class Missing(Exception):
    """A required variable of the compose file is not set: compose refuses to start."""


def interpolate(value, env: dict[str, str]):
    """The compose file as Compose reads it with the variables ``env``: ``$$``, ``$VAR``,
    ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}``,
    in every string of ``value``."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match) -> str:
        if match[0] == "$$":
            return "$"
        name, op, arg = match["braced"] or match["plain"], match["op"] or "", match["arg"] or ""
        found = env.get(name)
        unset = found is None or (op.startswith(":") and found == "")
        if op.endswith("?") and unset:
            raise Missing(f"required variable {name} is missing a value: {arg}")
        return arg if op.endswith("-") and unset else (found or "")

    pattern = r"\$\$|\$\{(?P<braced>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|\$(?P<plain>\w+)"
    return re.sub(pattern, one, value)


def assert_cli_command(argv: list[str]) -> None:
    """``argv`` is a tracker command line the CLI accepts."""
    assert argv[0].endswith("tracker"), argv
    build_parser().parse_args(argv[1:])  # exits 2 on an unknown command or option


@pytest.fixture(scope="module")
def compose_file() -> dict:
    """The compose file as written (its ``${…}`` not yet replaced)."""
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compose(compose_file) -> dict:
    """The compose file as Compose runs it, with deploy/.env's passwords."""
    return interpolate(compose_file, PASSWORDS)


def test_compose_runs_every_role_on_mongodb_and_redis(compose):
    services = compose["services"]
    assert set(services) == {"mongo", "redis", "searxng", *ROLES}
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
        mongo_url, redis_url = urlsplit(env["MONGO_URL"]), urlsplit(env["REDIS_URL"])
        assert (mongo_url.hostname, mongo_url.port, mongo_url.path) == ("mongo", 27017, "/")
        assert parse_qs(mongo_url.query) == {"replicaSet": [replica_set], "authSource": ["admin"]}
        assert mongo_url.username == mongo["environment"]["MONGO_INITDB_ROOT_USERNAME"]
        assert mongo_url.password == PASSWORDS["MONGO_PASSWORD"]
        assert (redis_url.hostname, redis_url.port, redis_url.path) == ("redis", 6379, "/0")
        assert redis_url.password == PASSWORDS["REDIS_PASSWORD"]
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


def test_compose_runs_searxng_with_the_json_format_for_discovery(compose):
    services = compose["services"]
    searxng = services["searxng"]
    assert searxng["image"].startswith("searxng/searxng:")
    assert not searxng["image"].endswith(":latest"), "pin SearXNG: a new one is taken on purpose"
    assert searxng["environment"]["SEARXNG_SECRET"] == PASSWORDS["SEARXNG_SECRET"]
    [mount] = searxng["volumes"]
    source, target = mount.split(":")[:2]
    assert target == "/etc/searxng/settings.yml"
    config = yaml.safe_load((DEPLOY / source).read_text(encoding="utf-8"))
    assert "json" in config["search"]["formats"] and config["use_default_settings"] is True
    assert "ports" not in searxng  # on the compose network only
    url = services["scheduler"]["environment"]["TRACKER_SEARCH_URL"]
    assert urlsplit(url).hostname == "searxng"
    assert Settings.load(search_url=url).search_url == url


def test_compose_servers_require_passwords(compose_file, compose):
    """MongoDB and valkey run with access control, their health checks sign in, and compose
    refuses to start, naming the file to make, without the passwords."""
    with pytest.raises(Missing, match=r"MONGO_PASSWORD .*make deploy/\.env first"):
        interpolate(compose_file, {})
    with pytest.raises(Missing, match=r"REDIS_PASSWORD .*make deploy/\.env first"):
        interpolate(compose_file, {"MONGO_PASSWORD": PASSWORDS["MONGO_PASSWORD"]})
    services = compose["services"]

    mongo = services["mongo"]
    user, password = "tracker", PASSWORDS["MONGO_PASSWORD"]
    assert mongo["environment"] == {
        "MONGO_INITDB_ROOT_USERNAME": user,
        "MONGO_INITDB_ROOT_PASSWORD": password,
    }
    # Access control on a replica set needs a key file: made once, mongod's alone, then the
    # image's own entrypoint (which makes the root user on the first start).
    key = mongo["command"][mongo["command"].index("--keyFile") + 1]
    assert key.startswith("/data/db/")  # in the data volume: made once
    shell, flag, script, _ = mongo["entrypoint"]
    assert (shell, flag) == ("bash", "-c")
    assert f"[ ! -s {key} ]" in script and f"chmod 0400 {key}" in script
    assert f"chown mongodb:mongodb {key}" in script
    assert script.rstrip().endswith('exec docker-entrypoint.sh "$@"')
    check = mongo["healthcheck"]["test"]
    assert check[:2] == ["CMD", "mongosh"]
    for option, expected in (
        ("--username", user),
        ("--password", password),
        ("--authenticationDatabase", "admin"),
    ):
        assert check[check.index(option) + 1] == expected

    redis = services["redis"]
    command = redis["command"]
    assert command[command.index("--requirepass") + 1] == PASSWORDS["REDIS_PASSWORD"]
    assert redis["environment"] == {"REDIS_PASSWORD": PASSWORDS["REDIS_PASSWORD"]}
    kind, line = redis["healthcheck"]["test"]
    assert kind == "CMD-SHELL" and '-a "$REDIS_PASSWORD" ping' in line
    assert line.endswith("| grep -q PONG")  # a NOAUTH answer is a failed check


def env_command() -> str:
    """The one command deploy/README.md gives to make deploy/.env."""
    text = (DEPLOY / "README.md").read_text(encoding="utf-8")
    [line] = [line for line in text.splitlines() if "> deploy/.env" in line]
    return line


@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl not installed")
def test_the_documented_command_makes_the_passwords_compose_needs(compose_file, tmp_path):
    (tmp_path / "deploy").mkdir()
    made = subprocess.run(["bash", "-c", env_command()], cwd=tmp_path, capture_output=True)
    assert made.returncode == 0, made.stderr
    env_file = tmp_path / "deploy" / ".env"
    assert env_file.stat().st_mode & 0o777 == 0o600
    env = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    required = set(re.findall(r"\$\{(\w+):\?", (DEPLOY / "compose.yaml").read_text()))
    assert set(env) == required == set(PASSWORDS)
    assert all(re.fullmatch(r"[0-9a-f]{48}", value) for value in env.values())
    assert len(set(env.values())) == len(PASSWORDS)
    scheduler = interpolate(compose_file, env)["services"]["scheduler"]["environment"]
    settings = Settings.load(mongo_url=scheduler["MONGO_URL"], redis_url=scheduler["REDIS_URL"])
    assert urlsplit(settings.mongo_url).password == env["MONGO_PASSWORD"]
    again = subprocess.run(["bash", "-c", env_command()], cwd=tmp_path, capture_output=True)
    assert again.returncode != 0  # never overwritten: MongoDB keeps the first password
    assert dict(line.split("=", 1) for line in env_file.read_text().splitlines()) == env


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


def systemd_steps() -> list[str]:
    """The shell lines of deploy/README.md's systemd steps, comments dropped."""
    text = (DEPLOY / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## systemd\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_systemd_steps_work_as_written(tmp_path, settings, runtime):
    """deploy/README.md's systemd steps, followed with every absolute path moved under
    ``tmp_path`` (the checkout is this one, its virtualenv this interpreter's): the files are
    installed, then each enabled unit's command is run the way systemd would start it, with its
    environment and working directory, as a check that changes nothing (the scheduler's as
    ``tracker schedule --list``, which reads every site file the settings name; the others'
    as ``tracker services check``). A step naming a file that is missing fails here."""
    root = tmp_path / "root"
    moved = {
        "/opt/tracker/.venv/bin/": str(Path(sys.executable).parent) + "/",
        "/opt/tracker": str(ROOT),
        "/etc/systemd/system": str(root / "etc/systemd/system"),
        "/etc/tracker": str(root / "etc/tracker"),
        "/var/lib/tracker": str(root / "var/lib/tracker"),
        "/var/cache/tracker": str(root / "var/cache/tracker"),
    }

    def rewrite(text: str) -> str:
        for old, new in moved.items():
            text = re.sub(re.escape(old) + r"(?![\w.-])", new, text)
        return text

    for directory in ("etc/systemd/system", "var/cache/tracker"):  # there on any system
        (root / directory).mkdir(parents=True)
    enabled = []
    for step in systemd_steps():
        commands = []
        for command in step.split("&&"):
            words = command.split()
            words = words[1:] if words[0] == "sudo" else words
            if words[0] == "systemctl":  # what systemd would do: below
                enabled += [w for w in words[2:] if words[1] == "enable" and not w.startswith("-")]
                continue
            if words[0] == "install":  # no tracker user here: ownership is left out
                words = [w for i, w in enumerate(words) if not {w, words[i - 1]} & {"-o", "-g"}]
            commands.append(rewrite(" ".join(words)))
        if commands:
            done = subprocess.run(
                ["bash", "-c", " && ".join(commands)], cwd=ROOT, capture_output=True, text=True
            )
            assert done.returncode == 0, (step, done.stderr)
    assert {"tracker-scheduler", "tracker-console", "tracker-services"} <= set(enabled)
    installed = root / "etc"
    for path in [installed / "tracker/tracker.toml", *(installed / "systemd/system").iterdir()]:
        path.write_text(rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")
    # The operator's step: the servers' URLs in tracker.env (here the test's own servers).
    (installed / "tracker/tracker.env").write_text(
        f"MONGO_URL={settings.mongo_url}\nREDIS_URL={settings.redis_url}\n"
        f"TRACKER_MONGO_DB={settings.mongo_db}\nTRACKER_REDIS_PREFIX={settings.redis_prefix}\n"
        "TRACKER_DISTRIBUTED=1\n",
        encoding="utf-8",
    )

    units = [name.split("@")[0] + ("@.service" if "@" in name else ".service") for name in enabled]
    for name in sorted(set(units) - {"tracker.target.service"}):
        unit = read_unit(installed / "systemd/system" / name)
        env = {"PATH": os.environ["PATH"], "HOME": moved["/var/lib/tracker"], "LANG": "C.UTF-8"}
        for assignment in values(unit, "Service", "Environment"):
            key, _, value = assignment.partition("=")
            env[key] = value
        for env_file in values(unit, "Service", "EnvironmentFile"):
            path = Path(env_file.removeprefix("-"))
            if env_file.startswith("-") and not path.exists():
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                env[key.strip()] = value.strip()
        for key, base in (("StateDirectory", "/var/lib/"), ("CacheDirectory", "/var/cache/")):
            for directory in values(unit, "Service", key):  # made by systemd at start
                Path(rewrite(base + directory)).mkdir(parents=True, exist_ok=True)
        workdir = Path(one(unit, "Service", "WorkingDirectory"))
        for needed in [workdir, *one(unit, "Service", "ReadWritePaths").split()]:
            assert Path(needed).is_dir(), (name, needed)
        start = one(unit, "Service", "ExecStart").split()
        assert Path(start[0]).is_file(), (name, start[0])
        check = [*start, "--list"] if start[1:] == ["schedule"] else [start[0], "services", "check"]
        done = subprocess.run(check, cwd=workdir, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (name, check, done.stdout, done.stderr)
        if start[1:] == ["schedule"]:
            assert "crawl:example" in done.stdout, done.stdout


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
