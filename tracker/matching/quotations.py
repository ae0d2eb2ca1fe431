"""Quotations repeated word for word are no evidence of a rewrite (issue 39, 洗稿).

Independent reports of one event quote the same people: a spokesman's sentence at a press
conference, a witness's words, a judge's warning. They repeat it word for word, inside
quotation marks, and the rewrite aligner (:mod:`tracker.matching.rewrite`) pairs those
sentences at a cosine of 1, with all their wording kept. A rewriter keeps a quotation too,
but what proves the rewrite is the rest of the master retold. So an aligned pair whose two
sides are both mostly quoted speech (``MIN_QUOTED`` of their characters inside “”「」『』""),
and the same characters (a Dice coefficient of their character bigrams of at least
``MIN_LITERAL``), is taken out of the alignment before the decision, as :func:`tracker.
matching.rewrite.own_pairs` takes out the pairs another master explains. A rewritten
quotation (its words swapped) stays evidence.

On the development set (``bench.rewrites_reports``, tests/fixtures/rewrites_dev_hand/
events.txt), this keeps every copy found and clears 11 of the 34 forms of the independent
reports that main flags, with the pairs' Dice anywhere from 0.75 to 0.95.
"""

from __future__ import annotations

import re

import numpy as np

from tracker.fingerprints.sentences import Sentences
from tracker.matching.rewrite import Pair, RewriteAlignment, could_be_rewrite, summary
from tracker.text.normalize import NormalizedText

QUOTATION = re.compile(r"“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|\"[^\"\n]*\"")
MIN_QUOTED = 0.5  # of a unit's characters inside quotation marks: the unit is a quotation
MIN_LITERAL = 0.8  # Dice of the character bigrams of the pair's two sides: word for word


def quoted_units(text: NormalizedText, units: Sentences) -> np.ndarray:
    """Whether each unit of ``text`` is mostly quoted speech (``MIN_QUOTED``)."""
    marks = np.zeros(len(text.source) + 1, dtype=np.int64)
    for m in QUOTATION.finditer(text.source):
        marks[m.start()] += 1
        marks[m.end()] -= 1
    inside = np.cumsum(marks)[:-1] > 0
    folded = np.r_[0, np.cumsum(inside[text.char_pos])]
    share = (folded[units.ends] - folded[units.starts]) / np.maximum(units.lengths, 1)
    return share >= MIN_QUOTED


def _bigrams(chars: str) -> set[str]:
    return {chars[i : i + 2] for i in range(len(chars) - 1)}


def literal(a: str, b: str) -> bool:
    """Whether two folded texts are the same words (``MIN_LITERAL``)."""
    x, y = _bigrams(a), _bigrams(b)
    return 2 * len(x & y) >= MIN_LITERAL * max(len(x) + len(y), 1)


def without_quotations(
    alignment: RewriteAlignment,
    page: NormalizedText,
    page_units: Sentences,
    master: NormalizedText,
    master_units: Sentences,
) -> RewriteAlignment:
    """The alignment without its pairs of a quotation repeated word for word (see the
    module's docstring); itself if it has none, or if it could not be a rewrite anyway."""
    if not could_be_rewrite(alignment) or not QUOTATION.search(master.source):
        return alignment
    page_quoted = quoted_units(page, page_units)
    master_quoted = quoted_units(master, master_units)

    def quotation(p: Pair) -> bool:
        if not (
            page_quoted[p.page_first : p.page_last + 1].all()
            and master_quoted[p.master_first : p.master_last + 1].all()
        ):
            return False
        ours = page.chars[page_units.starts[p.page_first] : page_units.ends[p.page_last]]
        theirs = master.chars[
            master_units.starts[p.master_first] : master_units.ends[p.master_last]
        ]
        return literal(ours, theirs)

    kept = [p for p in alignment.pairs if not quotation(p)]
    if len(kept) == len(alignment.pairs):
        return alignment
    return summary(kept, page_units, master_units, alignment.conflicts, alignment.anchored_units)
