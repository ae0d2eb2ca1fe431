"""A rewritten copy's evidence (洗稿): aligned sentence pairs, never a verbatim passage.

The rewrite detector (:mod:`tracker.matching.rewrites`) stores a rewritten copy as a match of
``method`` ``"rewrite"`` whose spans are its aligned sentence pairs: the page's sentence
(``text``) beside the master's (``master_text``), with the words the page swapped for the
master's (same canonical code, other word: ``swapped``), its ``cosine`` and ``dice``. A
rewritten copy shares no long run with its master, so its longest "copied passage" would
prove nothing: the report, the notices and their drafts show instead the few most telling
pairs (:func:`telling_pairs`), and the report marks in each the words that differ
(:func:`marked`).

**Most telling.** The pairs plainly the same sentence in other words: of at least
``MIN_PAIR_CHARS`` characters (a sentence, not a clause of three words), by the detector's own
similarity (cosine + Dice of their canonical words), those with words swapped first among
equals, then the longest. Those shown are put back in page order.

**Marks.** Both sentences are cut into words with the detector's segmenter
(:func:`tracker.fingerprints.simhash.cut_lines`: the swapped words are its words) and aligned
with :class:`difflib.SequenceMatcher` (Ratcliff/Obershelp: the longest common run of words
first, then recursively on either side). Words in a common run are ``SAME``; of the others, a
word the detector names a swap is ``SWAPPED``, a word only the page has ``ADDED``, a word only
the master has ``DROPPED``. Templates draw the states (:mod:`tracker.html`); nothing here is
HTML.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher
from typing import Any

#: The ``method`` of a rewritten copy's match, as :data:`tracker.matching.rewrites.METHOD`
#: names it (not imported: the reports do not load the detector).
REWRITE = "rewrite"
VERBATIM = "verbatim"
PAIRS_SHOWN = 3  # pairs per page and work in the report, per URL in a notice
MIN_PAIR_CHARS = 12  # a shorter page sentence is a clause: shown only when nothing longer is
PAIR_CHARS = 200  # each side of a pair is cut to this many characters

SAME, SWAPPED, ADDED, DROPPED = "same", "swapped", "added", "dropped"
Segment = tuple[str, str]  # text, and its state


def is_rewrite(match: dict[str, Any]) -> bool:
    """Whether a stored match is a rewritten copy."""
    return match.get("method") == REWRITE


def method_of(matches: Iterable[dict[str, Any]]) -> str:
    """``verbatim``, ``rewrite`` or ``verbatim+rewrite``: how these matches (a page's, of one
    work or all) copy."""
    kinds = {REWRITE if is_rewrite(m) else VERBATIM for m in matches}
    return "+".join(k for k in (VERBATIM, REWRITE) if k in kinds)


def rewritten(matches: Iterable[dict[str, Any]]) -> list[str]:
    """The doc ids these matches find rewritten."""
    return sorted({str(m["doc_id"]) for m in matches if is_rewrite(m)})


def aligned_count(matches: Iterable[dict[str, Any]]) -> int:
    """How many sentence pairs the rewritten copies among ``matches`` align."""
    return sum(len(m.get("spans") or ()) for m in matches if is_rewrite(m))


def _clean(text: Any) -> str:
    """A sentence as shown: whitespace collapsed, cut to ``PAIR_CHARS``."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= PAIR_CHARS else text[: PAIR_CHARS - 1] + "…"


