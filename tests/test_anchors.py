"""Master anchors: winnowed in batches as one at a time, two shared by any 100-token passage,
and short masters ranked by the anchors a page holds close together."""

from __future__ import annotations

import numpy as np

from tracker.fingerprints.anchors import gram_hashes, winnow, winnow_many
from tracker.index.anchor_index import (
    DENSE_BELOW_TOKENS,
    DENSE_WINDOW,
    SPARSE_WINDOW,
    AnchorIndex,
    spread,
)
from tracker.index.master_index import Candidates, local_votes
from tracker.index.storage import MemoryStorage
from tracker.text.normalize import normalize

from .texts import prose


def test_winnowing_pieces_together_gives_each_piece_alone():
    rng = np.random.default_rng(3)
    for _ in range(200):
        sizes = rng.integers(0, 120, size=rng.integers(1, 8))
        hashes = rng.integers(0, 2**63, size=int(sizes.sum()), dtype=np.uint64)
        window = int(rng.integers(1, 40))
        starts = np.cumsum(sizes) - sizes
        for got, start, size in zip(winnow_many(hashes, sizes, window), starts, sizes, strict=True):
            assert got.tolist() == winnow(hashes[start : start + size], window).tolist()


def test_master_anchors_in_a_batch_are_those_of_each_master():
    texts = [normalize(prose(seed=s, chars=n)).tokens for s, n in enumerate((5, 300, 2500, 9000))]
    texts.append(texts[0][:0])
    for tokens, anchors in zip(texts, AnchorIndex.master_anchors_many(texts), strict=True):
        assert anchors.tolist() == AnchorIndex.master_anchors(tokens).tolist()


def test_any_passage_of_100_tokens_shares_two_anchors_with_its_master():
    filler = normalize(prose(seed=1, chars=400)).tokens
    for chars, window in ((900, DENSE_WINDOW), (6000, SPARSE_WINDOW)):  # short, long master
        master = normalize(prose(seed=chars, chars=chars)).tokens
        assert (len(master) < DENSE_BELOW_TOKENS) == (window == DENSE_WINDOW)
        stored = set(AnchorIndex.master_anchors(master).tolist())
        for start in range(0, len(master) - 100, 7):
            page = np.concatenate([filler, master[start : start + 100], filler])
            assert len(stored & set(winnow(gram_hashes(page), window).tolist())) >= 2, start


def test_dense_lookups_know_where_each_anchor_sits():
    hashes = gram_hashes(normalize(prose(seed=8, chars=1200)).tokens)
    dense, _ = AnchorIndex(MemoryStorage()).plan(hashes)
    assert len(dense.positions) == len(dense.wanted) == len(winnow(hashes, DENSE_WINDOW))
    # The anchor at each position is the one looked up, and it first occurs there.
    values = spread(hashes[dense.positions])
    assert ((values >> np.uint64(32)).astype(np.int64) == dense.wanted).all()
    for h, at in zip(hashes[dense.positions].tolist(), dense.positions.tolist(), strict=True):
        assert np.flatnonzero(hashes == h)[0] == at


def test_local_votes_count_the_hits_that_sit_together():
    docs = np.array([1, 1, 1, 1, 2, 2, 2, 2, 2])
    positions = np.array([0, 900, 1800, 2700, 400, 420, 450, 500, 3000])
    assert local_votes(docs, positions, 256) == {1: 1, 2: 4}
    assert local_votes(docs[:0], positions[:0], 256) == {}


def test_a_lead_ranks_above_masters_sharing_as_many_phrases_spread_over_the_page():
    # Eight news masters share 5 anchors each with the page, spread out; the source of a
    # reposted lead shares 4, side by side. Only six are kept per pool.
    short = {**{n: 5 for n in range(10, 18)}, 3: 4}
    local = {**{n: 1 for n in range(10, 18)}, 3: 4}
    ranked = Candidates({}, short, {}, short_local=local).ranked(1200)
    assert ranked[0] == 3
    assert 3 not in Candidates({}, short, {}).ranked(1200)  # by votes alone it is crowded out
