"""Scrapy settings for the tracker project (``scrapy.cfg`` points here).

The tracker's own crawl settings, ``TRACKER_<NAME>``, take their defaults from the one settings
model (:mod:`tracker.config`: ``tracker.toml`` and the environment, so ``TRACKER_BATCH_SIZE=32
scrapy crawl …`` and ``batch_size = 32`` in the file both work); Scrapy's own are set here. Any
of them can be overridden for one run with ``-s NAME=VALUE``. ``TRACKER_CRAWL_ID``,
``TRACKER_RUN_ID`` and ``TRACKER_CRAWL_JOIN`` name one run (set with ``-s`` by the scheduler and
``tracker crawl-worker``, see tracker.crawling.distributed) and are not settings of the model.
"""

import sys

# Imported here, the first project module a crawl imports, rather than when the downloader
# loads its handlers: Scrapy's deprecated aliases in these modules (ScrapyClientContextFactory…)
# call inspect.stack() as they are defined, which reads every frame's source and walks
# sys.modules for each frame. With the ~620 modules Scrapy has loaded by now that is what a
# bare Scrapy crawl pays; after the spiders and pipelines (~1,200 modules, a deeper stack) it
# was about 3 times as much CPU at every crawl's start (py-spy: 4 % of the crawl process's
# main thread on the 1,000-page bench).
import scrapy.core.downloader.handlers.http11  # noqa: F401
from scrapy.settings import default_settings

from tracker import __version__
from tracker.config import ConfigError, Settings

try:
    _model = Settings.load()  # lower case: not a Scrapy setting itself
except ConfigError as exc:  # one line and exit status 2, as every tracker error
    command = " ".join(["scrapy", *(a for a in sys.argv[1:2] if not a.startswith("-"))])
    sys.stderr.write(f"{command}: error: {exc}\n")
    raise SystemExit(2) from None

BOT_NAME = "tracker"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"
# `scrapy crawl` exits 2 on bad spider arguments, 1 when the crawl ended degraded.
COMMANDS_MODULE = "tracker.crawling.commands"

# robots.txt rules are read for tracker's own product token, whatever User-Agent a request sends.
USER_AGENT = f"Mozilla/5.0 (compatible; tracker/{__version__}; copyright monitoring)"
ROBOTSTXT_OBEY = True
ROBOTSTXT_USER_AGENT = "tracker"
# What a reader's browser sends (tracker.crawling.profiles): "auto" (a current desktop browser's
# profile per site, picked by its host), a profile's name, "tracker" (USER_AGENT) or a literal
# User-Agent; per site: user_agent: in its file, -a user_agent=. A site file's headers: are
# sent too (TRACKER_BROWSER_HEADERS, a dict the site spider sets for its crawl).
TRACKER_BROWSER_PROFILE = _model.browser_profile
# Optional proxies (tracker.crawling.middlewares.proxy): a list, or a file with one URL per line.
TRACKER_PROXIES = list(_model.proxies)
TRACKER_PROXY_FILE = _model.proxy_file  # "": none
TRACKER_PROXY_MAX_FAILURES = _model.proxy_max_failures
TRACKER_PROXY_BAN_SECONDS = _model.proxy_ban_seconds

# Politeness: AutoThrottle adapts the delay to the server's latency, per domain.
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
# Outputs of one response handled at once: a page gives one item (a feed one per entry), and
# Scrapy starts this many tasks for every response (100 by default: a tenth of the crawl
# process's CPU went to creating them). A feed's entries so reach the stages this many at a
# time, each group waiting TRACKER_BATCH_DELAY for a fuller batch (bench/results/crawl-h50.md).
CONCURRENT_ITEMS = 16
DOWNLOAD_TIMEOUT = 30
# No chapter or article page comes near this; bigger bodies are cancelled and counted.
DOWNLOAD_MAXSIZE = 5 * 1024 * 1024
DOWNLOAD_WARNSIZE = 1024 * 1024
# A body cut short in transfer is kept (flagged, counted) rather than lost.
DOWNLOAD_FAIL_ON_DATALOSS = False

