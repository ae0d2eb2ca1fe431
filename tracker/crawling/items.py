"""Scrapy items: one crawled page on its way through the pipelines."""

import scrapy


class PageItem(scrapy.Item):
    url = scrapy.Field()
    html = scrapy.Field()  # decoded HTML
    encoding = scrapy.Field()
    status = scrapy.Field()
    depth = scrapy.Field()
    referer = scrapy.Field()
    truncated = scrapy.Field()  # the body was cut short in transfer (a partial copy)
    # The HTTP exchanges the page was read from (tracker.enforcement.capture.Exchange; one per
    # part of a page fetched in parts): written as evidence if the page matches, else let go.
    exchanges = scrapy.Field()
    rules = (
        scrapy.Field()
    )  # per-site extraction rules (dict, see tracker.reading.extract.ExtractionRules)
    # A chapter or thread read over several pages: the further pages' URLs and HTML, and those
    # that could not be read (spiders.base.TrackerSpider.read_parts).
    parts = scrapy.Field()
    parts_html = scrapy.Field()
    parts_unread = scrapy.Field()
    resources = scrapy.Field()  # stylesheets and web fonts (tracker.crawling.resources)
    render_reason = scrapy.Field()  # may need the browser (tracker.crawling.rendering), why
    plain_chars = scrapy.Field()  # a rendered page's text length when fetched plainly
    rendered = scrapy.Field()  # read from the browser's rendered DOM
    found_by = scrapy.Field()  # the search query that led to the page (spiders/discover.py)
    fetched = scrapy.Field()  # False: an entry of a feed (the feed was the URL fetched)
    # A page sent to the browser: its plain HTML and exchanges (tracker.crawling.rendering).
    plain_html = scrapy.Field()
    plain_exchanges = scrapy.Field()
    # A download file (tracker.files): its bytes, read by pipelines.files and let go, and
    # what reading found (name, size, SHA-256, members, chapters).
    file_body = scrapy.Field()
    file = scrapy.Field()
    # Set by the pipelines:
    title = scrapy.Field()
    chapter_title = scrapy.Field()
    metadata = scrapy.Field()  # page metadata: description, keywords, author, published, …
    text = scrapy.Field()
    extractor = scrapy.Field()
    reading = scrapy.Field()  # what reading took: hidden elements, posts, parts, PUA decoded…
    content_hash = scrapy.Field()
    stored = scrapy.Field()  # the stored page's content hash and match state, None if new
    normalized = scrapy.Field()  # tracker.text.normalize.NormalizedText (not stored)
    simhash = scrapy.Field()  # unsigned 64-bit SimHash of the text
    simhash_votes = scrapy.Field()  # its tracker.fingerprints.simhash.Votes, when known
    matches = scrapy.Field()  # list of match dicts; None when matching failed
    library_version = scrapy.Field()  # the library version the page was matched against
    unstored = scrapy.Field()  # True: the store failed (tracker.crawling.outcomes)
