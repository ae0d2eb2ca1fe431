"""A warm ``tracker check``: the second check of the day answers in a fraction of the first.

Most of a one-text check is start-up: loading numpy, pymongo and redis-py, jieba's dictionary,
the folding tables, connecting and verifying the library (about 0.9 s of CPU), against ~20 ms
of checking. So after a check has run in its own process it leaves a *warm checker* behind: a
detached process, started like the embedded servers and beside them, that keeps all of that
loaded and answers later checks over a Unix socket in ``<data_dir>/run/`` (directory 0700,
socket 0600). A later ``tracker check`` parses its arguments, sends them (and the bytes of its
standard input, when it reads ``-``) with its working directory, and prints what the checker
answers: the same output and exit status as checking in process, as the checker runs the same
command code.

A checker serves exactly one configuration: its socket is named by a digest of the settings
and of the installed code, so a change of either starts a new one, and the old one leaves
after ``check_warm_s`` seconds without a request (600 by default; 0 turns warm checks off).
It leaves at once when one of its servers stopped answering: the next check then runs in
process, restarting an embedded server if need be. ``tracker services stop`` stops it, even
while it is still warming up: its pid file (``warm-PID.pid``) is written by the check that
starts it, before that check returns, not once it is ready.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback
from functools import partial
from pathlib import Path
from typing import Any

import tracker
from tracker.config import Settings

ANSWER_TIMEOUT_S = 300.0  # a check of a whole book can take minutes


def run_dir(settings: Settings) -> Path:
    path = Path(settings.data_dir) / "run"
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _code_stamp() -> str:
    """The installed code: its version and the newest modification of its modules."""
    root = Path(tracker.__file__).parent
    newest = max(
        (entry.stat().st_mtime_ns for entry in root.rglob("*.py")),
        default=0,
    )
    return f"{getattr(tracker, '__version__', '')}:{newest}"


def socket_path(settings: Settings) -> Path:
    digest = hashlib.sha1(f"{settings!r}|{_code_stamp()}".encode()).hexdigest()[:16]
    return run_dir(settings) / f"check-{digest}.sock"


# ----------------------------------------------------------------------------------- client


def enabled(settings: Settings) -> bool:
    return settings.check_warm_s > 0 and hasattr(socket, "AF_UNIX")


def ask(settings: Settings, argv: list[str], stdin: bytes | None) -> int | None:
    """Have the warm checker run ``tracker ARGV``, print its output; its exit status, or None
    when there is no checker (or it could not answer: then nothing was printed)."""
    path = socket_path(settings)
    if not path.exists():
        return None
    request = {"argv": argv, "cwd": os.getcwd(), "stdin": stdin, "columns": _columns()}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(ANSWER_TIMEOUT_S)
            conn.connect(str(path))
            _send(conn, request)
            answer = _receive(conn)
    except (OSError, ValueError):
        return None
    if answer.get("retry"):
        return None
    sys.stdout.write(answer["stdout"])
    sys.stderr.write(answer["stderr"])
    return int(answer["code"])


def start(settings: Settings, config: str | None = None) -> None:
    """Leave a warm checker for the next checks (a detached process; nothing waits for it),
    with the settings of this command (its ``--config`` file, if one was given)."""
    lock = run_dir(settings) / "check.starting"
    try:  # one starting at a time; a stale mark (a checker that failed to start) is retried
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    except FileExistsError:
        return
    environment = {**os.environ, "TRACKER_DATA_DIR": str(settings.data_dir)}
    if config:
        environment["TRACKER_CONFIG"] = str(Path(config).resolve())
    with contextlib.suppress(OSError), log_path(settings).open("wb") as log:
        checker = subprocess.Popen(
            [sys.executable, "-m", "tracker.cli._warm"],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,  # why a checker that never answered left, for the operator
            start_new_session=True,
            cwd=os.getcwd(),
        )
        _pid_file(settings, checker.pid).write_text(str(checker.pid))


def log_path(settings: Settings) -> Path:
    """What the last checker started wrote to its standard error (a traceback, if it left)."""
    return run_dir(settings) / "warm.log"


def _pid_file(settings: Settings, pid: int) -> Path:
    return run_dir(settings) / f"warm-{pid}.pid"


def stop_all(settings: Settings, timeout: float = 5.0) -> int:
    """Stop the warm checkers of this data directory, warming up or ready, and wait until
    they are gone (killed after ``timeout``); returns how many were running. A pid file whose
    process is gone, or is another program now, is only removed."""
    from tracker.servers.services import _pid_alive

    directory = run_dir(settings)
    running = set()
    for pid_file in [*directory.glob("warm-*.pid"), *directory.glob("check-*.pid")]:
        with contextlib.suppress(OSError):
            pid = _pid_of(pid_file)
            if pid is not None and _is_checker(pid):
                os.kill(pid, signal.SIGTERM)
                running.add(pid)
        pid_file.unlink(missing_ok=True)
    deadline = time.monotonic() + timeout
    while any(_pid_alive(pid) for pid in running) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in running:
        if _pid_alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    for leftover in [*directory.glob("check-*.sock"), directory / "check.starting"]:
        leftover.unlink(missing_ok=True)
    return len(running)


def _pid_of(pid_file: Path) -> int | None:
    """The pid a pid file names: its text, else the number in its name (``warm-PID.pid``);
    the checker writes its own file as it starts, so a read may meet it empty."""
    try:
        return int(pid_file.read_text())
    except (ValueError, OSError):
        number = pid_file.stem.rpartition("-")[2]
        return int(number) if number.isdigit() else None


def _is_checker(pid: int, exec_wait_s: float = 2.0) -> bool:
    """Whether ``pid`` is a warm checker (its command line, where /proc shows it).

    A checker ``start()`` has only just spawned may show an empty command line: the kernel
    lets the parent go on once the child's new program is mapped, before the child's arguments
    are set up (``create_elf_tables``), and on a loaded machine the child can wait there a
    while. An empty command line of a process that is no zombie is that moment: read again."""
    proc = Path(f"/proc/{pid}")
    deadline = time.monotonic() + exec_wait_s
    while True:
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if cmdline or _zombie(proc) or time.monotonic() >= deadline:
                return b"tracker.cli._warm" in cmdline
        except FileNotFoundError:
            if Path("/proc/self").exists():
                return False  # gone
            try:
                os.kill(pid, 0)
            except OSError:
                return False
            return True
        except OSError:
            return False
        time.sleep(0.01)


def _zombie(proc: Path) -> bool:
    """Whether the process has exited (its state Z or X in ``/proc/PID/stat``)."""
    try:
        state = proc.joinpath("stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True
    return state in {"Z", "X"}


def _columns() -> int:
    import shutil

    return shutil.get_terminal_size().columns


# ----------------------------------------------------------------------------------- server


def serve() -> None:
    """The checker process: load everything, answer requests until idle. It holds one
    checking service and runs every request's command with it (``args.checker``)."""
    from tracker.cli import _run
    from tracker.matching.checking import CheckingService

    settings = Settings.load()
    directory = run_dir(settings)
    path = socket_path(settings)
    pid_file = _pid_file(settings, os.getpid())
    pid_file.write_text(str(os.getpid()))  # started otherwise than by start(): known too
    service = CheckingService(settings)
    try:
        service.warm_up()  # the servers, the library, jieba and the tables: loaded now
    except BaseException:
        # The reason is written before the pid file goes: whoever waits for the pid file to
        # go reads the log next, and an exception left to the interpreter is printed later.
        traceback.print_exc()
        sys.stderr.flush()
        pid_file.unlink(missing_ok=True)
        raise SystemExit(1) from None
    finally:
        (directory / "check.starting").unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(previous)
    server.listen(8)
    server.settimeout(max(1, settings.check_warm_s))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return  # idle
            with conn:
                conn.settimeout(ANSWER_TIMEOUT_S)
                try:
                    request = _receive(conn)
                    if not service.alive():
                        _send(conn, {"retry": True})
                        return
                    _send(conn, _answer(partial(_run, checker=service), request))
                except (OSError, ValueError):
                    continue
    finally:
        server.close()
        path.unlink(missing_ok=True)
        pid_file.unlink(missing_ok=True)


def _answer(run: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Run the command of ``request`` as the client would have, capturing what it prints."""
    out, err = io.StringIO(), io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(request.get("stdin") or b""), encoding="utf-8")
    saved = sys.stdin, os.getcwd(), os.environ.get("COLUMNS")
    try:
        os.chdir(request["cwd"])
        os.environ["COLUMNS"] = str(request.get("columns") or 80)
        sys.stdin = stdin
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code, _ = run(request["argv"])
            except SystemExit as exc:  # argparse
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved[0]
        os.chdir(saved[1])
        if saved[2] is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved[2]
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(
        {**message, "stdin": message["stdin"].hex()} if message.get("stdin") else message,
        ensure_ascii=False,
    ).encode()
    conn.sendall(struct.pack("!I", len(data)) + data)


def _receive(conn: socket.socket) -> dict[str, Any]:
    (size,) = struct.unpack("!I", _exactly(conn, 4))
    message = json.loads(_exactly(conn, size))
    if not isinstance(message, dict):
        raise ValueError("not a message")
    if isinstance(message.get("stdin"), str):
        message["stdin"] = bytes.fromhex(message["stdin"])
    return message


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ValueError("connection closed")
        data += chunk
    return data


if __name__ == "__main__":
    serve()
