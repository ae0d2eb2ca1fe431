"""Item pipelines: extract → fingerprint → match → store (see ``ITEM_PIPELINES``)."""
