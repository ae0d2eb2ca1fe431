"""``tracker crawl SPIDER [-a NAME=VALUE …] [-s NAME=VALUE …]``: ``scrapy crawl`` from any folder.

Scrapy finds a project's settings through a ``scrapy.cfg`` in the working folder or one above
it, or through ``SCRAPY_SETTINGS_MODULE``; away from the checkout it has neither and answers
"The crawl command is not available from this location". This command becomes ``scrapy crawl``
(the process is replaced, so Ctrl-C, SIGTERM and the exit status are Scrapy's own) with the
project's settings module and exactly the tracker's settings (``--config``, ``--data-dir``,
the environment), as the scheduler starts its crawls (:mod:`tracker.crawling.crawl`).
"""

from __future__ import annotations

import argparse
import os

from tracker.config import CRAWL_SETTINGS, Settings

SPIDERS = {
    "novel": "a novel site from a catalogue or chapter URL (-a start_url=URL)",
    "news": "a news site from a front page, a sitemap or a feed (-a start_url=URL)",
    "site": "a site described by a site file (-a config=sites/NAME.yaml)",
    "discover": "the result pages of discovery's searches (run by `tracker discover`)",
}


#: The settings a crawl reads beside the Scrapy ones (CRAWL_SETTINGS), for its --help.
SETTINGS = (
    "crawl_redis_url",
    "min_coverage",
    "min_passage_chars",
    "min_span_chars",
    "rewrite_detection",
    "max_input_mb",
    "page_index_days",
    "evidence_dir",
    "evidence_screenshots",
    "evidence_screenshot_max",
    "alert_webhook",
    "alert_interval_s",
)


def register(commands: argparse._SubParsersAction) -> None:
    from tracker.cli import actions_help, settings_help

    parser = commands.add_parser(
        "crawl",
        help="crawl a site: `scrapy crawl` with the tracker's settings, from any folder",
        description="Crawl a site with one of the project's spiders: `scrapy crawl SPIDER "
        "ARGS…`, from any folder, with the tracker's settings (--config, --data-dir, the "
        "environment). Everything after SPIDER goes to Scrapy: -a NAME=VALUE spider arguments "
        "(max_pages, max_depth, obey_robots, robots_reason, user_agent, render, impersonate), "
        "-s NAME=VALUE settings for this run (e.g. -s JOBDIR=crawls/NAME to make it "
        "resumable). Exit status: 0 ok, 1 did not start or ended degraded (pages not matched "
        "or not stored: `tracker rematch` finishes them), 2 bad spider or arguments.",
        epilog=actions_help(SPIDERS).replace("actions:", "spiders:", 1)
        + "\n\n"
        + settings_help(*CRAWL_SETTINGS, *SETTINGS)
        + " (-s TRACKER_NAME=VALUE: one for this run)"
        + "\n\nexample:\n  tracker crawl novel -a start_url=https://suspect.example/book/1/",
    )
    parser.add_argument("spider", metavar="SPIDER", choices=sorted(SPIDERS), help="the spider")
    parser.add_argument(
        "scrapy_args",
        nargs=argparse.REMAINDER,
        metavar="ARGS",
        help="-a NAME=VALUE and -s NAME=VALUE, given to scrapy crawl",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    import sys

    from tracker.crawling.crawl import crawl_command, crawl_environment

    command = [*crawl_command(args.spider), *args.scrapy_args]
    if args.verbose:
        command += ["-L", "DEBUG"]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, crawl_environment(settings))
    return 2  # not reached: execve replaces this process or raises OSError
