"""Rewritten copies (洗稿, issue 39): canonical words, sentence keys and alignment, and the
detector finding rewrites made with tools it never saw (tests/rewrites.py: hand-made tables,
the held-out one never tuned on) on every path (check, crawl, the CLI), while innocent texts,
independent reports of the same event and short quotations stay clean and verbatim copies
keep their evidence.

The thresholds were set on rewrites of seeds 0–24 made with the dev tool; these tests use
seeds from 500 and the held-out tool (:data:`tests.rewrites.HELD`), plus rewrites written by
hand (:data:`BY_HAND`) and the hand-written development set (:mod:`tests.rewrites_hand`: the
passage rule and the key sampling of short masters were set on it)."""

from __future__ import annotations

import json
import math
import random
import uuid
from dataclasses import replace

import numpy as np
import pytest

from tests import disguise, rewrites_hand
from tests import rewrites as r
from tests.texts import ARTICLE, OTHER_ARTICLE
from tracker.cli import main
from tracker.config import Settings
from tracker.fingerprints.document import VERSION, DocumentFingerprint, fingerprint
from tracker.fingerprints.lexicon import chinese_number, lexicon
from tracker.fingerprints.sentences import master_keys, query_keys, sentences_of
from tracker.index.master_index import MasterIndex
from tracker.matching import rewrite
from tracker.matching.library import MasterLibrary
from tracker.matching.rewrite import (
    EXTEND_COMMON_DICE,
    EXTEND_COSINE,
    EXTEND_DICE,
    EXTEND_MIN_SHARED,
    MIN_PARTIAL_SHARE,
    MIN_PASSAGE_SHARE,
    MIN_WORDING,
    MOST_OF_THE_MASTER,
    align_sentences,
    is_partial_passage,
    is_rewrite,
)
from tracker.matching.rewrites import ranked
from tracker.model import MasterDocument
from tracker.text.normalize import normalize

RECALL = 0.95

# Rewrites written by hand for this test (not by any table): the master, then its rewrite.
BY_HAND = (
    (
        "本报青川县讯 3月12日凌晨，青川县白河镇突降暴雨，镇东的清水河水位在两个小时内上涨了"
        "一点八米。镇政府立刻组织干部挨家挨户通知，把沿河的四百三十名村民转移到镇中学。"
        "中午时分，上游的松岭水库开闸泄洪，河水漫过了通往县城的公路，两座木桥被冲垮。"
        "县应急管理局派出的救援队带着冲锋舟赶到，把被困在果园里的十一名老人接了出来。"
        "据初步统计，暴雨造成农作物受灾二千六百亩，直接经济损失约三百八十万元。"
        "县气象台预计，未来三天青川县仍有大到暴雨，请群众不要靠近河道。",
        "据当地媒体报道，青川县白河镇在3月12日凌晨遭遇了一场暴雨，"
        "镇东面清水河的水位两小时之内涨了一点八米之多。"
        "镇里马上动员干部逐户上门提醒，430名住在河边的村民被安置到了镇中学里。"
        "到了中午，上游松岭水库开始开闸放水，河水冲上了去县城的公路。两座木桥也被大水冲毁了。"
        "县应急管理局的救援人员驾着冲锋舟赶来，将困在果园中的11位老人救出。"
        "初步统计显示，这场暴雨让二千六百亩庄稼受灾，直接经济损失大约三百八十万元。"
        "气象部门预报，接下来三天青川县还会有大到暴雨，提醒群众远离河道。",
    ),
    (
        "临江市第二届青少年科技节昨天在市科技馆开幕，全市八十六所中小学的一千二百多名学生参加。"
        "开幕式上，市教育局副局长周明华为获得发明奖的十名学生颁发了证书。"
        "本届科技节设有机器人、航模和科学实验三个比赛项目，比赛将持续五天。"
        "获奖学生陈晓宇说，他设计的自动浇花装置是受到奶奶种花的启发。"
        "主办方表示，希望通过科技节让更多孩子爱上科学，动手解决身边的问题。"
        "科技节期间，科技馆对全市中小学生免费开放。",
        "昨日，临江市科技馆迎来了第二届青少年科技节的开幕，"
        "来自八十六所中小学校的学生共一千二百余人到场参与。"
        "市教育局副局长周明华在开幕仪式上，为十名发明奖得主颁发证书。"
        "这一届科技节一共设置了机器人、航模、科学实验等三项比赛，赛程为期五天。"
        "得奖的学生陈晓宇介绍，奶奶平时种花给了他灵感，于是他设计出了自动浇花装置。"
        "主办单位称，举办科技节的目的是让更多的孩子喜爱科学，亲自动手去处理身边的难题。"
        "在科技节举办期间，全市的中小学生都可以免费进入科技馆参观。",
    ),
    (
        "林风推开破庙的木门，一股冷风夹着雪花扑面而来。他紧了紧身上的旧棉袍，"
        "回头看了一眼躺在草堆上的师父。师父的脸色比昨天更加苍白，呼吸也越来越微弱。"
        "林风咬了咬牙，决定冒雪下山，去三十里外的青石镇请大夫。"
        "山路又陡又滑，他摔了好几跤，膝盖磕破了也顾不上疼。"
        "天黑的时候，他终于看见了青石镇的灯火，心里一下子踏实了许多。"
        "镇口的药铺还没有关门，白胡子的老大夫听完他的话，二话不说就背起了药箱。",
        "林风把破庙的木门推开，寒风裹着雪片迎面吹来。他把身上那件旧棉袍裹紧了些，"
        "转身望了望草堆上躺着的师父。和昨日相比，师父的面色愈发惨白，气息也一点点弱了下去。"
        "林风把牙一咬，下定决心顶着大雪下山，到三十里以外的青石镇去请郎中。"
        "山道陡峭湿滑，他跌倒了好几回，膝头都磕破了，却根本顾不上疼痛。"
        "直到天色暗下来，他总算望见了青石镇的灯光，心中顿时安稳了不少。"
        "镇子口那家药铺尚未打烊，一位白须老郎中听他讲完，二话没说便背上了药箱。",
    ),
    (
        "红星机械厂新建的智能车间昨天正式投产，总投资一亿二千万元。车间引进了二十四台工业机器人，"
        "生产效率比原来提高了百分之四十。厂长吴建国介绍，新车间主要生产拖拉机的变速箱，"
        "每年可以生产三万台。为了让老工人适应新设备，厂里专门组织了为期两个月的培训。"
        "五十二岁的钳工郑师傅说，刚开始他担心自己学不会，现在已经能熟练操作机器人了。"
        "吴建国表示，明年厂里还要再建一个同样规模的车间。",
        "投资达一亿二千万元的红星机械厂智能车间于昨日投入生产。这个车间配备了24台工业机器人，"
        "和过去相比生产效率提升了四成。据厂长吴建国讲，新车间的主要产品是拖拉机变速箱，"
        "年产量能达到三万台。厂方特意安排了两个月的培训，帮助老职工熟悉新的设备。"
        "今年52岁的钳工郑师傅坦言，起初很怕自己学不会，如今操作机器人已经得心应手。"
        "吴建国透露，厂里计划明年再兴建一座规模相同的车间。",
    ),
)


