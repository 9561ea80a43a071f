"""Evidence that fits: the sentences of long passages that bear on a claim, within a token budget.

A claim checked against several long passages (five retrieved Wikipedia passages, thousands of
tokens in Devanagari) cannot always be shown whole to a small judge. Cutting the passages at the
first characters that fit drops whatever came last, often the sentence the claim came from.
``select_evidence`` keeps instead the sentences most related to the claim, in their passages'
order, until the budget is spent, and says what it left out.

Relatedness is the overlap of character trigrams weighted by how rare each is among the
passages' sentences (a cosine of IDF-weighted trigram sets): it reads every script alike, Hindi
and Chinese as English, needs no tokenizer or model, and a name or a number the claim shares
with one sentence weighs more than a word every sentence has.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragmeter.text import split_sentences

GAP = "…"
"""Shown between kept sentences of a passage that were not next to each other."""
_SPACE = re.compile(r"\s+")


def utf8_tokens(text: str) -> int:
    """A token count for a judge that cannot count its own: three bytes of UTF-8 a token, which
    errs long for English (about 4.5 bytes a token in the bundled judge's vocabulary) and is
    near the mark for Devanagari (2.8)."""
    return math.ceil(len(text.encode()) / 3)


@dataclass(frozen=True)
class Evidence:
    text: str
    """The passages as shown: whole, or their kept sentences (passages apart by a blank line)."""
    left_out: dict[str, int] | None = None
    """What was not shown, where anything was: sentences and tokens left out of how many, and
    the passages none of whose sentences was kept."""


def _trigrams(text: str) -> set[str]:
    folded = f" {_SPACE.sub(' ', text.casefold()).strip()} "
    return {folded[i : i + 3] for i in range(len(folded) - 2)}


def relatedness(claim: str, sentences: Sequence[str]) -> list[float]:
    """Each sentence's cosine with ``claim`` over IDF-weighted character trigrams (the IDF
    counted among ``sentences``), in 0-1."""
    return _cosines(claim, *_weighed(sentences))


def _weighed(sentences: Sequence[str]) -> tuple[list[set[str]], dict[str, float]]:
    """Each sentence's trigrams, and each trigram's IDF among them: read once for every text
    the sentences are compared with."""
    grams = [_trigrams(s) for s in sentences]
    seen = Counter(g for found in grams for g in found)
    return grams, {g: math.log((1 + len(grams)) / (1 + n)) + 1 for g, n in seen.items()}


def _cosines(wanted_text: str, grams: list[set[str]], idf: dict[str, float]) -> list[float]:
    wanted = _trigrams(wanted_text)
    wanted_norm = math.sqrt(sum(idf.get(g, 1.0) ** 2 for g in wanted)) or 1.0
    out = []
    for found in grams:
        norm = math.sqrt(sum(idf[g] ** 2 for g in found)) or 1.0
        shared = sum(idf[g] ** 2 for g in found & wanted)
        out.append(shared / (norm * wanted_norm))
    return out


def _fitting(sentence: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """The sentence, or where it alone is over the budget (a table or a list run together),
    its pieces of about a quarter of the budget each, cut between characters."""
    tokens = count(sentence)
    if tokens <= budget:
        return [sentence]
    size = max(1, len(sentence) * budget // (4 * tokens))
    return [sentence[i : i + size] for i in range(0, len(sentence), size)]


SHARED_SHARE = 0.75
"""The share of the budget spent on the sentences most related to what a claim's siblings
share (``shared_by``: its question), where one is given."""


def select_evidence(
    claim: str,
    passages: Sequence[str],
    budget: int,
    count: Callable[[str], int],
    language: str = "en",
    shared_by: str = "",
) -> Evidence:
    """``passages`` whole where they fit ``budget`` tokens (``count``), else their sentences
    most related to ``claim`` (split by ``language``'s rules) until the budget is spent.

    With ``shared_by`` (the question the claim answers), ``SHARED_SHARE`` of the budget goes
    first to the sentences most related to it, shown as a block that every claim of the
    question shares, so that a judge which keeps a read prefix reads it once for them all; the
    sentences most related to the claim itself follow, after ``GAP``. Within each block the
    sentences keep their passages' order, with ``GAP`` where sentences between them were left
    out."""
    whole = "\n\n".join(passages)
    total = count(whole)
    if total <= budget:
        return Evidence(whole)
    # (passage, sentence, piece): a sentence over the budget is shown in pieces.
    pieces = [
        (number, index, piece)
        for number, passage in enumerate(passages)
        for index, sentence in enumerate(split_sentences(passage, language))
        for piece in _fitting(sentence, budget, count)
    ]
    costs = [count(piece) + 1 for *_, piece in pieces]
    grams, idf = _weighed([piece for *_, piece in pieces])
    blocks: list[list[int]] = []
    used = 0
    # The shared block takes only what relates to the question; the claim's fills the budget.
    for wanted, spend, floor in (
        (shared_by, int(budget * SHARED_SHARE), 0.0),
        (claim, budget, -1.0),
    ):
        if not wanted:
            continue
        scores = _cosines(wanted, grams, idf)
        taken = {k for block in blocks for k in block}
        block = []
        # Most related first; among equals, the earlier.
        for k in sorted(range(len(pieces)), key=lambda k: (-scores[k], k)):
            if k not in taken and scores[k] > floor and used + costs[k] <= spend:
                block.append(k)
                used += costs[k]
        blocks.append(sorted(block))
    shown = [_shown(pieces, block) for block in blocks]
    kept = [k for block in blocks for k in block]
    sentences = {(number, index) for number, index, _ in pieces}
    left_out = {
        "sentences": len(sentences - {pieces[k][:2] for k in kept}),
        "of_sentences": len(sentences),
        "tokens": max(0, total - used),
        "of_tokens": total,
        "passages": len(passages) - len({pieces[k][0] for k in kept}),
    }
    return Evidence(f"\n\n{GAP} ".join(part for part in shown if part), left_out)


def _shown(pieces: Sequence[tuple[int, int, str]], block: Sequence[int]) -> str:
    """The pieces ``block`` keeps, by passage, a piece of the same sentence joined to the one
    before, a sentence left out marked by ``GAP``."""
    shown: dict[int, str] = {}
    previous = -2
    for k in block:
        number, index, piece = pieces[k]
        if number not in shown:
            shown[number] = piece
        elif k == previous + 1:
            shown[number] += piece if pieces[previous][1] == index else f" {piece}"
        else:
            shown[number] += f" {GAP} {piece}"
        previous = k
    return "\n\n".join(shown.values())
