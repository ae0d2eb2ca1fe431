"""Plot a benchmark result: recall per disguise per method, and the share of innocent texts
flagged, as grouped bar charts (PNG).

    python bench/plot.py [bench/results/latest.json] [--out bench/results/latest.png]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
COLORS = {"tracker": "#1b9e77", "classic": "#d95f02", "minhash-lsh": "#7570b3", "naive": "#e7298a"}


def plot(data: dict, out: Path) -> None:
    methods = data["methods"]
    rows = data["summary"]["rows"]
    disguises = [r for r in rows if r["group"] != "innocent"]
    innocents = [r for r in rows if r["group"] == "innocent"]
    fig, axes = plt.subplots(
        2,
        1,
        figsize=(max(8, 0.7 * len(disguises) + 2), 9),
        gridspec_kw={"height_ratios": [3, 1.3]},
    )
    width = 0.8 / len(methods)
    for ax, chosen, label in (
        (axes[0], disguises, "recall"),
        (axes[1], innocents, "share of innocent texts flagged"),
    ):
        x = np.arange(len(chosen))
        for i, m in enumerate(methods):
            values = [r["scores"][m] for r in chosen]
            offset = x + (i - (len(methods) - 1) / 2) * width
            ax.bar(offset, values, width, label=m if ax is axes[0] else None, color=COLORS.get(m))
            if ax is axes[1]:  # flagged counts: bars of zero height would say nothing
                for xi, r in zip(offset, chosen, strict=True):
                    flagged, total = r["counts"][m]
                    ax.text(
                        xi,
                        r["scores"][m],
                        f"{flagged}/{total}",
                        ha="center",
                        va="bottom",
                        fontsize=6,
                        rotation=90,
                    )
        ax.set_xticks(x, [r["kind"] for r in chosen], rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(label)
        top = max([r["scores"][m] for r in chosen for m in methods] + [0.0])
        ax.set_ylim(0, 1.05 if ax is axes[0] else max(0.25, 1.5 * top))
        ax.grid(axis="y", alpha=0.3)
    for i, r in enumerate(disguises):
        axes[0].hlines(
            r["target"], i - 0.45, i + 0.45, colors="black", linestyles="dashed", linewidth=0.8
        )
    fig.legend(ncol=len(methods), loc="lower center", fontsize=8)
    meta = data["meta"]
    axes[0].set_title(
        f"{data['mode']} run {meta['date']}: {meta['cases']} cases, {meta['masters']} masters "
        "(dashed: target)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("results", nargs="?", type=Path, default=RESULTS / "latest.json")
    p.add_argument("--out", type=Path, help="default: the results path with .png")
    args = p.parse_args(argv)
    data = json.loads(args.results.read_text(encoding="utf-8"))
    out = args.out or args.results.with_suffix(".png")
    plot(data, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