# ------------------------------------------------------------------------------ units


def test_synonyms_share_a_code_function_words_drop_and_numbers_fold():
    lex = lexicon()
    assert lex.canon("返回").code == lex.canon("回到").code  # one Cilin group
    assert lex.canon("工人").code == lex.canon("工友").code
    assert lex.canon("返回").code != lex.canon("工人").code
    for function_word in ("但是", "然而", "的", "非常", "表示", "据"):
        assert lex.canon(function_word) is None
    assert chinese_number("三百二十") == 320 and chinese_number("二〇二四") == 2024
    assert chinese_number("一万二千") == 12000 and chinese_number("二亿三千万") == 230_000_000
    assert chinese_number("一万亿") == 10**12 and chinese_number("一百零五") == 105
    a = sentences_of(normalize("三百二十名工人返回工厂。"))
    b = sentences_of(normalize("320名工友回到工厂。"))
    assert set(a.units[0].codes) == set(b.units[0].codes)
    assert lex.canon("北京").anchor and not lex.canon("工人").anchor


def test_a_decimal_point_keeps_the_value_of_its_number():
    """Folding drops punctuation, the decimal point with it: 1.9万吨 was read as 19万吨."""
    with_points = sentences_of(normalize("全市稻谷总产量达1.9万吨，销售额2.3亿元，增长3．5%。"))
    in_words = sentences_of(normalize("全市稻谷总产量达一万九千吨，销售额二亿三千万元，增长3.5%。"))
    ten_times = sentences_of(normalize("全市稻谷总产量达19万吨，销售额23亿元，增长35%。"))
    codes = set(with_points.units[0].codes)
    assert codes == set(in_words.units[0].codes)
    assert codes != set(ten_times.units[0].codes)
    assert "1.9万吨" in with_points.units[0].words and "2.3亿元" in with_points.units[0].words
    # a dot with no digit on one side is no decimal point
    for text in ("共有19.万吨", "共有19万.吨", "共有.19万吨"):
        assert sentences_of(normalize(text)).units[0].words == ("共有", "19万吨"), text


def test_units_are_sentences_and_long_ones_are_cut_at_clauses():
    text = normalize(
        "他走进森林。她看见老虎！\n"
        "第二段很长很长，讲述了一个人从南方的小城出发，一路向北走过许多地方，"
        "看见了许多从来没有见过的风景和人物，最后在北方的大城市住了下来。"
    )
    units = sentences_of(text).units
    chars = [text.chars[u.start : u.end] for u in units]
    assert chars[:2] == ["他走进森林", "她看见老虎"]
    assert len(units) >= 4 and all(u.chars <= 60 for u in units)


def test_texts_without_sentences_have_no_units():
    for text in ("", "，。！", "的了吗"):
        assert sentences_of(normalize(text)).units == []


