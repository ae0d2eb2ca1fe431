"""Load the development corpus (``../shared/corpus``) as master documents and innocent texts.

Masters: 红楼梦 and 西游记 split into chapters (:func:`tracker.text.chapters.split_chapters`), and
the first half of People's Daily (January 1998) grouped into pseudo-articles. Innocents: the
second half of the news, 呐喊 (in chapter-sized windows) and the essays of 古文观止.

People's Daily has one paragraph a line and no article boundaries. A line that looks like a
headline (≤ 30 characters, no closing punctuation) starts a new article once the current one
has ``NEWS_MIN_CHARS``; an article is also closed before it would exceed ``NEWS_MAX_CHARS``.
Paragraphs that occur more than once in the paper (datelines, recurring columns) are kept only
the first time, so that two pseudo-articles never share a paragraph.

An innocent text must not be derived from the master library, yet a month of one newspaper
repeats itself (official statements, follow-up reports, laws printed twice). Innocent candidates
sharing a passage of ``MAX_SHARED_CHARS`` or more characters (exactly, after folding) with the
masters are therefore left out, and their number is reported. Shorter shared passages are kept:
stock phrases and short quotes are exactly what an innocent text may contain.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tracker.model import MasterDocument
from tracker.text.chapters import split_chapters

NEWS_MIN_CHARS = 300
NEWS_MAX_CHARS = 1000
MAX_SHARED_CHARS = 50
NOVELS = {"hongloumeng.txt": "红楼梦", "xiyouji.txt": "西游记"}
_HEADLINE_END = re.compile(r"[。！？!?”’」』）)．.…：:；;]$")


def default_corpus_dir() -> Path:
    """``$BENCH_CORPUS``, else ``../shared/corpus`` next to the project root."""
    env = os.environ.get("BENCH_CORPUS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


@dataclass(frozen=True)
class Innocent:
    kind: str  # "news", "nahan", "guwen"
    title: str
    text: str


@dataclass
class Corpus:
    novel_chapters: list[MasterDocument]
    news_masters: list[MasterDocument]
    innocents: list[Innocent]
    excluded_innocents: int = 0
    by_id: dict[str, MasterDocument] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {d.doc_id: d for d in self.masters}

    @property
    def masters(self) -> list[MasterDocument]:
        return self.novel_chapters + self.news_masters

    def innocents_of(self, kind: str) -> list[Innocent]:
        return [i for i in self.innocents if i.kind == kind]

    def exclude_derived(self, longest_shared: Callable[[str], int]) -> None:
        """Drop innocents sharing a passage of ``MAX_SHARED_CHARS`` or more with the masters
        (``longest_shared`` measures it, e.g. the naive baseline's index)."""
        kept = [i for i in self.innocents if longest_shared(i.text) < MAX_SHARED_CHARS]
        self.excluded_innocents += len(self.innocents) - len(kept)
        self.innocents = kept


def paragraphs(text: str) -> list[str]:
    """Non-empty lines, stripped (the novels indent paragraphs and separate them by blank lines)."""
    return [p.strip(" \t\u3000\r") for p in text.split("\n") if p.strip(" \t\u3000\r")]


def load_novel(path: Path, work: str) -> list[MasterDocument]:
    text = path.read_text(encoding="utf-8")
    return [
        MasterDocument(f"{work}/{c.number:04d}", work, c.title, "\n".join(paragraphs(c.text)))
        for c in split_chapters(text)
    ]


def is_headline(line: str) -> bool:
    return len(line) <= 30 and not _HEADLINE_END.search(line)


def news_articles(path: Path) -> list[str]:
    """Pseudo-articles of ``NEWS_MIN_CHARS``…``NEWS_MAX_CHARS`` characters, in paper order."""
    seen: set[str] = set()
    articles: list[str] = []
    current: list[str] = []
    size = 0
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or (len(line) >= 12 and line in seen):
            continue
        seen.add(line)
        if (
            current
            and size >= NEWS_MIN_CHARS
            and (is_headline(line) or size + len(line) > NEWS_MAX_CHARS)
        ):
            articles.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current and size >= NEWS_MIN_CHARS:
        articles.append("\n".join(current))
    return articles


def nahan_windows(path: Path, size: int = 1000) -> list[str]:
    """呐喊 (a pirate-download copy, ``_分节阅读_N`` markers kept) cut into ~``size`` windows."""
    paras = paragraphs(path.read_text(encoding="utf-8"))
    windows, current, length = [], [], 0
    for p in paras:
        current.append(p)
        length += len(p)
        if length >= size:
            windows.append("\n".join(current))
            current, length = [], 0
    if length >= size // 3:
        windows.append("\n".join(current))
    return windows


def guwen_essays(path: Path) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    essays = []
    for volume in data["content"]:
        for essay in volume["content"]:
            text = "\n".join(essay["paragraphs"])
            if len(text) >= 200:
                essays.append((essay["chapter"], text))
    return essays


def load(corpus_dir: Path | None = None) -> Corpus:
    root = corpus_dir or default_corpus_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"corpus not found at {root} (set BENCH_CORPUS)")
    chapters = [doc for name, work in NOVELS.items() for doc in load_novel(root / name, work)]
    articles = news_articles(root / "peoples-daily-199801-paragraphs.txt")
    half = len(articles) // 2
    news = [
        MasterDocument(f"人民日报/{i + 1:05d}", "人民日报", text.split("\n", 1)[0][:40], text)
        for i, text in enumerate(articles[:half])
    ]
    innocents = [Innocent("news", t.split("\n", 1)[0][:40], t) for t in articles[half:]]
    innocents += [
        Innocent("nahan", f"呐喊 #{i + 1}", t)
        for i, t in enumerate(nahan_windows(root / "nahan.txt"))
    ]
    innocents += [Innocent("guwen", t, x) for t, x in guwen_essays(root / "guwenguanzhi.json")]
    return Corpus(chapters, news, innocents)
