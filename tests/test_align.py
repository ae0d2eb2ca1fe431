"""Alignment internals against plain-Python references on random token streams."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from tracker.fingerprints.anchors import GRAM, gram_hashes
from tracker.matching.align import Shingles, align, seed_runs


def reference_runs(page: np.ndarray, master: np.ndarray, max_repeats: int = 8) -> list[tuple]:
    """Runs of consecutive shared shingles on one diagonal, by brute force over all pairs."""
    page_h, master_h = gram_hashes(page).tolist(), gram_hashes(master).tolist()
    in_master = defaultdict(list)
    for j, h in enumerate(master_h):
        in_master[h].append(j)
    pairs = {
        (i, j)
        for i, h in enumerate(page_h)
        if len(in_master[h]) <= max_repeats
        for j in in_master[h]
    }
    runs = []
    for i, j in pairs:
        if (i - 1, j - 1) in pairs:
            continue  # not the start of a run
        length = 1
        while (i + length, j + length) in pairs:
            length += 1
        runs.append((i, j, length))
    return sorted(runs)


@pytest.mark.parametrize("seed", range(6))
def test_seed_runs_match_a_brute_force_reference(seed):
    rng = np.random.default_rng(seed)
    alphabet = int(rng.integers(3, 40))  # small alphabets make repeated shingles
    master = rng.integers(0, alphabet, int(rng.integers(20, 400)))
    page = np.concatenate(
        [
            rng.integers(0, alphabet, int(rng.integers(0, 50))),
            master[int(rng.integers(0, 10)) : int(rng.integers(10, len(master)))],
            rng.integers(0, alphabet, int(rng.integers(0, 50))),
        ]
    )
    page[rng.random(len(page)) < 0.05] = alphabet  # typos
    runs = seed_runs(Shingles.of(gram_hashes(page)), Shingles.of(gram_hashes(master)))
    assert sorted(map(tuple, runs.tolist())) == reference_runs(page, master)
    assert runs[:, 0].tolist() == sorted(runs[:, 0].tolist())  # by page position


def test_shingles_are_grouped_by_value_with_positions_ascending():
    hashes = gram_hashes(np.array([1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 9]))
    shingles = Shingles.of(hashes)
    assert sorted(shingles.order.tolist()) == list(range(len(hashes)))
    assert (np.diff(shingles.ordered.astype(np.float64)) >= 0).all()
    first = hashes[0]
    positions = [p for p in shingles.order.tolist() if hashes[p] == first]
    assert positions == [0, 5, 10]
    assert shingles.repeats[shingles.order.tolist().index(0)] == 3


def test_alignment_spans_a_copied_passage_through_typos():
    rng = np.random.default_rng(7)
    master = rng.integers(0, 400, 600)
    copied = master[100:400].copy()
    copied[::37] = 401  # a typo every 37 tokens
    page = np.concatenate([rng.integers(0, 400, 200), copied, rng.integers(0, 400, 150)])
    alignment = align(page, master)
    assert len(alignment.passages) == 1
    passage = alignment.passages[0]
    assert abs(passage.master_start - 100) <= GRAM and abs(passage.master_end - 400) <= GRAM
    assert abs(passage.page_start - 200) <= GRAM and abs(passage.page_end - 500) <= GRAM
    assert alignment.coverage == pytest.approx(300 / 600, abs=0.02)
    assert align(rng.integers(0, 400, 700), master).passages == []
