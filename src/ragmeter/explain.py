"""A score's explanation as lines of text: what a failed check shows.

The three RAGAS metrics get a view of their own, built from the keys of their explanations (so it
holds whatever their options): the unsupported statements before the supported ones, the
questions generated from the answer, the context sentences that were not needed; the metrics
read off the claim table list each claim with what supports it, and ``claim_fate`` says where
a claim was lost or from where it came. Every other key, a plugin metric's included, is listed
as it is, so nothing the metric explained is hidden.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from typing import Any, Literal

from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.text import passage_sentences

INDENT = "  "


def number(value: float) -> str:
    return f"{value:.4g}"


def explain(score: Score, sample: Sample) -> list[str]:
    """The explanation of ``score`` (a score of ``sample``), one line per item, unindented."""
    rest = dict(score.explanation)
    lines: list[str] = []
    if _list_of(rest.get("statements"), dict):
        lines += _statements(rest.pop("statements"))
    if _list_of(rest.get("generated_questions"), dict):
        lines += _questions(rest.pop("generated_questions"), rest.pop("mean_similarity", None))
    if _list_of(rest.get("extracted_sentences"), str):
        lines += _sentences(rest, sample)
    for side in ("answer", "reference"):
        if _list_of(rest.get(f"{side}_claims"), dict):
            claims = rest.pop(f"{side}_claims")
            lines.append(f"{side} claims ({len(claims)}):")
            lines += [INDENT + _item(claim, "claim") for claim in claims]
    for key, value in rest.items():
        lines += _plain(key, value)
    return lines


def _list_of(value: Any, kind: type) -> bool:
    """Whether ``value`` has the shape a view expects (a plugin metric may reuse a key name)."""
    return isinstance(value, list) and all(isinstance(item, kind) for item in value)


def _statements(statements: list[dict[str, Any]]) -> list[str]:
    """Faithfulness: each statement with its verdict's probability or reason."""
    lines = []
    for kind, yes in (("unsupported", False), ("supported", True)):
        found = [s for s in statements if (s.get("verdict") == "yes") == yes]
        if found:
            lines.append(f"{kind} statements ({len(found)} of {len(statements)}):")
            lines += [INDENT + _item(s, "statement", skip={"verdict"}) for s in found]
    return lines


def _questions(questions: list[dict[str, Any]], mean: float | None) -> list[str]:
    """Answer relevance: the questions the judge thought the answer answers."""
    heading = "questions generated from the answer"
    if mean is not None:
        heading += f" (mean similarity to the question {number(mean)})"
    return [heading + ":", *[INDENT + _item(q, "question") for q in questions]]


def _sentences(rest: dict[str, Any], sample: Sample) -> list[str]:
    """Context relevance: the sentences needed, then those that were not.

    The explanation names only the needed sentences; the others are found by splitting the
    contexts as the metric does. If that gives another count than the metric saw (the contexts
    were cut before judging), only the needed ones are listed.
    """
    needed: list[str] = rest.pop("extracted_sentences")
    total = rest.pop("context_sentences", None)
    p_needed = rest.pop("p_needed", None)
    p_new = rest.pop("p_new_information", None) or {}
    bar = rest.pop("repeat_bar", None)
    rest.pop("insufficient_information", None)  # said by "needed sentences (0 of N)"
    skipped = rest.pop("skipped", None) if _list_of(rest.get("skipped"), dict) else None
    # Split by the language the metric split by; a score made before languages were told
    # apart was split by English rules.
    language = rest.get("language")
    sentences = passage_sentences(sample.contexts, language if isinstance(language, str) else "en")
    of = f" of {total}" if total is not None else ""
    lines = [f"needed sentences ({len(needed)}{of}):"]
    if total != len(sentences):
        lines += [INDENT + f"- {json.dumps(s, ensure_ascii=False)}" for s in needed]
        if skipped:  # not found by position: listed as the metric gave them
            rest["skipped"] = skipped
        return lines
    # A screen's skipped sentences were never asked (P(needed) None): said how they were ruled
    # out instead, in the order the metric listed them.
    ruled_out = iter(skipped or [])
    left = Counter(needed)
    not_needed = []
    for index, sentence in enumerate(sentences):
        details: dict[str, Any] = {}
        if isinstance(p_needed, list) and index < len(p_needed):
            if p_needed[index] is None and skipped:
                entry = next(ruled_out, {})
                details = {"skipped by": entry.get("by", "a screen")} | {
                    k: v for k, v in entry.items() if k not in ("sentence", "by")
                }
            else:
                details["p_needed"] = p_needed[index]
        if str(index) in p_new:
            details["p_new_information"] = p_new[str(index)]
        line = INDENT + _item({"sentence": sentence, **details}, "sentence")
        if left[sentence] > 0:
            left[sentence] -= 1
            lines.append(line)
        else:
            not_needed.append(line)
    if not_needed:
        lines += [f"sentences not needed ({len(not_needed)}{of}):", *not_needed]
    if bar is not None:
        lines.append(f"a needed sentence after the first counts only at p_needed >= {bar}")
    return lines


