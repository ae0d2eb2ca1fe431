"""Synthetic master chapters for the scale run (``--scale 100000``).

A synthetic chapter is ``chars`` characters (default 3,000, a typical web-novel chapter) of
corpus sentences drawn at random, each with its jieba words shuffled, in paragraphs of 3–8
sentences. Word and character statistics stay those of the corpus, while the word order — and so
almost every 5-syllable shingle that spans a word boundary — is new, so the chapters are
distinct from each other and from the real masters, as the chapters of a large library are.
The index then holds as many postings as a real library of that size.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator

from bench.disguises import sentences, split_paragraphs
from tracker.model import MasterDocument


def sentence_pool(texts: Iterable[str], max_sentences: int = 200_000) -> list[list[str]]:
    """jieba words of the corpus sentences that have at least four words."""
    import rjieba

    pool = []
    for text in texts:
        for p in split_paragraphs(text):
            for s in sentences(p):
                words = rjieba.cut(s)
                if len(words) >= 4:
                    pool.append(words)
                    if len(pool) >= max_sentences:
                        return pool
    return pool


def synthetic_chapters(
    count: int, pool: list[list[str]], seed: int = 0, chars: int = 3000
) -> Iterator[MasterDocument]:
    rng = random.Random(f"scale:{seed}")
    for i in range(count):
        paragraphs, paragraph, length = [], [], 0
        target = rng.randint(3, 8)
        while length < chars:
            words = list(rng.choice(pool))
            end = words.pop() if not words[-1].isalnum() else ""  # closing punctuation stays
            rng.shuffle(words)
            sentence = "".join(words) + end
            paragraph.append(sentence)
            length += len(sentence)
            if len(paragraph) >= target:
                paragraphs.append("".join(paragraph))
                paragraph, target = [], rng.randint(3, 8)
        if paragraph:
            paragraphs.append("".join(paragraph))
        yield MasterDocument(f"合成/{i + 1:06d}", "合成", f"第{i + 1}章", "\n".join(paragraphs))
