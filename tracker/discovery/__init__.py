"""Discovery: the pirate sites nobody named, found through a search engine (issue 27).

* :mod:`tracker.discovery.queries`: the queries that find a work's copies (titles with the
  words pirate sites use, chapter titles, distinctive phrases) and which of them a run sends;
* :mod:`tracker.discovery.engines`: search engines behind one small interface (SearXNG's JSON
  API), their failure modes as :class:`~tracker.discovery.engines.SearchError`;
* :mod:`tracker.discovery.run`: one run (plan, search, sift, check and crawl through
  ``scrapy crawl discover``, register), and the crawls of the watched sites;
* ``spiders/discover.py``: the crawl that checks the result pages and follows the sites that
  carry copies; :mod:`tracker.stores.discovery`: queries, results and the site registry in
  MongoDB.
"""
