"""Where a bench's results go: the JSON (for plots and later comparisons) and its markdown
table beside it, which is also printed; the JSON a bench's worker process prints; and the CPU
a process (a server, a worker) has used so far."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any


def write_result(path: Path, result: dict[str, Any], markdown: str) -> None:
    """``result`` as JSON at ``path``, ``markdown`` at ``path`` with the suffix ``.md``, and
    ``markdown`` printed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(markdown, encoding="utf-8")
    print(markdown)


def worker_json(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run a bench's worker ``command`` (in ``cwd``, with ``env``: another tree's code, say)
    and return the JSON of the last line it prints; a failing worker raises."""
    out = subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far (``/proc/PID/stat``; raises
    OSError once it has gone)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
