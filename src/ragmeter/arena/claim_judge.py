"""Pairwise decisions from claims: the ``claims`` method of ``arena judge`` and ``arena agreement``.

A small judge asked which of two long answers is better is near chance, while on one claim
against one text it is reliable (docs/agreement.md). This method asks only the latter: each
answer's claim table (``ragmeter.claims.claim_table``) against the pair's reference answer and
its passages, and decides from what the tables say:

- precision: the share of the answer's claims that the reference supports (correct); recall:
  the share of the reference's claims that the answer states (complete); each counted by its
  probability and combined into F1, as answer correctness counts them;
- unsupported: the share of the answer's claims that neither the reference nor any passage
  supports (RAGChecker's hallucination: wrong, and in no chunk), when the pair has passages.

An answer's score is its F1 minus its unsupported share. An invented claim costs twice (it lowers
precision and is unsupported), a claim that a passage supports but the reference leaves out only
its share of precision: the arena rubric's order, truthfulness first, then helpfulness. Without
passages the score is the F1, since nothing then tells an invented claim from a true one the
reference leaves out.

The better score wins unless the difference is within noise, where noise is what the judge's
probabilities leave open. Were each check a Yes with its probability, the variance of a score
is, to first order (the delta method), the sum over its checks of (d score / d check)^2 p (1 - p)
(an answer claim's grounding is read as one check, at the probability of its best passage): a
few uncertain checks move the score of a short answer more than that of a long one. A pair
whose difference is within one standard error of that difference (the two answers' variances
added) is a tie: the one-standard-error rule (Breiman et al., 1984), fixed in advance and fitted
to no labels. When every check is certain the margin is 0 and any difference decides.

The checks are those answer correctness asks (the same prompt, claim and text), so the call
cache answers any that ``meta ragchecker`` or an evaluation asked already. Each answer's figures
are stored by content: an answer that appears in several pairs is checked once.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final

import numpy as np

from ragmeter.arena.battles import AnswerClaims, Battle, ClaimDecision, battle
from ragmeter.arena.data import Label, Pair
from ragmeter.claims import (
    CLAIM_RULES,
    SHORT_CLAIM_RULE,
    ClaimTable,
    Part,
    claim_prompts,
    claim_table,
)
from ragmeter.cluster import RayPool, keyed_on_cluster
from ragmeter.judges.base import Judge, identity_of
from ragmeter.metrics.answer_correctness import f1
from ragmeter.metrics.claim_metric import best_in_chunks
from ragmeter.sample import Sample
from ragmeter.score import Score, Unscorable
from ragmeter.session import JudgeSession, measured
from ragmeter.store import ScoreStore

NAME = "arena.claims"
"""What each answer's stored figures are recorded as."""

CLAIMS: Final = "sentences"
SHORT_CLAIMS: Final = "with_question"
"""The answers' and the reference's own sentences, a short one checked as the answer to the
question, as answer correctness makes and checks them by default: the same checks, so the call
cache shares them."""

SCORE_RULE = "claims pairwise v1: F1 minus the unsupported share; delta-method variance"
"""What an answer's figures are, in words: part of each stored figure's key and of the method's
version, so figures are not reused once the rule changes. Change it whenever they change."""

TIE_WITHIN = 1.0
"""Standard errors of the difference within which a pair is a tie (the one-standard-error rule)."""

BASE: tuple[Part, ...] = ("answer_in_reference", "reference_in_answer")


def _rules() -> list[Any]:
    """What makes an answer's figures besides the answer and the judge: the prompts, the claim
    rules and the score rule."""
    prompts = [p.version for p in claim_prompts(CLAIMS)]
    return [prompts, CLAIM_RULES, SHORT_CLAIM_RULE, SHORT_CLAIMS, SCORE_RULE]


def version() -> str:
    """The method's version, as the run record gives it: its rules and the tie margin."""
    return hashlib.sha256(json.dumps([*_rules(), TIE_WITHIN]).encode()).hexdigest()[:12]


