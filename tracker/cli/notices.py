"""``tracker notices send --site HOST [--to ADDR] [--dry-run] [--resend]``: mail a site its
takedown notice (see :mod:`tracker.enforcement.notices`).

Exit status: 0 when the notice was sent (or there was nothing new to notice), 1 when a notice
could not be sent (it is kept pending and sent by the next ``notices send`` of the site, or the
scheduler's ``takedown`` job), 2 on any error (no sender, recipient, rights holder or SMTP
server; a bad address; a notice template that fails). ``--dry-run`` prints the notice as a person
reads it and sends nothing: what is not set yet is a placeholder, with a warning.
"""

from __future__ import annotations

import argparse
import sys

from tracker.cli import settings_help
from tracker.config import Settings

#: The settings a notice is sent with, for its --help: the mail, what the notice says and
#: attaches, and the time-stamp of evidence not stamped yet.
SETTINGS = (
    "smtp_url",
    "smtp_from",
    "notice_sender",
    "notice_repeat_days",
    "notice_language",
    "notice_attachments",
    "rights_holder_name",
    "rights_holder_contact",
    "rights_holder_address",
    "display_timezone",
    "evidence_dir",
    "tsa_url",
    "tsa_timeout_s",
    "tsa_ca_file",
    "tsa_cert_file",
    "tsa_client_cert",
)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "notices",
        help="send a site its takedown notice by mail (SMTP), recorded",
        description="Send a site the takedown notice of its pages that still carry a copy, by "
        "SMTP (smtp_url), and record it: its URLs, when, the message id. A URL noticed within "
        "notice_repeat_days is left out unless --resend; a notice the server did not take is "
        "kept pending and sent again. Exit status: 0 sent or nothing new, 1 kept pending, 2 "
        "error.",
        epilog=settings_help(*SETTINGS),
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    send = actions.add_parser(
        "send",
        help="send the site's notice: its pages still carrying a copy, not noticed lately",
        epilog=settings_help(*SETTINGS),
    )
    send.add_argument("--site", required=True, metavar="HOST", help="the site's host name")
    send.add_argument(
        "--to", metavar="ADDR", help="the recipient (default: abuse_contact of its site file)"
    )
    send.add_argument(
        "--dry-run",
        action="store_true",
        help="print the mail as it reads (subject, recipients, text, attachments); send, stamp "
        "and record nothing (a sender, recipient or rights holder not set: a placeholder)",
    )
    send.add_argument(
        "--resend",
        action="store_true",
        help="include URLs noticed within notice_repeat_days too",
    )
    send.set_defaults(func=run_send)


def run_send(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.cli import fail
    from tracker.enforcement.notices import (
        PLACEHOLDER_FROM,
        NoticeError,
        message_of,
        readable,
        send_notices,
    )
    from tracker.servers.connect import connect

    runtime = connect(settings, redis=False)
    try:
        try:
            outcome = send_notices(
                runtime.db,
                settings,
                args.site,
                to=args.to,
                dry_run=args.dry_run,
                resend=args.resend,
            )
        except NoticeError as exc:
            return fail(str(exc))
    finally:
        runtime.close()
    for warning in outcome.warnings:
        print(f"tracker: warning: {warning}", file=sys.stderr)
    if args.dry_run:
        if outcome.composed is None:
            print(f"nothing to notice on {args.site}", file=sys.stderr)
        else:
            sender = settings.smtp_from or PLACEHOLDER_FROM
            message = message_of(outcome.composed, sender, dict(outcome.attachments))
            sys.stdout.write(readable(message))
            print("(dry run: nothing sent, stamped or recorded)", file=sys.stderr)
        _skipped(outcome.skipped_recent, settings)
        return 0
    for record in outcome.sent:
        print(
            f"sent notice {record['_id']} to {record['to']}: {len(record['urls'])} URL(s), "
            f"Message-ID {record['message_id']}"
        )
    _skipped(outcome.skipped_recent, settings)
    if outcome.pending:
        for error in dict.fromkeys(outcome.errors):
            print(f"tracker: {error}", file=sys.stderr)
        print(
            f"tracker: {len(outcome.pending)} notice(s) not sent, kept pending: they are sent "
            "by the next `tracker notices send` of the site or the scheduler's takedown job",
            file=sys.stderr,
        )
        return 1
    if not outcome.sent:
        print(f"nothing to notice on {args.site}")
    return 0


def _skipped(urls: list[str], settings: Settings) -> None:
    if urls:
        print(
            f"{len(urls)} URL(s) noticed within notice_repeat_days ({settings.notice_repeat_days}"
            ") left out (--resend includes them)",
            file=sys.stderr,
        )
