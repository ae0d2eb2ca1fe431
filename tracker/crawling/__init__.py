"""Scrapy glue: what `scrapy crawl` wires by settings (settings, items, middlewares,
extensions, the downloader, the shared context of the pipelines, distributed crawls)."""
