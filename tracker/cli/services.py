"""``tracker services status|start|stop|check``: the embedded MongoDB-compatible and Redis
servers; ``check`` reaches the servers in use, embedded or configured (a health check);
``backup FILE`` and ``restore FILE``: the embedded MongoDB's data (see
:mod:`tracker.servers.backup`)."""

from __future__ import annotations

import argparse
import json

from tracker.config import Settings
from tracker.servers import services


def register(commands: argparse._SubParsersAction) -> None:
    from tracker.cli import actions_help

    parser = commands.add_parser(
        "services",
        help="show, start or stop the embedded servers; check: both servers answer (exit 0)",
        description="The embedded MongoDB-compatible (SecantusDB) and Redis (valkey) servers "
        "under the data directory, which every command starts when MONGO_URL or REDIS_URL is "
        "not set. Exit status: 0 done, 2 error (check: a server does not answer).",
        epilog=actions_help(
            {
                "status": "each server: embedded (running or stopped, its URL, pid and data) "
                "or external",
                "start": "start the embedded servers (and print their URLs)",
                "stop": "stop the embedded servers and the warm checkers (waited for: only "
                "those that were running are named)",
                "check": "reach the servers in use, embedded or configured (a health check)",
                "backup": "write a hot backup of the embedded MongoDB's data to FILE (a "
                "tar.gz archive); Redis needs none: `tracker index rebuild` remakes the index",
                "restore": "replace the embedded MongoDB's data by the archive FILE, the "
                "server back on its port so a running console reconnects (then run "
                "`tracker index rebuild` and `tracker rematch`)",
            }
        ),
    )
    parser.add_argument(
        "action",
        choices=("status", "start", "stop", "check", "backup", "restore"),
        metavar="ACTION",
        help="status, start, stop, check, backup or restore (below)",
    )
    parser.add_argument(
        "file", nargs="?", help="backup, restore: the archive of the embedded MongoDB's data"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "start":
        from tracker.servers.runtime import Runtime

        runtime = Runtime(settings)
        print(
            f"mongo: {services.mask_password(runtime.mongo_url)}\n"
            f"redis: {services.mask_password(runtime.redis_url)}"
        )
        if not (settings.mongo_url and settings.redis_url):
            print(f"password: in {services.services_dir(settings) / 'secret'}")
        return 0
    if args.action == "check":
        from tracker.servers.connect import connect

        runtime = connect(settings)  # or the one-line error naming the server, exit status 2
        runtime.close()
        print(
            f"mongo: {services.mask_password(runtime.mongo_url)} answers\n"
            f"redis: {services.mask_password(runtime.redis_url)} answers"
        )
        return 0
    if args.action in ("backup", "restore"):
        return _backup_or_restore(args, settings)
    if args.action == "stop":
        from tracker.cli import _warm

        checkers = _warm.stop_all(settings)
        stopped = services.stop(settings)
        if checkers:
            stopped.append(f"{checkers} warm checker{'s' if checkers > 1 else ''}")
        print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
        return 0
    report = services.status(settings)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, info in report.items():
        if info["mode"] == "external":
            print(f"{name}: external {info['url']}")
        else:
            state = "running" if info["running"] else "stopped"
            where = f" {info['url']} (pid {info['pid']})" if info["running"] else ""
            print(f"{name}: embedded, {state}{where}; data in {info['home']}")
    return 0


def _backup_or_restore(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from tracker.config import ConfigError
    from tracker.servers import backup

    if not args.file:
        raise ConfigError(f"tracker services {args.action}: give the archive's file name")
    if args.action == "backup":
        size = backup.backup(settings, Path(args.file))
        print(
            f"backed up the embedded MongoDB server to {args.file} ({size:,} bytes); Redis "
            "needs none: `tracker index rebuild` makes its index again from MongoDB"
        )
        return 0
    from tracker.cli import _warm

    checkers = _warm.stop_all(settings)  # a warm checker holds what the restore replaces
    aside, before, after = backup.restore(settings, Path(args.file))
    print(
        f"restored the embedded MongoDB server from {args.file}; the data it had is in "
        f"{aside} (delete it once satisfied)"
    )
    if checkers:
        print(f"stopped {checkers} warm checker(s): the next `tracker check` starts afresh")
    if before is None or before == after:
        print(
            f"the server is back on its port {after}: a running console, scheduler or crawl "
            "worker reconnects by itself, nothing needs a restart"
        )
    else:
        print(
            f"the server came back on port {after}, not {before} (another process took it): "
            "restart a running `tracker serve`, `tracker schedule` and crawl workers"
        )
    print(
        "next: `tracker index rebuild` (the index and the stored pages' index, from the "
        "restored data), then `tracker rematch`"
    )
    return 0
