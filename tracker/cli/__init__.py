"""The ``tracker`` command line. Each sub-command lives in its own module with a ``register``
function that adds its parser and sets ``func``."""

from __future__ import annotations

import argparse
import logging
import sys

from tracker.cli import check, demo, index, ingest, report, services
from tracker.config import ConfigError, Settings
from tracker.readers import InputError
from tracker.services import ServiceError
from tracker.text.encoding import DecodeError

COMMANDS = (ingest, check, report, index, services, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracker", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config", help="TOML settings file (default: $TRACKER_CONFIG or ./tracker.toml)"
    )
    parser.add_argument("--data-dir", help="data directory (embedded servers, reports)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = Settings.load(args.config, data_dir=args.data_dir)
        return int(args.func(args, settings) or 0)
    except (ConfigError, InputError, DecodeError, ServiceError) as exc:
        print(f"tracker: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
