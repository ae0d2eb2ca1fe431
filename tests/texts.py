"""Text fixtures built by the tests themselves: two hand-written articles and a generator of
chapter-length Chinese prose (words drawn from jieba's bundled dictionary by frequency)."""

from __future__ import annotations

import itertools
import random
from functools import cache
from importlib import resources

ARTICLE = (
    "清晨的薄雾还没有散去，村口的老槐树下已经聚了不少人。李大爷把烟袋锅在鞋底上磕了磕，"
    "慢悠悠地说，今年的雨水来得早，河边那几亩稻田怕是要提前收割了。年轻人们围在一旁，"
    "有的点头，有的皱眉，谁也说不准天气会怎么变化。小时候的时候，我最喜欢跟着爷爷去河边看水，"
    "看那些从上游漂下来的树枝和落叶，一直漂到看不见的远方。后来我去城里读书，"
    "每年只有过年的时候才回来一次，村子一年比一年安静，老槐树却还是那个样子。"
    "今天再次站在树下，听着熟悉的乡音，心里忽然觉得踏实了许多。"
)

OTHER_ARTICLE = (
    "本市第三届科技创新大会昨日在会展中心开幕，来自全国各地的两百多家企业参加展览。"
    "展会集中展示了新能源汽车、智能制造和生物医药等领域的最新成果，吸引了大批市民前来参观。"
    "主办方介绍，本届大会共设置十二个专题论坛，将围绕产业升级和人才培养等议题展开讨论。"
    "多位专家在开幕式上发言，认为加强基础研究和企业合作是推动技术进步的关键。"
    "大会将持续三天，期间还将举行项目签约仪式和青年创业大赛决赛。"
)

_PUNCTUATION = "，，，，。。、；！？"


@cache
def _vocabulary() -> tuple[list[str], list[int]]:
    """Dictionary words and their cumulative frequencies."""
    text = resources.files("jieba").joinpath("dict.txt").read_text(encoding="utf-8")
    words, weights = [], []
    for line in text.splitlines():
        parts = line.split(" ")
        if (
            len(parts) >= 2
            and 1 <= len(parts[0]) <= 4
            and parts[0].isalpha()
            and all("\u4e00" <= ch <= "\u9fff" for ch in parts[0])
        ):
            words.append(parts[0])
            weights.append(int(parts[1]))
    return words, list(itertools.accumulate(weights))


def prose(seed: int, chars: int = 3000) -> str:
    """Deterministic chapter-like prose of about ``chars`` characters, in paragraphs."""
    rng = random.Random(seed)
    words, cumulative = _vocabulary()
    drawn = iter(rng.choices(words, cum_weights=cumulative, k=chars))
    paragraphs, paragraph, sentence, length = [], [], [], 0
    while length < chars:
        word = next(drawn)
        sentence.append(word)
        length += len(word)
        if len(sentence) >= rng.randint(4, 12):
            paragraph.append("".join(sentence) + rng.choice(_PUNCTUATION))
            sentence = []
            if len(paragraph) >= rng.randint(4, 9):
                paragraphs.append("".join(paragraph))
                paragraph = []
    if sentence:
        paragraph.append("".join(sentence) + "。")
    if paragraph:
        paragraphs.append("".join(paragraph))
    return "\n".join(paragraphs)
