"""MongoDB stores: the only way into MongoDB (the source of truth). One class per collection or
group of collections, taking and returning domain values; every index they query is declared in
:mod:`~tracker.stores.indexes`.

=====================================  ============================================================
store                                  collections
=====================================  ============================================================
:class:`~.masters.MasterStore`         ``masters`` (text and fingerprints), ``library_journal``
:class:`~.pages.PageStore`             ``pages``: crawled pages, their text and match state
:class:`~.pages.MatchStore`            ``matches``, ``page_days`` (what each page carried a day)
:class:`~.clusters.ClusterStore`       ``clusters``, ``cluster_members``: mirror groups
:class:`~.reports.ReportStore`         ``reports``: each day's report figures
:class:`~.rematch.RematchStore`        ``rematch_runs``, ``rematch_mark``
:class:`~.crawl_runs.CrawlRunStore`    ``crawl_runs``: each crawl's figures
:class:`~.job_runs.JobRunStore`        ``job_runs``: the scheduler's ledger of runs
:class:`~.job_times.JobTimeStore`      ``scheduler_jobs``: the jobs' next run times
:class:`~.sources.SourceCursorStore`   ``master_sources``: how far each master source is pulled
:class:`~.sources.SourceCollection`    the user's MongoDB collection of new master documents
:class:`~.users.UserStore`             ``users``: the web console's users
=====================================  ============================================================

:mod:`~.counters` hands out numbers (``counters``), :mod:`~.writes` does the bulk writes that
insert what is new. Import each store from its module: this package imports none, so a command
that needs one store (``tracker user`` its users) does not load the fingerprinting code.
"""
