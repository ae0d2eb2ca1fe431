"""Counts of the MongoDB and Redis commands every Python process of a crawl sends, for
bench/results/crawl-writes-h45.md: put this folder first on ``PYTHONPATH`` and set
``COMMAND_COUNTS_DIR``; each process (the crawl, its forked workers, the servers) writes
``<pid>.json`` there every half second and at exit, and ``python -m bench.command_counts.tally
DIR PAGES`` adds them up per page.

MongoDB: a :class:`pymongo.monitoring.CommandListener` counts each command by name and
collection, and the documents of each ``insert``/``update``/``delete``. Redis: each command
sent alone (one round trip) and each pipeline (one round trip, its commands counted too).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections import Counter

_counts: Counter[str] = Counter()
_lock = threading.Lock()
_SESSION = {"hello", "ismaster", "isMaster", "ping", "endSessions", "buildInfo", "saslStart"}


def _bump(key: str, count: int = 1) -> None:
    with _lock:
        _counts[key] += count


def _count_mongo() -> None:
    from pymongo import monitoring

    class Listener(monitoring.CommandListener):
        def started(self, event: monitoring.CommandStartedEvent) -> None:
            name, command = event.command_name, event.command
            target = command.get(name)
            collection = target if isinstance(target, str) and name not in _SESSION else ""
            _bump(f"mongo\t{name}\t{collection}")
            for field in ("documents", "updates", "deletes"):
                for statement in command.get(field) or ():
                    upsert = field == "updates" and statement.get("upsert")
                    _bump(f"mongo documents\t{name}{' (upsert)' if upsert else ''}\t{collection}")

        def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
            pass

        def failed(self, event: monitoring.CommandFailedEvent) -> None:
            pass

    monitoring.register(Listener())


def _count_redis() -> None:
    from redis import connection

    base = connection.AbstractConnection
    send, pack = base.send_command, base.pack_commands

    def send_command(self, *args, **kwargs):
        _bump("redis round trips\talone\t")
        _bump(f"redis\t{str(args[0]).upper()}\t")
        return send(self, *args, **kwargs)

    def pack_commands(self, commands):
        commands = list(commands)
        _bump("redis round trips\tpipeline\t")
        for command in commands:
            _bump(f"redis\t{str(command[0]).upper()}\t")
        return pack(self, commands)

    base.send_command = send_command
    base.pack_commands = pack_commands


def _dump() -> None:
    path = os.path.join(os.environ["COMMAND_COUNTS_DIR"], f"{os.getpid()}.json")
    with _lock:
        counts = dict(_counts)
    partial = f"{path}.{threading.get_ident()}"
    with open(partial, "w", encoding="utf-8") as file:
        json.dump({"argv": sys.argv[:3], "counts": counts}, file)
    os.replace(partial, path)


def _dump_often() -> None:
    while True:  # forked workers end without running atexit
        time.sleep(0.5)
        with contextlib.suppress(OSError):
            _dump()


def _start() -> None:
    import atexit

    _count_mongo()
    _count_redis()
    atexit.register(_dump)
    threading.Thread(target=_dump_often, daemon=True).start()
    os.register_at_fork(
        after_in_child=lambda: threading.Thread(target=_dump_often, daemon=True).start()
    )


if os.environ.get("COMMAND_COUNTS_DIR"):
    _start()