def test_keys_are_order_free_and_survive_swaps():
    master = sentences_of(normalize("李明华在临江市见到了三百二十名工人，大家返回了工厂。"))
    page = sentences_of(normalize("大家回到工厂，320名工友在临江市见到了李明华。"))
    assert set(master_keys(master).tolist()) <= set(query_keys(page)[0].tolist())


def test_alignment_proves_a_rewrite_with_split_and_merged_sentences():
    master = r.chapter(520)
    copy = r.split_merge(r.swap(master, random.Random(1), r.HELD, 0.8), random.Random(2))
    alignment = align_sentences(sentences_of(normalize(copy)), sentences_of(normalize(master)))
    assert is_rewrite(alignment) and alignment.coverage > 0.7
    spans = {p.page_last - p.page_first for p in alignment.pairs}
    spans |= {p.master_last - p.master_first for p in alignment.pairs}
    assert 1 in spans  # a split or merged sentence aligned with two


# The shape of the one innocent text the development set flagged (bench.rewrites): a short
# article of a newspaper feature (its chronology and one paragraph of figures), and the
# feature's other half, which repeats that paragraph and tells of the same work in the
# same words. Written for this test, on another subject.
FEATURE_MASTER = (
    "１９９６年１月，省政府提出要把城市供水管网改造作为民生工程来抓。\n"
    "１９９７年６月，省政府发出《关于加快供水管网改造的通知》。７月，省政府召开了全省城市供水工作会议，贯彻文件精神，部署管网改造工作。\n"
    "从用水看变化\n"
    "三年来，全省初步形成了以水厂为龙头、管网为骨架、社区泵站为补充的城市供水体系。\n"
    "到１９９７年底，全省新铺设供水管道２３００公里。老城区的漏水率从百分之二十八降到百分之十一，居民家中的水压明显提高，三十多万户告别了夜里接水的日子。"
)
FEATURE_PAGE = (
    "供水十年\n"
    "省委、省政府历来高度重视城市供水工作，把它作为关系千家万户的大事来抓。省政府多次召开专门会议研究和部署供水工作，出台了一系列扶持管网建设的政策和措施。\n"
    "经过几年的实践，供水工程建设的思路逐步清晰，内涵不断充实，成为各级政府的一项常规性工作。\n"
    "在资金投入方面，形成了财政、企业和社会多渠道的投资格局。十年间，全省共建设水厂四十七座，日供水能力大幅提高。\n"
    "在管网建设方面，全省初步形成了以水厂为龙头、管网为骨架、社区泵站为补充的城市供水体系。到１９９７年底，全省新铺设供水管道２３００公里。老城区的漏水率从百分之二十八降到百分之十一，居民家中的水压明显提高。\n"
    "在水质管理方面，各地建立了水质监测中心，定期向社会公布检测结果，群众喝上了放心水。\n"
    "在节约用水方面，各地推行阶梯水价，工业用水的重复利用率逐年上升，节水器具进入了千家万户。\n"
    "在服务群众方面，供水企业开通了二十四小时服务热线，抢修人员接到报修后一小时内赶到现场。\n"
    "在农村供水方面，各地因地制宜修建集中供水站，一百多万农民喝上了自来水，告别了挑水吃的历史。\n"
    "在人才培养方面，省里每年选派一批技术骨干到外地水厂学习，培养了一支懂管理、会维修的职工队伍。\n"
    "在应急保障方面，各市制定了停水应急预案，储备了抢修物资，遇到干旱和管道爆裂也能保证居民基本用水。\n"
    "展望未来，供水行业将继续深化改革，提高服务水平，为经济社会发展提供可靠保障。"
)


def test_a_long_page_sharing_a_paragraph_with_a_short_master_is_no_rewrite():
    master = sentences_of(normalize(FEATURE_MASTER))
    alignment = align_sentences(sentences_of(normalize(FEATURE_PAGE)), master)
    # the shared paragraph and a loose pair on the same subject are most of the short master
    assert alignment.coverage >= 0.5 and len(alignment.pairs) >= 4
    # but a small share of the page: no rewrite
    assert alignment.page_share < 0.3
    assert not is_rewrite(alignment)
    for seed in range(3):  # while the master rewritten is one
        copy = r.rewrite(FEATURE_MASTER, 7800 + seed, r.HELD, "no8")
        assert is_rewrite(align_sentences(sentences_of(normalize(copy)), master))


def test_a_rewrite_keeps_more_of_the_masters_wording_than_its_facts():
    master, copy = BY_HAND[1]
    units = sentences_of(normalize(master))
    alignment = align_sentences(sentences_of(normalize(copy)), units)
    assert is_rewrite(alignment) and MIN_WORDING <= alignment.wording < 1
    assert align_sentences(units, units).wording == 1.0
    # the same pairs with too little of the master's words besides its names and numbers
    assert not is_rewrite(replace(alignment, wording=MIN_WORDING - 0.01))


