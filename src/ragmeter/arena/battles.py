"""The arena's run record: one ``Battle`` per judged pair, and where judgements are committed.

Each presentation of a pair to the judge (answer A first, or answer B first) is committed to the
core :class:`~ragmeter.store.ScoreStore` as a :class:`~ragmeter.score.Score` the moment it
completes, so an interrupted run loses at most the call in flight and a rerun judges only what is
missing or was unscored. The battles file is an export of those judgements; the leaderboard and
the agreement report are pure functions of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragmeter.arena.data import Label, Pair, is_no_answer
from ragmeter.score import Usage

SCHEMA_VERSION = 1
BATTLES_FILE = "battles.jsonl"
JUDGEMENTS_DB = "judgements.sqlite"
RUN_FILE = "arena_run.json"

Order = Literal["ab", "ba"]
"""Which answer the judge saw first: ``ab`` shows answer A as <answer 1>."""


class OrderVerdict(BaseModel):
    """One presentation of the pair to the judge."""

    order: Order
    preference: Label | None
    """In the pair's terms: -1 prefers A, 1 prefers B, 0 not sure; None when unscored."""
    rating: Literal[0, 1, 2] | None = None
    """The judge's raw rating in its own terms: 1 = <answer 1>, 2 = <answer 2>, 0 = not sure."""
    probabilities: dict[str, float] | None = None
    """The judge's probabilities of the ratings "1", "2" and "0" (its own terms) at the position
    where it wrote its rating; None from a judge that gives no log-probabilities."""
    reasoning: str | None = None
    unscored_reason: str | None = None
    cached: bool = False
    """Taken from the judgement store (a resumed run) rather than judged in this run."""
    usage: Usage = Field(default_factory=Usage)
    """What this judgement cost when it was made (calls and tokens, retries included)."""


class AnswerClaims(BaseModel):
    """One answer's figures in a decision from claims (see ``arena.claim_judge``)."""

    precision: float
    """The share of the answer's claims the reference supports (correct)."""
    recall: float
    """The share of the reference's claims the answer states (complete)."""
    f1: float
    unsupported: float | None
    """The share of the answer's claims that neither the reference nor any passage supports;
    None when the pair has no passages (then nothing tells an invented claim from a true one
    the reference leaves out)."""
    score: float
    """F1, minus the unsupported share when there is one."""
    standard_error: float
    """Of the score, were each check a Yes with its probability (see ``claim_judge``)."""
    answer_claims: int
    reference_claims: int


class ClaimDecision(BaseModel):
    """How the claims method decided a pair: both answers' figures, and the margin the
    difference of their scores had to clear."""

    a: AnswerClaims
    b: AnswerClaims
    difference: float
    """B's score minus A's."""
    margin: float
    """Within it (inclusive) the pair is a tie: the difference's standard error."""


class Battle(BaseModel):
    """A judged pair: the verdict that counts, and every presentation behind it (none when the
    pair was decided from claims: then ``claims`` says how)."""

    schema_version: int = SCHEMA_VERSION
    pair_id: str
    question_id: str | None = None
    domain: str | None = None
    design: str = "pairs"
    system_a: str
    system_b: str
    verdict: Label | None
    """-1 A wins, 1 B wins, 0 tie; None when unscored. When the two orders disagree it is a tie
    under the "agree" rule, the sign of their summed preferences under "sum"; under "confidence"
    as "sum", but opposite picks are settled by the sign of their probability-weighted sum."""
    unscored_reason: str | None = None
    flipped: bool | None = None
    """Both orders scored and their preferences differ (whatever the verdict rule made of it);
    None unless both orders were judged and scored."""
    orders: list[OrderVerdict]
    label: Label | None = None
    """The human preference, when the pairs file has one."""
    no_answer_a: bool = False
    no_answer_b: bool = False
    words_a: int | None = None
    """Answer A's length in words (None in battles files written before it was recorded): the
    agreement report compares the judge with simply preferring the longer answer."""
    words_b: int | None = None
    claims: ClaimDecision | None = None
    """The claims method's figures; None for the generative judge, or when unscored."""

    @property
    def scored(self) -> bool:
        return self.verdict is not None


def battle(pair: Pair, **outcome: Any) -> Battle:
    """A pair's battle: what the pair is (its systems, label and answers' lengths) with how it
    was decided (``outcome``: the verdict and what it came from)."""
    return Battle(
        pair_id=pair.id,
        question_id=pair.question_id,
        domain=pair.domain,
        design=pair.design,
        system_a=pair.system_a,
        system_b=pair.system_b,
        label=pair.label,
        no_answer_a=is_no_answer(pair.answer_a),
        no_answer_b=is_no_answer(pair.answer_b),
        words_a=len(pair.answer_a.split()),
        words_b=len(pair.answer_b.split()),
        **outcome,
    )


def write_battles(battles: Iterable[Battle], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / BATTLES_FILE
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(b.model_dump_json() + "\n" for b in battles), encoding="utf-8")
    tmp.replace(path)
    return path


def read_battles(path: str | Path) -> list[Battle]:
    """Battles from a battles file, or from the folder of a judging run."""
    path = Path(path)
    if path.is_dir():
        path = path / BATTLES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no battles file at {path}: run 'ragmeter arena judge' first")
    return [
        Battle.model_validate(json.loads(line))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
