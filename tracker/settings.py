"""Scrapy settings for the tracker project (``scrapy.cfg`` points here).

Tracker's own settings (MongoDB, Redis, thresholds) come from the environment / TOML file, see
:mod:`tracker.config`; these are the crawl's.
"""

BOT_NAME = "tracker"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"

USER_AGENT = "Mozilla/5.0 (compatible; tracker/0.1; copyright monitoring)"
ROBOTSTXT_OBEY = True

# Politeness: AutoThrottle adapts the delay to the server's latency.
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
RETRY_TIMES = 2

# Crawl limits (override with -s or the spider's -a max_pages / max_depth).
DEPTH_LIMIT = 8
DEPTH_PRIORITY = 0
CLOSESPIDER_PAGECOUNT = 5000
REDIRECT_MAX_TIMES = 5

ITEM_PIPELINES = {
    "pipelines.extract.ExtractPipeline": 100,
    "pipelines.fingerprint.FingerprintPipeline": 200,
    "pipelines.match.MatchPipeline": 300,
    "pipelines.store.StorePipeline": 400,
}
EXTENSIONS = {
    "tracker.extensions.CrawlRunRecorder": 500,
}

# Pages with fewer normalised characters than this are catalogues or navigation, not text.
TRACKER_MIN_TEXT_CHARS = 80

TELNETCONSOLE_ENABLED = False
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
LOG_FORMATTER = "tracker.logformatter.TrackerLogFormatter"