@pytest.mark.parametrize(("chapter", "draw"), [("04", 1), ("07", 4)])
def test_a_short_passage_rewritten_by_hand_inside_other_text_is_a_rewrite(chapter, draw):
    """30 % of a chapter of the hand set rewritten by hand, between two other texts: its
    heaviest rewritten sentences stay unaligned, so the passage aligns less than a quarter of
    the master (``MIN_PARTIAL_SHARE``), and is proved as one passage from
    ``MIN_PASSAGE_SHARE``; the same pairs covering less are not."""
    k = list(rewrites_hand.chapters()).index(chapter)
    item, wrap = rewrites_hand.chapters()[chapter], rewrites_hand.fillers()
    inner = rewrites_hand.window(item["rewrite"], 0.3, random.Random(1000 * draw + k))
    page = f"{wrap[(k + draw) % len(wrap)]}\n{inner}\n{wrap[(k + draw + 2) % len(wrap)]}"
    alignment = align_sentences(
        sentences_of(normalize(page)), sentences_of(normalize(item["master"]))
    )
    assert MIN_PASSAGE_SHARE <= alignment.coverage < MIN_PARTIAL_SHARE
    assert is_rewrite(alignment), (alignment.passage_pairs, alignment.passage_chars)
    assert not is_rewrite(replace(alignment, coverage=MIN_PASSAGE_SHARE - 0.01))


def _hand_window(chapter: str, draw: int, share: float) -> str:
    """A window of ``share`` of a hand-set chapter's hand rewrite between two other texts, as
    ``bench.rewrites_diagnose`` draws them."""
    k = list(rewrites_hand.chapters()).index(chapter)
    item, wrap = rewrites_hand.chapters()[chapter], rewrites_hand.fillers()
    inner = rewrites_hand.window(item["rewrite"], share, random.Random(1000 * draw + k))
    return f"{wrap[(k + draw) % len(wrap)]}\n{inner}\n{wrap[(k + draw + 2) % len(wrap)]}"


def _without_gap_pairs(monkeypatch) -> None:
    """The aligner as before pairs between two pairs: no lower thresholds than extension's."""
    monkeypatch.setattr(rewrite, "GAP_COSINE", EXTEND_COSINE)
    monkeypatch.setattr(rewrite, "GAP_DICE", EXTEND_DICE)
    monkeypatch.setattr(rewrite, "GAP_COMMON_DICE", EXTEND_COMMON_DICE)
    monkeypatch.setattr(rewrite, "GAP_MIN_SHARED", EXTEND_MIN_SHARED)


def test_a_sentence_between_two_aligned_pairs_is_aligned_at_the_gap_thresholds(monkeypatch):
    """Chapter 01 of the hand set: the rewriter's 随后七八条黑衣汉子沿着绳子溜下崖来… keeps
    too few of 紧接着七八个黑衣人顺着绳索滑了下来…'s words to pass the extension thresholds
    (its Dice without anchors is 0.27), but it sits between two aligned pairs in the same
    place on both sides, which place it; a unit with no pair after it is not placed so."""
    item = rewrites_hand.chapters()["01"]
    page, master = (sentences_of(normalize(item[k])) for k in ("rewrite", "master"))
    assert normalize(item["rewrite"]).chars[page.starts[13] :].startswith("随后七八条黑衣汉子")

    def cells(among=None):
        return {(p.page_first, p.master_first) for p in align_sentences(page, master, among).pairs}

    assert {(12, 13), (13, 14), (14, 15)} <= cells()
    assert (13, 14) not in cells(np.arange(14))  # the pair after it not on the page
    _without_gap_pairs(monkeypatch)
    assert (12, 13) in cells() and (13, 14) not in cells()


def test_a_passage_rewritten_by_hand_is_proved_with_the_sentences_between_its_pairs(monkeypatch):
    """30 % of chapter 01 rewritten by hand between two other texts aligns five sentences in a
    row and one between two of them: a passage of ``MIN_PASSAGE_PAIRS`` (6) only with it."""
    units = sentences_of(normalize(_hand_window("01", 1, 0.3)))
    master = sentences_of(normalize(rewrites_hand.chapters()["01"]["master"]))
    alignment = align_sentences(units, master)
    assert is_partial_passage(alignment), (alignment.passage_pairs, alignment.passage_chars)
    _without_gap_pairs(monkeypatch)
    alignment = align_sentences(units, master)
    assert alignment.passage_pairs == 5 and not is_rewrite(alignment)


def _one_key_passage() -> rewrites_hand.Case:
    """40 % of a hand-set chapter rewritten by hand between two other texts, whose master the
    page names by one sentence key only (its rare words swapped by the hand that wrote it)."""
    [case] = [
        c
        for c in rewrites_hand.cases()
        if c.kind == "partial by hand" and c.expected == rewrites_hand.master_id("chapter", "02")
    ]
    return case


def test_a_master_named_by_one_sentence_key_is_a_candidate_only_if_the_verbatim_index_names_it():
    hits = {7: np.array([12]), 8: np.array([3, 9])}
    assert ranked(hits, set()) == [8]
    assert ranked(hits, set(), {7}) == [8, 7]  # one key and an anchor: two signals
    assert ranked({7: np.array([12])}, {7}, {7}) == []  # copied verbatim: nothing to rewrite


