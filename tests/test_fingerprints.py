"""SimHash, pinyin-DNA windows and anchors."""

from __future__ import annotations

import random

import numpy as np

from tracker.fingerprints.anchors import gram_hashes, mod_sample, winnow
from tracker.fingerprints.document import (
    DocumentFingerprint,
    fingerprint,
    fingerprint_many,
    to_signed,
    to_unsigned,
)
from tracker.fingerprints.pinyin_dna import LETTERS, dna_windows
from tracker.fingerprints.simhash import (
    Votes,
    hamming,
    idf_table,
    simhash_normalized,
    simhash_text,
    simhash_tokens,
    simhash_weighted,
    tokenize,
    votes_normalized,
    votes_of_lines,
    word_hashes,
)
from tracker.text.normalize import normalize

from .texts import ARTICLE, prose


def test_simhash_weighted_is_the_sign_of_weighted_votes():
    hashes = np.array([0xFFFF_0000_0000_0000, 0x0000_0000_0000_FFFF], dtype=np.uint64)
    assert simhash_weighted(hashes, np.array([2.0, 1.0])) == 0xFFFF_0000_0000_0000
    assert simhash_weighted(hashes, np.array([1.0, 2.0])) == 0x0000_0000_0000_FFFF


def test_near_duplicates_are_close_and_different_texts_far():
    chapter = prose(seed=1, chars=3000)
    original = fingerprint(chapter)[1].simhash
    edited = fingerprint(chapter.replace("。", "！", 5) + "欢迎阅读。")[1].simhash
    assert hamming(original, edited) <= 3
    for seed in range(2, 12):
        assert hamming(original, fingerprint(prose(seed=seed, chars=3000))[1].simhash) > 10


def test_simhash_of_nothing_is_zero():
    assert simhash_tokens([]) == 0
    assert simhash_tokens(["的", "了"]) == 0  # stop words only
    assert simhash_tokens(["2024", "12"]) == 0  # numbers only
    assert simhash_text("") == 0


def test_word_hashes_name_the_word_wherever_it_stands():
    words = ["林黛玉", "说", "林黛玉", "黛玉", "林黛", "玉", "说"]
    text = "".join(words)
    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    hashes = word_hashes(codes, np.array([len(w) for w in words])).tolist()
    assert hashes[0] == hashes[2] and hashes[1] == hashes[6]
    assert len(set(hashes)) == 5  # distinct words, distinct hashes ("林黛"+"玉" ≠ "林黛玉")


def test_simhash_weighs_words_by_tf_idf():
    """The vectorised SimHash equals Charikar's sum computed word by word with jieba's IDF."""
    words, values, median = idf_table()
    idf = dict(zip(words, values.tolist(), strict=True))
    tokens = ["宝玉", "黛玉", "宝玉", "的", "潇湘馆", "2024", "不存在的词语甲乙"]
    codes = np.frombuffer("".join(tokens).encode("utf-32-le"), dtype="<u4")
    hashes = word_hashes(codes, np.array([len(t) for t in tokens]))
    votes = np.zeros(64)
    for token, h in zip(tokens, hashes.tolist(), strict=True):
        weight = 0.0 if token in ("的", "2024") else idf.get(token, median)
        bits = np.array([(h >> (63 - b)) & 1 for b in range(64)])
        votes += weight * (2 * bits - 1)
    expected = int("".join("1" if v > 0 else "0" for v in votes), 2)
    assert simhash_tokens(tokens) == expected
    text = "宝玉来到潇湘馆，黛玉正在看书"
    assert simhash_text(text) == simhash_tokens(tokenize(text)) != 0


def test_dna_windows_overlap_and_fit_in_40_bits():
    tokens = normalize(ARTICLE * 3).tokens
    windows = dna_windows(tokens, window=100, overlap=0.5)
    usable = len([t for t in tokens if t])  # every CJK token has an initial here or is dropped
    assert 1 < len(windows) <= usable // 50
    assert all(int(v) < 1 << (2 * len(LETTERS)) for v in windows)
    # Homophone and Traditional disguises leave the DNA unchanged.
    disguised = normalize((ARTICLE * 3).replace("时候", "是后")).tokens
    assert (dna_windows(disguised, window=100) == windows).all()


