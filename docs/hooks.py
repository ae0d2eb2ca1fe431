"""MkDocs hook: the reference parts of the pages made from the code (tracker.reference) at every
build, so the settings table and the command-line reference cannot drift from it."""

from __future__ import annotations

from tracker.reference import fill


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    return fill(markdown)


def on_files(files, config, **kwargs):
    """The benchmarks' plot, kept in bench/results/, published beside the pages."""
    from pathlib import Path

    from mkdocs.structure.files import File

    root = Path(config["config_file_path"]).parent
    files.append(
        File.generated(config, "bench/full.png", abs_src_path=str(root / "bench/results/full.png"))
    )
    return files
