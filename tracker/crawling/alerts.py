"""Scrapy extension sending the alerts of a crawl's new copies to ``alert_webhook`` (see
:mod:`tracker.enforcement.alerts`): a sender thread started with the spider, sending every
``alert_interval_s`` seconds, and a last send when the spider closes, run off the reactor thread
and bounded in time. Without ``alert_webhook`` it is not loaded."""

from __future__ import annotations

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from tracker.crawling.context import tracker_context
from tracker.enforcement.alerts import AlertSender
from tracker.stores.alerts import AlertOutbox


class AlertExtension:
    def __init__(self, crawler: Crawler, sender: AlertSender) -> None:
        self.crawler = crawler
        self.sender = sender

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AlertExtension:
        context = tracker_context(crawler)
        settings = context.runtime.settings
        if not settings.alert_webhook:
            raise NotConfigured("no alert_webhook")
        sender = AlertSender(
            lambda: AlertOutbox(context.runtime.db),
            settings.alert_webhook,
            settings.alert_interval_s,
        )
        extension = cls(crawler, sender)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        self.sender.start()

    def spider_closed(self, spider: Spider) -> Deferred:
        closing = deferToThread(self.sender.close)
        closing.addCallback(lambda _: self._count())
        return closing

    def _count(self) -> None:
        stats = self.crawler.stats
        stats.set_value("tracker/alerts/sent", self.sender.sent)
        if self.sender.failures:
            stats.set_value("tracker/alerts/failed_posts", self.sender.failures)
