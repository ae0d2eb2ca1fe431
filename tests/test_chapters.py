"""Chapter splitting: the heading forms of novels, collections and newspaper files, the work's
title from the file, and warnings about what looks wrong."""

from __future__ import annotations

from tracker.text.chapters import (
    CHAPTER_NUMBER,
    OUTLIER_CHARS,
    heading_offsets,
    split_book,
    split_chapters,
)

from .texts import prose


def body(seed: int, chars: int = 600) -> str:
    return prose(seed=seed, chars=chars)


def test_volumes_sections_and_named_parts_with_their_volume_in_the_title():
    text = (
        f"《风起》\n作者：某人\n\n卷一 少年\n第一章 出门\n{body(1)}\n第二节 路上\n{body(2)}\n"
        f"卷二 江湖\n第一章 入城\n{body(3)}\n番外 旧事\n{body(4)}\n"
    )
    book = split_book(text)
    assert book.title == "风起"
    assert [c.title for c in book.chapters] == [
        "卷一 少年 · 第一章 出门",
        "卷一 少年 · 第二节 路上",
        "卷二 江湖 · 第一章 入城",
        "番外 旧事",
    ]
    assert book.chapters[2].text == body(3) and book.warnings == []


def test_numbered_sections_count_up_and_list_items_stay_in_their_chapter():
    essay = f"一、缘起\n{body(5)}\n二、经过\n{body(6)}\n三、结果\n{body(7)}\n"
    assert [c.title for c in split_chapters(essay)] == ["一、缘起", "二、经过", "三、结果"]
    # Short items of a list are not sections...
    listing = f"{body(8)}\n一、甲\n二、乙\n三、丙\n{body(9, 100)}"
    assert len(split_chapters(listing)) == 1
    # ...nor are numbered lines inside a book with numbered chapters, nor sentences.
    novel = (
        f"第一章 开始\n{body(10)}\n一、要紧的事\n{body(11)}\n第二章 后来\n二、再说。\n{body(12)}"
    )
    assert [c.title for c in split_chapters(novel)] == ["第一章 开始", "第二章 后来"]


def test_a_collection_of_titled_stories_underlined_by_dashes():
    stories = [("自序", 13), ("故乡⑴", 14), ("阿Q正传⑴", 15), ("一件小事", 16)]
    parts = ["_分节阅读_1\n\n迅：呐喊\n"]
    for title, seed in stories:
        parts.append(f"\n {title} \n------------------\n")
        if title.startswith("阿Q"):
            parts.append(f"第一章 序\n{body(seed)}\n第二章 优胜记略\n{body(seed + 50)}\n")
        else:
            parts.append(f"{body(seed)}\n")
    book = split_book("".join(parts))
    assert [c.title for c in book.chapters] == [
        "自序",
        "故乡",
        "阿Q正传 · 第一章 序",
        "阿Q正传 · 第二章 优胜记略",
        "一件小事",
    ]
    assert book.chapters[1].text == body(14)
    # A separator line right under text (an ad, 本章完) is not a title.
    assert len(split_chapters(f"{body(17)}\n本章完\n--------\n{body(18)}")) == 1


def test_a_newspaper_file_splits_into_its_dated_articles():
    articles = [
        ("北京举行新年音乐会", "本报北京１２月３１日讯记者报道：", 20),
        ("李鹏在北京考察企业", "新华社北京十二月三十一日电（记者某某）", 21),
        ("外交部发言人谈明年外交工作", "据新华社北京１月５日电", 22),
    ]
    lines = []
    for title, dateline, seed in articles:
        lines += [title, "（附图片１张）", dateline + body(seed, 200).replace("\n", "")]
        lines += body(seed + 10, 400).split("\n")
    lines.insert(3, "（新华社记者某某摄）")  # a photo credit inside the first article
    book = split_book("\n".join(lines))
    assert [c.title for c in book.chapters] == [title for title, _, _ in articles]
    assert book.chapters[1].text.startswith("新华社北京十二月三十一日电")
    assert "（新华社记者某某摄）" in book.chapters[0].text


def test_warnings_for_one_long_chapter_and_a_chapter_far_longer_than_the_rest():
    long = body(30, OUTLIER_CHARS + 2000)
    [warning] = split_book(long).warnings
    assert warning.startswith("no chapter headings found: stored as one document of")
    assert split_book(body(31, 3000)).warnings == []  # a short article is one document
    chapters = "".join(f"第{i}章\n{body(40 + i, 2000)}\n" for i in range(1, 6))
    [warning] = split_book(chapters + f"第6章\n{long}\n").warnings
    assert warning.startswith("chapter 6 (第6章) is") and "a heading may be missing" in warning


def test_title_lines_and_the_shared_chapter_number_pattern():
    assert split_book(f"书名：红楼梦\n第一回 开卷\n{body(50)}").title == "红楼梦"
    # A 《…》 inside prose is not the book's title.
    assert split_book(f"他读《水浒传》读了一夜，{body(51)}\n第一回\n{body(52)}").title is None
    for page_title in ("第12章 风雪_某书_笔趣阁", "第 三 节 归来", "第壹佰章"):
        assert CHAPTER_NUMBER.search(page_title)
    assert not CHAPTER_NUMBER.search("第三者插足")


def test_heading_offsets_cover_every_heading_form():
    text = f"自序\n------\n{body(60)}\n\n故事\n------\n第一章 开始\n{body(61)}\n第二章\n{body(62)}"
    offsets = heading_offsets(text)
    assert [text[o : o + 2] for o in offsets] == ["自序", "故事", "第一", "第二"]
