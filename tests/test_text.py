"""Chapter splitting, encodings and normalisation."""

from __future__ import annotations

import random

import numpy as np
import opencc
import pytest

from tracker.text.chapters import split_chapters
from tracker.text.encoding import DecodeError, decode_bytes
from tracker.text.normalize import boilerplate_mask, normalize, segment_pinyin

from .texts import prose

BOOK = """红楼梦
曹雪芹 著

第一回  甄士隐梦幻识通灵　贾雨村风尘怀闺秀
此开卷第一回也。作者自云：因曾历过一番梦幻之后，故将真事隐去。

第12章 风雪
雪下得正紧。第十二章并不在行首，所以不是标题。

楔子
楔子的正文在这里。
尾声
全书完。
"""


def test_split_chapters_on_headings():
    chapters = split_chapters(BOOK)
    assert [c.title for c in chapters] == [
        "第一回 甄士隐梦幻识通灵 贾雨村风尘怀闺秀",
        "第12章 风雪",
        "楔子",
        "尾声",
    ]
    assert [c.number for c in chapters] == [1, 2, 3, 4]
    assert chapters[0].text.startswith("此开卷第一回也")
    assert "第十二章并不在行首" in chapters[1].text
    assert chapters[3].text == "全书完。"


def test_long_preface_becomes_its_own_chapter():
    preface = "序文" * 60
    chapters = split_chapters(f"{preface}\n第一章 开始\n正文。\n")
    assert [c.title for c in chapters] == ["前言", "第一章 开始"]
    assert chapters[0].text == preface


def test_text_without_headings_is_one_chapter():
    chapters = split_chapters("只是一篇文章。\n第二段。")
    assert len(chapters) == 1
    assert chapters[0].title == "只是一篇文章。"


def test_empty_text_has_no_chapter():
    assert split_chapters("  \n\n ") == []


@pytest.mark.parametrize("encoding", ["utf-8", "gb18030", "gbk", "big5", "utf-16", "utf-8-sig"])
def test_decode_chinese_encodings(encoding):
    text = BOOK if encoding != "big5" else opencc.OpenCC("s2tw").convert(BOOK)
    decoded, _ = decode_bytes(text.encode(encoding))
    assert decoded.lstrip("\ufeff") == text


def test_decode_uses_declared_charset():
    data = "繁體中文的網頁內容，說明編碼在標頭裡。".encode("big5")
    assert decode_bytes(data, declared="big5")[0] == "繁體中文的網頁內容，說明編碼在標頭裡。"


def test_binary_data_is_rejected():
    with pytest.raises(DecodeError, match="binary"):
        decode_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20)


def test_normalize_folds_traditional_width_punctuation_and_zero_width():
    simplified = normalize("电子书，“很好”！ABC１２３")
    noisy = normalize("電\u200b子　書,「很 好」!ａｂｃ123")
    assert simplified.chars == noisy.chars == "电子书很好abc123"
    assert (simplified.tokens == noisy.tokens).all()


def test_normalize_keeps_source_offsets():
    source = "【廣告】他說：你好嗎？"
    n = normalize(source)
    assert n.chars == "广告他说你好吗"
    start, end = n.source_span(2, 4)
    assert source[start:end] == "他說"


def test_homophones_share_tokens_and_pinyin_letters_parse():
    assert (normalize("电子书").tokens == normalize("电zi书").tokens).all()
    assert (normalize("时候").tokens == normalize("是后").tokens).all()
    assert segment_pinyin("dianzishu") == ("dian", "zi", "shu")
    assert segment_pinyin("qwrtx") is None


def test_pinyin_runs_become_syllables_that_quote_their_letters():
    source = "读电 ZiShu，看阿Q与qwrt的xiaoshuo完"
    n = normalize(source)
    assert (n.tokens == normalize("读电子书看阿Q与qwrt的小说完").tokens).all()
    spans = zip(n.token_start.tolist(), n.token_end.tolist(), strict=True)
    quoted = [source[start:end] for start, end in spans]
    expected = ["读", "电", "Zi", "Shu", "看", "阿", "Q", "与", *"qwrt", "的", "xiao", "shuo", "完"]
    assert quoted == expected


def test_boilerplate_lines_are_dropped():
    text = "正文第一段。\n最快更新红楼梦最新章节，请记住本站域名 www.biquge.com\n正文第二段。"
    assert normalize(text).chars == "正文第一段正文第二段"
    mask = boilerplate_mask(text)
    assert mask.sum() > 20 and not mask[:6].any()


def test_inline_bracketed_ads_are_dropped():
    assert normalize("他走了（天才一秒记住本站地址）进来。").chars == "他走了进来"
    assert normalize("文章（原文）保留。").chars == "文章原文保留"