def test_a_master_named_by_one_sentence_key_is_found_only_as_a_partial_passage():
    case = _one_key_passage()
    master = rewrites_hand.chapters()["02"]["master"]
    alignment = align_sentences(sentences_of(normalize(case.text)), sentences_of(normalize(master)))
    assert is_partial_passage(alignment), (alignment.passage_pairs, alignment.coverage)
    # most of the master retold with one key left is another report of its facts
    assert is_rewrite(replace(alignment, coverage=MOST_OF_THE_MASTER))
    assert not is_partial_passage(replace(alignment, coverage=MOST_OF_THE_MASTER))


def test_a_passage_rewritten_by_hand_keeping_one_sentence_key_is_found(runtime):
    """The page names the chapter by one sentence key (two make a candidate alone) and by the
    verbatim stage's anchors: the two signals make it a candidate, and its passage a rewrite."""
    lib = MasterLibrary.from_runtime(runtime)
    lib.ingest(
        [MasterDocument(doc, "hand", doc, text) for doc, text in rewrites_hand.masters()]
        + [MasterDocument(f"book/{s}", "book", f"c{s}", r.chapter(s)) for s in CHAPTERS]
    )
    case = _one_key_passage()
    master = sentences_of(normalize(rewrites_hand.chapters()["02"]["master"]))
    page = sentences_of(normalize(case.text))
    keys, _ = query_keys(page)
    assert np.isin(keys, master_keys(master)).sum() == 1
    [matches] = lib.detector().check_many([case.text])
    assert [(m.doc_id, m.method) for m in matches] == [(case.expected, "rewrite")]


@pytest.mark.parametrize(("master", "copy"), BY_HAND)
def test_rewrites_written_by_hand_align(master, copy):
    alignment = align_sentences(sentences_of(normalize(copy)), sentences_of(normalize(master)))
    assert is_rewrite(alignment), (len(alignment.pairs), alignment.coverage)
    unrelated = BY_HAND[(BY_HAND.index((master, copy)) + 1) % len(BY_HAND)][1]
    other = align_sentences(sentences_of(normalize(unrelated)), sentences_of(normalize(master)))
    assert not is_rewrite(other)


def test_the_sentence_keys_are_indexed_and_removed(storage):
    index = MasterIndex(storage)
    _, fp = fingerprint(r.chapter(530))
    assert len(fp.sentences) >= 10
    index.add([(7, fp)])
    page = sentences_of(normalize(r.rewrite(r.chapter(530), 1, r.HELD, "no8")))
    [hits] = index.sentence_candidates([query_keys(page)])
    assert len(hits.get(7, [])) >= 2
    index.remove(7, fp)
    assert index.sentence_candidates([query_keys(page)]) == [{}]


def test_fingerprints_keep_their_sentence_keys_in_mongodb():
    _, fp = fingerprint(r.news(531))
    back = DocumentFingerprint.from_mongo(fp.to_mongo())
    assert np.array_equal(back.sentences, fp.sentences) and len(fp.sentences)


def test_masters_fingerprinted_by_an_older_version_are_given_the_new_sentence_keys(runtime):
    """Version 7 read 1.9万吨 as 19万吨: rebuilding the index recomputes such a master's
    sentence keys from its text, and files the new ones."""
    master = (
        rewrites_hand.news()["01"]["master"]
        .replace("一万九千吨", "1.9万吨")
        .replace("二亿三千万元", "2.3亿元")
    )
    _, new = fingerprint(master)
    _, old = fingerprint(master.replace("1.9万", "19万").replace("2.3亿", "23亿"))
    assert set(new.sentences.tolist()) != set(old.sentences.tolist())
    lib = MasterLibrary.from_runtime(runtime)
    lib.ingest([MasterDocument("news/01", "news", "n01", master)])
    masters = lib.store.masters
    masters.update_one({"_id": "news/01"}, {"$set": {**old.to_mongo(), "version": VERSION - 1}})
    lib.rebuild_index()
    stored = masters.find_one({"_id": "news/01"})
    assert stored["version"] == VERSION
    assert np.array_equal(DocumentFingerprint.from_mongo(stored).sentences, new.sentences)
    n = stored["n"]
    [hits] = lib.index.sentence_candidates([query_keys(sentences_of(normalize(master)))])
    assert len(hits[n]) == len(set(new.sentences.tolist()))


# ----------------------------------------------------------------------- the detector

NEWS = range(500, 516)
CHAPTERS = range(600, 610)


@pytest.fixture()
def library(runtime):
    lib = MasterLibrary.from_runtime(runtime)
    lib.ingest(
        [MasterDocument(f"news/{s}", "news", f"n{s}", r.news(s)) for s in NEWS]
        + [MasterDocument(f"book/{s}", "book", f"c{s}", r.chapter(s)) for s in CHAPTERS]
        + [
            MasterDocument(f"hand/{k}", "hand", f"h{k}", master)
            for k, (master, _) in enumerate(BY_HAND)
        ]
    )
    return lib


