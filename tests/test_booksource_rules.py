"""Legado's rule language (tracker.booksources.rules), search URLs (urls) and source files
(source), on pages and sources written here the way real ones are."""

from __future__ import annotations

import json
from urllib.parse import unquote_to_bytes

import pytest

from spiders.booksource import chapter_page, same_title
from tracker.booksources.rules import Analyzer, RuleError, ScriptRule, html_to_text, needs_script
from tracker.booksources.source import SourceFileError, read_sources, source_from
from tracker.booksources.urls import UrlError, page_number, search_request

PAGE = """<html><body>
<div class="result-list"><ul>
  <li class="item"><h3><a href="/book/1/">星海归途</a></h3><span class="s2">甲</span></li>
  <li class="item odd"><h3><a href="/book/2/">青云剑录</a></h3><span class="s2">乙</span></li>
  <li class="item"><h3><a href="https://m.site.test/book/3/">三体</a></h3></li>
</ul></div>
<div id="content">&nbsp;&nbsp;第一段<br><br>第二段<script>ads()</script><p>第三段</p>
<a href="/c/1_2.html">下一页</a></div>
</body></html>"""


@pytest.fixture()
def page() -> Analyzer:
    return Analyzer(PAGE, "https://www.site.test/search?q=x")


def test_jsoup_chains_and_getters(page):
    items = page.elements("class.result-list@tag.li")
    assert len(items) == 3
    names = [Analyzer(item, page.base_url).string("tag.h3@tag.a@text") for item in items]
    assert names == ["星海归途", "青云剑录", "三体"]
    assert [Analyzer(item, page.base_url).url("tag.a@href") for item in items] == [
        "https://www.site.test/book/1/",
        "https://www.site.test/book/2/",
        "https://m.site.test/book/3/",
    ]
    assert page.strings("class.odd@tag.a@text") == ["青云剑录"]  # a class among several
    assert page.strings("id.content@tag.a@href") == ["/c/1_2.html"]
    assert page.strings("text.下一页@href") == ["/c/1_2.html"]
    assert page.string("id.content@ownText").startswith("第一段")
    assert page.string("id.content@textNodes").splitlines()[:2] == ["第一段", "第二段"]
    html = page.string("id.content@html")
    assert "ads()" not in html and "<p>第三段</p>" in html
    assert html_to_text(html).splitlines()[:3] == ["第一段", "第二段", "第三段"]
    assert page.strings("ul@li.1@a@text") == ["青云剑录"]  # CSS segments in a chain


@pytest.mark.parametrize(
    ("rule", "names"),
    [
        ("tag.li.0", ["星海归途"]),
        ("tag.li.-1", ["三体"]),
        ("tag.li!0", ["青云剑录", "三体"]),
        ("tag.li.0:2", ["星海归途", "三体"]),  # several indexes
        ("tag.li[1:2]", ["青云剑录", "三体"]),  # a range, both ends in
        ("tag.li[-1:0]", ["三体", "青云剑录", "星海归途"]),  # backwards
        ("tag.li[!0, -1]", ["青云剑录"]),
        ("tag.li[0:2:2]", ["星海归途", "三体"]),
        ("tag.li[7]", []),  # out of range: nothing
        ("children[0]@tag.li[0]", ["星海归途"]),
    ],
)
def test_indexes(page, rule, names):
    assert [Analyzer(e).string("tag.a@text") for e in page.elements(rule)] == names


def test_shapes_of_real_sources(page):
    """Rules as shared source files write them: getters alone on a list item, CSS
    segments, a title taken out of 《》 with the first match only."""
    links = page.elements("class.result-list@li@a")
    assert [Analyzer(a).string("text") for a in links][:2] == ["星海归途", "青云剑录"]
    assert Analyzer(links[0], page.base_url).url("href") == "https://www.site.test/book/1/"
    assert page.strings(".s2@text") == ["甲", "乙"]
    assert Analyzer("<h2>《长夜》最新</h2>").string("tag.h2@text##《(.*)》##$1###") == "长夜"


