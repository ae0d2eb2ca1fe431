"""Scrapy commands of the project (``COMMANDS_MODULE``): ``scrapy crawl`` with exit statuses
that tell an operator, or the scheduler, whether the crawl's record is whole."""
