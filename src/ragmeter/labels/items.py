"""The items a person labels, read from an ``evaluate`` run, and the order they are shown in.

Two kinds: a sample rated on one metric (the judge's value is the metric's 0-1 score), or a
claim of faithfulness (a statement as the run checked it, the judge's value its P(supported)),
labelled supported, not supported or "can't tell" beside the sample's passages.

Orders: ``random`` (the default) is a seeded shuffle, the same for every person with the same
seed, so that people label the same items first and their agreement can be measured; the items
labelled are then a random draw of the run, as prediction-powered inference (``calibrate``)
needs. ``least-sure`` puts first the items whose judge's value is nearest 0.5, where a head
learns most (``tune``), and biases any mean taken over the labelled items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.labels.store import ItemKey
from ragmeter.language import language_of
from ragmeter.result import Result
from ragmeter.text import WORD, split_sentences

Order = Literal["random", "least-sure"]
ORDERS: tuple[Order, ...] = ("random", "least-sure")
CLAIM_METRIC = "faithfulness"
"""The metric whose claims are labelled one by one: ``tune`` fits its verdict head on them."""
MARKED = 2
"""Sentences marked as sharing the most words with a claim, at most."""
MARKED_SHARE = 1 / 3
"""The share of a claim's words (those not among the commonest) a sentence must hold to be
marked."""
_COMMON_WORDS = (
    "a an and are as at be been but by for from had has have he her his i if in into is it its "
    "of on or our she so than that the their them then there these they this to was we were "
    "what when which who will with you your"
)
_COMMON = frozenset(_COMMON_WORDS.split())


@dataclass(frozen=True)
class Item:
    key: ItemKey
    question: str
    answer: str
    contexts: tuple[str, ...]
    judge: float
    """The judge's value: the metric's score, or the claim's P(supported)."""
    judge_says: str
    """The judge's verdict in words, as shown once the person has answered."""
    language: str = "en"
    """What the passages are split into sentences by (``evidence``): the language the metric
    split the sample's texts by."""


def rating_items(
    result: Result, metric: str, passages: Mapping[str, Sequence[str]]
) -> tuple[list[Item], list[str]]:
    """Every sample the judge scored on ``metric``, in the run's order, shown with its
    ``passages``; and what was left out."""
    if metric not in result.metrics:
        raise ValueError(f"{metric!r} is not a metric of the run ({', '.join(result.metrics)})")
    samples = {sample.key: sample for sample in result.samples}
    briefs = [brief for brief in result.briefs() if brief.metric == metric]
    items = [
        Item(
            key=ItemKey("rating", brief.sample_id, metric),
            question=samples[brief.sample_id].question,
            answer=samples[brief.sample_id].answer,
            contexts=tuple(passages.get(brief.sample_id, ())),
            judge=float(brief.value),
            judge_says=f"{brief.value:.2f}",
        )
        for brief in briefs
        if brief.value is not None and brief.sample_id in samples
    ]
    if not items:
        raise ValueError(f"the judge scored no sample of the run on {metric}: nothing to rate")
    notes = []
    unscored = sum(brief.value is None for brief in briefs)
    if unscored:
        notes.append(
            f"{unscored} sample(s) the judge left unscored on {metric} are not shown: "
            "calibrate estimates the people's mean over the scored ones"
        )
    return items, notes


