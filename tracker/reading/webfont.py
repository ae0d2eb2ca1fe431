"""Decode the characters a web font draws at Private-Use code points.

Novel platforms (fanqie, linovelib, jjwxc, qidian) and their pirates serve a chapter with 10-15 %
of its characters replaced by Private-Use code points (U+E000-U+F8FF) and an ``@font-face``
font whose glyphs at those code points are the real characters: a reader sees the chapter, the
HTML holds gaps. The font says nothing in words about which glyph is which character (its
``cmap`` maps the code points to glyph names like ``uniE3A1`` or ``glyph12``); its *shapes* do.

So each Private-Use glyph is rendered (FreeType through Pillow, after fontTools has unpacked
WOFF/WOFF2 into a plain font) and compared with the same characters rendered from reference
CJK fonts of Debian's ``fonts-noto-cjk``: both are cropped to their ink,
scaled to ``GRID`` × ``GRID`` and compared by cosine similarity (the better of a sans and a
serif reference, Noto Sans and Serif CJK SC) against the ``CANDIDATES`` most
frequent Chinese characters (by the word frequencies of jieba's dictionary), ASCII letters and
digits, and CJK punctuation. A glyph is decoded when its best match reaches ``MIN_SIMILARITY``
and beats the second best by ``MIN_MARGIN``; otherwise it stays a Private-Use character, which
the matcher reads as an unknown character (:mod:`tracker.text.normalize`), never as nothing.

The reference renderings are built once per machine (~2 s) into the user's cache
(:mod:`tracker.disk_cache`); a font's decoding (~0.1 s for a few hundred glyphs) is kept per
font digest on disk (``<cache>/webfonts/<sha256>.json``) and in memory. A file that is not a
font (an HTML error page, garbage, a truncated WOFF2) raises :class:`FontError`, which the
crawl logs and counts; it never stops a page from being read.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
from functools import cache
from pathlib import Path

import numpy as np

from tracker.disk_cache import cache_dir, cached_arrays, save

log = logging.getLogger(__name__)

#: The reference typefaces (a sans and a serif: web fonts are drawn from one or the other),
#: each the first of its files found.
REFERENCE_FONTS = (
    (
        "Noto Sans CJK SC",
        (
            "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
            "/usr/share/fonts/truetype/noto/NotoSansCJK-Regular.ttc",
        ),
    ),
    (
        "Noto Serif CJK SC",
        (
            "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
            "/usr/share/fonts/truetype/noto/NotoSerifCJK-Regular.ttc",
        ),
    ),
)
CANDIDATES = 6000  # most frequent Han characters compared with each glyph
GRID = 32  # glyphs are compared as GRID × GRID ink images
RENDER_SIZE = 64
MIN_SIMILARITY = 0.80
MIN_MARGIN = 0.02
MAX_FONT_BYTES = 8 << 20
MAX_GLYPHS = 10_000
DECODER_VERSION = 1
_PUA_RANGES = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
_PUNCTUATION = "，。！？；：、“”‘’（）《》〈〉【】「」『』—…·～"


class FontError(ValueError):
    """The bytes are not a usable font (the reason in words)."""


def is_private_use(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _PUA_RANGES)


def reference_fonts() -> list[tuple[str, str]]:
    """The reference CJK fonts on this machine as (path, face name); none: nothing can be
    decoded (``TRACKER_REFERENCE_CJK_FONT`` names another file, its first face)."""
    override = os.environ.get("TRACKER_REFERENCE_CJK_FONT")
    if override:
        return [(override, "")] if Path(override).is_file() else []
    found = []
    for face, paths in REFERENCE_FONTS:
        path = next((p for p in paths if Path(p).is_file()), None)
        if path:
            found.append((path, face))
    return found


def reference_font() -> str | None:
    """The first reference font's file, or None when no reference font is installed."""
    fonts = reference_fonts()
    return fonts[0][0] if fonts else None


# ----------------------------------------------------------------------------- rendering


