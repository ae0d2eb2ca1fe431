"""Split a book, a collection or a newspaper file into the documents of the master library.

A heading is a line of its own, at most ``MAX_HEADING_CHARS`` long, of one of these forms:

* a numbered chapter, ``第一回``, ``第12章``, ``第三节``, ``第二卷``… (:data:`CHAPTER_NUMBER`,
  the project's one chapter-number pattern: page titles are read with it too) or a volume,
  ``卷一``, ``卷之三``, each with an optional title after it;
* a named part: 楔子, 序章, 自序, 前言, 尾声, 后记, 番外…;
* a numbered section, ``一、标题``: only in a run counting up from 一 (or 1), in a file
  without numbered chapters, so the lists inside a chapter stay in it;
* a titled piece of a collection: a short line underlined by a line of ``-``, ``=``, ``—``
  (as 呐喊's stories are in the usual plain-text editions);
* in a newspaper file (one paragraph a line, articles opened by a dateline such as
  ``新华社北京１月５日电`` or ``本报上海３月２日讯``): each dated article, its title being the
  short lines just above its dateline.

Volumes and titled pieces hold the chapters below them: a chapter's title names them too
(``阿Q正传 · 第一章 序``), since numbering often starts again in every volume.
Text before the first heading is a preface of its own when it is long enough; a title line
``《书名》`` (or ``书名：…``) near the top names the work. :func:`split_book` also says what
looks wrong: one chapter far longer than the others, or a long book without any heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tracker.model import ARTICLE, CHAPTER

_NUMERAL = r"[0-9０-９零〇一二两三四五六七八九十百千万壹贰叁肆伍陆柒捌玖拾佰仟]+"
#: A chapter number anywhere in a line or a page title: 第一回, 第 12 章, 第三節…
CHAPTER_NUMBER = re.compile(rf"第\s*{_NUMERAL}\s*[回章节節卷集部篇折幕]")
_SEPARATOR = r"[ \t\u3000：:、.．·]"
_SPACE = r"[ \t\u3000]"
_VOLUME_WORDS = "卷部"
_NAMED = "楔子|序章|序言|自序|代序|序|引子|引言|前言|尾声|后记|後記|终章|跋|番外"
HEADING = re.compile(
    rf"^{_SPACE}*(?:"
    rf"(?P<numbered>第{_SPACE}*(?P<number>{_NUMERAL}){_SPACE}*(?P<unit>[回章节節卷集部篇折幕]))"
    rf"|(?P<volume>卷(?:之)?(?P<volume_number>{_NUMERAL}))"
    rf"|(?P<named>(?:{_NAMED}))"
    rf"|(?P<listed>(?P<list_number>{_NUMERAL})、)"
    rf")(?:{_SEPARATOR}.*|(?<=、).*)?{_SPACE}*$",
    re.MULTILINE,
)
_UNDERLINE = re.compile(r"^[ \t\u3000]*[-=—─_＝－*]{3,}[ \t\u3000]*$")
_DATELINE = re.compile(
    r"^[ \t\u3000]*据?(?:本报|新华社|中新社|人民日报)[^\s，。！？（(]{0,12}?"
    r"[0-9０-９一二三四五六七八九十〇]{1,3}月[0-9０-９一二三四五六七八九十〇]{1,3}日[电讯]"
)
_TITLE_LINE = re.compile(
    r"^[ \t\u3000]*(?:《(?P<quoted>[^》\n]{1,40})》|书名[:：](?P<named>.{1,40}))"
)
_SENTENCE_END = tuple("。！？!?；;，,：:…”」』")
MAX_HEADING_CHARS = 48
MAX_TITLE_BLOCK_LINES = 4  # a newspaper article's kicker, title, subtitle and a note
MIN_PREFACE_CHARS = 80
MIN_SECTION_CHARS = 200  # numbered sections 一、 shorter on average are a list's items
MIN_DATELINES = 3  # a file with fewer is not a newspaper file
#: Warnings: a chapter this many times the median length, and this long, is an outlier; so is
#: a book of one chapter this long.
OUTLIER_FACTOR = 5
OUTLIER_CHARS = 30_000
_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")
_CHINESE_DIGITS = (
    {c: i for i, c in enumerate("零一二三四五六七八九")}
    | {c: i for i, c in enumerate("〇壹贰叁肆伍陆柒捌玖")}
    | {"两": 2}
)
_CHINESE_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}


@dataclass(frozen=True)
class Chapter:
    number: int  # 1-based position in the book
    title: str
    text: str
    key: str = ""  # its stable key in the work (:func:`chapter_key`), the id's last part


@dataclass(frozen=True)
class Book:
    chapters: list[Chapter]
    title: str | None = None  # from a 《…》 or 书名： line, when the file has one
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Heading:
    start: int  # offset of the heading line
    end: int  # offset after it (and its underline)
    title: str
    level: int  # 0 volume, 1 titled piece, 2 chapter


def split_book(text: str) -> Book:
    """The chapters of ``text`` (see the module's docstring), its title and warnings.

    A text without any heading is one chapter titled by its first line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    headings = _headings(text)
    title = _book_title(text[: headings[0].start] if headings else text[:2000])
    chapters: list[Chapter] = []
    if not headings:
        body = text.strip()
        if body:
            first = body.split("\n", 1)[0].strip()[:MAX_HEADING_CHARS]
            chapters.append(Chapter(1, first, body, chapter_key(first)))
        return Book(chapters, title, _warnings(chapters, headed=False))
    preface = text[: headings[0].start].strip()
    if len(preface) >= MIN_PREFACE_CHARS:
        chapters.append(Chapter(1, PREFACE, preface, _preface_key(headings[0].title)))
    parents: dict[int, str] = {}
    for i, heading in enumerate(headings):
        parents = {level: t for level, t in parents.items() if level < heading.level}
        end = headings[i + 1].start if i + 1 < len(headings) else len(text)
        body = text[heading.end : end].strip()
        if body:
            full = TITLE_JOIN.join([*parents.values(), heading.title])
            chapters.append(Chapter(len(chapters) + 1, full, body, chapter_key(full)))
        if heading.level < 2:
            parents[heading.level] = heading.title
    chapters, clashes = _distinct_keys(chapters)
    return Book(chapters, title, clashes + _warnings(chapters, headed=True))


def split_chapters(text: str) -> list[Chapter]:
    """The chapters of ``text`` (:func:`split_book` without the title and warnings)."""
    return split_book(text).chapters


# Issue 12 (tracker.matching.segments cuts long pages at chapter headings) reads the same
# headings split_book splits on, so that a long page is cut where its chapters start.
def heading_offsets(text: str) -> list[int]:
    """Offsets in ``text`` of the heading lines :func:`split_chapters` splits on.

    Carriage returns are read as spaces, so the offsets are those of ``text`` itself, CRLF or
    not."""
    scanned = text.replace("\r", " ") if "\r" in text else text
    return [heading.start for heading in _headings(scanned)]


def _headings(text: str) -> list[_Heading]:
    numbered: list[_Heading] = []
    listed: list[tuple[int, _Heading]] = []
    for match in HEADING.finditer(text):
        line = match.group(0).strip()
        if len(line) > MAX_HEADING_CHARS or (match["listed"] and line.endswith(_SENTENCE_END)):
            continue
        title = re.sub(r"[ \t\u3000]+", " ", line)
        volume = match["volume"] or (match["unit"] or "") in _VOLUME_WORDS
        heading = _Heading(match.start(), match.end(), title, 0 if volume else 2)
        if match["listed"]:
            listed.append((numeral_value(match["list_number"]), heading))
        else:
            numbered.append(heading)
    titled = list(_titled(text))
    found = titled + numbered  # an underlined 自序 is a titled piece
    if not found:
        found = list(_articles(text))
    if not found or (titled and not numbered):
        found += _counting_run(listed, len(text))
    found.sort(key=lambda h: h.start)  # stable: of two headings of one line, the first kept
    return [h for i, h in enumerate(found) if not (i and h.start == found[i - 1].start)]


def _titled(text: str):
    """Short lines underlined by a line of dashes, after a blank line: the pieces of a
    collection (a ``本章完`` or an ad above a separator line follows the text directly)."""
    lines = text.split("\n")
    offsets = _line_offsets(lines)
    for i in range(len(lines) - 1):
        line = lines[i].strip()
        if (
            line
            and (i == 0 or not lines[i - 1].strip())
            and len(line) <= MAX_HEADING_CHARS
            and not line.endswith(_SENTENCE_END)
            and _CJK.search(line)
            and _UNDERLINE.match(lines[i + 1])
        ):
            title = re.sub(r"[ \t\u3000]+", " ", _NOTE_MARK.sub("", line))
            yield _Heading(offsets[i], offsets[i + 1] + len(lines[i + 1]), title, 1)


def _line_offsets(lines: list[str]) -> list[int]:
    offsets, offset = [], 0
    for line in lines:
        offsets.append(offset)
        offset += len(line) + 1
    return offsets


_CJK = re.compile(r"[\u4e00-\u9fff]")
_NOTE_MARK = re.compile(r"(?:\(\d+\)|⑴|⑵|⑶|\[\d+\]|[①-⑩])$")


def _articles(text: str):
    """The dated articles of a newspaper file: each starts at the title lines above its
    dateline (passing over notes such as ``（附图片１张）``), else at its dateline."""
    lines = text.split("\n")
    datelines = [i for i, line in enumerate(lines) if _DATELINE.match(line)]
    if len(datelines) < MIN_DATELINES:
        return
    offsets = _line_offsets(lines)
    previous = -1
    for i in datelines:
        first = i
        while (
            first - 1 > previous
            and i - (first - 1) <= MAX_TITLE_BLOCK_LINES
            and _title_like(lines[first - 1])
        ):
            first -= 1
        title = " ".join(
            line.strip() for line in lines[first:i] if line.strip() and not _is_note(line)
        )
        if title:
            yield _Heading(offsets[first], offsets[i], title[:MAX_HEADING_CHARS], 2)
        else:  # no title above: the dateline paragraph opens the article
            yield _Heading(offsets[i], offsets[i], lines[i].strip()[:MAX_HEADING_CHARS], 2)
        previous = i


def document_kind(text: str) -> str:
    """``"article"`` when ``text`` opens with a news dateline (``新华社北京１月５日电``,
    ``本报上海３月２日讯``) in its first lines, as a newspaper file's articles and a news
    agency's records do; else ``"chapter"``. Reports name a work's documents by it."""
    lines = text.lstrip().split("\n", MAX_TITLE_BLOCK_LINES + 1)[: MAX_TITLE_BLOCK_LINES + 1]
    return ARTICLE if any(_DATELINE.match(line) for line in lines) else CHAPTER


def _title_like(line: str) -> bool:
    """A line that can stand above a dateline: a title (no sentence in it; news titles run
    longer than chapter headings), or a note in brackets."""
    line = line.strip()
    if not line or len(line) > 64:
        return False
    return _is_note(line) or not (line.endswith(_SENTENCE_END) or _SENTENCE.search(line))


_SENTENCE = re.compile(r"[。！？]")


def _is_note(line: str) -> bool:
    line = line.strip()
    return line.startswith(("（", "(")) and line.endswith(("）", ")"))


def _counting_run(listed: list[tuple[int, _Heading]], length: int) -> list[_Heading]:
    """Numbered sections ``一、`` counting up from one, and long enough to be sections: not
    the items of a list."""
    run: list[_Heading] = []
    for number, heading in listed:
        if number == len(run) + 1:
            run.append(heading)
    if len(run) < 2 or (length - run[0].start) / len(run) < MIN_SECTION_CHARS:
        return []
    return run


def numeral_value(numeral: str) -> int:
    """The value of a chapter number: Arabic digits (12, １２), Chinese numerals read digit by
    digit (一〇二 → 102) or with units (十二, 一百二十, 两千零一, 壹佰贰拾, 三万), the ``十``
    of the teens without its one (十二 → 12); -1 when it is not a numeral."""
    numeral = numeral.translate(_DIGITS)
    if numeral.isdigit():
        return int(numeral)
    if not numeral:
        return -1
    if not any(c in _CHINESE_UNITS or c == "万" for c in numeral):
        digits = [_CHINESE_DIGITS.get(c) for c in numeral]
        return -1 if None in digits else int("".join(str(d) for d in digits))
    total, section, digit = 0, 0, None
    for c in numeral:
        if c in _CHINESE_DIGITS:
            digit = _CHINESE_DIGITS[c]
        elif c in _CHINESE_UNITS:
            section += (1 if digit is None else digit) * _CHINESE_UNITS[c]
            digit = None
        elif c == "万":
            total += (section + (digit or 0)) * 10_000
            section, digit = 0, None
        else:
            return -1
    return total + section + (digit or 0)


#: A chapter's title names the volumes and titled pieces above it, joined by this.
TITLE_JOIN = " · "
#: The title (and key) of the text before a book's first heading.
PREFACE = "前言"
#: Joins the keys of a chapter's parts: ``卷2.1`` is chapter 1 of volume 2.
KEY_JOIN = "."
#: A second chapter of one file with a key already given gets ``KEY~2`` (then ``~3``…).
AGAIN_MARK = "~"
MAX_KEY_CHARS = 48
_KEY_DROPPED = re.compile(r"[\s\u3000]+")
_KEY_SEPARATORS = "：:、.．·- \t\u3000"


def chapter_key(title: str) -> str:
    """A chapter's stable key in its work, from its title (:func:`split_book`'s, the volumes
    and titled pieces above it first), not from where it stands in a file: each part of the
    title gives one, joined by ``KEY_JOIN``:

    * a numbered chapter, its number: ``第六回 …`` → ``6``, ``第12章`` → ``12``; of another
      unit, the unit then the number (``第三节`` → ``节3``, ``第二卷`` → ``卷2``);
    * a volume, ``卷`` and its number (``卷二`` → ``卷2``): so ``卷二 · 第一章`` → ``卷2.1``,
      and volumes whose numbering starts again do not collide;
    * a named part, its name with what follows it (``楔子``, ``番外一``, ``番外初遇``);
    * a numbered section ``三、…``, its number;
    * anything else (a titled piece, a news article, an unheaded text), its title without
      spaces (``/`` and ``.`` kept apart from the id's own separators), at most
      ``MAX_KEY_CHARS`` characters.

    The same title always gives the same key, whichever file it comes in, so a book's chapters
    ingested a few at a time add up, and ``tracker index migrate-ids`` re-keys stored masters
    from their titles."""
    return KEY_JOIN.join(_part_key(part) for part in title.split(TITLE_JOIN) if part.strip())


def _preface_key(first_heading: str) -> str:
    """The key of the text above a file's first heading: the book's preface (``前言``) when the
    file starts the book, else a note on the chapters it brings (``6.前言`` above 第六回), so
    that a file of later chapters with a note on top does not replace the book's preface."""
    first = chapter_key(first_heading)
    starts = all(int(number) <= 1 for number in re.findall(r"[0-9]+", first))
    return PREFACE if starts else f"{first}{KEY_JOIN}{PREFACE}"


def _part_key(part: str) -> str:
    part = part.strip()
    match = HEADING.match(part)
    if match and len(part) <= MAX_HEADING_CHARS:
        if match["numbered"] and (value := numeral_value(match["number"])) >= 0:
            unit = match["unit"].replace("節", "节")
            return str(value) if unit in "回章" else f"{unit}{value}"
        if match["volume"] and (value := numeral_value(match["volume_number"])) >= 0:
            return f"卷{value}"
        if match["named"]:
            rest = part[match.end("named") :].lstrip(_KEY_SEPARATORS)
            return _title_key(match["named"] + rest)
        if match["listed"] and (value := numeral_value(match["list_number"])) >= 0:
            return str(value)
    return _title_key(part)


def _title_key(title: str) -> str:
    key = _KEY_DROPPED.sub("", title).replace("/", "／").replace(KEY_JOIN, "．")
    return key[:MAX_KEY_CHARS] or "_"


def _distinct_keys(chapters: list[Chapter]) -> tuple[list[Chapter], list[str]]:
    """The chapters with distinct keys: a key met again gets ``~2``, ``~3``… (so nothing of
    the file is lost), and a warning naming both chapters."""
    first: dict[str, Chapter] = {}
    kept, warnings = [], []
    for chapter in chapters:
        key = chapter.key
        if key in first:
            again = 2
            while f"{key}{AGAIN_MARK}{again}" in first:
                again += 1
            other = first[key]
            key = f"{key}{AGAIN_MARK}{again}"
            warnings.append(
                f"chapters {other.number} ({other.title}) and {chapter.number} ({chapter.title}) "
                f"both have the key {chapter.key!r}: the second is stored as {key!r} (a "
                "heading may be mistyped, or a volume heading missing)"
            )
            chapter = Chapter(chapter.number, chapter.title, chapter.text, key)
        first[key] = chapter
        kept.append(chapter)
    return kept, warnings


def _book_title(head: str) -> str | None:
    for line in head.strip().split("\n")[:10]:
        if len(line.strip()) <= MAX_HEADING_CHARS and (match := _TITLE_LINE.match(line)):
            title = (match["quoted"] or match["named"] or "").strip()
            if title:
                return title
    return None


def _warnings(chapters: list[Chapter], headed: bool) -> list[str]:
    if not chapters:
        return []
    if len(chapters) == 1 and len(chapters[0].text) >= OUTLIER_CHARS:
        reason = "no chapter headings found" if not headed else "one chapter only"
        return [
            f"{reason}: stored as one document of {len(chapters[0].text):,} characters "
            "(a copy of part of it is still found, but reports cannot say which chapter)"
        ]
    lengths = sorted(len(c.text) for c in chapters)
    median = lengths[len(lengths) // 2]
    return [
        f"chapter {c.number} ({c.title}) is {len(c.text):,} characters, "
        f"{len(c.text) / median:.0f} times the median {median:,}: a heading may be missing"
        for c in chapters
        if len(chapters) > 2
        and len(c.text) >= OUTLIER_CHARS
        and len(c.text) >= OUTLIER_FACTOR * median
    ]