def check_pairs(pairs: Sequence[Pair]) -> None:
    """Refuse pairs this method cannot decide fairly, before any check is asked."""
    if any(p.design == "reference" for p in pairs):
        raise ValueError(
            "the claims method checks both answers against a reference answer, and in the "
            "reference design one of them is the reference (it would always win): judge the "
            "complete design, or use the generative method"
        )


# --- one answer -------------------------------------------------------------------------------


def answers_of(pair: Pair) -> tuple[Sample, Sample]:
    """Answers A and B as samples: each with the pair's question, reference and passages. They
    carry no id, so each is known by its content wherever it appears."""
    return tuple(  # type: ignore[return-value]
        Sample(
            question=pair.question,
            answer=answer,
            reference=pair.reference,
            contexts=list(pair.contexts),
        )
        for answer in (pair.answer_a, pair.answer_b)
    )


def answer_key(answer: Sample, judge: Judge) -> str:
    """Keyed by what decides the figures: the answer and what it is checked against, the
    judge's identity and the method's version (but not the tie margin, applied later)."""
    material = json.dumps([*_rules(), identity_of(judge).digest, answer.digest])
    return hashlib.sha256(material.encode()).hexdigest()


def answer_figures(table: ClaimTable) -> AnswerClaims:
    """Precision, recall, F1, the unsupported share, the score and its standard error, read
    off one answer's table (see the module's docstring for the rule and the noise)."""
    assert table.answer_in_reference is not None and table.reference_in_answer is not None
    correct, given = table.answer_in_reference, table.reference_in_answer
    claims, reference_claims = len(correct), len(given)
    precision, recall = float(correct.mean()), float(given.mean())
    total = precision + recall
    # d F1 / d precision and d F1 / d recall. At precision = recall = 0 every check is a
    # certain No (p (1 - p) = 0), so what weight they get does not matter.
    by_precision = 2 * recall**2 / total**2 if total else 0.0
    by_recall = 2 * precision**2 / total**2 if total else 0.0
    score = f1(precision, recall)
    weight_correct = np.full(claims, by_precision / claims)
    variance = float(((by_recall / reference_claims) ** 2 * given * (1 - given)).sum())
    unsupported = None
    if table.chunks:
        assert table.answer_in_chunks is not None
        grounded = best_in_chunks(table.answer_in_chunks)
        unsupported = float(((1 - correct) * (1 - grounded)).mean())
        score -= unsupported
        # An answer claim's check against the reference also moves the unsupported share.
        weight_correct += (1 - grounded) / claims
        variance += float((((1 - correct) / claims) ** 2 * grounded * (1 - grounded)).sum())
    variance += float((weight_correct**2 * correct * (1 - correct)).sum())
    return AnswerClaims(
        precision=precision,
        recall=recall,
        f1=f1(precision, recall),
        unsupported=unsupported,
        score=score,
        standard_error=math.sqrt(variance),
        answer_claims=claims,
        reference_claims=reference_claims,
    )


def score_answer(answer: Sample, judge: Judge, *, retries: int = 2) -> Score:
    """One answer's figures as a ``Score`` (its value the answer's score), explained with the
    figures and the claim table; unscored, with the reason, when the table cannot be made."""
    session = JudgeSession(judge, retries=retries)

    def measure() -> tuple[float, dict[str, Any]]:
        if not (answer.reference or "").strip():
            raise Unscorable("the pair has no reference answer to check the answers against")
        parts = BASE + (("answer_in_chunks",) if answer.contexts else ())
        table = claim_table(answer, parts, CLAIMS, session, SHORT_CLAIMS)
        figures = answer_figures(table)
        evidence = {**table.evidence(), "checks": table.checks}
        return figures.score, {"figures": figures.model_dump(), **evidence}

    return measured(answer.key, NAME, session, measure)