def _ink(image: object) -> np.ndarray | None:
    """A rendered glyph cropped to its ink, centred in a square, scaled to GRID × GRID and
    scaled to unit length (None for a glyph without ink)."""
    from PIL import Image

    box = image.getbbox()  # type: ignore[attr-defined]
    if box is None:
        return None
    glyph = image.crop(box)  # type: ignore[attr-defined]
    side = max(glyph.size)
    square = Image.new("L", (side, side), 0)
    square.paste(glyph, ((side - glyph.size[0]) // 2, (side - glyph.size[1]) // 2))
    pixels = np.asarray(square.resize((GRID, GRID), Image.BILINEAR), dtype=np.float32).ravel()
    norm = float(np.linalg.norm(pixels))
    return pixels / norm if norm else None


def _render(font: object, text: str) -> np.ndarray | None:
    from PIL import Image, ImageDraw

    canvas = Image.new("L", (RENDER_SIZE * 2, RENDER_SIZE * 2), 0)
    ImageDraw.Draw(canvas).text((RENDER_SIZE // 2, RENDER_SIZE // 2), text, font=font, fill=255)
    return _ink(canvas)


def _face_index(path: str, face: str) -> int:
    """The index of ``face`` in a collection (0 for a single font, or no such face)."""
    from fontTools.ttLib import TTCollection

    if not face or not path.lower().endswith((".ttc", ".otc")):
        return 0
    collection = TTCollection(path, lazy=True)
    for index, font in enumerate(collection.fonts):
        if font["name"].getDebugName(1) == face:
            return index
    return 0


def candidate_characters() -> str:
    """The characters a glyph is compared with: the most frequent Han characters of jieba's
    dictionary (words weighted by their frequency), then ASCII letters, digits, punctuation."""
    import jieba

    counts: dict[str, int] = {}
    with open(jieba.get_dict_file().name, encoding="utf-8") as lines:
        for line in lines:
            word, _, rest = line.partition(" ")
            frequency = int(rest.split(" ", 1)[0] or 0)
            for ch in word:
                if "\u4e00" <= ch <= "\u9fff":
                    counts[ch] = counts.get(ch, 0) + frequency
    han = sorted(counts, key=lambda ch: -counts[ch])[:CANDIDATES]
    ascii_ = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return "".join(han) + ascii_ + _PUNCTUATION


@cache
def _reference() -> tuple[str, np.ndarray] | None:
    """The candidate characters that render in the first reference font, and their ink
    images in each reference font (``fonts × characters × GRID²``), built once per machine."""
    fonts = reference_fonts()
    if not fonts:
        return None
    described = []
    for path, face in fonts:
        stat = Path(path).stat()
        described.append(f"{path}:{face}:{stat.st_size}:{stat.st_mtime_ns}")
    key = f"{DECODER_VERSION}:{'|'.join(described)}:{CANDIDATES}:{GRID}"

    def build() -> dict[str, np.ndarray]:
        from PIL import ImageFont

        rendered = [
            ImageFont.truetype(path, RENDER_SIZE, index=_face_index(path, face))
            for path, face in fonts
        ]
        chars, inks = [], []
        for ch in candidate_characters():
            first = _render(rendered[0], ch)
            if first is None:
                continue
            others = [_render(font, ch) for font in rendered[1:]]
            chars.append(ch)
            inks.append([first, *(ink if ink is not None else first for ink in others)])
        return {
            "chars": np.array([ord(c) for c in chars], dtype=np.uint32),
            "ink": np.array(inks, dtype=np.float32).transpose(1, 0, 2),
        }

    arrays = cached_arrays("webfont-reference", key, build)
    return "".join(map(chr, arrays["chars"].tolist())), arrays["ink"]


# ------------------------------------------------------------------------------ decoding


def _open_font(data: bytes) -> tuple[object, dict[int, str]]:
    """A Pillow font of ``data`` (TTF, OTF, WOFF or WOFF2) and its Private-Use code points."""
    from fontTools.ttLib import TTFont, TTLibError
    from PIL import ImageFont

    if not data:
        raise FontError("empty file")
    if len(data) > MAX_FONT_BYTES:
        raise FontError(f"{len(data)} bytes: too large for a web font")
    if data[:4] not in (b"\x00\x01\x00\x00", b"OTTO", b"true", b"wOFF", b"wOF2"):
        head = data[:40].decode("latin-1", "replace")
        raise FontError(f"not a font file (starts {head!r})")
    try:
        font = TTFont(io.BytesIO(data), lazy=False, fontNumber=0)
        cmap = font.getBestCmap() or {}
        private = {cp: name for cp, name in cmap.items() if is_private_use(cp)}
        font.flavor = None  # WOFF/WOFF2 unpacked for FreeType
        plain = io.BytesIO()
        font.save(plain)
        rendered = ImageFont.truetype(io.BytesIO(plain.getvalue()), RENDER_SIZE)
    except (TTLibError, OSError, ValueError, KeyError, AssertionError, EOFError) as exc:
        raise FontError(f"cannot read the font: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # fontTools raises many kinds on a damaged font
        raise FontError(f"cannot read the font: {type(exc).__name__}: {exc}") from None
    return rendered, private


def decode_glyphs(data: bytes) -> dict[int, str]:
    """The characters the Private-Use glyphs of the font ``data`` draw, by code point (those
    that could not be told apart are left out). Raises FontError for bytes that are not a
    font; returns {} when no reference font is installed."""
    font, private = _open_font(data)
    reference = _reference()
    if reference is None or not private:
        return {}
    chars, ink = reference
    points, rows = [], []
    for cp in sorted(private)[:MAX_GLYPHS]:
        try:
            glyph = _render(font, chr(cp))
        except (OSError, ValueError) as exc:
            raise FontError(f"cannot draw U+{cp:04X}: {exc}") from None
        if glyph is not None:
            points.append(cp)
            rows.append(glyph)
    if not rows:
        return {}
    glyphs = np.asarray(rows, dtype=np.float32)
    similarity = np.max([glyphs @ face.T for face in ink], axis=0)  # the closer typeface
    top = np.argsort(similarity, axis=1)[:, -2:]
    decoded = {}
    for k, cp in enumerate(points):
        second, best = similarity[k, top[k, 0]], similarity[k, top[k, 1]]
        if best >= MIN_SIMILARITY and best - second >= MIN_MARGIN:
            decoded[cp] = chars[int(top[k, 1])]
    return decoded


def font_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def cached_glyphs(data: bytes) -> dict[int, str]:
    """:func:`decode_glyphs`, kept on disk per font digest (a site serves the same font to
    every page and every crawl). Raises FontError as it does (not cached)."""
    digest = font_digest(data)
    path = cache_dir() / "webfonts" / f"{digest}.json"
    if _DIGEST.match(digest) and path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("version") == DECODER_VERSION and saved.get("reference"):
                return {int(cp): ch for cp, ch in saved["glyphs"].items()}
        except (OSError, ValueError, AttributeError):
            pass
    glyphs = decode_glyphs(data)
    if reference_font() is not None:
        record = {"version": DECODER_VERSION, "reference": True, "glyphs": glyphs}
        save(path, json.dumps(record, ensure_ascii=False).encode("utf-8"))
    return glyphs


def glyph_table(data: bytes) -> tuple[dict[int, str], int, str | None]:
    """For a crawl's worker: (decoded glyphs, Private-Use glyphs in the font, error or None);
    never raises for a bad font."""
    try:
        _, private = _open_font(data)
        return cached_glyphs(data), len(private), None
    except FontError as exc:
        return {}, 0, str(exc)


def font_face_urls(css: str, base: str) -> list[str]:
    """The ``src`` URLs of the ``@font-face`` rules of ``css`` (absolute, ``data:`` URIs
    kept), read with tinycss2; broken CSS gives what could be read."""
    from urllib.parse import urljoin

    import tinycss2

    found: list[str] = []
    try:
        rules = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
    except Exception:  # tinycss2 does not raise on bad CSS; a bug must not lose the page
        return found
    for rule in rules:
        if rule.type != "at-rule" or rule.lower_at_keyword != "font-face" or not rule.content:
            continue
        for item in tinycss2.parse_blocks_contents(rule.content, skip_comments=True):
            if item.type != "declaration" or item.lower_name != "src":
                continue
            for token in item.value:
                url = None
                if token.type == "url":
                    url = token.value
                elif token.type == "function" and token.lower_name == "url":
                    strings = [t.value for t in token.arguments if t.type == "string"]
                    url = strings[0] if strings else None
                if url and url.strip():
                    url = url.strip()
                    found.append(url if url.startswith("data:") else urljoin(base, url))
    return list(dict.fromkeys(found))


def data_uri_bytes(uri: str) -> bytes:
    """The bytes of a ``data:`` URI (base64 or percent-encoded); FontError if malformed."""
    import base64
    from urllib.parse import unquote_to_bytes

    head, comma, payload = uri.partition(",")
    if not head.startswith("data:") or not comma:
        raise FontError("malformed data: URI")
    try:
        if head.endswith(";base64"):
            return base64.b64decode(payload, validate=False)
        return unquote_to_bytes(payload)
    except ValueError as exc:
        raise FontError(f"malformed data: URI: {exc}") from None
