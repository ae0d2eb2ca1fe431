"""Split a book into chapters on headings such as 第一回, 第12章, 楔子, 序章, 尾声."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMERAL = r"[0-9０-９零〇一二三四五六七八九十百千万两]+"
HEADING = re.compile(
    rf"^[ \t\u3000]*(?:第{_NUMERAL}[回章节卷集部篇折幕](?:[ \t\u3000：:、.．].*)?|"
    r"(?:楔子|序章|序言|序|引子|引言|前言|尾声|后记|後記|终章|番外)(?:[ \t\u3000：:、.．].*)?)"
    r"[ \t\u3000]*$",
    re.MULTILINE,
)
MAX_HEADING_CHARS = 48
MIN_PREFACE_CHARS = 80


@dataclass(frozen=True)
class Chapter:
    number: int  # 1-based position in the book
    title: str
    text: str


def split_chapters(text: str) -> list[Chapter]:
    """Split on heading lines; text before the first heading becomes a preface when long enough.

    A book without any heading is returned as one chapter titled by its first line.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    headings = [m for m in HEADING.finditer(text) if len(m.group(0).strip()) <= MAX_HEADING_CHARS]
    chapters: list[Chapter] = []
    if not headings:
        body = text.strip()
        if body:
            chapters.append(Chapter(1, body.split("\n", 1)[0].strip()[:MAX_HEADING_CHARS], body))
        return chapters
    preface = text[: headings[0].start()].strip()
    if len(preface) >= MIN_PREFACE_CHARS:
        chapters.append(Chapter(1, "前言", preface))
    for i, match in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        body = text[match.end() : end].strip()
        title = re.sub(r"[ \t\u3000]+", " ", match.group(0).strip())
        if body:
            chapters.append(Chapter(len(chapters) + 1, title, body))
    return chapters


# Issue 12 (tracker.matching.segments cuts long pages at chapter headings), kept apart from
# split_chapters on purpose. To whoever teaches split_chapters new heading forms: this reads
# them from HEADING and MAX_HEADING_CHARS; a form recognised some other way should be added
# here too, so that a long page is cut where its chapters start.
def heading_offsets(text: str) -> list[int]:
    """Offsets in ``text`` of the heading lines :func:`split_chapters` splits on.

    Carriage returns are read as spaces, so the offsets are those of ``text`` itself, CRLF or
    not."""
    scanned = text.replace("\r", " ") if "\r" in text else text
    return [
        m.start() for m in HEADING.finditer(scanned) if len(m.group(0).strip()) <= MAX_HEADING_CHARS
    ]
