"""NQ301 (Kamalloo et al., ACL 2023): is answer correctness right where people say an answer is?

Each row is one QA system's answer to an NQ-open question, with the gold answers (a list, any
one right), people's verdict (1 correct, 0 not) and the verdicts of the paper's judges on the
same answer (``anchors``: EM, token F1, BEM, InstructGPT-eval, GPT-4-eval). Measured two ways,
each judge beside the anchors on the rows it has a verdict for:

- **answer by answer**: accuracy and Cohen's kappa against people, pooled and per system;
- **system by system**: Kendall's tau between the systems' accuracy by the judge and by people,
  and every pair of systems decided on both sides by the same paired test
  (``meta.decisions``), on the questions every system has a verdict for.

Many systems give the same answer to a question: each distinct (question, gold answers,
answer) is judged once and its verdict shared by the rows that gave it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ragmeter.answers import exact_match, token_f1
from ragmeter.cluster import Executor, RayExecutor, RayPool
from ragmeter.evaluate import evaluate
from ragmeter.judges import Judge
from ragmeter.meta.decisions import complete_inputs, decide, on_inputs, system_correlation
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.stats import Interval, cohen_kappa

ANCHORS = ("em", "f1", "bem", "instructgpt", "gpt4")
"""The set's own judges, in its rows' ``anchors``."""
VERDICTS = ("em", "bem", "instructgpt", "gpt4")
"""The anchors that say correct or not (F1 is a score: it is compared as systems only)."""
JUDGE = "ragmeter"
LLM_SYSTEMS = ("InstructGPT zero-shot", "InstructGPT few-shot")
"""The systems that answer in sentences, where lexical matching fails."""


class OpenQARow(BaseModel):
    id: str
    group: str
    """The question: a question's rows are resampled together."""
    system: str
    question: str
    answer: str
    reference: str
    references: list[str] = Field(min_length=1)
    human: int
    anchors: dict[str, float | None]


def load_openqa(path: Path | str) -> list[OpenQARow]:
    """NQ301's rows (``../shared/data/openqa``); an error names the row and the field."""
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(OpenQARow.model_validate(json.loads(line)))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(map(str, first["loc"])) or "<row>"
            raise ValueError(f"{path}: row {number}, field {field!r}: {first['msg']}") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: row {number} is not JSON: {error}") from None
    return rows


def first_questions(rows: Sequence[OpenQARow], questions: int | None) -> list[OpenQARow]:
    """The rows of the first ``questions`` questions in sorted order (all for None)."""
    if questions is None:
        return list(rows)
    kept = set(sorted({r.group for r in rows})[:questions])
    return [r for r in rows if r.group in kept]


def sample_of(row: OpenQARow) -> Sample:
    """The row as ragmeter reads it: the gold answers as the list of acceptable answers. Keyed
    by its content, so that the rows that gave the same answer share one score."""
    return Sample(question=row.question, answer=row.answer, reference=row.references)


class AnswerAgreement(BaseModel):
    rows: int
    accuracy: float
    """The share of rows where the judge says what people say."""
    kappa: float | None
    said_correct: float


class SystemAgreement(BaseModel):
    questions: int
    """Questions every system has a verdict for."""
    kendall: Interval | None
    spearman: Interval | None
    pairs: int
    separated: int
    """Pairs of systems people tell apart."""
    alike: int
    """Of those, decided the same way by the judge (each pair tested alone)."""
    cannot_tell: int
    wrong: int
    """Pairs the judge decides significantly the other way round from people's difference."""


class JudgeAgreement(BaseModel):
    judge: str
    answers: AnswerAgreement | None
    """None for a score without a verdict (token F1)."""
    llm_answers: AnswerAgreement | None
    """On the InstructGPT systems' rows alone."""
    per_system: dict[str, AnswerAgreement]
    systems: SystemAgreement


class OpenQAReport(BaseModel):
    judges: list[JudgeAgreement]
    rows: int
    distinct_answers: int
    unscored: dict[str, int]
    """Reason -> how many distinct answers were left unscored for it."""
    seconds_per_answer: float | None
    """Median seconds of a distinct answer judged now (not from the store or the cache)."""
    threshold: float
    lexical_check: dict[str, int]
    """How many rows ragmeter's exact_match and token_f1 give the set's em and f1 on."""
    judge: str
    metric: dict[str, Any]
    probabilities: dict[str, float | None]
    """Row id -> ragmeter's score of its answer (None: unscored)."""


def answer_agreement(said: Sequence[float | None], human: Sequence[int]) -> AnswerAgreement | None:
    """Agreement of verdicts (1 / 0) with people's, over the rows with a verdict."""
    pairs = [(int(s), h) for s, h in zip(said, human, strict=True) if s is not None]
    if not pairs:
        return None
    judged, people = [p[0] for p in pairs], [p[1] for p in pairs]
    return AnswerAgreement(
        rows=len(pairs),
        accuracy=sum(j == p for j, p in pairs) / len(pairs),
        kappa=cohen_kappa(judged, people),
        said_correct=sum(judged) / len(pairs),
    )


