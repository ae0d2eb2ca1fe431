"""Scrapy settings for the tracker project (``scrapy.cfg`` points here).

Tracker's own settings (MongoDB, Redis, thresholds) come from the environment / TOML file, see
:mod:`tracker.config`; these are the crawl's. Any of them can be overridden per run with
``-s NAME=VALUE``; a few also from the environment (``TRACKER_DISTRIBUTED``,
``TRACKER_HTTPCACHE``, ``TRACKER_PROXIES``).
"""

import os

from tracker.config import parse_bool

BOT_NAME = "tracker"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"
# `scrapy crawl` exits 2 on bad spider arguments, 1 when the crawl ended degraded.
COMMANDS_MODULE = "tracker.crawling.commands"

# robots.txt rules are read for tracker's own product token, whatever User-Agent a request sends.
USER_AGENT = "Mozilla/5.0 (compatible; tracker/0.1; copyright monitoring)"
ROBOTSTXT_OBEY = True
ROBOTSTXT_USER_AGENT = "tracker"
# Rotated per request by tracker.crawling.middlewares.useragent (empty list: always USER_AGENT).
TRACKER_USER_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
]
# Optional proxies (tracker.crawling.middlewares.proxy): a list, or a file with one URL per line.
TRACKER_PROXIES = [p for p in os.environ.get("TRACKER_PROXIES", "").split(",") if p.strip()]
TRACKER_PROXY_FILE = os.environ.get("TRACKER_PROXY_FILE") or None
TRACKER_PROXY_MAX_FAILURES = 3
TRACKER_PROXY_BAN_SECONDS = 300

# Politeness: AutoThrottle adapts the delay to the server's latency, per domain.
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
# Outputs of one response handled at once: a page gives one item (a feed one per entry, a batch
# of TRACKER_BATCH_SIZE), and Scrapy starts this many tasks for every response (100 by default:
# a tenth of the crawl process's CPU went to creating them).
CONCURRENT_ITEMS = 16
DOWNLOAD_TIMEOUT = 30
# No chapter or article page comes near this; bigger bodies are cancelled and counted.
DOWNLOAD_MAXSIZE = 5 * 1024 * 1024
DOWNLOAD_WARNSIZE = 1024 * 1024
# A body cut short in transfer is kept (flagged, counted) rather than lost.
DOWNLOAD_FAIL_ON_DATALOSS = False

# Retries with exponential backoff (tracker.crawling.middlewares.retry).
RETRY_TIMES = 2
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429]
RETRY_BACKOFF_BASE = 1.0
RETRY_BACKOFF_MAX = 60.0

# Crawl limits (override with -s or the spiders' -a max_pages / max_depth).
DEPTH_LIMIT = 8
DEPTH_PRIORITY = 0
CLOSESPIDER_PAGECOUNT = 5000
REDIRECT_MAX_TIMES = 5
URLLENGTH_LIMIT = 2000

# Crawler traps (tracker.crawling.middlewares.traps).
TRACKER_TRAP_MAX_DATE_PAGES = 30
TRACKER_TRAP_MAX_SEGMENT_REPEATS = 2
TRACKER_TRAP_MAX_URL_LENGTH = 1000
TRACKER_TRAP_SESSION_PARAMS: list[str] = []

# Scrapy 2.19 does not keep CONCURRENT_REQUESTS_PER_DOMAIN without a delay:
# tracker/crawling/downloader.py
DOWNLOADER = "tracker.crawling.downloader.PoliteDownloader"
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": None,
    "tracker.crawling.middlewares.useragent.RotatingUserAgentMiddleware": 500,
    "tracker.crawling.middlewares.redirect.RedirectLoopMiddleware": 650,
    "tracker.crawling.middlewares.proxy.ProxyListMiddleware": 740,
    "tracker.crawling.middlewares.retry.BackoffMiddleware": 950,
}
SPIDER_MIDDLEWARES = {
    "tracker.crawling.middlewares.traps.TrapGuardMiddleware": 950,
}

ITEM_PIPELINES = {
    "pipelines.extract.ExtractPipeline": 100,
    "pipelines.unchanged.UnchangedPagePipeline": 150,
    "pipelines.boilerplate.SiteBoilerplatePipeline": 175,
    "pipelines.fingerprint.FingerprintPipeline": 200,
    "pipelines.match.MatchPipeline": 300,
    "pipelines.store.StorePipeline": 400,
}
# A short line on at least this many pages of a site is that site's boilerplate.
TRACKER_BOILERPLATE_MIN_PAGES = 5
# The stages' MongoDB and Redis work runs in worker threads, in batches of up to this many
# pages, or what arrived within this many seconds while the worker was busy (see pipelines).
# 20 ms rather than 5: at full speed the batches are about twice as large (the bench's
# 1,000-page crawl: match 9.4 pages, store 10.5, against 5.3 and 7.9), so fewer round trips a
# page, for at most 0.1 s more before a page is stored.
TRACKER_BATCH_SIZE = 16
TRACKER_BATCH_DELAY = 0.02
# Pages are extracted in this many worker processes (0: in a thread of the crawl process), in
# batches of up to this many pages (one round trip each, grown while the worker is busy).
TRACKER_EXTRACT_PROCESSES = 1
TRACKER_EXTRACT_BATCH = 16

EXTENSIONS = {
    "tracker.crawling.extensions.CrawlRunRecorder": 500,
}
ADDONS = {"tracker.crawling.distributed.DistributedAddon": 0}

# Distributed crawling (tracker.crawling.distributed): one request queue and duplicate filter in
# Redis.
TRACKER_DISTRIBUTED = parse_bool(os.environ.get("TRACKER_DISTRIBUTED", ""))
MAX_IDLE_TIME_BEFORE_CLOSE = 30

# HTTP cache for development: TRACKER_HTTPCACHE=1 or -s HTTPCACHE_ENABLED=1.
HTTPCACHE_ENABLED = parse_bool(os.environ.get("TRACKER_HTTPCACHE", ""))
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_EXPIRATION_SECS = 0
HTTPCACHE_IGNORE_HTTP_CODES = [500, 502, 503, 504, 408, 429]

# Pause/resume: -s JOBDIR=crawls/NAME (Ctrl-C once, then the same command resumes).

# Pages with fewer normalised characters than this are catalogues or navigation, not text.
TRACKER_MIN_TEXT_CHARS = 80

# Reading pages as a reader sees them (spiders.base.TrackerSpider.read_parts,
# tracker.crawling.resources): at most this many pages of one chapter or thread are joined, and
# this many stylesheets and web fonts are kept for the crawl.
TRACKER_MAX_PARTS = 50
TRACKER_RESOURCES_CACHED = 512

TELNETCONSOLE_ENABLED = False
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
LOG_FORMATTER = "tracker.crawling.logformatter.TrackerLogFormatter"
