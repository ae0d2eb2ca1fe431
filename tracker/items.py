"""Scrapy items: one crawled page on its way through the pipelines."""

import scrapy


class PageItem(scrapy.Item):
    url = scrapy.Field()
    html = scrapy.Field()  # decoded HTML
    encoding = scrapy.Field()
    status = scrapy.Field()
    depth = scrapy.Field()
    referer = scrapy.Field()
    # Set by the pipelines:
    title = scrapy.Field()
    text = scrapy.Field()
    extractor = scrapy.Field()
    normalized = scrapy.Field()  # tracker.text.normalize.NormalizedText (not stored)
    fingerprint = scrapy.Field()  # tracker.fingerprints.document.DocumentFingerprint
    matches = scrapy.Field()  # list of match dicts
