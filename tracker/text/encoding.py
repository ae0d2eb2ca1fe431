"""The one decoder of bytes of unknown encoding: files, standard input, fetched pages and feeds.

Chinese text comes as UTF-8, UTF-16 (with or without a byte-order mark), GB18030 (and its
subsets GBK, GB2312) or Big5; pages declare a charset in the HTTP header or in ``<meta>``,
often wrongly. :func:`decode_bytes` decides, in this order:

1. a byte-order mark (UTF-8, UTF-16, UTF-32);
2. UTF-16 without one: NUL bytes all on odd offsets (or all on even ones), as the ASCII
   characters of UTF-16 text have them, and the whole decodes;
3. binary data (NUL or many control bytes) is refused;
4. valid UTF-8 is UTF-8 whatever is declared: GBK or Big5 text is practically never valid
   UTF-8, while UTF-8 text often "decodes" as GB18030 mojibake;
5. the declared charsets, in order (the header before ``<meta>``, as a browser reads them),
   strictly; Latin-1 and its kin are skipped, a server default and never a Chinese text's;
6. detection among GB18030, Big5 and UTF-8 (charset_normalizer);
7. a text with a few bad bytes (a file cut short, a stray byte) is still text: the encoding
   needing the fewest replacement characters, when they are rare.

A multi-byte character cut in half at the very end (a truncated transfer or file) is dropped
rather than failing the whole text.
"""

from __future__ import annotations

import codecs
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_CHINESE_ENCODINGS = ("gb18030", "big5")
MAX_BAD_CHARACTERS = 4  # undecodable sequences tolerated (or 1 per 1,000 characters)
_SAMPLE = 8192
_ALIASES = {
    "gbk": "gb18030",
    "gb2312": "gb18030",
    "hz": "gb18030",
    "cp936": "gb18030",
    "big5hkscs": "big5",
    "cp950": "big5",
}
#: Declared charsets that are a server's default, never the charset of a Chinese text.
_DEFAULT_CHARSETS = frozenset({"latin_1", "iso8859_1", "ascii", "cp1252"})


class DecodeError(ValueError):
    """The bytes are not text in any supported encoding."""


def normalise_encoding_name(name: str) -> str:
    """GBK and GB2312 are subsets of GB18030: decoding with the superset never loses text."""
    key = codecs.lookup(name).name.replace("-", "_")
    return _ALIASES.get(key, key)


def ascii_is_wide(encoding: str) -> bool:
    """Whether ``encoding`` does not write ASCII as ASCII bytes (UTF-16, UTF-32): a look for an
    ASCII word in a page's raw bytes says nothing then."""
    return encoding.lower().startswith(("utf-16", "utf-32"))


def decode_bytes(
    data: bytes, declared: str | Iterable[str | None] | None = None
) -> tuple[str, str]:
    """Return ``(text, encoding)`` of ``data`` (see the module's docstring for the order of
    the tries); ``declared`` is the charset, or charsets best first, that the source names.
    Raise :class:`DecodeError` for binary or undecodable data."""
    if not data:
        return "", "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            return _strict(data, name), name
    if b"\x00" in data[:_SAMPLE] and (utf16 := _utf16_without_bom(data)):
        return utf16
    if _looks_binary(data):
        raise DecodeError("binary data (NUL or control bytes), not text")
    names = ["utf-8", *_declared_codecs(declared)]
    for name in dict.fromkeys(names):
        with contextlib.suppress(UnicodeDecodeError):
            return _strict(data, name), name
    from charset_normalizer import from_bytes  # only for undeclared legacy encodings

    best = from_bytes(data[:200_000], cp_isolation=[*_CHINESE_ENCODINGS, "utf_8"]).best()
    guesses = [normalise_encoding_name(best.encoding)] if best else []
    guesses += [name for name in _CHINESE_ENCODINGS if name not in guesses]
    for name in guesses:
        with contextlib.suppress(UnicodeDecodeError):
            return _strict(data, name), name
    decoded = [
        (data.decode(name, errors="replace"), name) for name in dict.fromkeys(["utf-8", *guesses])
    ]
    text, name = min(decoded, key=lambda pair: pair[0].count("\ufffd"))
    if text.count("\ufffd") <= max(MAX_BAD_CHARACTERS, len(text) // 1000):
        return text, name
    raise DecodeError("undecodable bytes: not UTF-8, UTF-16, GB18030 or Big5")


@dataclass(frozen=True)
class DecodedPage:
    html: str
    encoding: str
    wrong_charset: bool  # the declared charset (header first, as a browser reads it) was wrong


def declared_charsets(body: bytes, content_type: str | None = None) -> list[str]:
    """The charsets a page names: its HTTP ``Content-Type``'s, then its ``<meta>`` or XML
    declaration's."""
    from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding

    found = (
        http_content_type_encoding(content_type or ""),
        html_body_declared_encoding(body[:_SAMPLE]),
    )
    return [name for name in found if name]


def decode_page(body: bytes, content_type: str | None = None) -> DecodedPage:
    """Decode a page (HTML or XML) with :func:`decode_bytes` and the charsets it declares, and
    say whether the first declaration was wrong. Raises :class:`DecodeError`."""
    declared = declared_charsets(body, content_type)
    text, encoding = decode_bytes(body, declared)
    wrong = False
    if declared and not body.isascii():
        try:
            wrong = normalise_encoding_name(declared[0]) != normalise_encoding_name(encoding)
        except LookupError:
            wrong = True
    return DecodedPage(text, encoding, wrong)


def _declared_codecs(declared: str | Iterable[str | None] | None) -> list[str]:
    names = [declared] if isinstance(declared, str) else list(declared or ())
    codecs_: list[str] = []
    for name in names:
        with contextlib.suppress(LookupError):  # an unknown declared charset is ignored
            if name and (codec := normalise_encoding_name(name)) not in _DEFAULT_CHARSETS:
                codecs_.append(codec)
    return codecs_


def _strict(data: bytes, name: str) -> str:
    """Strict decoding that forgives a last character cut in half; a BOM is dropped."""
    try:
        text = data.decode(name)
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 3 or exc.end < len(data):
            if name in ("utf-8-sig", "utf-16", "utf-32"):  # the BOM said so: no guessing
                raise DecodeError(f"invalid {name} text at byte {exc.start}") from None
            raise
        text = data[: exc.start].decode(name)
    return text.removeprefix("\ufeff")


def _utf16_without_bom(data: bytes) -> tuple[str, str] | None:
    """UTF-16 text without a byte-order mark: most NULs of the sample on one parity of
    offsets (the high byte of its ASCII characters; a few CJK characters such as 一 U+4E00
    have a NUL low byte), and the text decodes to printable characters."""
    sample = data[:_SAMPLE]
    odd = sum(1 for offset in range(1, len(sample), 2) if sample[offset] == 0)
    even = sample.count(0) - odd
    if max(odd, even) < 0.8 * (odd + even):
        return None
    name = "utf-16-le" if odd > even else "utf-16-be"
    try:
        text = _strict(data[: len(data) // 2 * 2], name)
    except (UnicodeDecodeError, DecodeError):
        return None
    head = text[:_SAMPLE]
    control = sum(1 for c in head if c < " " and c not in "\t\n\r\f")
    return (text, name) if control <= len(head) * 0.01 else None


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))


def _looks_binary(data: bytes) -> bool:
    sample = data[:_SAMPLE]
    control = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return b"\x00" in sample or control > len(sample) * 0.05
