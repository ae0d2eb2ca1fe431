"""Scrapy spiders of the tracker project (``scrapy list``)."""
