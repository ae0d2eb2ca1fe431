"""Add up the counts :mod:`bench.command_counts.sitecustomize` wrote (see there), per page, as
a Markdown table: ``python -m bench.command_counts.tally DIR PAGES``. The bench's own process
(its queries after the crawl) and the connection set-up commands are left out."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

SET_UP = {"CLIENT", "HELLO", "PING", "ping", "saslStart", "saslContinue", "listIndexes"}


def tally(directory: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for path in directory.glob("*.json"):
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # written as it was read
            continue
        if any("crawl_throughput" in arg for arg in found["argv"]):
            continue
        total.update(found["counts"])
    return total


def main(argv: list[str]) -> None:
    directory, pages = Path(argv[0]), int(argv[1])
    print("| kind | command | collection | count | per page |")
    print("|---|---|---|---:|---:|")
    for key, count in sorted(tally(directory).items()):
        kind, name, collection = key.split("\t")
        if name not in SET_UP:
            print(f"| {kind} | {name} | {collection} | {count} | {count / pages:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