def test_css_xpath_and_operators(page):
    assert page.strings("@CSS:li.item > h3 > a@text")[:1] == ["星海归途"]
    assert page.strings("@css:li.odd a@href") == ["/book/2/"]
    assert page.strings("//li/h3/a/text()") == ["星海归途", "青云剑录", "三体"]
    assert page.strings("@XPath://span[@class='s2']/text()") == ["甲", "乙"]
    assert page.strings("@XPath://div[@id='content']/allText()")[0].startswith("第一段")
    assert len(page.elements("//li[@class='item']")) == 2
    assert page.strings("class.s2@text&&tag.h3.0@text") == ["甲", "乙", "星海归途"]
    assert page.strings("class.none@text||class.s2@text") == ["甲", "乙"]
    # %% interleaves as far as the first list goes (Legado's reading)
    interleaved = page.strings("class.s2@text%%tag.h3@text")
    assert interleaved == ["甲", "星海归途", "乙", "青云剑录"]


def test_regex_replacement_and_templates(page):
    assert page.strings("tag.h3@a@href##.*/book/(\\d+)/##id$1") == ["id1", "id2", "id3"]
    assert page.string("tag.h3.1@text##剑") == "青云录"  # deleted
    assert page.string("tag.h3.1@text##(.)##[$1]###") == "[青]"  # the first match alone
    assert page.string("/b/{{@@tag.h3.0@text}}.html") == "/b/星海归途.html"
    with pytest.raises(ScriptRule):
        page.string("{{java.ajax('x')}}")
    with pytest.raises(RuleError):
        page.strings("tag.h3@text##([##x")


def test_jsonpath():
    data = {"code": 0, "data": {"list": [{"name": "星海归途", "id": 7, "tags": ["a", "b"]},
                                         {"name": "x", "id": 8}]}}  # fmt: skip
    api = Analyzer(json.dumps(data), "https://api.site.test/s")
    items = api.elements("$.data.list[*]")
    assert len(items) == 2 and api.elements("data.list") == items  # $. implied on JSON
    first = Analyzer(items[0], api.base_url)
    assert first.string("$.name") == "星海归途" and first.string("name") == "星海归途"
    assert first.url("/book/{{$.id}}/") == "https://api.site.test/book/7/"
    assert first.url("@Json:/book/{$.id}.json") == "https://api.site.test/book/7.json"
    assert first.string("$.tags") == "a\nb"
    assert api.strings("$..name") == ["星海归途", "x"]
    assert api.strings("$.data.list[?(@.id > 7)].name") == ["x"]
    assert Analyzer("<html>not json</html>").strings("$.data") == []
    with pytest.raises(RuleError):
        api.strings("$.data[")


def test_needs_script():
    assert needs_script("@js:result.trim()")
    assert needs_script("<js>var a=1</js>")
    assert needs_script("{{java.base64Decode(x)}}")
    assert needs_script("/s?q={{encodeURI(key)}}")
    assert not needs_script("{{$.id}}") and not needs_script("id.content@html")
    assert not needs_script("/s?q={{key}}", lambda inner: inner == "key")


def test_search_urls_get_post_and_charsets():
    get = search_request("/s.php?q={{key}}&p={{page}}", "星海归途", "https://s.test/x/")
    assert get.method == "GET"
    assert get.url == "https://s.test/s.php?q=%E6%98%9F%E6%B5%B7%E5%BD%92%E9%80%94&p=1"
    post = search_request(
        '/modules/article/search.php,{"method":"POST","body":"searchkey={{key}}&t=1",'
        '"charset":"gbk"}',
        "星海归途",
        "https://s.test",
    )
    assert post.method == "POST" and post.url == "https://s.test/modules/article/search.php"
    key, _, rest = post.body.decode("ascii").removeprefix("searchkey=").partition("&")
    assert unquote_to_bytes(key).decode("gbk") == "星海归途" and rest == "t=1"
    assert post.headers["Content-Type"] == "application/x-www-form-urlencoded"
    paged = search_request("/s/{{key}}/<1,{{(page-1)*20}}>", "a b", "https://s.test", page=3)
    assert paged.url == "https://s.test/s/a%20b/40"
    as_json = search_request(
        '/api,{"method":"POST","body":{"kw":"{{key}}"}}', "书", "https://s.test"
    )
    assert json.loads(as_json.body) == {"kw": "书"}
    assert page_number("page*2+1", 3) == 7
    with pytest.raises(UrlError):
        page_number("__import__('os')", 1)
    with pytest.raises(UrlError):
        search_request("/s?q={{key}},{bad", "x", "https://s.test")


