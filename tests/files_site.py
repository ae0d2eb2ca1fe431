"""Download files built in code, and a local TXT-download site that serves them.

The files are made with the tools a pirate's archiver would use (zipfile, py7zr, an EPUB's
own container/OPF/XHTML), never with the readers under test; nothing binary is checked in.
:func:`zip_bomb` builds a ZIP that declares 3 GB in a few megabytes without inflating
anything: the same deflate blocks repeated (a full flush makes each block stand alone).
"""

from __future__ import annotations

import io
import shutil
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from urllib.parse import quote

from tests.sites import Page, TestSite, book_masters, html_page, link_list
from tracker.model import MasterDocument

WORK_A, WORK_B, INNOCENT = "测试书甲", "测试书乙", "无辜之书"


def book_text(masters: list[MasterDocument], title: str) -> str:
    """A whole book as a TXT-download site writes it: title line, then each chapter."""
    chapters = "\n\n".join(f"{m.title}\n\n{m.text}" for m in masters)
    return f"《{title}》\n作者：佚名\n\n{chapters}\n"


def gbk_zip(members: dict[str, bytes]) -> bytes:
    """A ZIP whose member names are GBK bytes without the UTF-8 flag, as Chinese archivers
    (WinRAR, 好压, 360压缩) write them: written under ASCII placeholders of the same length,
    then the names put in, in both headers."""
    buf = io.BytesIO()
    placeholders = {}
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for k, (name, data) in enumerate(members.items()):
            gbk = name.encode("gbk")
            placeholder = f"{k:02d}".encode().ljust(len(gbk), b"x")
            placeholders[placeholder] = gbk
            archive.writestr(placeholder.decode(), data)
    raw = buf.getvalue()
    for placeholder, gbk in placeholders.items():
        assert raw.count(placeholder) == 2
        raw = raw.replace(placeholder, gbk)
    return raw


def seven_zip(members: dict[str, bytes], password: str | None = None) -> bytes:
    import py7zr

    buf = io.BytesIO()
    with py7zr.SevenZipFile(buf, "w", password=password, header_encryption=bool(password)) as z:
        for name, data in members.items():
            z.writestr(data, name)
    return buf.getvalue()


def rar(members: dict[str, bytes], method: int = 0x30) -> bytes:
    """A RAR 4 archive written from its format's description (RAR's technote: marker, main
    header, a file header per member, end block; each header's CRC is the low 16 bits of its
    CRC-32), ASCII member names. Method 0x30 stores the data, as rarfile reads it itself;
    0x33 ("normal") labels the data compressed, for which a reader needs a RAR tool."""

    def block(kind: int, flags: int, body: bytes) -> bytes:
        head = struct.pack("<BHH", kind, flags, 7 + len(body)) + body
        return struct.pack("<H", zlib.crc32(head) & 0xFFFF) + head

    out = b"Rar!\x1a\x07\x00" + block(0x73, 0, bytes(6))
    for name, data in members.items():
        encoded = name.encode("ascii")
        fields = struct.pack(
            "<LLBLLBBHL", len(data), len(data), 3, zlib.crc32(data), 0x5A210000, 20, method,
            len(encoded), 0o100644 << 16,
        )  # fmt: skip
        out += block(0x74, 0x8000, fields + encoded) + data
    return out + block(0x7B, 0x4000, b"")


