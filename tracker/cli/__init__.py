"""The ``tracker`` command line.

Each sub-command lives in its own module of this package with a ``register(commands)`` function
that adds its parser and sets ``func(args, settings) -> int``; modules are discovered, so a new
command is a new file.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
from types import ModuleType
from typing import NoReturn

from tracker.config import ConfigError, Settings
from tracker.readers import InputError
from tracker.services import ServiceError
from tracker.text.encoding import DecodeError

# Listed first, in this order, in --help; any other command module follows alphabetically.
PREFERRED_ORDER = ("ingest", "check", "report", "index", "services", "demo")


def command_modules() -> list[ModuleType]:
    names = [info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    names.sort(key=lambda n: (PREFERRED_ORDER.index(n) if n in PREFERRED_ORDER else 99, n))
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return [module for module in modules if hasattr(module, "register")]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracker", description="Find pirated copies of a master library of Chinese texts."
    )
    parser.add_argument(
        "--config", help="TOML settings file (default: $TRACKER_CONFIG or ./tracker.toml)"
    )
    parser.add_argument("--data-dir", help="data directory (embedded servers, reports)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules():
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    return _run(argv)[0]


def entry() -> NoReturn:
    """The ``tracker`` console script. A command that closes all it opens (``check``) skips the
    interpreter's teardown: pymongo's monitor threads sleep in 0.5 s steps and are joined at
    exit, which kept a one-second ``tracker check`` waiting up to half a second more."""
    status, args = _run()
    if getattr(args, "quick_exit", False):
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(status)
    sys.exit(status)


def _run(argv: list[str] | None = None) -> tuple[int, argparse.Namespace]:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = Settings.load(args.config, data_dir=args.data_dir)
        return int(args.func(args, settings) or 0), args
    except (ConfigError, InputError, DecodeError, ServiceError) as exc:
        print(f"tracker: error: {exc}", file=sys.stderr)
        return 2, args
    except KeyboardInterrupt:
        return 130, args


if __name__ == "__main__":
    entry()