def test_text_cut_mid_character_still_decodes():
    data = ("第一章 开始\n" + "正文内容，" * 200).encode("utf-8")[:-2]  # a cut final character
    text, encoding = decode_bytes(data)
    assert encoding == "utf-8" and text.startswith("第一章 开始") and "\ufffd" not in text
    assert text.endswith("正文内容")  # the half character is dropped
    gbk = ("正文内容，" * 200).encode("gb18030") + b"\xff"
    assert decode_bytes(gbk)[0].startswith("正文内容")
    stray = ("正文内容，" * 200).encode("utf-8")
    stray = stray[:300] + b"\xff" + stray[300:]  # one bad byte inside: replaced, not fatal
    text, encoding = decode_bytes(stray)
    assert encoding == "utf-8" and text.count("\ufffd") == 1
    with pytest.raises(DecodeError, match="undecodable"):
        decode_bytes(bytes(range(128, 256)) * 20)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_text_not_binary(encoding):
    text = "第一章 开始\n正文内容，ABC 123。\n" * 50
    assert decode_bytes(text.encode(encoding)) == (text, encoding)


def test_valid_utf8_wins_over_a_declared_charset_and_declarations_go_in_order():
    text = "简体中文：风雪夜归人" * 10
    assert decode_bytes(text.encode("utf-8"), declared="gbk") == (text, "utf-8")
    big5 = "正體中文：風雪夜歸人" * 10
    # A Latin-1 declaration (a server default) is passed over for the next one.
    assert decode_bytes(big5.encode("big5"), declared=["iso-8859-1", "big5"]) == (big5, "big5")


def test_executables_are_binary_even_with_nul_bytes_on_one_side():
    import sys

    with open(sys.executable, "rb") as fh:
        data = fh.read(65536)
    with pytest.raises(DecodeError, match="binary"):
        decode_bytes(data)


def _random_line_mask(text: str, rng: random.Random, share: float) -> np.ndarray:
    mask = np.zeros(len(text), dtype=bool)
    position = 0
    for line in text.split("\n"):
        if line.strip() and rng.random() < share:
            mask[position : position + len(line)] = True
        position += len(line) + 1
    return mask


def test_dropping_lines_from_a_normalized_text_is_normalizing_without_them():
    rng = random.Random(5)
    lines = [
        *prose(seed=40, chars=1500).split("。"),
        "最快更新红楼梦最新章节，请记住本站域名 www.biquge.la",  # left out by the ad patterns
        "他打开电zi书",  # a pinyin run inside a line
        "ABC公司",  # letters that are no pinyin
        "shu",  # a pinyin run that is a whole line
        "Ｘ",  # a stray letter, full-width
        "z",
    ]
    checked = {"exact": 0, "again": 0}
    for _ in range(60):
        text = "\n".join(rng.sample(lines, k=min(len(lines), 12)))
        mask = _random_line_mask(text, rng, 0.3)
        normalized = normalize(text)
        expected = normalize(text, drop=mask)
        kept = normalized.without(mask)
        if kept is None:  # runs of letters that dropping may join or shorten
            checked["again"] += 1
            continue
        checked["exact"] += 1
        assert kept.chars == expected.chars
        for name in ("char_pos", "tokens", "token_start", "token_end"):
            assert getattr(kept, name).tolist() == getattr(expected, name).tolist(), name
    assert checked["exact"] >= 20 and checked["again"] >= 5, checked


def test_dropping_only_ad_lines_leaves_the_normalized_text_as_it_is():
    ad = "天才一秒记住本站地址：www.biquge.la"
    text = f"{prose(seed=41, chars=200)}\n{ad}\n{prose(seed=42, chars=200)}"
    mask = np.zeros(len(text), dtype=bool)
    start = text.index(ad)
    mask[start : start + len(ad)] = True
    normalized = normalize(text)
    assert normalized.without(mask) is normalized


def test_dropping_a_line_between_two_letter_runs_folds_the_text_again():
    text = "电子dian\n这是中间的一行字\nzi书"
    mask = np.zeros(len(text), dtype=bool)
    mask[text.index("这") : text.index("字") + 1] = True
    assert normalize(text).without(mask) is None  # "dian" and "zi" would join
    assert normalize(text, drop=mask).chars == "电子dianzi书"


def test_line_slices_cover_each_line_that_keeps_characters():
    text = "第一行，字。\n\n  \n第二行\n最快更新请记住本站域名 www.biquge.la\n末行"
    normalized = normalize(text)
    assert normalized.lines() == ["第一行字", "第二行", "末行"]
    assert "".join(normalized.lines()) == normalized.chars
