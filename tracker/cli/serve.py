"""``tracker serve [--host 127.0.0.1] [--port 8080]``: the web console (see
:mod:`tracker.console`), on uvicorn, until Ctrl-C or SIGTERM.

It listens on 127.0.0.1 unless told otherwise: put it behind a TLS-terminating proxy (which
sends ``X-Forwarded-Proto``) to serve it to others, so cookies are marked Secure.
"""

from __future__ import annotations

import argparse
import logging

from tracker.cli import settings_help
from tracker.config import Settings

DEFAULT_PORT = 8080

#: The settings the console reads, for its --help: its own, the times it shows, the checks and
#: the time-stamps it runs for operators.
SETTINGS = (
    "console_session_hours",
    "console_login_failures",
    "console_login_address_failures",
    "console_login_lock_s",
    "console_max_body_kb",
    "console_cache_s",
    "console_allow_private_urls",
    "display_timezone",
    "max_input_mb",
    "min_coverage",
    "min_passage_chars",
    "min_span_chars",
    "tsa_url",
    "tsa_timeout_s",
    "tsa_ca_file",
    "tsa_cert_file",
    "tsa_client_cert",
    "tsa_pending_alert_hours",
)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "serve",
        help="serve the web console",
        description="Serve the web console (dashboard, pages, evidence, works, sites, jobs, "
        "checks, reports, and the JSON API at /docs) on uvicorn until Ctrl-C or SIGTERM. Users: "
        "`tracker user add`. It listens on 127.0.0.1 unless told otherwise: serve others "
        "through a TLS-terminating proxy.",
        epilog=settings_help(*SETTINGS),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (8080)")
    parser.add_argument(
        "--forwarded-allow-ips",
        default="127.0.0.1",
        metavar="IPS",
        help="proxies trusted for X-Forwarded-For/Proto (default: 127.0.0.1)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="show the demo's data (`tracker demo`: its own database and Redis keys), not "
        "your library; your console accounts sign in",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from tracker.console import create_app
    from tracker.servers.connect import connect

    if not 0 < args.port < 65536:
        from tracker.config import ConfigError

        raise ConfigError(f"--port {args.port}: expected 1-65535")
    users_db = None
    if args.demo:
        from tracker.cli.demo import apart

        users_db_name, settings = settings.mongo_db, apart(settings)
    runtime = connect(settings)
    if args.demo:
        users_db = runtime.mongo[users_db_name]
    logging.getLogger("tracker").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    app = create_app(settings, runtime, config=args.config, users_db=users_db)
    shown = f" showing the demo's data (database {settings.mongo_db})" if args.demo else ""
    print(
        f"tracker console{shown} on http://{args.host}:{args.port}/ (Ctrl-C stops it)",
        flush=True,
    )
    try:
        uvicorn.run(
            app,
            host=args.host,
            port=args.port,
            proxy_headers=True,
            forwarded_allow_ips=args.forwarded_allow_ips,
            log_level="debug" if args.verbose else "info",
            server_header=False,
        )
    finally:
        runtime.close()
    return 0