def test_short_text_gives_one_window():
    assert len(dna_windows(normalize("短文本只有几个字").tokens)) == 1
    assert len(dna_windows(normalize("").tokens)) == 0


def test_anchors_are_content_defined():
    tokens = normalize(ARTICLE).tokens
    grams = gram_hashes(tokens)
    hashes = mod_sample(grams, 4)
    shifted = np.concatenate([normalize("无关的开头文字" * 3).tokens, tokens])
    shifted_hashes = mod_sample(gram_hashes(shifted), 4)
    assert len(hashes) > 5
    assert set(hashes.tolist()) <= set(shifted_hashes.tolist())
    assert (hashes % np.uint64(4) == 0).all() and len(hashes) == int((grams % 4 == 0).sum())


def test_fingerprint_round_trips_through_mongo_form():
    _, fp = fingerprint(ARTICLE)
    restored = DocumentFingerprint.from_mongo(fp.to_mongo())
    assert restored.simhash == fp.simhash
    assert (restored.dna == fp.dna).all() and (restored.anchors == fp.anchors).all()
    value = random.getrandbits(64)
    assert to_unsigned(to_signed(value)) == value
    assert -(1 << 63) <= to_signed(value) < 1 << 63


def test_winnowing_matches_brute_force_and_guarantees_shared_passages():
    rng = np.random.default_rng(11)
    hashes = rng.integers(0, 2**63, 2000, dtype=np.uint64)
    for window in (1, 7, 64):
        expected = np.unique([hashes[i : i + window].min() for i in range(2000 - window + 1)])
        assert (winnow(hashes, window) == expected).all()
    assert winnow(hashes[:3], 10).tolist() == [hashes[:3].min()]
    # Any passage of at least one window shares an anchor with the text it was copied from.
    window = 50
    source = set(winnow(hashes, window).tolist())
    for start in range(0, 1900, 37):
        passage = np.concatenate(
            [
                rng.integers(0, 2**63, 30, dtype=np.uint64),
                hashes[start : start + window],
                rng.integers(0, 2**63, 30, dtype=np.uint64),
            ]
        )
        assert source & set(winnow(passage, window).tolist())


def test_the_idf_table_is_built_once_then_loaded_from_the_cache(tmp_path, monkeypatch):
    from tracker.fingerprints import simhash

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text = "宝玉来到潇湘馆，黛玉正在看书"
    expected = simhash_text(text)
    simhash._weight_table.cache_clear()
    try:
        built = simhash._weight_table()
        saved = list((tmp_path / "tracker").glob("simhash-weights-*.npz"))
        assert len(saved) == 1
        simhash._weight_table.cache_clear()
        loaded = simhash._weight_table()
        assert loaded is not built and (loaded.slots == built.slots).all()
        assert simhash_text(text) == expected
        saved[0].write_bytes(b"not a numpy file")  # a damaged cache is rebuilt
        simhash._weight_table.cache_clear()
        assert (simhash._weight_table().slots == built.slots).all()
    finally:
        simhash._weight_table.cache_clear()