def claim_items(
    result: Result, passages: Mapping[str, Sequence[str]], threshold: float = 0.5
) -> tuple[list[Item], list[str]]:
    """Every claim faithfulness checked, sample by sample in the run's order, shown with its
    sample's ``passages``; a claim said twice in one answer is one item (``tune`` knows a claim
    by its sample and its text). A claim is supported in the judge's words at ``threshold``."""
    if CLAIM_METRIC not in result.metrics:
        raise ValueError(
            f"claims are faithfulness's statements, and this run has no faithfulness "
            f"({', '.join(result.metrics)}); rate samples instead (--metric)"
        )
    samples = {sample.key: sample for sample in result.samples}
    items: list[Item] = []
    seen: set[ItemKey] = set()
    for score in result.scores_for(CLAIM_METRIC):
        sample = samples.get(score.sample_id)
        statements = score.explanation.get("statements")
        if not score.scored or sample is None or not isinstance(statements, list):
            continue
        for statement in statements:
            if not isinstance(statement, dict) or not str(statement.get("statement", "")):
                continue
            key = ItemKey("claim", sample.key, CLAIM_METRIC, str(statement["statement"]))
            if key in seen:
                continue
            seen.add(key)
            judge = _p_supported(statement)
            items.append(
                Item(
                    key=key,
                    question=sample.question,
                    answer=sample.answer,
                    contexts=tuple(passages.get(sample.key, ())),
                    judge=judge,
                    judge_says=(
                        f"{'supported' if judge >= threshold else 'not supported'} "
                        f"(P(supported) {judge:.2f})"
                    ),
                    language=str(score.explanation.get("language") or language_of(sample)),
                )
            )
    if not items:
        raise ValueError(
            "the run's faithfulness scores list no statements to label (a run of an older "
            "version, or every sample unscored)"
        )
    return items, []


def _p_supported(statement: dict[str, Any]) -> float:
    """A statement's P(supported); a generated verdict (no probability) as 1 or 0."""
    found = statement.get("p_supported")
    if isinstance(found, int | float):
        return float(found)
    return 1.0 if statement.get("verdict") == "yes" else 0.0


def check_claims_metric(claims: bool, metric: str | None) -> None:
    """Claims are the claim metric's: another ``--metric`` with ``--claims`` is refused."""
    if claims and metric not in (None, CLAIM_METRIC):
        raise ValueError(f"claims are {CLAIM_METRIC}'s; --metric {metric} rates samples")


def ordered(items: Sequence[Item], order: Order, seed: int, threshold: float = 0.5) -> list[Item]:
    """``items`` shuffled with ``seed``, or least sure first (nearest the ``threshold`` the
    judge's value is decided at; ties in the shuffled order)."""
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: use {' or '.join(ORDERS)}")
    shuffled = [items[i] for i in np.random.default_rng(seed).permutation(len(items))]
    if order == "least-sure":
        rank = {item.key: i for i, item in enumerate(shuffled)}
        return sorted(shuffled, key=lambda item: (abs(item.judge - threshold), rank[item.key]))
    return shuffled


def order_text(order: Order, seed: int) -> str:
    """The order as the log records it with each label."""
    return f"random, seed {seed}" if order == "random" else "least-sure"


def _words(text: str) -> set[str]:
    return {word for word in WORD.findall(text.lower()) if word not in _COMMON}


def evidence(
    claim: str, contexts: Sequence[str], language: str = "en"
) -> list[list[dict[str, Any]]]:
    """Each passage as its sentences (split by ``language``'s rules), the few holding the most
    of the claim's words (at least ``MARKED_SHARE`` of them) marked: where to look first. The
    judge's verdict is one probability against all the passages together, so which sentence it
    leaned on is not known; the marks are the claim's own words."""
    wanted = _words(claim)
    passages = [split_sentences(context, language) or [context] for context in contexts]
    shares = [
        [len(wanted & _words(sentence)) / len(wanted) if wanted else 0.0 for sentence in passage]
        for passage in passages
    ]
    ranked = sorted(
        ((share, p, s) for p, row in enumerate(shares) for s, share in enumerate(row)),
        key=lambda found: (-found[0], found[1], found[2]),
    )
    marked = {(p, s) for share, p, s in ranked[:MARKED] if share >= MARKED_SHARE}
    return [
        [
            {"text": sentence, "marked": (p, s) in marked, "share": round(shares[p][s], 2)}
            for s, sentence in enumerate(passage)
        ]
        for p, passage in enumerate(passages)
    ]