def _found(matches, doc_id: str) -> bool:
    return any(m.doc_id == doc_id for m in matches)


@pytest.mark.parametrize("strength", r.STRENGTHS)
def test_held_out_rewrites_are_found_at_every_strength(library, strength):
    """Every operation at once, made with the held-out tool; ≥ 95 % found, as rewrites
    (a light rewrite may keep enough runs to be found verbatim)."""
    detector = library.detector()
    cases = [(f"news/{s}", r.news(s)) for s in NEWS] + [
        (f"book/{s}", r.chapter(s)) for s in CHAPTERS
    ]
    copies = [r.rewrite(text, 7000 + k, r.HELD, strength) for k, (_, text) in enumerate(cases)]
    if strength in ("no13", "no8"):
        limit = 13 if strength == "no13" else 8
        assert all(
            r.longest_shared_run(c, t) < limit for c, (_, t) in zip(copies, cases, strict=True)
        )
    results = detector.check_many(copies)
    found = [_found(m, doc) for m, (doc, _) in zip(results, cases, strict=True)]
    assert sum(found) >= math.ceil(RECALL * len(cases)), found
    # no wrong ids
    assert all(m.doc_id == doc for ms, (doc, _) in zip(results, cases, strict=True) for m in ms)
    if strength == "no8":  # the verbatim detector finds some, across the fillers
        assert sum(m.method == "rewrite" for ms in results for m in ms) >= len(cases) // 4


@pytest.mark.parametrize("operation", r.OPERATIONS)
def test_each_operation_alone_is_found(library, operation):
    detector = library.detector()
    cases = [(f"news/{s}", r.news(s)) for s in NEWS[:8]] + [
        (f"book/{s}", r.chapter(s)) for s in CHAPTERS[:5]
    ]
    copies = [
        r.rewrite(text, 7100 + k, r.HELD, "no13", operation) for k, (_, text) in enumerate(cases)
    ]
    results = detector.check_many(copies)
    found = [_found(m, doc) for m, (doc, _) in zip(results, cases, strict=True)]
    assert sum(found) >= math.ceil(RECALL * len(cases)), found


def test_partial_rewrites_inside_unrelated_text_are_found(library):
    detector = library.detector()
    pages = []
    for k, s in enumerate(CHAPTERS):
        rng = random.Random(k)
        inner = r.part(r.rewrite(r.chapter(s), 7200 + k, r.HELD, "no8"), 0.4, rng)
        pages.append(r.embed(inner, r.chapter(9000 + k, 40), rng))
    results = detector.check_many(pages)
    assert all(
        [m.doc_id for m in ms] == [f"book/{s}"] for ms, s in zip(results, CHAPTERS, strict=True)
    ), [[m.doc_id for m in ms] for ms in results]


def test_a_rewrite_beside_a_verbatim_copy_is_found(library):
    """The sentences inside the verbatim copy are not looked up for rewrites; the rest are."""
    page = r.news(503) + "\n" + BY_HAND[1][1]
    [matches] = library.detector().check_many([page])
    methods = {m.doc_id: m.method for m in matches}
    assert set(methods) == {"news/503", "hand/1"}, methods
    assert methods["hand/1"] == "rewrite" and methods["news/503"] != "rewrite"


def test_rewrites_written_by_hand_are_found(library):
    results = library.detector().check_many([copy for _, copy in BY_HAND])
    assert [[m.doc_id for m in ms] for ms in results] == [[f"hand/{k}"] for k in range(4)]
    assert all(ms[0].method == "rewrite" for ms in results)


def test_innocent_texts_are_not_flagged(library):
    """Independent reports of the same events, rewritten too; other chapters with the same
    stock phrases, rewritten too; commentary quoting a master; the dev tool's rewrites of
    innocent text; random prose."""
    innocents = []
    for k, s in enumerate(NEWS):
        report = r.same_event(s, k)
        innocents += [report, r.rewrite(report, 7300 + k, r.HELD, "no8")]
        innocents.append(r.commentary(k, r.news(s)))
    for k in range(20):
        other = r.chapter(9500 + k)
        innocents += [other, r.rewrite(other, 7400 + k, r.DEV, "medium")]
    innocents += [r.commentary(k, r.chapter(s)) for k, s in enumerate(CHAPTERS)]
    innocents += [ARTICLE, OTHER_ARTICLE, r.__doc__ or ""]
    results = library.detector().check_many(innocents)
    flagged = [(k, [m.doc_id for m in ms]) for k, ms in enumerate(results) if ms]
    assert flagged == []


@pytest.mark.parametrize("k", [0, 2])
def test_a_rewrite_is_reported_with_aligned_sentence_pairs(library, k):
    master, copy = BY_HAND[k]
    [match] = library.detector().check(copy)
    assert (match.doc_id, match.method) == (f"hand/{k}", "rewrite")
    assert match.coverage >= 0.5 and len(match.spans) >= 4
    for span in match.spans:
        assert copy[span["page_start"] : span["page_end"]] == span["text"]
        assert master[span["master_start"] : span["master_end"]] == span["master_text"]
    swapped = [pair for span in match.spans for pair in span["swapped"]]
    assert swapped and all(page != theirs for page, theirs in swapped)
    for span in match.spans:  # swapped words are the page's and the master's own
        assert all(p in span["text"] and t in span["master_text"] for p, t in span["swapped"])