def epub(title: str, masters: list[MasterDocument], nav: bool = True) -> bytes:
    """An EPUB 3 from its own parts: mimetype first and stored, container, OPF, one XHTML
    file per chapter, and (unless not ``nav``) a navigation document."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        items, refs = [], []
        for k, master in enumerate(masters, start=1):
            paragraphs = "".join(f"<p>{line}</p>" for line in master.text.splitlines() if line)
            z.writestr(
                f"OEBPS/text/c{k:03d}.xhtml",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{master.title}</title></head><body><h2>{master.title}</h2>"
                f"{paragraphs}</body></html>",
            )
            items.append(
                f'<item id="c{k}" href="text/c{k:03d}.xhtml" media-type="application/xhtml+xml"/>'
            )
            refs.append(f'<itemref idref="c{k}"/>')
        if nav:
            z.writestr("OEBPS/nav.xhtml", "<html><body><nav>目录</nav></body></html>")
            items.append(
                '<item id="nav" href="nav.xhtml" properties="nav" '
                'media-type="application/xhtml+xml"/>'
            )
        z.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata><dc:title xmlns:dc="http://purl.org/dc/elements/1.1/">{title}</dc:title>'
            f"</metadata><manifest>{''.join(items)}</manifest>"
            f"<spine>{''.join(refs)}</spine></package>",
        )
    return buf.getvalue()


def zip_bomb(inflated: int = 3_000_000_000, name: str = "全本.txt") -> bytes:
    """One member declaring ``inflated`` bytes of zeros (under 4 GiB: no ZIP64), built in a
    second or two: deflate blocks of 1 MiB of zeros each end in a full flush, so every block
    after the first is the same bytes, repeated. CRC-32 of the zeros is computed on the way."""
    chunk = 1 << 20
    count, rest = divmod(inflated, chunk)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(chunk)
    first = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.compress(bytes(rest)) + compressor.flush(zlib.Z_FINISH)
    data = first + block * (count - 1) + tail
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(bytes(rest), crc)
    encoded = name.encode("utf-8")
    local = struct.pack(
        "<4s5H3L2H", b"PK\x03\x04", 20, 0x800, 8, 0, 0, crc, len(data), inflated,
        len(encoded), 0,
    )  # fmt: skip
    central = struct.pack(
        "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0x800, 8, 0, 0, crc, len(data), inflated,
        len(encoded), 0, 0, 0, 0, 0, 0,
    )  # fmt: skip
    offset = len(local) + len(encoded) + len(data)
    size = len(central) + len(encoded)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, size, offset, 0)
    return local + encoded + data + central + encoded + end


# ------------------------------------------------------------------------------ the site


@dataclass
class DownloadSite:
    """The site and what a crawl of it must find: ``expected`` (download path → doc ids),
    ``innocent`` (paths of files that copy nothing), ``unread`` (path → reason), ``files``
    (path → the served bytes and file name)."""

    site: TestSite
    masters: list[MasterDocument]
    expected: dict[str, list[str]] = field(default_factory=dict)
    innocent: list[str] = field(default_factory=list)
    unread: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)


def attachment(name: str, data: bytes, media: str = "application/octet-stream") -> Page:
    """A file sent as an attachment with an RFC 5987 ``filename*=`` (and an ASCII fallback)."""
    disposition = f"attachment; filename=\"download\"; filename*=UTF-8''{quote(name)}"
    return Page(data, content_type=media, headers={"Content-Disposition": disposition})


def countdown(target: str, button: bool = True) -> Page:
    """A download page with a countdown: the file is behind a second button, or only in the
    script that runs when the countdown ends."""
    script = (
        f'<script>var n=5;var downUrl="{target}";'
        "setInterval(function(){if(--n<=0){location.href=downUrl;}},1000);</script>"
    )
    link = f'<p><a class="btn" href="{target}">点击下载</a></p>' if button else ""
    body = f"<p>下载倒计时 <span id='n'>5</span> 秒，请稍候……</p>{link}{script}"
    return Page(html_page("下载页", body).encode("utf-8"))


def download_site(chapters: int = 40, chars: int = 700) -> DownloadSite:
    """A TXT-download site: book pages with download links (direct, through countdown pages,
    attachments with Chinese names), serving a GBK TXT, a GBK-named ZIP, a 7z, an EPUB and a
    ZIP nested in a ZIP, a stored RAR of two ingested works, an EPUB without a nav, an
    innocent book's ZIP, and unreadable files: a password-protected 7z, a compressed RAR (no
    reader installed), a 3 GB zip bomb, a download cut short and a damaged ZIP."""
    work_a = book_masters(chapters, WORK_A, chars, seed=35_000)
    work_b = book_masters(chapters, WORK_B, chars, seed=36_000)
    innocent = book_masters(chapters // 4, INNOCENT, chars, seed=37_000)
    text_a, text_b = book_text(work_a, WORK_A), book_text(work_b, WORK_B)
    ids_a, ids_b = [m.doc_id for m in work_a], [m.doc_id for m in work_b]
    plan = DownloadSite(TestSite(), [*work_a, *work_b])
    pages = plan.site.pages

    def serve(path: str, page: Page, name: str) -> None:
        pages[path] = page
        plan.files[path] = (name, page.body)

    epub_path = "/files/" + quote(f"{WORK_B}.epub")
    books = {
        "/book/1.html": (WORK_A, [("/down/1.html", "TXT下载"), ("/down/3.html", "全本下载")]),
        "/book/2.html": (WORK_B, [("/get/2", "下载地址"), (epub_path, "EPUB")]),
        "/book/5.html": (f"{WORK_A}合集", [("/get/5", "全本下载")]),
        "/book/6.html": (INNOCENT, [("/down/6.html", "TXT下载")]),
        "/book/7.html": ("加密版", [("/get/7", "点击下载")]),
        "/book/8.html": ("超大全本", [("/get/8", "全本下载")]),
        "/book/9.html": ("RAR版", [("/get/9", "下载地址")]),
        "/book/10.html": ("残本", [("/get/10", "TXT下载"), ("/get/11", "全本下载")]),
        "/book/12.html": (f"{WORK_B}无目录版", [("/files/b12.epub", "EPUB")]),
        "/book/13.html": (f"{WORK_A}RAR版", [("/get/13", "下载地址")]),
    }
    pages["/"] = Page(
        html_page("TXT小说下载站", link_list((p, t) for p, (t, _) in books.items())).encode()
    )
    for path, (title, links) in books.items():
        intro = f"<h1>{title}</h1><p>简介：本书为全本小说，提供TXT电子书免费下载。</p>"
        pages[path] = Page(html_page(title, intro + link_list(links)).encode())

    # GBK TXT behind a countdown page with a second button
    pages["/down/1.html"] = countdown("/get/1")
    serve("/get/1", attachment(f"{WORK_A}.txt", text_a.encode("gbk"), "text/plain"), "txt")
    plan.expected["/get/1"] = ids_a
    # 7z behind a countdown page whose only link is in its script
    pages["/down/3.html"] = countdown("/files/a3.7z", button=False)
    serve("/files/a3.7z", Page(seven_zip({f"{WORK_A}.txt": text_a.encode("gbk")})), "7z")
    plan.expected["/files/a3.7z"] = ids_a
    # ZIP with a GBK member name, as an attachment with a Chinese filename*=
    zip_b = gbk_zip({f"{WORK_B}.txt": text_b.encode("gbk")})
    serve("/get/2", attachment(f"{WORK_B}.zip", zip_b, "application/zip"), "zip")
    plan.expected["/get/2"] = ids_b
    # EPUB by its extension
    serve(epub_path, Page(epub(WORK_B, work_b), content_type="application/epub+zip"), "epub")
    plan.expected[epub_path] = ids_b
    # a ZIP inside a ZIP (one level), with a picture beside it
    inner = gbk_zip({f"{WORK_A}.txt": text_a.encode("utf-8")})
    outer = gbk_zip({f"{WORK_A}.zip": inner, "封面.jpg": b"\xff\xd8\xff" + bytes(64)})
    serve("/get/5", attachment(f"{WORK_A}合集.zip", outer), "nested")
    plan.expected["/get/5"] = ids_a
    # an innocent book's file
    pages["/down/6.html"] = countdown("/get/6")
    text_c = book_text(innocent, INNOCENT).encode("gbk")
    serve("/get/6", attachment(f"{INNOCENT}.zip", gbk_zip({f"{INNOCENT}.txt": text_c})), "innocent")
    plan.innocent.append("/get/6")
    # unreadable: a password, a bomb, a RAR without a reader
    secret = seven_zip({f"{WORK_A}.txt": text_a.encode("gbk")}, password="123456")
    serve("/get/7", attachment("加密版.7z", secret), "password")
    plan.unread["/get/7"] = "password"
    serve("/get/8", attachment("超大全本.zip", zip_bomb()), "bomb")
    plan.unread["/get/8"] = "bomb"
    # a RAR whose member is compressed: a RAR tool reads it, or the file is unread (no_reader,
    # on a machine without one; the bytes are no real RAR compression: broken with one)
    packed = rar({"book.txt": text_a.encode("gbk")[:5000]}, method=0x33)
    serve("/get/9", attachment("RAR版.rar", packed), "rar")
    has_tool = any(shutil.which(tool) for tool in ("unrar", "unar", "bsdtar"))
    plan.unread["/get/9"] = "broken" if has_tool else "no_reader"
    # a RAR whose member is stored: read without any tool
    serve("/get/13", attachment(f"{WORK_A}.rar", rar({"book.txt": text_a.encode("gbk")})), "rar")
    plan.expected["/get/13"] = ids_a
    # an EPUB without a navigation document: read by its spine
    no_nav = Page(epub(WORK_B, work_b, nav=False), content_type="application/epub+zip")
    serve("/files/b12.epub", no_nav, "epub without nav")
    plan.expected["/files/b12.epub"] = ids_b
    # a download cut short in transfer, and a damaged archive
    cut = attachment(f"{WORK_A}.zip", gbk_zip({f"{WORK_A}.txt": text_a.encode("gbk")}))
    cut.send_bytes = len(cut.body) // 2
    serve("/get/10", cut, "truncated")
    plan.unread["/get/10"] = "truncated"
    damaged = bytearray(gbk_zip({f"{WORK_B}.txt": text_b.encode("gbk")}))
    damaged[80:200] = bytes(120)
    serve("/get/11", attachment(f"{WORK_B}.zip", bytes(damaged)), "broken")
    plan.unread["/get/11"] = "broken"
    return plan
