"""Helpers for fingerprinting many texts with one pass of vector operations: a batch is the
texts' arrays end to end, with each element's owner (the text it came from)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def owners(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    """Index of the text each element of the concatenated arrays belongs to."""
    return np.repeat(np.arange(len(sizes)), sizes)


def split(values: np.ndarray, sizes: Sequence[int] | np.ndarray) -> list[np.ndarray]:
    """``values`` cut into consecutive pieces of ``sizes`` elements (views, no copy)."""
    ends = np.cumsum(sizes).tolist()
    starts = [0, *ends[:-1]] if ends else []
    return [values[start:end] for start, end in zip(starts, ends, strict=True)]
