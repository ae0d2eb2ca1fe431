"""``tracker evidence export URL --out DIR``, ``verify DIR [--ca-file CA]``, ``stamp --pending |
URL``, ``list URL``: the evidence the crawl captured of a page (see
:mod:`tracker.enforcement.bundle`).

Exit status: ``export`` 0 when the bundle is complete, 1 when it was written without its
time-stamp token (no ``tsa_url``, or the TSA failed: the stamp is pending), 2 when there is
nothing to export (no capture of the URL, its records missing or damaged) or on any error;
``export --format wacz`` writes a WACZ and a token over its digest instead (0 when stamped, 1
without the token). ``verify`` (a bundle or a WACZ export) 0 when everything is intact and
time-stamped, 1 when something was altered (or the token does not verify), 3 when everything
is intact but not time-stamped yet, 2 when the folder is no bundle; ``stamp`` 0 when every
stamp asked for was obtained, 1 when some are still pending.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tracker.cli import settings_help
from tracker.config import Settings

#: The settings a time-stamp is asked with (export and stamp), for their --help.
TSA_SETTINGS = ("tsa_url", "tsa_timeout_s", "tsa_ca_file", "tsa_cert_file", "tsa_client_cert")
#: ``export`` reads the captures' files; ``stamp`` also alerts the stamps pending too long.
EXPORT_SETTINGS = ("evidence_dir", *TSA_SETTINGS)
STAMP_SETTINGS = (*TSA_SETTINGS, "tsa_pending_alert_hours", "alert_webhook")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "evidence",
        help="export a page's evidence as a time-stamped bundle, verify a bundle, stamp",
        description="The evidence the crawl captured of each page it matched: WARC records, "
        "a manifest, an RFC 3161 time-stamp token.",
        epilog=settings_help(*EXPORT_SETTINGS, *STAMP_SETTINGS),
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export",
        help="write a page's evidence bundle to a folder",
        description="Write a page's evidence bundle (manifest.json, its WARC records, a "
        "screenshot if taken, an RFC 3161 token from tsa_url) to a folder. Exit status: 0 the "
        "bundle is complete, 1 written without its time-stamp (no tsa_url, or the TSA failed: "
        "the stamp is pending), 2 no capture of the URL, its records missing or damaged, error.",
        epilog=settings_help(*EXPORT_SETTINGS),
    )
    export.add_argument("url", metavar="URL", help="the page, as the crawl stored it")
    export.add_argument("--out", required=True, metavar="DIR", help="the bundle's folder")
    export.add_argument("--capture", metavar="ID", help="this capture (default: the newest)")
    export.add_argument(
        "--format",
        choices=("bundle", "wacz"),
        default="bundle",
        help="bundle: manifest, WARC and token as files (default); wacz: a WACZ file "
        "(Webrecorder's format, for ReplayWeb.page) and a token over its digest",
    )
    export.set_defaults(func=run_export)

    verify = actions.add_parser(
        "verify",
        help="check a bundle: hashes, WARC records, token",
        description="Recompute every hash of a bundle, read its WARC records and compare them "
        "with the manifest, verify the token over the manifest. Exit status: 0 intact, 1 "
        "something differs (listed) or no token, 2 not a bundle.",
    )
    verify.add_argument("folder", metavar="DIR")
    verify.add_argument(
        "--ca-file", metavar="CA", help="the TSA's CA certificate(s), PEM: the token's signer "
        "is checked up to it (without it only the token's hash is)"
    )  # fmt: skip
    verify.set_defaults(func=run_verify)

    stamp = actions.add_parser(
        "stamp",
        help="time-stamp captures now: the pending ones, or a page's newest",
        description="Ask tsa_url (within tsa_timeout_s; verified up to tsa_ca_file when set) for "
        "the time-stamps still pending, or for a page's newest capture. Exit status: 0 every "
        "stamp obtained, 1 some still pending, 2 no tsa_url, error.",
        epilog=settings_help(*STAMP_SETTINGS),
    )
    stamp.add_argument("url", nargs="?", metavar="URL")
    stamp.add_argument(
        "--pending", action="store_true", help="every capture whose stamp is pending"
    )
    stamp.set_defaults(func=run_stamp)

    listing = actions.add_parser("list", help="a page's captures, newest first")
    listing.add_argument("url", metavar="URL")
    listing.set_defaults(func=run_list)


def _fail(message: str) -> int:
    from tracker.cli import fail

    return fail(message)


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.enforcement.bundle import EvidenceError, bundle_of, find_capture
    from tracker.servers.connect import connect
    from tracker.stores.evidence import CaptureStore

    out = Path(args.out).expanduser()
    if out.exists() and not out.is_dir():
        return _fail(f"--out {out}: is a file, not a folder")
    runtime = connect(settings, redis=False)
    try:
        store = CaptureStore(runtime.db)
        try:
            bundle = bundle_of(store, settings, find_capture(store, args.url, args.capture))
        except EvidenceError as exc:
            return _fail(str(exc))
    finally:
        runtime.close()
    if args.format == "wacz":
        return _write_wacz(bundle, out, settings)
    for path in bundle.write(out):
        print(path)
    capture = bundle.capture
    print(
        f"captured {capture['at']:%Y-%m-%d %H:%M:%S} UTC, HTTP {capture['status']}, "
        f"payload SHA-256 {capture['payload_sha256']}",
        file=sys.stderr,
    )
    if bundle.stamp_state == "stamped":
        return 0
    if bundle.stamp_state == "pending":
        print(
            f"tracker: the bundle has no time-stamp yet: {bundle.stamp_error}. The stamp is "
            "pending: run `tracker evidence stamp --pending`, then export again",
            file=sys.stderr,
        )
    else:
        print(
            "tracker: the bundle has no time-stamp: no time-stamping authority is configured "
            "(set tsa_url / TRACKER_TSA_URL to an RFC 3161 TSA)",
            file=sys.stderr,
        )
    return 1


def _write_wacz(bundle, out: Path, settings: Settings) -> int:
    from tracker.enforcement.timestamp import Tsa
    from tracker.enforcement.wacz import WaczError, write_wacz

    try:
        written = write_wacz(bundle, out, Tsa.of(settings))
    except WaczError as exc:
        return _fail(str(exc))
    for path in written.paths:
        print(path)
    if written.stamped:
        return 0
    print(f"tracker: the WACZ has no time-stamp: {written.error}", file=sys.stderr)
    return 1


def run_verify(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.enforcement.bundle import BundleError, verify_bundle
    from tracker.enforcement.wacz import find_wacz, verify_wacz

    folder = Path(args.folder).expanduser()
    if not folder.is_dir():
        return _fail(f"{folder}: no such folder")
    ca_file = Path(args.ca_file).expanduser() if args.ca_file else None
    if ca_file is not None and not ca_file.is_file():
        return _fail(f"--ca-file {ca_file}: no such file")
    wacz = find_wacz(folder)
    try:
        result = verify_wacz(folder, wacz, ca_file) if wacz else verify_bundle(folder, ca_file)
    except BundleError as exc:
        return _fail(str(exc))
    for (ok, what), step in zip(result.checks, result.steps, strict=True):
        if step:
            print(f"$ {step}")
        print(f"{'ok     ' if ok else 'DIFFERS'}  {what}")
    state = result.state
    if state == "altered":
        print("ALTERED: the bundle is not as it was exported (see DIFFERS above)")
        return 1
    if state == "unstamped":
        print(
            "NOT STAMPED YET: the files are intact, but the bundle has no time-stamp "
            "(timestamp.tsr): `tracker evidence stamp --pending`, then export again"
        )
        return 3
    if ca_file is None:
        print(
            "intact: every file as exported, the time-stamp over them; its signature NOT "
            "checked (give --ca-file, the TSA's CA)"
        )
    else:
        print("intact: every file as exported, the time-stamp verified up to the CA")
    return 0


def run_stamp(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.enforcement.bundle import EvidenceError, find_capture, stamp_captures
    from tracker.servers.connect import connect
    from tracker.stores.evidence import CaptureStore

    if bool(args.url) == bool(args.pending):
        return _fail("give a URL or --pending")
    if not settings.tsa_url:
        return _fail("no time-stamping authority: set tsa_url (TRACKER_TSA_URL)")
    runtime = connect(settings, redis=False)
    try:
        store = CaptureStore(runtime.db)
        try:
            captures = [find_capture(store, args.url)] if args.url else None
        except EvidenceError as exc:
            return _fail(str(exc))
        summary = stamp_captures(store, settings, captures)
        alerted = _alert_overdue(store, settings)
    finally:
        runtime.close()
    for line in summary.lines:
        print(line)
    print(f"{summary.stamped} stamped, {summary.pending} still pending{alerted}")
    return 1 if summary.pending else 0


def _alert_overdue(store, settings: Settings) -> str:
    """Alert the stamps pending too long (``tsa_pending_alert_hours``) to ``alert_webhook``."""
    from datetime import UTC, datetime

    from tracker.enforcement.alerts import WebhookError, alert_overdue_stamps

    if not settings.alert_webhook:
        return ""
    hours = settings.tsa_pending_alert_hours
    try:
        count = alert_overdue_stamps(store, settings.alert_webhook, hours, datetime.now(UTC))
    except WebhookError as exc:
        print(f"tracker: the pending stamps could not be alerted: {exc}", file=sys.stderr)
        return ""
    return f" ({count} pending for over {hours:g} h alerted)" if count else ""


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.cli._output import print_table
    from tracker.servers.connect import connect
    from tracker.stores.evidence import CaptureStore

    runtime = connect(settings, redis=False)
    try:
        fields = {"at": 1, "status": 1, "payload_sha256": 1, "stamp.state": 1, "screenshot": 1}
        captures = CaptureStore(runtime.read_db).of_url(args.url, fields)
    finally:
        runtime.close()
    if not captures:
        return _fail(f"no evidence captured for {args.url}")
    print_table(
        ["capture", "fetched (UTC)", "HTTP", "payload SHA-256", "stamp", "screenshot"],
        [
            (
                c["_id"],
                f"{c['at']:%Y-%m-%d %H:%M:%S}",
                c.get("status", ""),
                c.get("payload_sha256", ""),
                (c.get("stamp") or {}).get("state", "none"),
                "yes" if c.get("screenshot") else "no",
            )
            for c in captures
        ],
        wide=True,
    )
    return 0