SOURCE = {
    "bookSourceName": "某书城",
    "bookSourceUrl": "https://www.shucheng.test",
    "searchUrl": "/search?q={{key}}",
    "ruleSearch": {"bookList": "class.item", "name": "tag.a@text", "bookUrl": "tag.a@href"},
    "ruleToc": {"chapterList": "id.list@tag.dd", "chapterUrl": "tag.a@href"},
    "ruleContent": {"content": "id.content@html"},
}


def test_what_makes_a_source_runnable():
    source = source_from(SOURCE)
    assert source.runnable and source.host == "www.shucheng.test"
    assert source.domain == "shucheng.test"  # its m. pages are the same site
    scripted = {**SOURCE, "ruleContent": {"content": "id.c@html", "webJs": "x()"}}
    assert source_from(scripted).why_not == ["needs script: ruleContent.webJs"]
    js_url = {**SOURCE, "searchUrl": "@js:java.ajax(key)"}
    assert source_from(js_url).why_not[0].startswith("needs script: searchUrl")
    option_js = {**SOURCE, "searchUrl": '/s?q={{key}},{"js":"java.url"}'}
    assert source_from(option_js).why_not[0].startswith("needs script")
    web_view = {**SOURCE, "searchUrl": '/s?q={{key}}, {"webView": true}'}
    assert source_from(web_view).why_not == ["needs script: searchUrl option webView"]
    assert source_from({**SOURCE, "enabled": False}).why_not == [
        "disabled in its file (enabled: false)"
    ]
    missing = {**SOURCE, "ruleToc": {"chapterList": "id.list@tag.dd"}}
    assert source_from(missing).why_not == ["no ruleToc.chapterUrl"]
    audio = {**SOURCE, "bookSourceType": 1}
    assert source_from(audio).why_not == ["not a text source (audio)"]
    as_string = {**SOURCE, "ruleSearch": json.dumps(SOURCE["ruleSearch"])}
    assert source_from(as_string).runnable
    with pytest.raises(ValueError, match="bookSourceUrl"):
        source_from({**SOURCE, "bookSourceUrl": "javascript:alert(1)"})
    port = source_from({**SOURCE, "bookSourceUrl": "http://127.0.0.1:8080#备注"})
    assert port.host == "127.0.0.1:8080" and port.url == "http://127.0.0.1:8080"


def test_source_files_one_object_an_array_and_salvage():
    assert [s.name for s in read_sources(json.dumps(SOURCE)).sources] == ["某书城"]
    second = {**SOURCE, "bookSourceName": "二", "bookSourceUrl": "https://er.test"}
    text = json.dumps([SOURCE, "not a source", second], ensure_ascii=False, indent=2)
    file = read_sources(text)
    assert [s.name for s in file.sources] == ["某书城", "二"]
    [bad] = file.bad
    assert bad["line"] == text.splitlines().index('  "not a source",') + 1
    broken = text.replace('"二",', '"二"', 1)  # a missing comma in the last source
    file = read_sources(broken)
    assert [s.name for s in file.sources] == ["某书城"]
    [unreadable] = [entry for entry in file.bad if "not JSON" in entry["error"]]
    assert unreadable["name"] == "二"
    for garbage in ("", "{oops", "[]"):
        with pytest.raises(SourceFileError):
            read_sources(garbage)


def test_titles_and_chapter_pages():
    assert same_title("《星海归途》", "星海归途") and same_title("星海归途（全本）", "星海归途")
    assert not same_title("星海归途外传", "星海归途") and not same_title("", "")
    page = chapter_page("第1章 <b>", "一段<script>\n二段")
    assert "&lt;b&gt;" in page and "&lt;script&gt;" in page and "<script>" not in page
