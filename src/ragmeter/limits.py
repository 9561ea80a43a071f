"""Size limits on what a sample puts in front of the judge.

An oversized field (a scraped page pasted as the answer, thousands of retrieved passages) would
overflow a local judge's context window, or cost a fortune on a paid one, or bury an injection
deep in the text. Each field is cut to ``max_chars`` before the metrics see it, so the metric's
own steps (sentence splitting, statement counts) work on exactly the text the judge sees, and the
cut is written into the score's explanation.

A context that fits that limit may still exceed the judge's window beside the rest of a prompt;
``packed`` cuts it into parts that each fit, which the metrics read one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.sample import Sample

MAX_INPUT_CHARS = 20_000
"""About 5,000 tokens per field: fits the offline judge's 8,192-token window with the prompt."""


class InputTruncatedWarning(UserWarning):
    """Some sample fields were longer than the limit and were cut."""


def _cut(text: str, keep: int) -> str:
    return f"{text[:keep]} [… {len(text) - keep} more characters cut]"


def _fit_contexts(contexts: list[str], max_chars: int) -> tuple[list[str], dict[str, int]] | None:
    """The passages in order until ``max_chars`` characters in all; None if they fit."""
    total = sum(len(c) for c in contexts)
    if total <= max_chars:
        return None
    kept: list[str] = []
    left = max_chars
    for passage in contexts:
        if left <= 0:
            break
        kept.append(passage if len(passage) <= left else passage[:left])
        left -= len(passage)
    kept[-1] = f"{kept[-1]} [… {total - max_chars} more characters cut]"
    return kept, {
        "chars": total,
        "kept": max_chars,
        "passages": len(contexts),
        "kept_passages": len(kept),
    }


def fit_sample(sample: Sample, max_chars: int | None) -> tuple[Sample, dict[str, Any]]:
    """The sample with each field cut to ``max_chars`` characters (the contexts counted
    together), and what was cut, by field; the sample itself and ``{}`` when nothing was.

    The cut sample keeps the original's key, so its results are filed under the same id.
    """
    if not max_chars:
        return sample, {}
    updates: dict[str, Any] = {}
    cut: dict[str, Any] = {}
    for field in ("question", "answer", "reference"):
        value = getattr(sample, field)
        if value is not None and len(value) > max_chars:
            updates[field] = _cut(value, max_chars)
            cut[field] = {"chars": len(value), "kept": max_chars}
    fitted = _fit_contexts(sample.contexts, max_chars)
    if fitted is not None:
        updates["contexts"], cut["contexts"] = fitted
    if not updates:
        return sample, {}
    return sample.model_copy(update={**updates, "id": sample.key}), cut


WINDOW_SHARE = 0.8
"""The share of a judge's window that the context of one prompt may fill: the instruction, the
other data and the judge's chat template need the rest."""
CHARS_PER_TOKEN_AT_WORST = 3
"""Characters per token when sizing text for a window without the judge's tokenizer: English
runs about four, and erring short only costs one part more."""
_SENTENCE_OVERHEAD = 8
"""Characters a sentence costs beside its own: a number such as "[12] " and a line break."""


Count = Callable[[str], int]
"""A judge's token count of a text (``judges.base.token_counter``)."""
_SENTENCE_OVERHEAD_TOKENS = 3
"""The same in tokens."""


def context_budget(window: int | None, *beside: str, count: Count | None = None) -> int | None:
    """How much context fits in one prompt to a judge whose window is ``window`` tokens, beside
    the texts ``beside`` (the question, the answer, a claim): in tokens where the judge can
    ``count`` them, else in characters at ``CHARS_PER_TOKEN_AT_WORST`` (a script that takes
    more tokens a character, such as Devanagari, then overflows the window: only the count
    sees it). None where the window is not known, and the whole context goes in one prompt."""
    if window is None:
        return None
    if count is not None:
        return int(window * WINDOW_SHARE) - sum(count(t) for t in beside)
    return int(window * WINDOW_SHARE * CHARS_PER_TOKEN_AT_WORST) - sum(len(t) for t in beside)


def packed(
    passages: Sequence[Sequence[str]], budget: int | None, count: Count | None = None
) -> list[list[list[str]]]:
    """The passages, each given as its sentences, in parts of at most ``budget`` (characters,
    or tokens as ``count`` counts them, as ``context_budget`` gave it): whole passages in order
    while they fit, a passage longer than a part cut between its sentences. One part for a
    ``budget`` of None; a sentence longer than a part is a part of its own (the judge then
    refuses it, and the verdict is unscored with that reason)."""
    if budget is None:
        return [[list(passage) for passage in passages]]

    def size(sentences: Sequence[str]) -> int:
        if count is None:
            return sum(len(s) + _SENTENCE_OVERHEAD for s in sentences)
        return sum(count(s) + _SENTENCE_OVERHEAD_TOKENS for s in sentences)

    pieces = [p for passage in passages for p in _cut_between_sentences(passage, budget, size)]
    parts: list[list[list[str]]] = [[]]
    used = 0
    for piece in pieces:
        cost = size(piece)
        if parts[-1] and used + cost > budget:
            parts.append([])
            used = 0
        parts[-1].append(piece)
        used += cost
    return parts


def _cut_between_sentences(
    passage: Sequence[str], budget: int, size: Callable[[Sequence[str]], int]
) -> list[list[str]]:
    pieces: list[list[str]] = [[]]
    for sentence in passage:
        if pieces[-1] and size([*pieces[-1], sentence]) > budget:
            pieces.append([])
        pieces[-1].append(sentence)
    return pieces
