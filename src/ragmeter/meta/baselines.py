"""The two baselines of RAGAS Table 4, asked of the same judge as ragmeter's metrics.

- GPT Score: a 0-10 rating of one item per dimension, from the paper's definition of the dimension.
- GPT Ranking: the better of two items. Judged in both orders: agreement is the verdict and
  disagreement a tie, so a judge that always picks the first position earns ties, not credit.
"""

from __future__ import annotations

import hashlib
import json
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragmeter.judges.base import Judge, identity_of
from ragmeter.meta.pairs import Pair, PairOutcome
from ragmeter.metrics.base import Metric
from ragmeter.options import Options
from ragmeter.prompts import Prompt
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.session import JudgeSession, measured
from ragmeter.store import ScoreStore

DEFINITIONS = {
    "faithfulness": (
        "Faithfulness measures the information consistency of the answer against the given "
        "context. Any claims that are made in the answer that cannot be deduced from context "
        "should be penalized."
    ),
    "answer_relevance": (
        "Answer Relevancy measures the degree to which a response directly addresses and is "
        "appropriate for a given question. It penalizes the presence of redundant information "
        "or incomplete answers given a question."
    ),
    "context_relevance": (
        "Context Relevancy measures the degree to which the retrieved context is focused on the "
        "information needed to answer the question. It penalizes redundant information in the "
        "context."
    ),
}

# What each dimension shows the judge about an item.
SHOWN = {
    "faithfulness": ("context", "answer"),
    "answer_relevance": ("question", "answer"),
    "context_relevance": ("question", "context"),
}


def _field(sample: Sample, name: str) -> str | list[str]:
    return {"question": sample.question, "answer": sample.answer, "context": sample.contexts}[name]


class Rating(BaseModel):
    score: int = Field(ge=0, le=10)


class GPTScoreOptions(Options):
    dimension: Literal["faithfulness", "answer_relevance", "context_relevance"]


class GPTScore(Metric):
    """A 0-10 rating of one sample for one dimension (the paper's "GPT Score")."""

    options_model = GPTScoreOptions
    options: GPTScoreOptions

    def __init__(self, dimension: str) -> None:
        self.name = f"gpt_score.{dimension}"  # type: ignore[misc]
        super().__init__(dimension=dimension)
        self._prompt = Prompt(
            name=self.name,
            instruction=f"{DEFINITIONS[dimension]} Given "
            f"{' and '.join(SHOWN[dimension])}, assign a score for {dimension.replace('_', ' ')} "
            "in the range 0-10.",
            output=Rating,
        )

    @property
    def prompts(self) -> list[Prompt[Any]]:
        return [self._prompt]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        inputs = {name: _field(sample, name) for name in SHOWN[self.options.dimension]}
        rating = session.ask(self._prompt, inputs, max_tokens=16).score
        return float(rating), {"rating": rating}


class Choice(BaseModel):
    better: Literal[1, 2]


def ranking_prompt(dimension: str) -> Prompt[Choice]:
    item = "context" if dimension == "context_relevance" else "answer"
    return Prompt(
        name=f"gpt_ranking.{dimension}",
        instruction=f"{DEFINITIONS[dimension]} Given the inputs and two candidate {item}s, "
        f"{item}_1 and {item}_2, rank them on {dimension.replace('_', ' ')}: reply with the "
        f"number of the better {item}.",
        output=Choice,
    )


def _ranking_inputs(dimension: str, first: Sample, second: Sample) -> dict[str, Any]:
    if dimension == "context_relevance":
        return {
            "question": first.question,
            "context_1": first.contexts,
            "context_2": second.contexts,
        }
    inputs: dict[str, Any] = {"question": first.question}
    if dimension == "faithfulness":
        inputs["context"] = first.contexts
    inputs |= {"answer_1": first.answer, "answer_2": second.answer}
    return inputs


def _better(
    session: JudgeSession, prompt: Prompt[Choice], inputs: dict[str, Any]
) -> tuple[float, dict[str, Any]]:
    return float(session.ask(prompt, inputs, max_tokens=16).better), {}


def _ranking_key(pair: Pair, order: int, prompt: Prompt[Choice], judge: Judge) -> str:
    """The store key of one order's ranking: both items' ids and contents, the prompt and the
    judge's identity as it is when called."""
    material = [
        pair.preferred.key,
        pair.preferred.digest,
        pair.rejected.key,
        pair.rejected.digest,
        pair.dimension,
        order,
        prompt.version,
        identity_of(judge).digest,
    ]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()


class OrderRanker:
    """Asks one order of a pair with one judge, here or in a Ray worker: returns the key,
    worked out once judging ended, and the score (1 or 2, the position picked)."""

    def __init__(self, judge: Judge, _embedder: object = None, *, retries: int) -> None:
        self.judge = judge
        self.retries = retries

    def __call__(self, pair: Pair, order: int) -> tuple[str, Score]:
        prompt = ranking_prompt(pair.dimension)
        first, second = (
            (pair.preferred, pair.rejected) if order == 0 else (pair.rejected, pair.preferred)
        )
        session = JudgeSession(self.judge, retries=self.retries)
        inputs = _ranking_inputs(pair.dimension, first, second)
        score = measured(
            f"{pair.id}:{order}", prompt.name, session, partial(_better, session, prompt, inputs)
        )
        return ranking_key(self.judge, pair, order), score


def ranking_key(judge: Judge, pair: Pair, order: int) -> str:
    return _ranking_key(pair, order, ranking_prompt(pair.dimension), judge)


def rank_pair(pair: Pair, judge: Judge, store: ScoreStore | None, retries: int = 2) -> PairOutcome:
    """Judge the pair in both orders; returns 1 / 0 when both orders agree, 0.5 when not."""
    ranker = OrderRanker(judge, retries=retries)
    scores = []
    for order in (0, 1):
        score = store.reusable(ranking_key(judge, pair, order)) if store else None
        if score is None:
            key, score = ranker(pair, order)
            if store:
                store.put(key, score)
        scores.append(score)
    return ranking_outcome(pair, scores)


def ranking_outcome(pair: Pair, scores: list[Score]) -> PairOutcome:
    """The pair's outcome from the scores of its two orders (order 0 shows the preferred item
    first, order 1 second)."""
    picks = [
        None if score.value is None else score.value == (1 if order == 0 else 2)
        for order, score in enumerate(scores)
    ]
    if None in picks:
        return PairOutcome(
            pair_id=pair.id,
            dimension=pair.dimension,
            method="GPT Ranking",
            preferred_value=None,
            rejected_value=None,
            outcome=None,
            note="a ranking call was unscored",
        )
    outcome = 1.0 if all(picks) else 0.0 if not any(picks) else 0.5
    return PairOutcome(
        pair_id=pair.id,
        dimension=pair.dimension,
        method="GPT Ranking",
        preferred_value=float(sum(bool(p) for p in picks)),
        rejected_value=float(sum(not p for p in picks)),
        outcome=outcome,
        note=None if outcome != 0.5 else "the two orders disagreed",
    )