def _item(entry: dict[str, Any], text_key: str, skip: Collection[str] = ()) -> str:
    """``- "text" (name value, ...)``: an entry's text, quoted, then its other fields."""
    text = json.dumps(entry.get(text_key, ""), ensure_ascii=False)
    details = ", ".join(
        f"{key} {_value(value)}"
        for key, value in entry.items()
        if key != text_key and key not in skip
    )
    return f"- {text}" + (f" ({details})" if details else "")


def _plain(key: str, value: Any) -> list[str]:
    if isinstance(value, list) and value:
        return [f"{key}:", *[INDENT + f"- {_value(item)}" for item in value]]
    return [f"{key}: {_value(value)}"]


def _value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return number(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def claim_rows(scores: Collection[Score]) -> dict[str, list[dict[str, Any]]]:
    """The claims of one sample's claim tables, by side ("answer", "reference"): one row per
    claim, merged over ``scores`` (each metric explains the blocks it asked for), in order."""
    merged: dict[str, dict[str, dict[str, Any]]] = {"answer": {}, "reference": {}}
    for score in scores:
        for side, claims in merged.items():
            for row in score.explanation.get(f"{side}_claims", []):
                claims.setdefault(row["claim"], {}).update(row)
    return {side: list(claims.values()) for side, claims in merged.items()}


Tone = Literal["good", "bad", "warn", ""]
"""How a claim's fate reads: as it should be, a fault, a fault the retrieval led to, or
neither (not checked, or nothing to say)."""


def claim_fate(side: str, row: dict[str, Any], threshold: float = 0.5) -> tuple[str, Tone]:
    """Where one claim (a row of ``claim_rows``) went, and how that reads: a reference claim in
    no chunk was lost by the retriever, one in a chunk but not in the answer by the generator;
    an answer claim the reference does not support is wrong, and hallucinated when no chunk
    supports it either. A check counts as a Yes at ``threshold``; what no score checked is not
    said."""

    def said(key: str) -> bool | None:
        value = row.get(key)
        if isinstance(value, list):
            value = max(value, default=0.0)
        return None if value is None else value >= threshold

    fates = _REFERENCE_FATES if side == "reference" else _ANSWER_FATES
    against = "answer" if side == "reference" else "reference"
    return fates[said(f"p_in_{against}"), said("p_in_chunks")]


def fates_summary(fates: Collection[str], threshold: float = 0.5) -> str:
    """``claims (Yes at P >= 0.5): 2 correct; 1 hallucinated (wrong, in no chunk)``."""
    counted = "; ".join(f"{count} {fate}" for fate, count in Counter(fates).items())
    return f"claims (Yes at P >= {threshold}): {counted}"


_REFERENCE_FATES: dict[tuple[bool | None, bool | None], tuple[str, Tone]] = {
    # (in the answer, in some chunk): None where no score checked it
    (True, True): ("in the answer", "good"),
    (True, False): ("in the answer, in no chunk", "good"),
    (True, None): ("in the answer", "good"),
    (False, True): ("lost by the generator (in a chunk, not in the answer)", "bad"),
    (False, False): ("lost by the retriever (in no chunk)", "warn"),
    (False, None): ("not in the answer", "bad"),
    (None, True): ("in a chunk", ""),
    (None, False): ("lost by the retriever (in no chunk)", "warn"),
    (None, None): ("not checked", ""),
}
_ANSWER_FATES: dict[tuple[bool | None, bool | None], tuple[str, Tone]] = {
    # (supported by the reference, in some chunk)
    (True, True): ("correct", "good"),
    (True, False): ("correct, in no chunk (the generator's own knowledge)", "good"),
    (True, None): ("correct", "good"),
    (False, True): ("wrong, taken from a chunk", "warn"),
    (False, False): ("hallucinated (wrong, in no chunk)", "bad"),
    (False, None): ("wrong", "bad"),
    (None, True): ("in a chunk", ""),
    (None, False): ("in no chunk", ""),
    (None, None): ("not checked", ""),
}
