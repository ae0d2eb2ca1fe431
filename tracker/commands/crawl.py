"""``scrapy crawl SPIDER``, with the tracker's exit statuses.

* **2**, before anything is fetched, when the spider's arguments are wrong (a missing
  ``start_url``, a bad number…): one log line naming the fix, no traceback.
* **1** when the crawl could not start, or ended *degraded*: pages it fetched could not be
  matched or stored because a server failed (the stat ``tracker/degraded``, see
  :mod:`pipelines`). They are recorded as such, and the next crawl or ``tracker rematch``
  finishes them; the status says the day's record is not whole yet.
* **0** otherwise.
"""

from __future__ import annotations

import argparse
import logging

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import UsageError

log = logging.getLogger("tracker.crawl")

DEGRADED = "tracker/degraded"


class Command(ScrapyCrawl):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one spider: scrapy crawl SPIDER [-a NAME=VALUE …]")
        assert self.crawler_process is not None
        spidercls = self.crawler_process.spider_loader.load(args[0])
        check = getattr(spidercls, "check_arguments", None)
        if check is not None:
            try:
                check(**opts.spargs)
            except ValueError as exc:
                log.error("scrapy crawl %s: %s", args[0], exc)
                self.exitcode = 2
                return
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        degraded = int(crawler.stats.get_value(DEGRADED, 0) or 0) if crawler.stats else 0
        if self.crawler_process.bootstrap_failed or degraded:
            self.exitcode = 1