class AnswerJudge:
    """Scores answers with one judge: what runs where the judge is (a thread, or a Ray worker
    that loaded its own). Returns the answer's key, worked out once judging ended, and its
    score."""

    def __init__(self, judge: Judge, _embedder: object = None, *, retries: int) -> None:
        self.judge = judge
        self.retries = retries

    def __call__(self, answer: Sample) -> tuple[str, Score]:
        score = score_answer(answer, self.judge, retries=self.retries)
        return answer_key(answer, self.judge), score


# --- the pair ---------------------------------------------------------------------------------


def decide(
    a: AnswerClaims, b: AnswerClaims, within: float = TIE_WITHIN
) -> tuple[Label, ClaimDecision]:
    """The verdict (-1 A, 1 B, 0 a tie within ``within`` standard errors) and its figures."""
    difference = b.score - a.score
    margin = within * math.hypot(a.standard_error, b.standard_error)
    verdict: Label = 0 if abs(difference) <= margin else (1 if difference > 0 else -1)
    return verdict, ClaimDecision(a=a, b=b, difference=difference, margin=margin)


def claims_battle(pair: Pair, score_a: Score, score_b: Score) -> Battle:
    """The pair's battle from its answers' scores; unscored when either is."""
    missing = [
        f"answer {side}: {score.unscored_reason}"
        for side, score in (("A", score_a), ("B", score_b))
        if not score.scored
    ]
    if missing:
        return battle(pair, verdict=None, unscored_reason="; ".join(missing), orders=[])
    verdict, decision = decide(
        *(AnswerClaims.model_validate(s.explanation["figures"]) for s in (score_a, score_b))
    )
    return battle(pair, verdict=verdict, orders=[], claims=decision)


def judge_pair_by_claims(
    pair: Pair,
    judge: Judge,
    store: ScoreStore | None = None,
    *,
    retries: int = 2,
    fresh: list[Score] | None = None,
) -> Battle:
    """Decide a pair from its answers' claims, reusing scored answers from ``store`` and
    committing each new one to it (and adding it to ``fresh``, for what the run cost)."""
    scores = []
    for answer in answers_of(pair):
        key = answer_key(answer, judge)
        score = store.reusable(key) if store else None
        if score is None:
            key, score = AnswerJudge(judge, retries=retries)(answer)
            if store:
                store.put(key, score)
            if fresh is not None:
                fresh.append(score)
        scores.append(score)
    return claims_battle(pair, *scores)


def judge_by_claims_on_cluster(
    cluster: RayPool,
    pairs: Sequence[Pair],
    store: ScoreStore,
    *,
    retries: int,
    on_battle: Callable[[Battle], None] | None,
    fresh: list[Score],
) -> list[Battle]:
    """Every pair on Ray workers: each distinct answer is scored once, and a pair decided once
    both its answers are in; each answer checked now (not taken from ``store``) is added to
    ``fresh``."""
    answers = {p.id: answers_of(p) for p in pairs}
    units = list({a.digest: (a,) for both in answers.values() for a in both}.values())
    pairs_of: dict[str, list[Pair]] = {}
    for pair in pairs:
        for digest in dict.fromkeys(a.digest for a in answers[pair.id]):
            pairs_of.setdefault(digest, []).append(pair)
    scores: dict[str, Score] = {}
    battles: dict[str, Battle] = {}
    for position, score, reused in keyed_on_cluster(
        cluster,
        store,
        units,
        lambda judge, answer: answer_key(answer, judge),
        partial(AnswerJudge, retries=retries),
        lambda answer: (answer.key, NAME),
    ):
        digest = units[position][0].digest
        scores[digest] = score
        if not reused:
            fresh.append(score)
        for pair in pairs_of[digest]:
            both = answers[pair.id]
            if all(a.digest in scores for a in both):
                battles[pair.id] = claims_battle(pair, *(scores[a.digest] for a in both))
                if on_battle:
                    on_battle(battles[pair.id])
    return [battles[p.id] for p in pairs]
