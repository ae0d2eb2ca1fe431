"""Decode bytes of unknown encoding: UTF-8/16 (with or without BOM), GB18030 (GBK, GB2312), Big5."""

from __future__ import annotations

import codecs
import contextlib

from charset_normalizer import from_bytes

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_CHINESE_ENCODINGS = ("gb18030", "big5", "utf_16")
MAX_BAD_CHARACTERS = 4  # undecodable sequences tolerated (or 1 per 1,000 characters)
_ALIASES = {
    "gbk": "gb18030",
    "gb2312": "gb18030",
    "hz": "gb18030",
    "cp936": "gb18030",
    "big5hkscs": "big5",
    "cp950": "big5",
}


class DecodeError(ValueError):
    """The bytes are not text in any supported encoding."""


def normalise_encoding_name(name: str) -> str:
    """GBK and GB2312 are subsets of GB18030: decoding with the superset never loses text."""
    key = codecs.lookup(name).name.replace("-", "_")
    return _ALIASES.get(key, key)


def decode_bytes(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """Return ``(text, encoding)``; raise :class:`DecodeError` for binary or undecodable data."""
    if not data:
        return "", "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            return _strict(data, name)
    if _looks_binary(data):
        raise DecodeError("binary data (NUL or control bytes), not text")
    candidates = []
    if declared:
        with contextlib.suppress(LookupError):  # an unknown declared charset is ignored
            candidates.append(normalise_encoding_name(declared))
    candidates.append("utf-8")
    for name in candidates:
        try:
            return data.decode(name), name
        except UnicodeDecodeError:
            continue
    best = from_bytes(data[:200_000], cp_isolation=[*_CHINESE_ENCODINGS, "utf_8"]).best()
    guesses = [normalise_encoding_name(best.encoding)] if best else []
    guesses += [name for name in ("gb18030", "big5") if name not in guesses]
    for name in guesses:
        try:
            return data.decode(name), name
        except UnicodeDecodeError:
            continue
    # A file cut mid-character, or with a stray bad byte, is still text: accept the encoding
    # that needs the fewest replacement characters, if they are rare.
    decoded = [
        (data.decode(name, errors="replace"), name) for name in dict.fromkeys(["utf-8", *guesses])
    ]
    text, name = min(decoded, key=lambda pair: pair[0].count("\ufffd"))
    if text.count("\ufffd") <= max(MAX_BAD_CHARACTERS, len(text) // 1000):
        return text, name
    raise DecodeError("undecodable bytes: not UTF-8, GB18030 or Big5")


def _strict(data: bytes, name: str) -> tuple[str, str]:
    try:
        return data.decode(name), name
    except UnicodeDecodeError as exc:
        raise DecodeError(f"invalid {name} text at byte {exc.start}") from None


def _looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return b"\x00" in sample or control > len(sample) * 0.05