def test_verbatim_copies_keep_their_evidence(library, settings):
    """The verbatim detector's results are the same with rewrite detection on and off."""
    texts = [r.news(501), disguise.with_ads(r.chapter(601)), r.chapter(602)[:700]]
    texts.append(disguise.typos(r.news(502), 0.1))
    on = library.detector().check_many(texts)
    off = library.detector(replace(settings, rewrite_detection=False)).check_many(texts)
    assert [[m.to_dict() for m in ms] for ms in on] == [[m.to_dict() for m in ms] for ms in off]
    assert all(ms and ms[0].method != "rewrite" for ms in on)
    assert all("master_text" not in span for ms in on for m in ms for span in m.spans)


def test_the_crawl_path_finds_rewrites(library):
    """The pipelines check pages normalised, with their SimHash (no words cut yet)."""
    from tracker.fingerprints.document import text_simhash

    page = normalize(r.rewrite(r.chapter(603), 7600, r.HELD, "no8"))
    [matches] = library.detector().check_normalized_many([page], [text_simhash(page)])
    assert [(m.doc_id, m.method) for m in matches] == [("book/603", "rewrite")]


def test_check_json_says_rewrite(library, cli_env, tmp_path, capsys):
    path = tmp_path / "page.txt"
    path.write_text(BY_HAND[1][1], encoding="utf-8")
    assert main(["check", "--json", str(path)]) == 1
    [match] = json.loads(capsys.readouterr().out)["matches"]
    assert match["doc_id"] == "hand/1" and match["method"] == "rewrite"
    assert {"text", "master_text", "swapped", "added", "dropped"} <= set(match["spans"][0])


def test_rewrite_detection_can_be_turned_off(library, settings):
    copy = r.rewrite(r.chapter(604), 7700, r.HELD, "no8")
    assert library.detector(settings).check(copy)
    assert library.detector(replace(settings, rewrite_detection=False)).check(copy) == []
    assert Settings().rewrite_detection


# ------------------------------------------------- the hand-written development set

HAND_CASES = rewrites_hand.cases()


@pytest.fixture(scope="module")
def hand_results(server_settings):
    """The hand set's copies and innocents checked against its masters and the grammar's
    (competitors with the same formulas), once for the module."""
    from tracker.servers.runtime import Runtime

    tag = uuid.uuid4().hex[:10]
    settings = replace(server_settings, mongo_db=f"test_{tag}", redis_prefix=f"test{tag}:")
    runtime = Runtime(settings)
    try:
        lib = MasterLibrary.from_runtime(runtime)
        lib.ingest(
            [MasterDocument(doc, "hand", doc, text) for doc, text in rewrites_hand.masters()]
            + [MasterDocument(f"news/{s}", "news", f"n{s}", r.news(s)) for s in NEWS]
            + [MasterDocument(f"book/{s}", "book", f"c{s}", r.chapter(s)) for s in CHAPTERS]
        )
        return lib.detector().check_many([c.text for c in HAND_CASES])
    finally:
        runtime.mongo.drop_database(settings.mongo_db)
        for key in runtime.redis.scan_iter(match=settings.redis_prefix + "*", count=1000):
            runtime.redis.delete(key)
        runtime.close()


PARTIAL_BY_HAND_GAP = (
    "9 of 10: one passage aligns three pairs (the chapter's first half is rewritten past the "
    "extension's thresholds)"
)


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=PARTIAL_BY_HAND_GAP))
        if k == "partial by hand"
        else k
        for k in rewrites_hand.KINDS_FOUND
    ],
)
def test_hand_written_rewrites_are_found(hand_results, kind):
    """News rewritten by hand, chapters rewritten by hand, 40 % of a chapter rewritten (by
    hand or with a table, no 8 characters in a row) between two other chapters."""
    rows = [(c, ms) for c, ms in zip(HAND_CASES, hand_results, strict=True) if c.kind == kind]
    found = [any(m.doc_id == c.expected for m in ms) for c, ms in rows]
    missed = [c.expected for (c, _), f in zip(rows, found, strict=True) if not f]
    assert sum(found) >= math.ceil(RECALL * len(rows)), missed
    assert all(m.doc_id == c.expected for c, ms in rows for m in ms)  # no wrong ids


def test_the_harder_news_rewrites_share_no_run_of_8_characters():
    """The hand set's harder news rewrites (``news_hard.txt``) keep no 8 characters in a row
    of their master, punctuation left out; the set's first rewrites do."""
    news = rewrites_hand.news()
    hard = rewrites_hand.news_hard()
    assert len(hard) >= 15 and set(hard) <= set(news)
    assert {
        k: run
        for k, v in hard.items()
        if len(run := rewrites_hand.longest_run(v, news[k]["master"])) >= 8
    } == {}
    assert len(rewrites_hand.longest_run(news["01"]["rewrite"], news["01"]["master"])) >= 8