def test_a_batch_fingerprints_each_text_as_if_it_were_alone():
    """fingerprint_many shares one pass of vector operations between texts: nothing of one
    text may leak into another's SimHash, DNA windows or anchors (shingles straddling two
    texts, letter blocks, vote sums)."""
    texts = [
        prose(seed=5, chars=9000),  # long: winnowed anchors, many DNA windows
        "",
        ARTICLE,
        "2024，12。",  # numbers only weigh nothing
        "短文",  # shorter than a shingle
        "他拿出电zi书看了一会儿，" * 20,  # pinyin letters in the text
        "的了",  # stop words only
        prose(seed=6, chars=700),
    ]
    together = fingerprint_many(texts)
    assert len(together) == len(texts)
    for text, (normalized, fp) in zip(texts, together, strict=True):
        alone = fingerprint(text)[1]
        assert normalized.chars == normalize(text).chars
        assert fp.simhash == alone.simhash and fp.length == alone.length
        assert fp.dna.tolist() == alone.dna.tolist()
        assert fp.anchors.tolist() == alone.anchors.tolist()
    assert together[0][1].simhash != 0 and len(together[0][1].dna) > 10
    assert together[1][1].simhash == 0 and len(together[1][1].dna) == 0
    assert together[3][1].simhash == together[6][1].simhash == 0
    assert fingerprint_many([]) == []


def test_a_normalized_text_is_cut_into_words_line_by_line():
    text = "林黛玉说道\n宝玉笑了。\n最快更新请记住本站域名 www.biquge.la\n贾母听了"
    lines = ["林黛玉说道", "宝玉笑了", "贾母听了"]
    expected = simhash_tokens([word for line in lines for word in tokenize(line)])
    assert simhash_normalized([normalize(text)]).tolist() == [expected] != [0]
    assert votes_normalized(normalize(text)).fingerprint == expected


def test_votes_less_those_of_some_lines_are_the_votes_without_them():
    rng = random.Random(9)
    for seed in range(6):
        lines = [
            prose(seed=60 + seed * 10 + k, chars=rng.randint(5, 300)).replace("\n", "")
            for k in range(14)
        ]
        text = "\n".join(lines)
        gone = set(rng.sample(range(len(lines)), 4))
        whole = votes_normalized(normalize(text))
        less = whole - votes_of_lines([normalize(lines[k]).chars for k in sorted(gone)])
        rest = normalize("\n".join(line for k, line in enumerate(lines) if k not in gone))
        expected = votes_normalized(rest)
        assert less.ones.tolist() == expected.ones.tolist()  # exactly: sums of sixteenths
        assert less.total == expected.total
        assert less.fingerprint == int(simhash_normalized([rest])[0])


def test_votes_of_nothing_make_the_zero_fingerprint():
    assert votes_of_lines([]).fingerprint == 0
    assert Votes(np.zeros(64), 0.0).fingerprint == 0
    assert votes_of_lines(["的了"]).fingerprint == 0  # stop words only


def test_lines_cut_in_one_call_give_the_words_of_each_line_cut_alone():
    """votes_of_lines cuts the lines joined by line breaks in one call: jieba cuts at every
    line break, so the votes must be exactly those of the lines cut one by one, whatever the
    lines hold (Chinese, Latin letters and digits running into each other across a line
    break, kana, punctuation, spaces, empty lines, a carriage return, a line break inside)."""
    from tracker.fingerprints import simhash

    rng = random.Random(4)
    pieces = [
        *prose(seed=3, chars=400).replace("\n", ""),
        *"abcxyz0123456789",
        "dianzi",
        "2024",
        "かなカナ",
        "한국",
        "，。！",
        " ",
        "\u3000",
        "é",
        "\U00020000",
    ]
    rare = ["", "\r", "a\nb", "\x00"]
    fast = 0
    for _ in range(400):
        lines = [
            "".join(rng.choices(pieces, k=rng.randint(0, 40))) for _ in range(rng.randint(1, 8))
        ]
        if rng.random() < 0.2:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(rare))
        fast += simhash._joined_words(lines) is not None
        one_by_one = simhash.votes_segmented(["".join(lines)], [simhash.cut_lines(lines)])
        votes = votes_of_lines(lines)
        assert votes.ones.tolist() == one_by_one[0][0].tolist()
        assert votes.total == one_by_one[1][0]
    assert fast > 300  # the one call is the way taken, not the fallback
    text = normalize(prose(seed=5, chars=3000))
    assert simhash._joined_words(text.lines()) is not None
