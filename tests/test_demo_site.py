"""The bundled demo data and the local pirate-style site (no database needed)."""

from __future__ import annotations

import html
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from urllib.parse import urljoin, urlsplit

import lxml.html
import opencc
import pytest

from tracker.demo import LocalSite, SiteManifest, build_site, master_documents, master_paths, serve
from tracker.demo.site import AD_LINES, ALL_ADS, INLINE_ADS, PAGE_BREAK_AD
from tracker.reading.readers import read_book, read_jsonl
from tracker.text.normalize import normalize

HREF = re.compile(r"""href\s*=\s*["']([^"'#]+)["']""", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SiteManifest, LocalSite]]:
    manifest = build_site(tmp_path_factory.mktemp("site"))
    with serve(manifest.root) as local:
        yield manifest, local


def fetch(url: str) -> tuple[bytes, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read(), response.headers.get("Content-Type", "")


def walk(start: str) -> set[str]:
    """Page paths (relative to the site root) reachable from ``start`` by following links."""
    base = urlsplit(start)
    seen: set[str] = set()
    queue = [start]
    while queue:
        url = queue.pop()
        path = urlsplit(url).path.lstrip("/")
        if path in seen:
            continue
        seen.add(path)
        body, _ = fetch(url)
        for href in HREF.findall(body.decode("latin-1")):
            target = urljoin(url, href)
            parts = urlsplit(target)
            if parts.netloc == base.netloc and parts.path.endswith(".html"):
                queue.append(f"{parts.scheme}://{parts.netloc}{parts.path}")
    return seen


def content_lines(page: bytes, encoding: str) -> list[str]:
    """The lines of a chapter page's ``#content`` block."""
    root = lxml.html.fromstring(page.decode(encoding))
    (content,) = root.xpath('//div[@id="content"]')
    for br in content.iter("br"):
        br.tail = "\n" + (br.tail or "")
    return [
        line.strip().replace("\xa0", "")
        for line in content.text_content().splitlines()
        if line.strip()
    ]


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def chapter_texts() -> list[str]:
    return [doc.text for doc in read_book(master_paths()[0])]


def test_master_sample_reads_as_six_chapters_and_three_articles() -> None:
    book, news = master_paths()
    assert book.is_file() and news.is_file()
    chapters = list(read_book(book))
    assert [c.doc_id for c in chapters] == [f"红楼梦/{n}" for n in range(1, 7)]  # 第N回
    assert chapters[0].title.startswith("第一回") and chapters[5].title.startswith("第六回")
    assert all(len(c.text) > 3000 for c in chapters)
    articles = list(read_jsonl(news))
    assert [a.doc_id for a in articles] == [f"news-1998-01-0{n}" for n in (1, 2, 3)]
    assert all(a.work == "人民日报1998" and 300 <= len(a.text) <= 800 for a in articles)
    data_dir = book.parent
    assert sum(p.stat().st_size for p in data_dir.iterdir() if p.is_file()) < 155_000


def test_every_page_is_reachable_from_the_index(site) -> None:
    manifest, local = site
    reachable = walk(local.url + "index.html")
    assert set(manifest.expected) <= reachable
    assert set(manifest.innocent) <= reachable
    assert not set(manifest.expected) & set(manifest.innocent)
    for path in manifest.pages:
        assert (manifest.root / path).is_file()


def test_server_is_loopback_and_sends_no_charset(site) -> None:
    _, local = site
    assert local.url.startswith("http://127.0.0.1:")
    _, content_type = fetch(local.url + "book/1/1.html")
    assert content_type == "text/html"
    robots, _ = fetch(local.url + "robots.txt")
    assert b"User-agent: *" in robots and b"Disallow: /" not in robots
    with pytest.raises(urllib.error.HTTPError):
        fetch(local.url + "book/")  # no directory listings


def test_gbk_page_declares_and_decodes_as_gbk(site) -> None:
    manifest, local = site
    assert manifest.encodings["book/1/1.html"] == "gbk"
    raw, _ = fetch(local.url + "book/1/1.html")
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    page = raw.decode("gbk")
    assert '<meta charset="gbk">' in page[:1024]
    lines = [line for line in content_lines(raw, "gbk") if line not in AD_LINES]
    body = squash("".join(lines))
    for ad in INLINE_ADS:
        body = body.replace(squash(ad), "")
    assert body == squash(chapter_texts()[0])


def test_traditional_page_is_gb18030_and_traditional(site) -> None:
    manifest, local = site
    assert manifest.encodings["book/1/5.html"] == "gb18030"
    raw, _ = fetch(local.url + "book/1/5.html")
    assert b"charset=gb18030" in raw[:1024]
    s2t = opencc.OpenCC("s2t")
    converted = s2t.convert(chapter_texts()[4])
    assert converted != chapter_texts()[4]
    ads = {s2t.convert(ad) for ad in AD_LINES}
    body = squash("".join(line for line in content_lines(raw, "gb18030") if line not in ads))
    for ad in INLINE_ADS:
        body = body.replace(squash(s2t.convert(ad)), "")
    assert body == squash(converted)
    assert "寶玉" in raw.decode("gb18030")


def test_split_chapter_halves_make_the_whole_chapter(site) -> None:
    manifest, local = site
    assert manifest.expected["book/1/3.html"] == ["红楼梦/3"]
    assert "book/1/3_2.html" not in manifest.expected  # a part of 3.html, read with it
    first, _ = fetch(local.url + "book/1/3.html")
    second, _ = fetch(local.url + "book/1/3_2.html")
    assert '<a href="3_2.html">下一页</a>' in first.decode("utf-8")
    ads = {*AD_LINES, PAGE_BREAK_AD}
    halves = [
        [line for line in content_lines(page, "utf-8") if line not in ads]
        for page in (first, second)
    ]
    assert all(len("".join(half)) > 2000 for half in halves)
    assert squash("".join(halves[0] + halves[1])) == squash(chapter_texts()[2])


def test_news_repost_contains_the_article(site) -> None:
    manifest, local = site
    (article,) = [a for a in read_jsonl(master_paths()[1]) if a.doc_id == "news-1998-01-02"]
    assert manifest.expected["news/1.html"] == ["news-1998-01-02"]
    page = fetch(local.url + "news/1.html")[0].decode("utf-8")
    for para in article.text.splitlines():
        assert html.escape(para) in page


def test_innocent_pages_copy_no_master_text(site) -> None:
    manifest, _ = site
    masters = [normalize(doc.text).chars for doc in master_documents()]
    assert len(masters) == 9
    for path in manifest.innocent:
        text = lxml.html.fromstring((manifest.root / path).read_bytes()).text_content()
        chars = normalize(text).chars
        # no 20-character run of any master chapter appears on an innocent page
        for master in masters:
            assert not any(master[i : i + 20] in chars for i in range(0, len(master) - 20, 10))


@pytest.mark.parametrize("ad", ALL_ADS)
def test_injected_ads_are_dropped_by_normalize(ad: str) -> None:
    para = "却说封肃因听见公差传唤，忙出来陪笑启问。"
    clean = normalize(para + "\n" + para).chars
    assert normalize(ad).chars == ""
    assert normalize(opencc.OpenCC("s2t").convert(ad)).chars == ""
    assert normalize(f"{para}\n{ad}\n{para}").chars == clean
    if ad in INLINE_ADS:
        cut = len(para) // 2
        assert normalize(para[:cut] + ad + para[cut:]).chars == normalize(para).chars


def test_pages_escape_their_text(site) -> None:
    manifest, _ = site
    for path in manifest.pages:
        page = (manifest.root / path).read_bytes().decode(manifest.encodings[path])
        lxml.html.fromstring(page)
        assert page.count("<html") == 1
    page = (manifest.root / "book/1/1.html").read_bytes().decode("gbk")
    quoted = [line for line in chapter_texts()[0].splitlines() if '"' in line]
    assert quoted and all(html.escape(line) in page for line in quoted[1:])
