"""What a page the tracker wrote holds, read as a browser's parser reads it: its elements and
attributes, and whether anything in it could run or load."""

from __future__ import annotations

from html.parser import HTMLParser

#: Links and sources a page of ours may carry: its own paths, anchors and http(s) URLs.
SAFE_PREFIXES = ("/", "#", "?", "http://", "https://")


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {name: value or "" for name, value in attrs}))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def elements(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


def assert_inert(page: str, *, scripts: tuple[str, ...] = ()) -> Elements:
    """No element a crawled string could have made: no script but ``scripts`` (our own files),
    no img, iframe, object or embed, no event handler attribute, no link or source that is not
    ours or http(s). Returns what was parsed."""
    parsed = elements(page)
    for tag, attrs in parsed.found:
        assert tag not in ("img", "iframe", "object", "embed", "base"), (tag, attrs)
        if tag == "script":
            assert attrs.get("src") in scripts, attrs
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("href", "src", "action", "formaction", "xlink:href"):
            if name in attrs:
                assert attrs[name].startswith(SAFE_PREFIXES), (tag, attrs)
    return parsed


def links(page: str) -> list[str]:
    """The ``href`` of every ``a`` element, unescaped."""
    return [attrs["href"] for tag, attrs in elements(page).found if tag == "a" and "href" in attrs]
