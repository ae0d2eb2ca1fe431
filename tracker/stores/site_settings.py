"""What an operator set for a site in the web console (``site_settings``): one document per
site, ``_id`` the host, with ``notice_language`` (``zh`` or ``en``: the language of its
takedown notices, over its site file's) and who set it when (``set_by``, ``set_at``)."""

from __future__ import annotations

from datetime import datetime

from pymongo.database import Database


class SiteSettingsStore:
    def __init__(self, db: Database) -> None:
        self.sites = db["site_settings"]

    def notice_language(self, site: str) -> str:
        """The language set for the site's notices; "" when none is."""
        doc = self.sites.find_one({"_id": site}, {"notice_language": 1})
        return str((doc or {}).get("notice_language") or "")

    def set_notice_language(self, site: str, language: str, by: str, at: datetime) -> None:
        """Set it (``""``: the site file's, else the setting's, again)."""
        self.sites.update_one(
            {"_id": site},
            {"$set": {"notice_language": language, "set_by": by, "set_at": at}},
            upsert=True,
        )
