"""A size limit on what a sample puts in front of the judge.

An oversized field (a scraped page pasted as the answer, thousands of retrieved passages) would
overflow a local judge's context window, or cost a fortune on a paid one, or bury an injection
deep in the text. Each field is cut to ``max_chars`` before the metrics see it, so the metric's
own steps (sentence splitting, statement counts) work on exactly the text the judge sees, and the
cut is written into the score's explanation.
"""

from __future__ import annotations

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
