"""The queries discovery builds: titles with pirate words, chapter titles, and phrases rare in
Chinese that no master of another work holds."""

from __future__ import annotations

from tracker.discovery.queries import (
    PIRATE_WORDS,
    chapter_query,
    distinctive_phrases,
    phrases,
    rarity,
    title_queries,
)
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.stores.masters import MasterEntry, MasterStore

RARE = "麒麟踏碎琉璃盏，饕餮吞尽玛瑙杯"


def test_titles_and_chapters():
    assert [q.text for q in title_queries("星海归途")] == [f"星海归途 {w}" for w in PIRATE_WORDS]
    entry = MasterEntry("星海归途/0003", "星海归途", "第3章  夜航", 100, None, None)
    query = chapter_query("星海归途", entry)
    assert query.text == "星海归途 第3章 夜航" and query.kind == "chapter"


def test_phrases_are_whole_clauses_and_rare_words_score_higher():
    text = "他说，我们走吧。" + RARE + "，天色已晚。"
    found = phrases(text)
    assert RARE in found and all(12 <= sum(c.isalnum() for c in p) <= 30 for p in found)
    assert rarity(RARE) > rarity("我们今天也是一样的，他们说的是这个")


def test_a_phrase_another_work_holds_is_not_chosen(runtime):
    # Everyday sentences around the rare one, so that it is the rarest of each text.
    common = "一二三四五六七八九十"
    own = "".join(f"第{n}天他们又说起这件事，大家都笑了。" for n in common) + RARE + "。"
    # A short master of another work quoting it (an epigraph, a news item): shorter than one
    # winnowing window, its anchor is the minimum of its shingles, all of them the phrase's.
    other = RARE + "。"
    library = MasterLibrary.from_runtime(runtime)
    library.ingest([MasterDocument("甲/0001", "甲", "第1章", own)])
    masters = MasterStore(runtime.db)
    alone = distinctive_phrases({"甲/0001": own}, "甲", library.index, masters)
    assert RARE in alone["甲/0001"]  # the rarest phrase, while only this work holds it
    library.ingest([MasterDocument("乙/0001", "乙", "第1章", other)])
    shared = distinctive_phrases({"甲/0001": own}, "甲", library.index, masters)
    assert shared["甲/0001"] and RARE not in shared["甲/0001"]
    assert shared["甲/0001"] in own
