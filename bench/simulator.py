"""Piracy simulator: labelled pirate copies of the master library, and innocent texts.

Every case type of issue 3 is generated ``n`` times (innocent kinds ``n_innocent`` times) from
random masters with a fixed seed; each case carries the master ids a detector must report
(all of them for merged and interleaved chapters, the chapter for each page of a split one,
none for an innocent text). The rng of a case type is seeded by ``(seed, type name)``, so adding
a type does not change the others' cases.

Rates (see :mod:`bench.disguises` for what each disguise does):

* homophones 5 % of Han characters; heavy homophones 10–15 %; OCR typos 15 % of characters;
  pinyin letters for 10 % of words; typos + homophones: 15 % + 5 %.
* partial copy: a contiguous 30 % of a novel chapter inside unrelated text 1–2× its length.
* passage: 200–500 characters of a master inside an unrelated page of 3,000–8,000 characters;
  a short passage: 100–150 Han characters inside 5,000–50,000 characters; a long article's
  share: 1,600 characters of a master of 6,000+ characters inside 4,700 characters of other
  news (issue 12).
* all at once: paragraphs reordered, homophones 5 %, pinyin 10 %, typos 15 %, Traditional,
  ads, punctuation/width/zero-width noise — on one whole chapter or article.
* quoting commentary: an innocent text of 600–2,000 characters quoting one or two sentences of
  a master (≤ 60 characters in all).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from bench import disguises as d
from bench.corpus import Corpus, Innocent
from tracker.model import MasterDocument

HOMOPHONE_RATE = 0.05
HEAVY_HOMOPHONE_RATES = (0.10, 0.15)
TYPO_RATE = 0.15
PINYIN_RATE = 0.10
PARTIAL_SHARE = 0.30
MAX_QUOTE_CHARS = 60

DISGUISE, HEAVY, INNOCENT = "disguise", "heavy", "innocent"
TARGETS = {DISGUISE: 0.98, HEAVY: 0.95, INNOCENT: 0.0}  # recall ≥ / false-positive rate ≤


@dataclass(frozen=True)
class Case:
    kind: str
    case_id: str
    text: str
    expected: tuple[str, ...]  # master ids that must be reported; () for an innocent text
    note: str = ""  # how it was made (source ids, rates), for --show-misses


@dataclass(frozen=True)
class CaseType:
    name: str
    group: str  # DISGUISE, HEAVY or INNOCENT
    description: str
    make: Callable[[Simulator, random.Random], list[Case]] = field(repr=False)

    @property
    def target(self) -> float:
        return TARGETS[self.group]


class Simulator:
    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        reference = "".join(doc.text for doc in corpus.masters)
        self.alphabet = d.Alphabet(reference)
        self.filler_paragraphs = [
            p
            for i in corpus.innocents
            if i.kind in ("news", "nahan")
            for p in d.split_paragraphs(i.text)
        ]
        self.news_paragraphs = [
            p for i in corpus.innocents if i.kind == "news" for p in d.split_paragraphs(i.text)
        ]
        self.short_news = [m for m in corpus.news_masters if 250 <= len(m.text) <= 450]
        self._kind = ""
        self._count = 0

    # -- sources ----------------------------------------------------------------------------

    def chapter(self, rng: random.Random) -> MasterDocument:
        return rng.choice(self.corpus.novel_chapters)

    def chapter_or_article(self, rng: random.Random) -> MasterDocument:
        pool = self.corpus.novel_chapters if rng.random() < 0.5 else self.corpus.news_masters
        return rng.choice(pool)

    def filler(self, rng: random.Random, chars: int, news_only: bool = False) -> str:
        """Unrelated text (innocent news and 呐喊 paragraphs, or news only) of at least
        ``chars`` characters."""
        pool = self.news_paragraphs if news_only else self.filler_paragraphs
        out, length = [], 0
        start = rng.randrange(len(pool))
        while length < chars:
            p = pool[(start + len(out)) % len(pool)]
            out.append(p)
            length += len(p)
        return "\n".join(out)

    def case(self, text: str, expected: tuple[str, ...], note: str = "") -> Case:
        self._count += 1
        return Case(self._kind, f"{self._kind}/{self._count:04d}", text, expected, note)

    def one(self, text: str, master: MasterDocument, note: str = "") -> list[Case]:
        return [self.case(text, (master.doc_id,), f"{master.doc_id} {note}".strip())]

    # -- generation -------------------------------------------------------------------------

    def generate(
        self, n: int, n_innocent: int, seed: int = 0, kinds: list[str] | None = None
    ) -> Iterator[Case]:
        for ct in CASE_TYPES:
            if kinds and ct.name not in kinds:
                continue
            rng = random.Random(f"{seed}:{ct.name}")
            self._kind, self._count = ct.name, 0
            want = n_innocent if ct.group == INNOCENT else n
            made: list[Case] = []
            while len(made) < want:
                made.extend(ct.make(self, rng))
            yield from made[:want]


# -- case makers (one sample each; may return several cases, e.g. the pages of a split) ---------


def _verbatim(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(m.text, m)


def _ads(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(d.with_ads(m.text, rng, m.work), m)


def _noise(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(d.noise(m.text, rng), m)


def _traditional(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(d.traditional(m.text, rng), m)


def _homophones(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(d.homophones(m.text, rng, sim.alphabet, HOMOPHONE_RATE), m)


def _typos(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(d.typos(m.text, rng, sim.alphabet, TYPO_RATE), m)


def _reordered(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    if len(d.split_paragraphs(m.text)) < 3:
        return []
    return sim.one(d.reorder_paragraphs(m.text, rng), m)


def _split(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter(rng)
    k = rng.randint(2, 4)
    pages = d.split_pages(m.text, k)
    cases = []
    for i, page in enumerate(pages, start=1):
        footer = "本章未完，请点击下一页继续阅读》》" if i < len(pages) else "（本章完）"
        text = f"{m.title}（第{i}/{len(pages)}页）\n{page}\n{footer}"
        cases.append(sim.case(text, (m.doc_id,), f"{m.doc_id} page {i}/{len(pages)}"))
    return cases


def _merged(sim: Simulator, rng: random.Random) -> list[Case]:
    k = rng.randint(2, 3)
    chapters = sim.corpus.novel_chapters
    start = rng.randrange(len(chapters) - k + 1)
    group = [c for c in chapters[start : start + k] if c.work == chapters[start].work]
    if len(group) < 2:
        return []
    text = "\n".join(f"{c.title}\n{c.text}" for c in group)
    ids = tuple(c.doc_id for c in group)
    return [sim.case(text, ids, " + ".join(ids))]


def _partial(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter(rng)
    size = round(PARTIAL_SHARE * len(m.text))
    copied = d.excerpt(m.text, rng.randrange(max(1, len(m.text) - size)), size)
    text = d.embed(copied, sim.filler(rng, round(size * rng.uniform(1, 2))), rng)
    return sim.one(text, m, f"{len(copied)} chars of {len(m.text)}")


def _news_short(sim: Simulator, rng: random.Random) -> list[Case]:
    m = rng.choice(sim.short_news)
    header = rng.choice(("来源：网络综合", "转自：新闻客户端", "本文转载自网络，侵删"))
    footer = rng.choice(("（责任编辑：小王）", "【编辑：李明】", "（完）"))
    return sim.one(f"{header}\n{m.text}\n{footer}", m, f"{len(m.text)} chars")


def _homophones_heavy(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    rate = rng.uniform(*HEAVY_HOMOPHONE_RATES)
    return sim.one(d.homophones(m.text, rng, sim.alphabet, rate), m, f"rate {rate:.3f}")


def _pinyin(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(d.pinyin_words(m.text, rng, PINYIN_RATE), m)


def _typos_homophones(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    text = d.homophones(m.text, rng, sim.alphabet, HOMOPHONE_RATE)
    return sim.one(d.typos(text, rng, sim.alphabet, TYPO_RATE), m)


def _passage(sim: Simulator, rng: random.Random) -> list[Case]:
    size = rng.randint(200, 500)
    m = sim.chapter(rng)
    copied = d.excerpt(m.text, rng.randrange(len(m.text) - size), size)
    text = d.embed(copied, sim.filler(rng, rng.randint(3000, 8000)), rng)
    return sim.one(text, m, f"{len(copied)} chars of {len(m.text)}, page {len(text)}")


def _short_passage(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    size = rng.randint(100, 150)
    copied = d.han_excerpt(m.text, rng.randrange(max(1, len(m.text) - 2 * size)), size)
    text = d.embed(copied, sim.filler(rng, rng.randint(5000, 50000)), rng)
    return sim.one(text, m, f"{len(copied)} chars of {len(m.text)}, page {len(text)}")


def _article_share(sim: Simulator, rng: random.Random) -> list[Case]:
    m = rng.choice([c for c in sim.corpus.novel_chapters if len(c.text) >= 6000])
    copied = d.excerpt(m.text, rng.randrange(len(m.text) - 1600), 1600)
    text = d.embed(copied, sim.filler(rng, 4700, news_only=True), rng)
    return sim.one(text, m, f"{len(copied)} chars of {len(m.text)}, page {len(text)}")


def _interleaved(sim: Simulator, rng: random.Random) -> list[Case]:
    a, b = rng.sample(sim.corpus.novel_chapters, 2)
    text = d.interleave(a.text, b.text)
    return [sim.case(text, (a.doc_id, b.doc_id), f"{a.doc_id} ⇄ {b.doc_id}")]


def _sentences(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    return sim.one(d.shuffle_sentences(m.text, rng), m)


def _news_head(sim: Simulator, rng: random.Random) -> list[Case]:
    m = rng.choice(sim.corpus.news_masters)
    text = d.embed(m.text[:150], sim.filler(rng, rng.randint(500, 1500)), rng)
    return sim.one(text, m)


def _all_at_once(sim: Simulator, rng: random.Random) -> list[Case]:
    m = sim.chapter_or_article(rng)
    text = d.reorder_paragraphs(m.text, rng)
    text = d.homophones(text, rng, sim.alphabet, HOMOPHONE_RATE)
    text = d.pinyin_words(text, rng, PINYIN_RATE)
    text = d.typos(text, rng, sim.alphabet, TYPO_RATE)
    text = d.traditional(text, rng)
    text = d.with_ads(text, rng, m.work)
    return sim.one(d.noise(text, rng), m)


def _innocent(kind: str, pieces: tuple[int, int] = (1, 1)) -> Callable[..., list[Case]]:
    def make(sim: Simulator, rng: random.Random) -> list[Case]:
        pool: list[Innocent] = sim.corpus.innocents_of(kind)
        k = rng.randint(*pieces)
        start = rng.randrange(len(pool) - k + 1)
        chosen = pool[start : start + k]
        text = "\n".join(i.text for i in chosen)
        return [sim.case(text, (), " + ".join(i.title for i in chosen))]

    return make


QUOTE_INTROS = (
    "书中写道：“{q}”",
    "正如《{work}》里所说：“{q}”这句话令人深思。",
    "原文是这样的：“{q}”",
    "有读者摘抄了一句：“{q}”，并写下了自己的感想。",
    "报道中提到，“{q}”",
)


def _quote_sentences(sim: Simulator, rng: random.Random) -> tuple[list[str], MasterDocument]:
    m = sim.chapter_or_article(rng)
    candidates = [
        s.strip("“”\"' 　")
        for p in d.split_paragraphs(m.text)
        for s in d.sentences(p)
        if 10 <= len(s.strip("“”\"' 　")) <= 35
    ]
    if not candidates:
        return [], m
    start = rng.randrange(len(candidates))
    quotes = candidates[start : start + rng.randint(1, 2)]
    while sum(len(q) for q in quotes) > MAX_QUOTE_CHARS:
        quotes.pop()
    return quotes, m


def _quoting(sim: Simulator, rng: random.Random) -> list[Case]:
    quotes, m = _quote_sentences(sim, rng)
    if not quotes:
        return []
    paras = d.split_paragraphs(sim.filler(rng, rng.randint(600, 2000)))
    for q in quotes:
        intro = rng.choice(QUOTE_INTROS).format(q=q, work=m.work)
        k = rng.randint(0, len(paras))
        paras.insert(k, intro)
    quoted = sum(len(q) for q in quotes)
    return [sim.case("\n".join(paras), (), f"quotes {quoted} chars of {m.doc_id}")]


_C = CaseType
CASE_TYPES: tuple[CaseType, ...] = (
    _C("verbatim", DISGUISE, "whole chapter or article, unchanged (control)", _verbatim),
    _C("ads", DISGUISE, "ad and watermark lines, inline ads (笔趣阁 style)", _ads),
    _C("noise", DISGUISE, "punctuation, full/half-width, whitespace, zero-width", _noise),
    _C("traditional", DISGUISE, "Traditional characters (s2t / s2tw / s2hk)", _traditional),
    _C("homophones_5", DISGUISE, "5% of Han characters swapped for homophones", _homophones),
    _C("typos_15", DISGUISE, "OCR-like typos: 15% inserted / deleted / replaced", _typos),
    _C("paragraphs_reordered", DISGUISE, "paragraphs shuffled", _reordered),
    _C("split_pages", DISGUISE, "chapter split over 2–4 pages; each page a case", _split),
    _C("merged_chapters", DISGUISE, "2–3 chapters on one page; all expected", _merged),
    _C("partial_30", DISGUISE, "30% of a chapter inside unrelated text", _partial),
    _C("news_short_300", DISGUISE, "short article (250–450 chars) reposted", _news_short),
    _C("homophones_10_15", HEAVY, "10–15% homophones", _homophones_heavy),
    _C("pinyin_words", HEAVY, "10% of words in pinyin letters (电zi书)", _pinyin),
    _C("typos_homophones", HEAVY, "homophones 5% + typos 15%", _typos_homophones),
    _C("passage_in_long_page", HEAVY, "200–500 chars in a 3–8k-char page", _passage),
    _C("short_passage_long_page", HEAVY, "100–150 Han chars in a 5–50k-char page", _short_passage),
    _C("share_1600_in_news", HEAVY, "1,600 chars of a 6k+ master in 4.7k of news", _article_share),
    _C("interleaved", HEAVY, "paragraphs of two chapters interleaved", _interleaved),
    _C("sentences_shuffled", HEAVY, "sentences shuffled inside paragraphs", _sentences),
    _C("news_head_150", HEAVY, "first 150 chars of an article in other text", _news_head),
    _C("all_at_once", HEAVY, "every disguise above on one text", _all_at_once),
    _C("innocent_news", INNOCENT, "People's Daily articles not in the library", _innocent("news")),
    _C("innocent_nahan", INNOCENT, "呐喊, 1–5k-char windows", _innocent("nahan", (1, 5))),
    _C("innocent_guwen", INNOCENT, "古文观止 essays (Traditional)", _innocent("guwen")),
    _C("quoting_commentary", INNOCENT, "innocent text quoting ≤ 60 chars of a master", _quoting),
)
CASE_TYPE = {ct.name: ct for ct in CASE_TYPES}
