"""MongoDB stores: the master library, crawled pages and their matches (the source of truth)."""

from tracker.stores.masters import MasterStore
from tracker.stores.pages import MatchStore, PageStore

__all__ = ["MasterStore", "MatchStore", "PageStore"]
