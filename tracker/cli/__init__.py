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
import re
import sys
from dataclasses import fields
from types import ModuleType
from typing import NoReturn

from tracker.config import ConfigError, Settings
from tracker.reading.readers import InputError
from tracker.servers.services import ServiceError
from tracker.text.encoding import DecodeError

# Listed first, in this order, in --help; any other command module follows alphabetically.
PREFERRED_ORDER = ("ingest", "check", "report", "index", "services", "demo")


def command_modules(only: str | None = None) -> list[ModuleType]:
    """The command modules, in --help order; ``only``: just the module of the command of that
    name (``run-job``: ``run_job.py``), when there is one."""
    names = [info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    names.sort(key=lambda n: (PREFERRED_ORDER.index(n) if n in PREFERRED_ORDER else 99, n))
    if only is not None:
        names = [name for name in names if name == only.replace("-", "_")]
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return [module for module in modules if hasattr(module, "register")]


#: The top-level options that take a value (the command is the first word after the options).
_VALUED_OPTIONS = ("--config", "--data-dir")


def command_named(argv: list[str]) -> str | None:
    """The command word of ``argv`` (``check`` in ``tracker -v check FILE``), or None when the
    options before it ask for help or are not the parser's own (then every command is loaded,
    and argparse says what is wrong)."""
    words = iter(argv)
    for word in words:
        if word in _VALUED_OPTIONS:
            next(words, None)
        elif word.startswith(tuple(f"{option}=" for option in _VALUED_OPTIONS)) or word in (
            "-v",
            "--verbose",
        ):
            continue
        elif word.startswith("-"):
            return None  # -h, --help, a misspelt option
        else:
            return word
    return None


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, but a paragraph of a description or epilog that holds indented lines (a
    command's actions: :func:`actions_help`) keeps one entry a line, each wrapped under its
    own text."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        def entry(line: str) -> str:
            head = re.match(r"  \S+\s+", line)
            hang = " " * len(head[0]) if head else ""
            return textwrap.fill(
                line, width, initial_indent=indent, subsequent_indent=indent + hang
            )

        return "\n\n".join(
            "\n".join(entry(line) for line in block.splitlines())
            if "\n  " in block
            else super(HelpFormatter, self)._fill_text(block, width, indent)
            for block in text.split("\n\n")
        )


def actions_help(actions: dict[str, str]) -> str:
    """A command's actions for its --help (its epilog), one line each."""
    width = max(map(len, actions)) + 2
    return "actions:\n" + "\n".join(f"  {name:<{width}}{line}" for name, line in actions.items())


def settings_help(*names: str) -> str:
    """The settings that govern a command, for its --help (its epilog): ``settings: a, b, c``.
    Each name is checked against the settings model, so a misspelt or removed one fails every
    command at once rather than leave a help naming a setting that does not exist."""
    unknown = sorted(set(names) - {spec.name for spec in fields(Settings)})
    if unknown:
        raise ValueError(f"not settings of tracker.config.Settings: {', '.join(unknown)}")
    return "settings: " + ", ".join(dict.fromkeys(names))


#: The settings every command reads (the servers, the data directory), for `tracker --help`.
COMMON_SETTINGS = (
    "data_dir",
    "mongo_url",
    "mongo_db",
    "mongo_write_concern",
    "mongo_read_preference",
    "redis_url",
    "redis_prefix",
    "redis_cluster",
)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in the one-line form of every tracker error, and help texts
    that keep a command's list of actions one a line."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"tracker: error: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``command``: only that command's (a command run loads its own
    module, not the 20 others and what they import: ~25 ms of every ``tracker check``'s start;
    ``tracker --help`` and an unknown command get them all)."""
    parser = Parser(
        prog="tracker",
        description="Find pirated copies of a master library of Chinese texts.",
        epilog="Exit status: 0 success (check: no copy found), 1 check found copies (other "
        "commands: done, but not everything: see their --help), 2 error.\n\n"
        + settings_help(*COMMON_SETTINGS).replace("settings:", "settings every command reads:")
        + " (each command's --help names its own). A setting NAME is NAME = … in the --config "
        "file or TRACKER_NAME in the environment (the servers: MONGO_URL, REDIS_URL).",
    )
    parser.add_argument(
        "--config", help="TOML settings file (default: $TRACKER_CONFIG or ./tracker.toml)"
    )
    parser.add_argument("--data-dir", help="data directory (embedded servers, reports)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules(command):
        module.register(commands)
    if command is not None and command not in commands.choices:
        return build_parser()  # not a command: the whole parser says so (and lists them)
    return parser


def main(argv: list[str] | None = None) -> int:
    return _run(argv)[0]


def entry() -> NoReturn:
    """The ``tracker`` console script. A command that closes all it opens (``check``) skips the
    interpreter's teardown: pymongo's monitor threads sleep in 0.5 s steps and are joined at
    exit, which kept a one-second ``tracker check`` waiting up to half a second more."""
    status, args = _run()
    if getattr(args, "quick_exit", False):
        from tracker.cli._signals import exit_now

        exit_now(status)
    sys.exit(status)


def _run(
    argv: list[str] | None = None, checker: object | None = None
) -> tuple[int, argparse.Namespace]:
    """Run a command; ``checker``: the warm checker's checking service, which runs ``tracker
    check`` commands with it (see :mod:`._warm`)."""
    # numpy's OpenBLAS starts a thread per core when loaded (0.05-0.1 s); nothing here uses it.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command_named(given))
    args = parser.parse_args(given, argparse.Namespace(checker=checker))
    args.argv = given  # as given (a warm check resends it)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    settings = None
    try:
        settings = Settings.load(args.config, data_dir=args.data_dir)
        return int(args.func(args, settings) or 0), args
    except (ConfigError, InputError, DecodeError, ServiceError) as exc:
        return fail(str(exc)), args
    except KeyboardInterrupt:
        return 130, args
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0, args
    except OSError as exc:
        if exc.filename is None:
            raise
        return fail(f"{exc.filename}: {exc.strerror or exc}"), args
    except Exception as exc:
        from tracker.servers.connect import describe

        message = describe(exc, settings) if settings is not None else None
        if message is None:
            raise
        return fail(message), args


def add_size_limit(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--max-mb N`` option of commands that read texts: ``what`` it limits."""
    parser.add_argument(
        "--max-mb",
        type=int,
        metavar="N",
        help=f"refuse {what} larger than N MiB (default: the max_input_mb setting, 32)",
    )


def size_limit(args: argparse.Namespace, settings: Settings) -> int:
    """The input size limit in bytes: ``--max-mb``, else the ``max_input_mb`` setting."""
    return (getattr(args, "max_mb", None) or settings.max_input_mb) << 20


def fail(message: str) -> int:
    """Say what went wrong in one line, ``tracker: error: …``; the exit status of errors."""
    print(f"tracker: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    entry()
