"""Site-level boilerplate: short lines repeated across many pages of a site are dropped, each page
counted once, master text never."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from scrapy.utils.test import get_crawler

from pipelines.boilerplate import SiteBoilerplatePipeline, drop_lines
from tests.stages import process
from tracker.crawling.context import TrackerContext
from tracker.crawling.items import PageItem
from tracker.fingerprints.simhash import simhash_normalized, votes_normalized
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.text.normalize import normalize
from tracker.text.site_boilerplate import MasterText, SiteBoilerplate

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


def test_a_batch_counts_page_after_page_in_one_round_trip(runtime):
    stamp = "手机用户访问 m.example-pirate.test 阅读体验更好"
    pages = [
        (site, f"{stamp}\n{prose(seed=i, chars=300)}\n返回目录", f"http://{site}/{i % 4}.html")
        for i, site in enumerate(["a.test"] * 6 + ["b.test"] * 2)
    ]  # a.test's pages 4 and 5 are its pages 0 and 1 again: counted once
    one_by_one = SiteBoilerplate(runtime.redis, "one:", min_pages=3)
    expected = [one_by_one.mask(*page) for page in pages]
    assert [dropped for _, dropped in expected] == [0, 0, 2, 2, 2, 2, 0, 0]
    batched = SiteBoilerplate(runtime.redis, "batch:", min_pages=3)
    calls = []
    runtime.redis.pipeline = _counting(runtime.redis.pipeline, calls)
    try:
        found = batched.mask_many(pages)
    finally:
        del runtime.redis.pipeline
    assert [(m.tolist(), n) for m, n in found] == [(m.tolist(), n) for m, n in expected]
    assert len(calls) == 1  # the eight pages' counts in one pipeline
    # A server that lost its scripts (restarted) has them loaded again; nothing counts twice.
    runtime.redis.script_flush()
    again = batched.mask_many([(site, text, f"{url}?again") for site, text, url in pages[:3]])
    assert [dropped for _, dropped in again] == [2, 2, 2]


def _counting(make_pipeline, calls):
    def pipeline(*args, **kwargs):
        calls.append(args)
        return make_pipeline(*args, **kwargs)

    return pipeline


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
            process(
                pipeline,
                PageItem(
                    url=f"http://127.0.0.1:9/book/{i}.html", text=text, normalized=normalize(text)
                ),
            )
        )
    assert normalize(stamp).chars in items[0]["normalized"].chars  # seen once: kept
    for item in items[1:]:
        assert normalize(stamp).chars not in item["normalized"].chars
        assert item["normalized"].source == item["text"]  # offsets still refer to the page
    assert crawler.stats.get_value("tracker/boilerplate_lines") == 2


def test_pipeline_takes_the_dropped_lines_votes_from_the_simhash(runtime):
    crawler = get_crawler(settings_dict={"TRACKER_BOILERPLATE_MIN_PAGES": 2})
    crawler._tracker_context = TrackerContext(runtime)
    pipeline = SiteBoilerplatePipeline.from_crawler(crawler)
    stamps = ["本书由某某文学网独家首放欢迎收藏", "天才一秒记住本站地址：www.biquge.la"]
    items = []
    for i, letters in enumerate(("", "", "ABC公司", "他打开电zi书看了")):
        text = f"{stamps[0]}\n{prose(seed=30 + i, chars=400)}\n{letters}\n{stamps[1]}"
        normalized = normalize(text)
        votes = votes_normalized(normalized)
        item = PageItem(
            url=f"http://127.0.0.1:9/book/{i}.html",
            text=text,
            normalized=normalized,
            simhash=votes.fingerprint,
            simhash_votes=votes,
        )
        items.append(process(pipeline, item))
    for item in items[1:]:
        expected = normalize(item["text"], drop=_line_mask(item["text"], stamps))
        assert item["normalized"].chars == expected.chars
        assert normalize(stamps[0]).chars not in item["normalized"].chars
    # A text without pinyin runs loses the stamp's votes; the last one, with a run read as
    # pinyin, is normalised again and hashed by the next stage.
    for item in items[1:3]:
        assert item["simhash"] == int(simhash_normalized([item["normalized"]])[0])
        assert item["simhash"] != votes_normalized(normalize(item["text"])).fingerprint
    assert "simhash" not in items[3] and "simhash_votes" not in items[3]
    assert crawler.stats.get_value("tracker/boilerplate_lines") == 6


def test_a_page_without_its_normalized_text_is_normalized_without_the_lines():
    text = f"{prose(seed=35, chars=300)}\n本书由某某文学网独家首放欢迎收藏"
    item = PageItem(url="http://127.0.0.1:9/book/1.html", text=text)
    drop_lines(item, _line_mask(text, ["本书由某某文学网独家首放欢迎收藏"]))
    assert item["normalized"].chars == normalize(prose(seed=35, chars=300)).chars
    assert "simhash" not in item  # hashed by the fingerprint stage


def _line_mask(text: str, lines: list[str]) -> np.ndarray:
    mask = np.zeros(len(text), dtype=bool)
    for line in lines:
        start = text.index(line)
        mask[start : start + len(line)] = True
    return mask


def test_a_page_counts_once_however_often_it_is_crawled(runtime):
    boilerplate = SiteBoilerplate(runtime.redis, runtime.settings.redis_prefix, min_pages=3)
    own = "本章完，感谢书友们的月票支持"  # the page's own short line, on this page only
    for visit in range(6):  # re-crawled six times, its text changing a little each time
        text = f"{prose(seed=40, chars=300)}\n{own}\n更新时间：第{visit}次"
        assert boilerplate.strip("pirate.test", text, url="http://pirate.test/1.html") == (text, 0)
    # Five other pages with the same line make it the site's: counted once each.
    for i in range(2, 4):
        boilerplate.mask(
            "pirate.test", f"{prose(seed=i, chars=300)}\n{own}", f"http://pirate.test/{i}"
        )
    assert boilerplate.strip("pirate.test", own, url="http://pirate.test/1.html") == ("", 1)


class CountingLibrary:
    """A stand-in master library that knows one text and counts the questions."""

    def __init__(self, master: str) -> None:
        self.master, self.questions, self.version_now = master, 0, 1
        self.text = MasterText(self.find, lambda: self.version_now)

    def find(self, text: str) -> list[tuple[int, int]]:
        self.questions += 1
        spans, position = [], 0
        for line in text.split("\n"):
            if line.strip() and line.strip() in self.master:
                spans.append((position, position + len(line)))
            position += len(line) + 1
        return spans


def test_master_lines_are_never_boilerplate_and_each_set_is_checked_once(runtime):
    boilerplate = SiteBoilerplate(runtime.redis, runtime.settings.redis_prefix, min_pages=3)
    master = prose(seed=50, chars=800)
    copied = [line for line in master.splitlines() if len(line) <= 80][:4]
    stamp = "手机用户访问 m.example-pirate.test 阅读体验更好"
    library = CountingLibrary(master)
    results = []
    for i in range(6):
        page = "\n".join([stamp, prose(seed=60 + i, chars=300), *copied])
        results.append(
            boilerplate.strip("pirate.test", page, f"http://pirate.test/{i}", library.text)
        )
    assert [dropped for _, dropped in results] == [0, 0, 1, 1, 1, 1]  # the stamp only
    for text, _ in results[2:]:
        assert stamp not in text and all(line in text for line in copied)
    # Checked twice in six pages: the stamp with the copied lines (found: remembered, never
    # candidates again), then the stamp alone, each set once.
    assert library.questions == 2
    library.version_now = 2  # the library changed: checked again, once
    for i in range(6, 8):
        page = "\n".join([stamp, prose(seed=60 + i, chars=300), *copied])
        assert (
            boilerplate.strip("pirate.test", page, f"http://pirate.test/{i}", library.text)[1] == 1
        )
    assert library.questions == 3


def test_pipeline_keeps_a_repeated_master_passage_and_still_matches_it(runtime):
    master = MasterDocument("书/0001", "书", "第一章", prose(seed=70, chars=1600))
    MasterLibrary.from_runtime(runtime).ingest([master])
    crawler = get_crawler(settings_dict={"TRACKER_BOILERPLATE_MIN_PAGES": 3})
    crawler._tracker_context = context = TrackerContext(runtime)
    pipeline = SiteBoilerplatePipeline.from_crawler(crawler)
    copied = "\n".join(line for line in master.text.splitlines()[:10] if len(line) <= 80)
    assert len(copied) > 300
    stamp = "本书由某某文学网独家首放欢迎收藏"
    for i in range(5):  # the same passage of the master repeated on every page of the site
        text = f"{stamp}\n{prose(seed=80 + i, chars=300)}\n{copied}"
        item = process(
            pipeline,
            PageItem(url=f"http://127.0.0.1:9/p/{i}.html", text=text, normalized=normalize(text)),
        )
    assert normalize(stamp).chars not in item["normalized"].chars  # the stamp is dropped
    assert normalize(copied).chars in item["normalized"].chars  # the copied passage is not
    matches = context.detector.check_normalized(item["normalized"], 0)
    assert [m.doc_id for m in matches] == [master.doc_id]


def test_the_stage_warms_up_without_the_segmenter():
    """The crawl process loads rjieba only when a page drops a line the ad patterns left
    (:func:`drop_lines`), not as the stage warms up: a pirate site's pages never need it."""
    script = (
        "import sys\n"
        "import pipelines\n"
        "from pipelines.boilerplate import SiteBoilerplatePipeline\n"
        "pipelines.BatchedStage.warm_up = lambda self: None  # no servers here\n"
        "SiteBoilerplatePipeline.warm_up(object.__new__(SiteBoilerplatePipeline))\n"
        "assert 'rjieba' not in sys.modules and 'jieba' not in sys.modules, 'segmenter'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