# Retries with exponential backoff (tracker.crawling.middlewares.retry); 429 and 503 are the
# ban middleware's (tracker.crawling.middlewares.bans): Retry-After honoured for that site only.
RETRY_TIMES = 2
RETRY_HTTP_CODES = [500, 502, 504, 522, 524, 408]
TRACKER_BAN_RETRIES = _model.ban_retries
TRACKER_BAN_BACKOFF_BASE = _model.ban_backoff_base
TRACKER_BAN_BACKOFF_MAX = _model.ban_backoff_max
TRACKER_BAN_MAX_WAIT = _model.ban_max_wait  # a longer Retry-After: unread for this crawl
RETRY_BACKOFF_BASE = 1.0
RETRY_BACKOFF_MAX = 60.0

# Crawl limits (override with -s or the spiders' -a max_pages / max_depth).
DEPTH_LIMIT = 8
DEPTH_PRIORITY = 0
CLOSESPIDER_PAGECOUNT = 5000
REDIRECT_MAX_TIMES = 5
URLLENGTH_LIMIT = 2000

# Crawler traps (tracker.crawling.middlewares.traps).
TRACKER_TRAP_MAX_DATE_PAGES = _model.trap_max_date_pages
TRACKER_TRAP_MAX_SEGMENT_REPEATS = _model.trap_max_segment_repeats
TRACKER_TRAP_MAX_URL_LENGTH = _model.trap_max_url_length
TRACKER_TRAP_SESSION_PARAMS = list(_model.trap_session_params)
# A site found through a search engine is crawled this many pages a run (spiders/discover.py).
TRACKER_DISCOVER_MAX_PAGES = _model.discover_max_pages

# Scrapy 2.19 does not keep CONCURRENT_REQUESTS_PER_DOMAIN without a delay:
# tracker/crawling/downloader.py
DOWNLOADER = "tracker.crawling.downloader.PoliteDownloader"
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": None,
    "tracker.crawling.middlewares.useragent.BrowserProfileMiddleware": 390,
    "tracker.crawling.middlewares.bans.BanMiddleware": 560,
    "tracker.crawling.middlewares.exchange.ExchangeMiddleware": 595,  # evidence: body as served
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "tracker.crawling.middlewares.redirect.MetaRefreshMiddleware": 580,  # raw bytes first
    "tracker.crawling.middlewares.redirect.RedirectLoopMiddleware": 650,
    "tracker.crawling.middlewares.proxy.ProxyListMiddleware": 740,
    "tracker.crawling.middlewares.retry.BackoffMiddleware": 950,
}
# Plain, rendered (meta playwright) and impersonated (meta impersonate) requests: one handler
# (tracker.crawling.handlers); the browser starts only for a page that needs it.
DOWNLOAD_HANDLERS = {
    "http": "tracker.crawling.handlers.ReaderDownloadHandler",
    "https": "tracker.crawling.handlers.ReaderDownloadHandler",
}
# Script-rendered pages (tracker.crawling.rendering): auto | always | never (per site: render:
# in its file, -a render=); the browser is browser_path / TRACKER_BROWSER_PATH, else chromium
# on the PATH; pages open at once, pages per browser context, seconds a page may keep loading.
TRACKER_RENDER = _model.render
TRACKER_BROWSER_PATH = _model.browser_path
TRACKER_RENDER_PAGES = _model.render_pages
TRACKER_RENDER_CONTEXT_PAGES = _model.render_context_pages
TRACKER_RENDER_WAIT = _model.render_wait
TRACKER_RENDER_LEARN_DAYS = _model.render_learn_days
SPIDER_MIDDLEWARES = {
    "tracker.crawling.middlewares.traps.TrapGuardMiddleware": 950,
}

