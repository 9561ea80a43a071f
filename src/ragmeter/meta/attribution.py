"""AttributionBench: is a claim supported by its references? Measures the statement verifier that
faithfulness uses, against human attribution labels (accuracy and macro-F1)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from ragmeter.claims import SUPPORTED, answering
from ragmeter.cluster import (
    Executor,
    ModelRecipe,
    RayExecutor,
    RayPool,
    keyed_on_cluster,
    workers_for,
)
from ragmeter.evidence import Evidence, select_evidence, utf8_tokens
from ragmeter.judges import Judge, identity_of
from ragmeter.judges.base import token_counter
from ragmeter.language import detect_language, language_code
from ragmeter.score import Score
from ragmeter.session import JudgeSession, measured
from ragmeter.stats import best_threshold, f1, macro_f1, roc_auc
from ragmeter.store import ScoreStore

MAX_REFERENCE_TOKENS = 1200
"""References longer than this many of the judge's tokens are shown by their sentences most
related to the claim (``ragmeter.evidence``), so that a row fits a small judge's window and a
claim in a script of many tokens a character costs about what an English one does; each verdict
records what was left out, and the number of rows cut is reported."""


class Claim(BaseModel):
    id: str
    question: str
    claim: str
    references: list[str]
    label: bool
    """True when people judged the claim attributable to the references."""
    source: str = ""
    """Where the row comes from: its data set (``src_dataset``), or the column a reader
    names."""
    group: str = ""
    """Rows that share evidence (``group``; else the question, whose claims share references):
    a fold of a cross-validation keeps them together."""
    language: str = ""
    """The row's ``language`` where it gives one; else detected from the claim and references
    when they are cut to fit."""


def load_attribution(path: Path | str, source_field: str = "src_dataset") -> list[Claim]:
    """The claims of an AttributionBench-format file, each's source read from
    ``source_field`` (empty where the row has none)."""
    claims = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        try:
            label = row["attribution_label"]
            if label not in ("attributable", "not attributable"):
                raise ValueError(f"row {number}, field 'attribution_label': got {label!r}")
            claims.append(
                Claim(
                    id=str(row.get("id", number)),
                    question=row.get("question") or "",
                    claim=row["claim"],
                    references=list(row["references"]),
                    label=label == "attributable",
                    source=str(row.get(source_field) or "").strip(),
                    group=str(row.get("group") or f"question:{row.get('question') or ''}"),
                    language=language_code(row["language"]) if row.get("language") else "",
                )
            )
        except KeyError as exc:
            raise ValueError(f"{path}: row {number}, field {exc.args[0]!r} is missing") from None
    return claims


def statement_for(claim: Claim, with_question: bool) -> str:
    """A short claim ("Neil Armstrong") only means something as the answer to its question."""
    if with_question and claim.question:
        return answering(claim.question, claim.claim)
    return claim.claim


class Verdict(BaseModel):
    id: str
    label: bool
    p_supported: float | None
    unscored_reason: str | None = None
    left_out: dict[str, int] | None = None
    """What of the references was not shown (``evidence.Evidence.left_out``), where anything
    was."""
    seconds: float = 0.0
    """How long the verification took when it was made (a resumed one keeps its time)."""

    @property
    def truncated(self) -> bool:
        return self.left_out is not None


def _supported(
    session: JudgeSession, inputs: dict[str, str], left_out: dict[str, int] | None
) -> tuple[float, dict[str, Any]]:
    return session.ask_yes_no(SUPPORTED, inputs), {"left_out": left_out} if left_out else {}


def references_context(claim: Claim, statement: str, judge: Judge) -> Evidence:
    """The claim's references as one context: whole, or within ``MAX_REFERENCE_TOKENS`` of
    ``judge``'s tokens (estimated where it cannot count them: ``evidence.utf8_tokens``) their
    sentences most related to the claim's question, which its sibling claims share, then those
    most related to ``statement``."""
    language = claim.language or detect_language([claim.claim, *claim.references])
    count = token_counter(judge) or utf8_tokens
    return select_evidence(
        statement, claim.references, MAX_REFERENCE_TOKENS, count, language, claim.question
    )


def _shown(
    claim: Claim, with_question: bool, judge: Judge
) -> tuple[dict[str, str], dict[str, int] | None]:
    """What the judge is shown of a claim, and what of its references was left out."""
    statement = statement_for(claim, with_question)
    evidence = references_context(claim, statement, judge)
    return {"context": evidence.text, "statement": statement}, evidence.left_out


def claim_key(
    judge: Judge, claim: Claim, with_question: bool, shown: dict[str, str] | None = None
) -> str:
    """The store key of a verification: everything the judge is shown (``shown``, worked out
    here when not given: so an edited claim or reference is verified afresh) and the judge's
    identity, read when called (it changes when the judge learns to ask its server another
    way)."""
    if shown is None:
        shown = _shown(claim, with_question, judge)[0]
    material = [claim.id, shown, SUPPORTED.version]
    return hashlib.sha256(json.dumps([*material, identity_of(judge).digest]).encode()).hexdigest()


class ClaimVerifier:
    """Verifies claims with one judge, here or in a Ray worker: returns the key, worked out
    once judging ended, and the score."""

    def __init__(
        self, judge: Judge, _embedder: object = None, *, with_question: bool, retries: int
    ) -> None:
        self.judge = judge
        self.with_question = with_question
        self.retries = retries

    def __call__(self, claim: Claim) -> tuple[str, Score]:
        session = JudgeSession(self.judge, retries=self.retries)
        inputs, left_out = _shown(claim, self.with_question, self.judge)
        measure = partial(_supported, session, inputs, left_out)
        score = measured(claim.id, SUPPORTED.name, session, measure)
        return claim_key(self.judge, claim, self.with_question, inputs), score


def verify_claims(
    claims: Sequence[Claim],
    judge: str | Judge = "local",
    *,
    with_question: bool = True,
    out_dir: Path | None = None,
    cache: bool | str | Path = True,
    retries: int = 2,
    on_verdict: Callable[[Verdict], None] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    executor: Executor | RayExecutor | RayPool = "threads",
) -> list[Verdict]:
    """P(supported) for each claim from the faithfulness verifier; resumable under ``out_dir``.
    With Ray workers (``executor``) each verifies with its own judge, and verdicts are
    committed here as they come back."""
    store = ScoreStore(out_dir / "verdicts.sqlite") if out_dir else None
    verdicts: list[Verdict | None] = [None] * len(claims)

    def record(position: int, score: Score) -> None:
        claim = claims[position]
        verdicts[position] = verdict = Verdict(
            id=claim.id,
            label=claim.label,
            p_supported=score.value,
            unscored_reason=score.unscored_reason,
            left_out=score.explanation.get("left_out"),
            seconds=score.seconds,
        )
        if on_verdict:
            on_verdict(verdict)

    recipe = ModelRecipe(judge, cache=cache, needs_embedder=False, judge_options=judge_options)
    try:
        with workers_for(executor, recipe) as pool:
            if pool is None:
                _verify_here(claims, recipe.open(), store, with_question, retries, record)
            else:
                for position, score, _ in keyed_on_cluster(
                    pool,
                    store,
                    [(claim,) for claim in claims],
                    lambda model, claim: claim_key(model, claim, with_question),
                    partial(ClaimVerifier, with_question=with_question, retries=retries),
                    lambda claim: (claim.id, SUPPORTED.name),
                ):
                    record(position, score)
    finally:
        if store:
            store.close()
    return [v for v in verdicts if v is not None]


def _verify_here(
    claims: Sequence[Claim],
    models: tuple[Judge, object],
    store: ScoreStore | None,
    with_question: bool,
    retries: int,
    record: Callable[[int, Score], None],
) -> None:
    judge = models[0]
    verify = ClaimVerifier(judge, with_question=with_question, retries=retries)
    for position, claim in enumerate(claims):
        score = store.reusable(claim_key(judge, claim, with_question)) if store else None
        if score is None:
            key, score = verify(claim)
            if store:
                store.put(key, score)
        record(position, score)


class Classification(BaseModel):
    threshold: float
    rows: int
    unscored: int
    accuracy: float
    macro_f1: float
    f1_supported: float
    f1_unsupported: float
    roc_auc: float | None


def classify(verdicts: Sequence[Verdict], threshold: float = 0.5) -> Classification:
    """Accuracy and macro-F1 at ``threshold``. An unscored claim is counted as a wrong answer,
    so failures lower the figures instead of leaving the sample."""
    truth = np.array([v.label for v in verdicts], dtype=bool)
    scored = np.array([v.p_supported is not None for v in verdicts], dtype=bool)
    probability = np.array([v.p_supported or 0.0 for v in verdicts])
    predicted = np.where(scored, probability >= threshold, ~truth)
    return Classification(
        threshold=threshold,
        rows=len(verdicts),
        unscored=int((~scored).sum()),
        accuracy=float((predicted == truth).mean()) if len(truth) else 0.0,
        macro_f1=macro_f1(truth, predicted),
        f1_supported=f1(truth, predicted),
        f1_unsupported=f1(~truth, ~predicted),
        roc_auc=roc_auc(truth[scored], probability[scored]),
    )


def calibrate_threshold(verdicts: Sequence[Verdict]) -> float:
    """The threshold with the best macro-F1 on these (development) verdicts."""
    candidates = sorted({round(v.p_supported, 4) for v in verdicts if v.p_supported is not None})
    if not candidates:
        return 0.5
    return best_threshold(candidates, lambda t: classify(verdicts, t).macro_f1)


def summary(verdicts: Sequence[Verdict], threshold: float) -> dict[str, Any]:
    return {
        "classification": classify(verdicts, threshold).model_dump(),
        "truncated_references": sum(v.truncated for v in verdicts),
    }