def test_independent_reports_of_the_same_event_are_not_flagged(hand_results):
    """Reports of the masters' events by other writers (features with their own order,
    details and quotes), as written, rewritten by the tools, joined with other text; and
    chapters of other stories."""
    flagged = [
        (c.kind, [m.doc_id for m in ms])
        for c, ms in zip(HAND_CASES, hand_results, strict=True)
        if c.expected is None
        and not c.kind.startswith(SAME_RELEASE)
        and not c.kind.startswith(rewrites_hand.OWN_REPORTS)
        and ms
    ]
    assert flagged == []


@pytest.mark.xfail(
    strict=True,
    reason="independent reports of longer news events (events.txt) share the master's facts, "
    "numbers and quotations, and 25 of their 88 forms align as rewrites: see "
    "bench/results/rewrites-precision-h48.md for the rules measured and why none shipped",
)
def test_independent_reports_of_longer_news_events_are_not_taken_for_rewrites(hand_results):
    """The reports of events.txt, as written, rewritten by the tools, in a page."""
    rows = [
        (c, ms)
        for c, ms in zip(HAND_CASES, hand_results, strict=True)
        if c.kind.startswith(rewrites_hand.OWN_REPORTS)
    ]
    assert len(rows) == 88
    assert [c.kind for c, ms in rows if any(m.method == "rewrite" for m in ms)] == []


# stories from the same release as a master: told in its order (wire, close), or from their own
# angle (lead, people, facts left out); as written, rewritten by the tools, in a page
SAME_RELEASE = ("same event (wire)", "same release")
ANGLE = "same release (angle)"
ANGLE_STORIES_FLAGGED_AT_MOST = 1  # of 22: see the test


def test_stories_from_the_same_release_told_from_their_own_angle_are_rarely_flagged(
    hand_results,
):
    """They keep the release's facts, names and numbers, and tell them in words of their own:
    the aligned sentences keep too little of the master's other words (main before issue 39's
    precision work flagged 6 of the 22 stories, in 10 of their 88 forms). One may pass:
    ``19 angle`` retells every fact of its release in the release's order after a lead of
    its own, keeping 0.58 of the master's wording, more than the rewrites by hand keep at the
    least (0.53)."""
    rows = [(c, ms) for c, ms in zip(HAND_CASES, hand_results, strict=True) if ANGLE in c.kind]
    stories = {m.doc_id for _, ms in rows for m in ms}  # one story a master
    assert len(rows) == 88
    assert len(stories) <= ANGLE_STORIES_FLAGGED_AT_MOST, sorted(stories)


@pytest.mark.xfail(
    strict=True,
    reason="another paper's story from the same release, in the same order, aligns as a "
    "rewrite: no measure tried (order, carried words, word order, new anchors, the share of "
    "the master's wording kept) tells them apart",
)
def test_stories_from_the_same_release_are_not_flagged(hand_results):
    flagged = [
        c.kind
        for c, ms in zip(HAND_CASES, hand_results, strict=True)
        if c.expected is None and c.kind.startswith(SAME_RELEASE) and ANGLE not in c.kind and ms
    ]
    assert flagged == []


def test_the_crawl_path_cuts_words_only_for_the_pages_the_rewrite_stage_reads(library, monkeypatch):
    """With the pages' SimHashes given (a crawl's), the check finds what ``check`` finds, and
    segments only the pages its verbatim copies do not cover; ``rewrites=False`` (the
    warm-ups) leaves the rewrite stage out."""
    import tracker.matching.detector as detector_module
    from tracker.fingerprints.simhash import simhash_normalized

    verbatim = r.news(NEWS[0])
    rewritten = r.rewrite(r.news(NEWS[1]), 7300, r.HELD, "no13")
    beside = r.news(NEWS[2]) + "\n" + BY_HAND[1][1]
    texts = [verbatim, rewritten, beside]
    detector = library.detector()
    expected = [[(m.doc_id, m.method) for m in ms] for ms in detector.check_many(texts)]
    assert expected[0] == [(f"news/{NEWS[0]}", expected[0][0][1])]
    assert any(method == "rewrite" for _, method in expected[2])

    segmented: list[int] = []
    segment = detector_module.segment_lines
    monkeypatch.setattr(
        detector_module,
        "segment_lines",
        lambda pages: segmented.append(len(pages)) or segment(pages),
    )
    pages = [normalize(text) for text in texts]
    simhashes = simhash_normalized(pages).tolist()
    found = detector.check_normalized_many(pages, simhashes)
    assert [[(m.doc_id, m.method) for m in ms] for ms in found] == expected
    assert sum(segmented) < len(pages)  # not the verbatim copy

    plain = detector.check_normalized_many(pages, simhashes, rewrites=False)
    assert all(m.method != "rewrite" for ms in plain for m in ms)
    assert [m.doc_id for m in plain[0]] == [f"news/{NEWS[0]}"]
