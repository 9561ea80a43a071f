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

from ragmeter.judges import Judge, identity_of, resolve_models
from ragmeter.metrics.faithfulness import SUPPORTED
from ragmeter.session import JudgeSession, measured
from ragmeter.store import ScoreStore

MAX_REFERENCE_CHARS = 6000
"""References are cut to this length (about 1,500 tokens) so that a row fits a small judge's
context window; the number of rows cut is reported."""


class Claim(BaseModel):
    id: str
    question: str
    claim: str
    references: list[str]
    label: bool
    """True when people judged the claim attributable to the references."""


def load_attribution(path: Path | str) -> list[Claim]:
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
                )
            )
        except KeyError as exc:
            raise ValueError(f"{path}: row {number}, field {exc.args[0]!r} is missing") from None
    return claims


def statement_for(claim: Claim, with_question: bool) -> str:
    """A short claim ("Neil Armstrong") only means something as the answer to its question."""
    if with_question and claim.question:
        return f"In answer to the question '{claim.question}': {claim.claim}"
    return claim.claim


class Verdict(BaseModel):
    id: str
    label: bool
    p_supported: float | None
    unscored_reason: str | None = None
    truncated: bool = False


def _supported(session: JudgeSession, inputs: dict[str, str]) -> tuple[float, dict[str, Any]]:
    return session.ask_yes_no(SUPPORTED, inputs), {}


def _key(material: list[Any], judge: Judge) -> str:
    """The store key of a verification: what the judge is shown and the judge's identity, read
    when called (it changes when the judge learns to ask its server another way)."""
    return hashlib.sha256(json.dumps([*material, identity_of(judge).digest]).encode()).hexdigest()


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
) -> list[Verdict]:
    """P(supported) for each claim from the faithfulness verifier; resumable under ``out_dir``."""
    judge_model, _ = resolve_models(
        judge, cache=cache, needs_embedder=False, judge_options=judge_options
    )
    store = ScoreStore(out_dir / "verdicts.sqlite") if out_dir else None
    verdicts = []
    for claim in claims:
        text = "\n\n".join(claim.references)
        truncated = len(text) > MAX_REFERENCE_CHARS
        inputs = {
            "context": text[:MAX_REFERENCE_CHARS],
            "statement": statement_for(claim, with_question),
        }
        # Everything the judge is shown, so an edited claim or reference is verified afresh.
        material = [claim.id, inputs, SUPPORTED.version]
        score = store.reusable(_key(material, judge_model)) if store else None
        if score is None:
            session = JudgeSession(judge_model, retries=retries)
            score = measured(
                claim.id,
                SUPPORTED.name,
                session,
                partial(_supported, session, inputs),
            )
            if store:  # keyed anew: the judge may have learned to ask another way meanwhile
                store.put(_key(material, judge_model), score)
        verdict = Verdict(
            id=claim.id,
            label=claim.label,
            p_supported=score.value,
            unscored_reason=score.unscored_reason,
            truncated=truncated,
        )
        verdicts.append(verdict)
        if on_verdict:
            on_verdict(verdict)
    if store:
        store.close()
    return verdicts


class Classification(BaseModel):
    threshold: float
    rows: int
    unscored: int
    accuracy: float
    macro_f1: float
    f1_supported: float
    f1_unsupported: float
    roc_auc: float | None


def _f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    tp = float(np.sum(truth & predicted))
    fp = float(np.sum(~truth & predicted))
    fn = float(np.sum(truth & ~predicted))
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def _roc_auc(truth: np.ndarray, scores: np.ndarray) -> float | None:
    """Probability that a supported claim outscores an unsupported one (ties count half)."""
    positive, negative = scores[truth], scores[~truth]
    if not len(positive) or not len(negative):
        return None
    greater = (positive[:, None] > negative[None, :]).sum()
    ties = (positive[:, None] == negative[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(positive) * len(negative)))


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
        macro_f1=(_f1(truth, predicted) + _f1(~truth, ~predicted)) / 2,
        f1_supported=_f1(truth, predicted),
        f1_unsupported=_f1(~truth, ~predicted),
        roc_auc=_roc_auc(truth[scored], probability[scored]),
    )


def calibrate_threshold(verdicts: Sequence[Verdict]) -> float:
    """The threshold with the best macro-F1 on these (development) verdicts."""
    candidates = sorted({round(v.p_supported, 4) for v in verdicts if v.p_supported is not None})
    if not candidates:
        return 0.5
    return max(candidates, key=lambda t: (classify(verdicts, t).macro_f1, -abs(t - 0.5)))


def summary(verdicts: Sequence[Verdict], threshold: float) -> dict[str, Any]:
    return {
        "classification": classify(verdicts, threshold).model_dump(),
        "truncated_references": sum(v.truncated for v in verdicts),
    }
