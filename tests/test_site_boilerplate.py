"""Site-level boilerplate: short lines repeated across many pages of a site are dropped."""

from __future__ import annotations

from tracker.text.site_boilerplate import SiteBoilerplate

from .texts import prose


def test_lines_repeated_on_many_pages_are_dropped(runtime):
    boilerplate = SiteBoilerplate(runtime.redis, runtime.settings.redis_prefix, min_pages=3)
    stamp = "手机用户访问 m.example-pirate.test 阅读体验更好"
    pages = [f"{stamp}\n{prose(seed=i, chars=400)}\n返回目录  加入书架" for i in range(5)]
    results = [boilerplate.strip("pirate.test", page) for page in pages]
    assert [dropped for _, dropped in results] == [0, 0, 2, 2, 2]
    cleaned = results[-1][0]
    assert stamp not in cleaned and "返回目录" not in cleaned
    assert prose(seed=4, chars=400) in cleaned
    # Another site has its own counts; long lines (content) are never counted.
    assert boilerplate.strip("other.test", pages[0]) == (pages[0], 0)


def test_long_lines_are_content(runtime):
    boilerplate = SiteBoilerplate(
        runtime.redis, runtime.settings.redis_prefix, min_pages=2, max_line_chars=30
    )
    paragraph = "这是一段很长的正文内容，" * 5
    for _ in range(3):
        text, dropped = boilerplate.strip("site.test", paragraph + "\n短行")
    assert (text, dropped) == (paragraph, 1)
