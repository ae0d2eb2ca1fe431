"""Site-level boilerplate: short lines repeated across many pages of a site are dropped."""

from __future__ import annotations

from scrapy.utils.test import get_crawler

from pipelines.boilerplate import SiteBoilerplatePipeline
from tracker.context import TrackerContext
from tracker.items import PageItem
from tracker.text.normalize import normalize
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


def test_pipeline_masks_boilerplate_without_touching_the_stored_text(runtime):
    crawler = get_crawler(settings_dict={"TRACKER_BOILERPLATE_MIN_PAGES": 2})
    crawler._tracker_context = TrackerContext(runtime)
    pipeline = SiteBoilerplatePipeline.from_crawler(crawler)
    stamp = "本书由某某文学网独家首放欢迎收藏"
    items = []
    for i in range(3):
        text = f"{prose(seed=20 + i, chars=300)}\n{stamp}"
        items.append(
            pipeline.process_item(
                PageItem(
                    url=f"http://127.0.0.1:9/book/{i}.html", text=text, normalized=normalize(text)
                )
            )
        )
    assert normalize(stamp).chars in items[0]["normalized"].chars  # seen once: kept
    for item in items[1:]:
        assert normalize(stamp).chars not in item["normalized"].chars
        assert item["normalized"].source == item["text"]  # offsets still refer to the page
    assert crawler.stats.get_value("tracker/boilerplate_lines") == 2
