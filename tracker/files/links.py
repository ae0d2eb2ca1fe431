"""Which links lead to downloads, and which answers are files rather than pages.

TXT-download sites (知轩藏书, 书包网, 奇书网 and their clones) put a book behind a link such as
``TXT下载`` or ``全本下载``, often to a download page with a countdown and a second button
(``点击下载``, ``下载地址``), which leads to the file: a GBK TXT, or a ZIP, RAR, 7z or EPUB,
usually sent with ``Content-Disposition: attachment`` and a Chinese ``filename*=`` (RFC 6266,
RFC 5987) or a raw GBK ``filename=``. A link is a download link by its text or its file
extension (:func:`is_download_link`); an answer is a file by its disposition, its media type,
its first bytes, or a ``.txt`` URL (:func:`is_file_response`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from tracker.files.archives import kind_of

DOWNLOAD_TEXT = re.compile(
    r"(TXT|EPUB|ZIP|RAR|7Z|全本|全集|整本|电子书|本地|高速|普通|免费)\s*下载"
    r"|下载(地址|本书|全本|TXT|EPUB)"
    r"|点击下载|立即下载|^\s*(TXT|EPUB|ZIP|RAR|7Z)\s*$",
    re.I,
)
FILE_SUFFIXES = frozenset((".txt", ".zip", ".rar", ".7z", ".epub"))
FILE_TYPES = frozenset(
    (
        "application/zip",
        "application/x-zip-compressed",
        "application/x-7z-compressed",
        "application/x-rar-compressed",
        "application/vnd.rar",
        "application/epub+zip",
        "application/octet-stream",
        "application/x-download",
        "application/force-download",
    )
)
_MENTIONS_FILE = re.compile(r"\.(?:txt|zip|rar|7z|epub)\b", re.I)
_HTML_START = re.compile(rb"<(!doctype|html|head|body|meta|title|!--)", re.I)
# RFC 6266 §4.3: filename*= (RFC 5987: charset'language'percent-encoded) wins over filename=.
_EXTENDED_NAME = re.compile(
    r"filename\*\s*=\s*\"?(?P<charset>[\w!#$%&+^`{}~-]*)'[^']*'(?P<value>[^;\s\"]+)", re.I
)
_PLAIN_NAME = re.compile(
    r'(?<![*\w])filename\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^;]+))', re.I
)
# A countdown page names its file in a script: location.href = "/down/1.zip", or a variable.
_SCRIPT_URL = re.compile(
    r"""["']([^"'\s<>]+\.(?:txt|zip|rar|7z|epub)(?:\?[^"'\s<>]*)?)["']""", re.I
)


def url_suffix(url: str) -> str:
    """The extension of a URL's path, lowered (``.zip``; "" when none): a link's, so fast."""
    path = urlsplit(url).path
    if "%" in path:
        path = unquote(path)
    dot = path.rfind(".")
    return path[dot:].lower() if dot > path.rfind("/") else ""


def is_download_link(url: str, text: str, suffix: str | None = None) -> bool:
    """A link to a file or a download page: its URL ends in a book file's extension
    (``suffix``, when known already), or its text says download."""
    suffix = url_suffix(url) if suffix is None else suffix
    return suffix in FILE_SUFFIXES or (bool(text) and DOWNLOAD_TEXT.search(text) is not None)


def mentions_file(html: str) -> bool:
    """Whether a page names a book file anywhere (before its scripts are looked at)."""
    return _MENTIONS_FILE.search(html) is not None


def script_file_urls(scripts: Iterable[str]) -> list[str]:
    """File URLs written in a page's scripts (a countdown's target), in order, once each."""
    found: list[str] = []
    for script in scripts:
        found += [url for url in _SCRIPT_URL.findall(script) if url not in found]
    return found


def attachment_name(disposition: bytes | str | None) -> str | None:
    """The file name a ``Content-Disposition`` header gives (``filename*=`` first, as RFC
    6266 §4.3 says; a raw ``filename=`` in UTF-8 or GBK bytes taken back), without any
    directory part, or None."""
    if not disposition:
        return None
    if isinstance(disposition, str):
        disposition = disposition.encode("latin-1", "replace")
    header = _raw_text(disposition)
    name = None
    if extended := _EXTENDED_NAME.search(header):
        try:
            name = unquote(
                extended["value"], encoding=extended["charset"] or "utf-8", errors="strict"
            )
        except (LookupError, UnicodeDecodeError):
            name = None
    if name is None and (plain := _PLAIN_NAME.search(header)):
        quoted = plain["quoted"]
        name = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else plain["bare"].strip()
        if "%" in name:  # some servers percent-encode the plain parameter too
            name = unquote(name)
    if not name:
        return None
    return posixpath.basename(name.replace("\\", "/")).strip() or None


def is_attachment(disposition: bytes | str | None) -> bool:
    if not disposition:
        return False
    text = disposition.decode("latin-1") if isinstance(disposition, bytes) else disposition
    return text.strip().lower().startswith("attachment")


def is_file_response(
    url: str, content_type: str, disposition: bytes | None, head: bytes, download: bool
) -> bool:
    """Whether an answer is a file to read as books, not a page: sent as an attachment, of
    an archive's media type, starting with an archive's magic number, or a plain text from a
    ``.txt`` URL or a download link."""
    media = content_type.split(";", 1)[0].strip().lower()
    if is_attachment(disposition) or kind_of(head[:64], "") != "text":
        return True
    if _HTML_START.match(head.lstrip(b"\xef\xbb\xbf \t\r\n")):
        return False  # a page a server mislabels (application/octet-stream) is still a page
    if media in FILE_TYPES:
        return True
    return media == "text/plain" and (download or url_suffix(url) == ".txt")


def file_name(url: str, disposition: bytes | None) -> str:
    """The file's name: the attachment's, else the URL's last segment, else ``download``."""
    name = attachment_name(disposition)
    if name:
        return name
    return posixpath.basename(unquote(urlsplit(url).path)) or "download"


def _raw_text(raw: bytes) -> str:
    """A header's bytes as text: UTF-8, else GB18030 (a raw Chinese ``filename=``)."""
    for encoding in ("utf-8", "gb18030"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("latin-1")
