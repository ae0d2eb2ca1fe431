"""A small pirate site for the enforcement tests: a catalogue and ``n`` chapter pages, each a
copy of one master chapter, that the tests then take down (404), rewrite (innocent text) or
put back, as a site answering notices does."""

from __future__ import annotations

from tests.sites import Page, TestSite, book_masters, chapter_br, html_page, link_list
from tests.texts import prose
from tracker.model import MasterDocument


class PirateSite:
    """``/book/`` lists ``/book/1.html`` … ``/book/N.html``, each copying ``WORK/000K``."""

    def __init__(self, n: int = 8, work: str = "盗版测试书") -> None:
        self.masters: list[MasterDocument] = book_masters(n, work=work, chars=1200)
        self.paths = [f"/book/{k}.html" for k in range(1, n + 1)]
        self.bodies = {path: self._chapter(k) for k, path in enumerate(self.paths, start=1)}
        catalogue = link_list((path, f"第{k}章") for k, path in enumerate(self.paths, start=1))
        pages = {"/book/": Page(_html(html_page("目录", catalogue)))}
        pages |= {path: Page(body) for path, body in self.bodies.items()}
        self.site = TestSite(pages)
        self.url = self.site.url

    def _chapter(self, k: int) -> bytes:
        master = self.masters[k - 1]
        links = f'<a href="/book/{k + 1}.html">下一章</a>' if k < len(self.masters) else ""
        return _html(html_page(master.title, chapter_br(master.title, master.text, links)))

    def page_url(self, k: int) -> str:
        return self.url.rstrip("/") + self.paths[k - 1]

    def remove(self, k: int) -> None:
        gone = b"<html><body>Not Found</body></html>"
        self.site.pages[self.paths[k - 1]] = Page(gone, status=404)

    def rewrite(self, k: int) -> None:
        """The page stays, its text no longer a copy."""
        text = prose(9000 + k, 1200)
        self.site.pages[self.paths[k - 1]] = Page(
            _html(html_page(f"第{k}章", chapter_br(f"第{k}章 新的内容", text)))
        )

    def restore(self, k: int) -> None:
        self.site.pages[self.paths[k - 1]] = Page(self.bodies[self.paths[k - 1]])

    def close(self) -> None:
        self.site.close()

    def __enter__(self) -> PirateSite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _html(text: str) -> bytes:
    return text.encode("utf-8")
