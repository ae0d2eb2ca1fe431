"""Where a bench's results go: the JSON (for plots and later comparisons) and its markdown
table beside it, which is also printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_result(path: Path, result: dict[str, Any], markdown: str) -> None:
    """``result`` as JSON at ``path``, ``markdown`` at ``path`` with the suffix ``.md``, and
    ``markdown`` printed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(markdown, encoding="utf-8")
    print(markdown)
