"""Scrapy middlewares of the tracker crawl, each doing one job (wired in
``tracker.crawling.settings``).

Downloader side: :class:`~.useragent.BrowserProfileMiddleware`,
:class:`~.bans.BanMiddleware`, :class:`~.proxy.ProxyListMiddleware`,
:class:`~.retry.BackoffMiddleware`, :class:`~.redirect.RedirectLoopMiddleware`. Spider side:
:class:`~.traps.TrapGuardMiddleware`.
"""
