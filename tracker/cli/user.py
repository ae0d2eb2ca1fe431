"""``tracker user add NAME --role viewer|operator --password-stdin``, ``tracker user list``,
``tracker user remove NAME``: the web console's users (see :mod:`tracker.console.users`).

The password is read from standard input (its first line), or asked for twice on a terminal;
never from the command line, which other users of the machine can see. Exit status 1: ``remove``
found no such user.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from tracker.config import Settings
from tracker.reading.readers import InputError


def register(commands: argparse._SubParsersAction) -> None:
    # The roles are checked by run, with the console's users: importing them here would load
    # the web stack (FastAPI, argon2) for every command's --help.
    parser = commands.add_parser(
        "user",
        help="add, list or remove the web console's users",
        description="The web console's users: a viewer reads everything; an operator also "
        "checks texts and URLs and runs jobs. Passwords come from standard input "
        "(--password-stdin) or a terminal, never the command line. Exit status: 0 done, "
        "1 remove: no such user, 2 error.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="create a user (or --replace its password and role)")
    add.add_argument("name", metavar="NAME")
    add.add_argument(
        "--role", required=True, metavar="viewer|operator", help="viewer reads; operator acts"
    )
    add.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input",
    )
    add.add_argument("--replace", action="store_true", help="replace an existing user's password")
    actions.add_parser("list", help="the users and their roles")
    remove = actions.add_parser("remove", help="delete a user (their sessions end at once)")
    remove.add_argument("name", metavar="NAME")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.cli._output import print_table
    from tracker.console.users import ROLES, UserError, Users, check_name
    from tracker.formats import when
    from tracker.servers.connect import connect

    try:
        if args.action in ("add", "remove"):
            check_name(args.name)  # before any server is started
        if args.action == "add" and args.role not in ROLES:
            raise UserError(f"unknown role {args.role!r}: use {' or '.join(ROLES)}")
        password = _password(args) if args.action == "add" else ""
    except UserError as exc:
        raise InputError(str(exc)) from None
    runtime = connect(settings, redis=False)
    try:
        users = Users(runtime.db)
        if args.action == "add":
            try:
                user = users.add(args.name, args.role, password, replace=args.replace)
            except UserError as exc:
                raise InputError(str(exc)) from None
            print(f"user {user.name} ({user.role}) saved")
            return 0
        if args.action == "remove":
            if users.remove(args.name):
                print(f"user {args.name} removed")
                return 0
            print(f"tracker user: no user named {args.name}", file=sys.stderr)
            return 1
        rows = users.list()
        if not rows:
            print("no users yet: tracker user add NAME --role viewer|operator --password-stdin")
        else:
            print_table(
                ("name", "role", "created", "updated"),
                ((u["_id"], u.get("role"), when(u.get("created_at")), when(u.get("updated_at")))
                 for u in rows),
            )  # fmt: skip
        return 0
    finally:
        runtime.close()


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        line = sys.stdin.readline(4096)
        return line.rstrip("\r\n")
    if not sys.stdin.isatty():
        raise InputError("no password: give --password-stdin and pipe it in, or run on a terminal")
    first = getpass.getpass("password: ")
    if first != getpass.getpass("again: "):
        raise InputError("the two passwords differ")
    return first
