"""Embedded servers: a Redis still reading its dump back is waited for, not handed out."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tracker.servers import services


def _fake_redis(replies: list[bytes]) -> tuple[int, threading.Thread]:
    """A loopback server answering each connection's PING with the next reply (the last one
    repeated)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(5)

    def serve() -> None:
        with server:
            for i in range(50):
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(64)
                    conn.sendall(replies[min(i, len(replies) - 1)])
                    if replies[min(i, len(replies) - 1)].startswith(b"+PONG"):
                        return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()[1], thread


def test_a_loading_redis_is_waited_for():
    loading = b"-LOADING Valkey is loading the dataset in memory\r\n"
    port, thread = _fake_redis([loading, loading, loading, b"+PONG\r\n"])
    state = services.ServiceState("redis", pid=0, port=port, url=f"redis://127.0.0.1:{port}/0")
    started = time.monotonic()
    services._wait_ready(state, time.monotonic() + 10)
    assert time.monotonic() - started >= 0.3  # three refusals, 0.1 s apart
    thread.join(5)
    assert not thread.is_alive()  # it was asked until it answered PONG


def test_a_redis_that_never_finishes_loading_is_an_error():
    port, _ = _fake_redis([b"-LOADING Valkey is loading the dataset in memory\r\n"])
    state = services.ServiceState("redis", pid=0, port=port, url=f"redis://127.0.0.1:{port}/0")
    with pytest.raises(services.ServiceError, match="still loading"):
        services._wait_ready(state, time.monotonic() + 0.5)


# ------------------------------------------------------------------------- stop and restore