ITEM_PIPELINES = {
    "pipelines.extract.ExtractPipeline": 100,
    "pipelines.unchanged.UnchangedPagePipeline": 150,
    "pipelines.files.FilePipeline": 160,
    "pipelines.boilerplate.SiteBoilerplatePipeline": 175,
    "pipelines.fingerprint.FingerprintPipeline": 200,
    "pipelines.match.MatchPipeline": 300,
    "pipelines.evidence.EvidencePipeline": 350,
    "pipelines.store.StorePipeline": 400,
}
# A short line on at least this many pages of a site is that site's boilerplate.
TRACKER_BOILERPLATE_MIN_PAGES = _model.boilerplate_min_pages
# The stages' MongoDB and Redis work runs in worker threads, in batches of up to this many
# pages, or what arrived within this many seconds while the worker was busy (see pipelines).
# 20 ms rather than 5: at full speed the batches are about twice as large (the bench's
# 1,000-page crawl: match 9.4 pages, store 10.5, against 5.3 and 7.9), so fewer round trips a
# page, for at most 0.1 s more before a page is stored. 128 and 64 pages rather than 16 and 16:
# SecantusDB and pymongo pay per command, and on a copy-dense site the stages' batches grow to
# 30-50 pages while their workers are busy (bench/results/crawl-h50.md).
TRACKER_BATCH_SIZE = _model.batch_size
TRACKER_BATCH_DELAY = _model.batch_delay
# Pages are extracted in this many worker processes (0: in a thread of the crawl process), in
# batches of up to this many pages (one round trip each, grown while the worker is busy).
TRACKER_EXTRACT_PROCESSES = _model.extract_processes
TRACKER_EXTRACT_BATCH = _model.extract_batch
# A site's body element, learned from trafilatura's text, reads its further pages.
TRACKER_EXTRACT_LEARNED_BODY = _model.extract_learned_body
# The pages are checked in those worker processes (tracker.crawling.match_worker).
TRACKER_MATCH_IN_WORKERS = _model.match_in_workers

EXTENSIONS = {
    "tracker.crawling.extensions.CrawlRunRecorder": 500,
    "tracker.crawling.outcomes.UrlOutcomes": 505,  # how each fetched URL ended
    "tracker.crawling.alerts.AlertExtension": 510,  # only with alert_webhook
}
# No console into the crawl process: the telnet one is off (TELNETCONSOLE_ENABLED below), and
# Scrapy 2.19's HTTP remote control evaluates the Python sent to it. They are left out of the
# base list, not set to None: Scrapy imports every extension it names, even a disabled one, and
# the remote control's import (aiohttp) cost ~0.4 s of every crawl's start.
_consoles = {
    "scrapy.extensions.telnet.TelnetConsole",
    "scrapy.extensions.remote_control.RemoteControl",
}
EXTENSIONS_BASE = {
    name: order for name, order in default_settings.EXTENSIONS_BASE.items() if name not in _consoles
}
ADDONS = {"tracker.crawling.distributed.DistributedAddon": 0}

# Distributed crawling (tracker.crawling.distributed): one request queue and duplicate filter in
# Redis.
TRACKER_DISTRIBUTED = _model.distributed
MAX_IDLE_TIME_BEFORE_CLOSE = 30

# HTTP cache for development: TRACKER_HTTPCACHE=1 (httpcache = true) or -s HTTPCACHE_ENABLED=1.
HTTPCACHE_ENABLED = _model.httpcache
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_EXPIRATION_SECS = 0
HTTPCACHE_IGNORE_HTTP_CODES = [500, 502, 503, 504, 408, 429]

# Pause/resume: -s JOBDIR=crawls/NAME (Ctrl-C once, then the same command resumes).

# Pages with fewer normalised characters than this are catalogues or navigation, not text.
TRACKER_MIN_TEXT_CHARS = _model.min_text_chars

# Reading pages as a reader sees them (spiders.base.TrackerSpider.read_parts,
# tracker.crawling.resources): at most this many pages of one chapter or thread are joined, and
# this many stylesheets and web fonts are kept for the crawl.
TRACKER_MAX_PARTS = _model.max_parts
TRACKER_RESOURCES_CACHED = _model.resources_cached
# Download files (tracker.files): a download link's file may be this large (DOWNLOAD_MAXSIZE
# holds for pages); reading it is bounded by tracker.files.archives.Limits.
TRACKER_MAX_DOWNLOAD_MB = _model.max_download_mb

TELNETCONSOLE_ENABLED = False
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
LOG_FORMATTER = "tracker.crawling.logformatter.TrackerLogFormatter"
# Scrapy's in-memory stats without its per-access deprecation shim (tracker/crawling/stats.py).
STATS_CLASS = "tracker.crawling.stats.CrawlStatsCollector"
