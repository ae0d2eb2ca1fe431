"""Item pipelines in tests, run as Scrapy runs them: ``process_item`` awaited on an event loop
(its batch is handed to the stage's worker thread and answered)."""

from __future__ import annotations

import asyncio
from typing import Any


def process(pipeline: Any, item: Any) -> Any:
    """``await pipeline.process_item(item)``: the item, or DropItem raised."""
    return asyncio.run(pipeline.process_item(item))