def test_services_stop_stops_a_warm_checker_still_warming_up(server_env):
    """Issue 36: a checker started by a check and not yet answering (its tables loading) is
    stopped too, waited for, and counted only when it was running; a pid file naming another
    program (a pid reused) is only removed. Run in a fresh interpreter with a data directory of
    its own: what earlier tests left in this process (signal handlers reaping children, a
    shared data directory's leftovers) is not the scene a user's ``services stop`` meets."""
    import subprocess
    import sys

    script = """
import os
from tracker.cli import _warm
from tracker.config import Settings
from tracker.servers.services import _pid_alive

settings = Settings.load()
_warm.start(settings)
[pid_file] = list(_warm.run_dir(settings).glob("warm-*.pid"))
pid = int(pid_file.read_text())
assert _pid_alive(pid)
stale = _warm.run_dir(settings) / f"warm-{os.getpid()}.pid"
stale.write_text(str(os.getpid()))  # this process: not a checker
assert _warm.stop_all(settings) == 1
assert not _pid_alive(pid)
assert not list(_warm.run_dir(settings).glob("*.pid"))
assert not (_warm.run_dir(settings) / "check.starting").exists()
assert _warm.stop_all(settings) == 0  # nothing left to stop: none said
"""
    env = {**server_env, "TRACKER_CHECK_WARM_S": "600"}  # the test's servers, its own data dir
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_a_checker_that_cannot_warm_up_leaves_and_says_why(server_env):
    """A warm checker whose MongoDB does not answer leaves (removing its pid file), and what it
    wrote to its standard error, the reason, is in ``run/warm.log`` for the operator."""
    import subprocess
    import sys

    script = """
import time
from tracker.cli import _warm
from tracker.config import Settings

settings = Settings.load()
_warm.start(settings)
deadline = time.monotonic() + 60
while list(_warm.run_dir(settings).glob("warm-*.pid")):
    assert time.monotonic() < deadline, "the checker stayed"
    time.sleep(0.05)
print(_warm.log_path(settings).read_text())
"""
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {**server_env, "TRACKER_CHECK_WARM_S": "600", "MONGO_URL": f"mongodb://127.0.0.1:{port}"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "ServerError: MongoDB at mongodb://127.0.0.1:" in done.stdout


def test_a_checker_met_before_its_arguments_are_set_up_is_still_known(monkeypatch):
    """A process caught between exec and the kernel setting up its arguments shows an empty
    command line (a just-started checker on a loaded machine; the cause of a ``services
    stop`` that once counted a warming checker as none): it is read again, not taken for
    another program. A zombie's empty command line is final: no checker, without waiting."""
    import subprocess
    import sys
    from pathlib import Path

    from tracker.cli import _warm

    marker = "tracker.cli._warm"  # in its argv, as a checker's
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    exited = subprocess.Popen([sys.executable, "-c", "pass", marker])
    try:
        while not Path(f"/proc/{sleeper.pid}/cmdline").read_bytes().endswith(b"_warm\0"):
            time.sleep(0.01)  # its exec done for real
        cmdline = Path(f"/proc/{sleeper.pid}/cmdline")
        real_read = Path.read_bytes
        reads: list[Path] = []

        def mid_exec(path: Path) -> bytes:
            reads.append(path)
            return b"" if path == cmdline and len(reads) == 1 else real_read(path)

        monkeypatch.setattr(Path, "read_bytes", mid_exec)
        assert _warm._is_checker(sleeper.pid)
        assert reads.count(cmdline) == 2

        monkeypatch.setattr(Path, "read_bytes", real_read)
        while not _warm._zombie(Path(f"/proc/{exited.pid}")):
            time.sleep(0.01)
        started = time.monotonic()
        assert not _warm._is_checker(exited.pid, exec_wait_s=60)
        assert time.monotonic() - started < 30  # not the mid-exec wait
    finally:
        sleeper.kill()
        sleeper.wait()
        exited.wait()


@pytest.mark.integration
def test_restore_leaves_a_running_console_answering(tmp_path):
    """Issue 36: backup, a change, restore while ``tracker serve`` runs: the embedded MongoDB
    comes back on its port, the restore says nothing needs a restart, and the console answers
    200 without one."""
    import os
    import subprocess
    import sys

    import httpx

    from .test_first_day import fresh_home, tracker
    from .texts import prose

    env = fresh_home(tmp_path)
    user = ("ada", "a long passphrase for ada")
    command = [sys.executable, "-m", "tracker.cli", "user", "add", user[0], "--role", "viewer"]
    added = subprocess.run(
        [*command, "--password-stdin"],
        env=env,
        input=user[1] + "\n",
        capture_output=True,
        text=True,
        check=False,
        cwd=env["HOME"],
    )
    assert added.returncode == 0, added.stderr
    for name, seed in (("a", 1), ("b", 2)):
        (tmp_path / f"{name}.txt").write_text(
            f"《书》\n第{seed}章\n{prose(seed=3800 + seed, chars=1200)}\n", encoding="utf-8"
        )
    assert tracker(env, "ingest", str(tmp_path / "a.txt")).returncode == 0
    port = _free_port()
    console = subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", "serve", "--port", str(port)],
        env=env,
        cwd=env["HOME"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/api/pages"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url, auth=user, timeout=10).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and console.poll() is None, "no console"
            time.sleep(0.2)
        before = services.read_state(_settings_of(env), "mongo").port
        archive = tmp_path / "backup.tar.gz"
        assert tracker(env, "services", "backup", str(archive)).returncode == 0
        assert tracker(env, "ingest", str(tmp_path / "b.txt")).returncode == 0  # a change
        restored = tracker(env, "services", "restore", str(archive))
        assert restored.returncode == 0, restored.stderr
        assert f"back on its port {before}" in restored.stdout
        assert "nothing needs a restart" in restored.stdout
        assert services.read_state(_settings_of(env), "mongo").port == before
        answered = httpx.get(url, auth=user, timeout=30)
        assert answered.status_code == 200, answered.text
        listing = tracker(env, "index", "list", "--work", "书")
        assert "书/1" in listing.stdout and "书/2" not in listing.stdout  # the backup's data
    finally:
        console.terminate()
        console.wait(timeout=30)
        tracker(env, "services", "stop", timeout=60)
    assert os.path.isdir(tmp_path / "data")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _settings_of(env: dict[str, str]):
    from pathlib import Path

    from tracker.config import Settings

    return Settings(data_dir=Path(env["TRACKER_DATA_DIR"]))