def system_agreement(
    rows: Sequence[OpenQARow], values: Sequence[float | None], *, rounds: int = 1000
) -> SystemAgreement:
    """The systems ranked by the judge's mean against people's, on the questions every system
    has a value for; every pair decided by ``meta.decisions``."""
    judged: dict[str, dict[str, float | None]] = {}
    people: dict[str, dict[str, float | None]] = {}
    for row, value in zip(rows, values, strict=True):
        judged.setdefault(row.system, {})[row.group] = value
        people.setdefault(row.system, {})[row.group] = float(row.human)
    inputs = complete_inputs(judged, people)
    complete, rated = on_inputs(judged, inputs), on_inputs(people, inputs)
    correlation = system_correlation(complete, rated, rounds=rounds)
    decided = decide(complete, rated, rounds=rounds)
    told = [o for o in decided.outcomes if o.people != "cannot tell"]
    return SystemAgreement(
        questions=len(inputs),
        kendall=correlation["kendall"],
        spearman=correlation["spearman"],
        pairs=decided.pairs,
        separated=decided.separated,
        alike=sum(o.judge_pairwise == o.people for o in told),
        cannot_tell=sum(o.judge_pairwise == "cannot tell" for o in told),
        wrong=sum(
            o.judge_pairwise != "cannot tell" and o.judge_difference * o.people_difference < 0
            for o in decided.outcomes
        ),
    )


def agreement_of(
    name: str,
    rows: Sequence[OpenQARow],
    values: Sequence[float | None],
    *,
    verdicts: bool = True,
    rounds: int = 1000,
) -> JudgeAgreement:
    """One judge's agreement with people, answer by answer (where ``values`` are verdicts) and
    system by system."""
    human = [r.human for r in rows]
    llm = [i for i, r in enumerate(rows) if r.system in LLM_SYSTEMS]
    per_system = {}
    if verdicts:
        for system in sorted({r.system for r in rows}):
            mine = [i for i, r in enumerate(rows) if r.system == system]
            found = answer_agreement([values[i] for i in mine], [human[i] for i in mine])
            if found is not None:
                per_system[system] = found
    return JudgeAgreement(
        judge=name,
        answers=answer_agreement(values, human) if verdicts else None,
        llm_answers=answer_agreement([values[i] for i in llm], [human[i] for i in llm])
        if verdicts and llm
        else None,
        per_system=per_system,
        systems=system_agreement(rows, values, rounds=rounds),
    )


def run_openqa(
    rows: Sequence[OpenQARow],
    *,
    metric: Metric | None = None,
    threshold: float = 0.5,
    judge: str | Judge = "local",
    judge_options: Mapping[str, Any] | None = None,
    out_dir: Path | None = None,
    cache: bool | str | Path = True,
    max_workers: int = 1,
    on_score: Callable[[Score], None] | None = None,
    executor: Executor | RayExecutor | RayPool = "threads",
    rounds: int = 1000,
) -> OpenQAReport:
    """Judge each distinct answer once with ``metric`` (answer correctness by default),
    resumably under ``out_dir``, count a score at ``threshold`` or above as correct, and
    measure it beside the set's anchors."""
    metric = metric or metric_by_name("answer_correctness")
    samples = [sample_of(r) for r in rows]
    distinct = list({s.key: s for s in samples}.values())
    result = evaluate(
        distinct,
        [metric],
        judge=judge,
        judge_options=judge_options,
        out_dir=out_dir,
        cache=cache,
        max_workers=max_workers,
        on_score=on_score,
        executor=executor,
    )
    scores = {s.sample_id: s for s in result.scores}
    probabilities = [scores[s.key].value for s in samples]
    verdicts = [None if p is None else float(p >= threshold) for p in probabilities]
    judges = [
        agreement_of(JUDGE, rows, verdicts, rounds=rounds),
        agreement_of(f"{JUDGE} (probability)", rows, probabilities, verdicts=False, rounds=rounds),
    ]
    for anchor in ANCHORS:
        values = [r.anchors.get(anchor) for r in rows]
        judges.append(
            agreement_of(anchor, rows, values, verdicts=anchor in VERDICTS, rounds=rounds)
        )
    unscored: dict[str, int] = {}
    for score in scores.values():
        if not score.scored:
            reason = str(score.unscored_reason)
            unscored[reason] = unscored.get(reason, 0) + 1
    timed = [s.seconds for s in scores.values() if s.usage.model_calls]
    return OpenQAReport(
        judges=judges,
        rows=len(rows),
        distinct_answers=len(distinct),
        unscored=unscored,
        seconds_per_answer=median(timed) if timed else None,
        threshold=threshold,
        lexical_check=lexical_check(rows),
        judge=result.run.judge,
        metric={"name": metric.name, "config": metric.config(), "version": metric.version},
        probabilities={r.id: p for r, p in zip(rows, probabilities, strict=True)},
    )


def lexical_check(rows: Sequence[OpenQARow]) -> dict[str, int]:
    """On how many rows ragmeter's exact match and token F1 (best over the gold answers) give
    the set's own ``em`` and ``f1``: a check that both read answers as the set's code does."""
    return {
        "rows": len(rows),
        "exact_match": sum(
            exact_match(r.answer, r.references) == r.anchors.get("em") for r in rows
        ),
        "token_f1": sum(
            abs(token_f1(r.answer, r.references) - (r.anchors.get("f1") or 0.0)) < 1e-6
            for r in rows
        ),
    }
