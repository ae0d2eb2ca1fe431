"""From a copy found to a copy taken down: what a rights holder needs after the report.

* **Evidence** (:mod:`~tracker.enforcement.capture`, :mod:`~tracker.enforcement.warc`): the
  crawl keeps the HTTP exchange of every page it matches, as WARC records (ISO 28500) in
  daily files under ``<data_dir>/evidence``, written and synced before the match is stored;
  the payload's SHA-256 is stored with the match. Optionally a screenshot
  (:mod:`~tracker.enforcement.screenshots`).
* **Bundles** (:mod:`~tracker.enforcement.bundle`): ``tracker evidence export`` writes a page's
  records, a manifest, an RFC 3161 time-stamp token over the manifest
  (:mod:`~tracker.enforcement.timestamp`: any token a standard verifier accepts) and a
  ``VERIFY.txt`` guide; ``--format wacz`` a WACZ file (:mod:`~tracker.enforcement.wacz`);
  ``tracker evidence verify`` checks all of it, printing the ``sha256sum`` and ``openssl``
  steps as it goes.
* **Notices** (:mod:`~tracker.enforcement.notices`, :mod:`~tracker.enforcement.mail`,
  :mod:`~tracker.enforcement.notice_text`): a site's takedown notice (a 侵权通知书 by default,
  or an English DMCA-style one; Jinja2 templates the data directory may override) naming the
  rights holder and each URL's evidence, its manifests and time-stamps attached, sent by SMTP
  to its abuse contact, recorded, never repeated for a URL within ``notice_repeat_days``.
* **Takedown tracking** (:mod:`~tracker.enforcement.takedown`): every noticed URL fetched
  again and classified removed, live or reappeared; removal rates per site, non-compliant
  sites and their delisting lists.
* **Alerts** (:mod:`~tracker.enforcement.alerts`): new copies POSTed to a webhook from an
  outbox, never holding up a crawl; time-stamps failing for over ``tsa_pending_alert_hours``.

The records of all of it live in MongoDB through :mod:`tracker.stores` (``captures``,
``notices``, ``takedowns``, ``alerts``).
"""