def _number(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def telling_pairs(matches: Iterable[dict[str, Any]], n: int = PAIRS_SHOWN) -> list[dict[str, Any]]:
    """The ``n`` most telling aligned sentence pairs of the rewritten copies among ``matches``
    (see the module's docstring), in page order: ``{"doc_id", "text", "master_text",
    "swapped": [[page word, master word]]}``."""
    found = []
    for match in matches:
        if not is_rewrite(match):
            continue
        for span in match.get("spans") or ():
            text, master = _clean(span.get("text")), _clean(span.get("master_text"))
            if not text or not master:
                continue
            swapped = [
                [str(pair[0]), str(pair[1])]
                for pair in span.get("swapped") or ()
                if isinstance(pair, list | tuple) and len(pair) == 2
            ]
            rank = (
                len(text) < MIN_PAIR_CHARS,
                -(_number(span.get("cosine")) + _number(span.get("dice"))),
                not swapped,
                -len(text),
            )
            where = (str(match["doc_id"]), _number(span.get("page_start")))
            pair = {"doc_id": str(match["doc_id"]), "text": text, "master_text": master,
                    "swapped": swapped}  # fmt: skip
            found.append((rank, where, pair))
    found.sort(key=lambda item: item[0])
    return [pair for _, _, pair in sorted(found[:n], key=lambda item: item[1])]


def _words(text: str) -> list[str]:
    """``text`` cut into the detector's words (its characters, if a segmenter loses any)."""
    from tracker.fingerprints.simhash import cut_lines

    words = [w for w in cut_lines([text]) if w]
    return words if "".join(words) == text else list(text)


def marked(pair: dict[str, Any]) -> tuple[list[Segment], list[Segment]]:
    """The page's sentence and the master's of ``pair`` as segments: the words both share
    ``SAME``, the words swapped ``SWAPPED``, those only the page has ``ADDED``, those only the
    master has ``DROPPED`` (runs of one state joined)."""
    page, master = str(pair.get("text") or ""), str(pair.get("master_text") or "")
    ours, theirs = _words(page), _words(master)
    swaps = [p for p in pair.get("swapped") or () if isinstance(p, list | tuple) and len(p) == 2]
    page_swaps = {str(p[0]) for p in swaps if p[0]}
    master_swaps = {str(p[1]) for p in swaps if p[1]}
    left: list[Segment] = []
    right: list[Segment] = []
    matcher = SequenceMatcher(None, ours, theirs, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            left.append(("".join(ours[a1:a2]), SAME))
            right.append(("".join(theirs[b1:b2]), SAME))
            continue
        left += _differing("".join(ours[a1:a2]), page_swaps, ADDED)
        right += _differing("".join(theirs[b1:b2]), master_swaps, DROPPED)
    return _joined(left), _joined(right)


def _differing(text: str, swaps: set[str], other: str) -> list[Segment]:
    """A run of words one side does not share: the swapped words in it ``SWAPPED`` (found as
    text, longest first: the detector joins a number and its measure word, 四百三十名, that
    the segmenter cuts in three), the rest ``other``."""
    if not text:
        return []
    swapped = [False] * len(text)
    for word in sorted(swaps, key=len, reverse=True):
        at = str.find(text, word)
        while at >= 0:
            if not any(swapped[at : at + len(word)]):
                swapped[at : at + len(word)] = [True] * len(word)
            at = str.find(text, word, at + len(word))
    return [(ch, SWAPPED if flag else other) for ch, flag in zip(text, swapped, strict=True)]


def _joined(segments: list[Segment]) -> list[Segment]:
    """Adjacent segments of one state as one; whitespace-only ones take their neighbours'."""
    joined: list[Segment] = []
    for text, state in segments:
        if not text:
            continue
        if joined and (joined[-1][1] == state or not text.strip()):
            joined[-1] = (joined[-1][0] + text, joined[-1][1])
        else:
            joined.append((text, state))
    return joined


def plain_marked(pair: dict[str, Any], open_mark: str, close_mark: str) -> tuple[str, str]:
    """The pair as two lines of text (a notice), each swapped word between ``open_mark`` and
    ``close_mark``."""
    page, master = marked(pair)

    def line(segments: list[Segment]) -> str:
        return "".join(
            f"{open_mark}{text}{close_mark}" if state == SWAPPED else text
            for text, state in segments
        )

    return line(page), line(master)
