"""Copy the latest result tables into bench/README.md, between the ``results`` markers.

    python bench/readme.py   # after `bench/run.py --quick` and `bench/run.py [--scale N]`

Takes bench/results/quick.md and full.md (whichever exist), demotes their headings under
"Latest results", and leaves the rest of the README (other sections) as it is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
SOURCES = ("quick.md", "full.md")


def demote(markdown: str, levels: int = 2) -> str:
    return re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + levels) + " ", markdown, flags=re.M)


def main() -> int:
    parts = [
        demote((HERE / "results" / name).read_text(encoding="utf-8")).strip()
        for name in SOURCES
        if (HERE / "results" / name).is_file()
    ]
    block = f"{START}\n" + "\n\n".join(parts) + f"\n{END}"
    text = README.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{README}: no {START} … {END} block", file=sys.stderr)
        return 1
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(head + block + tail, encoding="utf-8")
    print(
        f"updated {README} from {', '.join(n for n in SOURCES if (HERE / 'results' / n).is_file())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
