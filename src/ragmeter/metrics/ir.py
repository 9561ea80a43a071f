"""The retriever's ranking, scored from ids as IR people score it: hit rate, recall, precision,
MRR, MAP and nDCG of a sample's ``context_ids`` (rank order) against its
``reference_context_ids`` (the relevant ids, or graded ``{id: grade}``).

No judge is asked. Each value is ir-measures' (trec_eval's code) on a run and qrels of the one
sample, never worked out here. The column is the measure with its cutoff, ``ndcg@10``; a
relevance level other than 1 is said in it as ir-measures says it, ``recall(rel=2)@100``.

- ``hit_rate@k``: 1 when some relevant id is in the top k, else 0 (ir-measures' ``Success@k``).
- ``recall@k``: the share of the relevant ids in the top k (``R@k``).
- ``precision@k``: the share of the top k that is relevant, k counted even when fewer were
  retrieved (``P@k``, trec_eval's).
- ``mrr``: 1 / the rank of the first relevant id, 0 when none was retrieved (``RR``).
- ``map``: the mean over the relevant ids of the precision at each one's rank, 0 for one not
  retrieved (``AP``).
- ``ndcg@k``: the top k's discounted gain over the best possible, the gain of an id its grade
  (``nDCG@k``, trec_eval's ``ndcg_cut``).

A sample without ``context_ids`` or ``reference_context_ids``, or none of whose reference ids
is relevant (nothing to find: recall and nDCG have no value), is unscored with the reason.
Nothing retrieved (``context_ids: []``) scores 0.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from ragmeter.metrics.base import Metric
from ragmeter.options import Options
from ragmeter.prompts import PlannedCalls
from ragmeter.retrieval.measures import library_versions, one_query, parse_measures
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession

ORDER = "ids ranked in the order given (scores n, n-1, ..., 1), nothing retrieved scores 0"


class CutoffOptions(Options):
    k: int = Field(10, ge=1, description="Only the top k retrieved ids count.")
    relevant: int = Field(1, ge=1, description="The least grade that counts as relevant.")


class WholeRankingOptions(Options):
    k: int | None = Field(
        None, ge=1, description="Only the top k retrieved ids count; none: the whole ranking."
    )
    relevant: int = Field(1, ge=1, description="The least grade that counts as relevant.")


class GainOptions(Options):
    k: int = Field(10, ge=1, description="Only the top k retrieved ids count.")


class IdMetric(Metric):
    """One ir-measures measure of a sample's ids; subclasses name the measure."""

    needs_judge = False
    measure_name: ClassVar[str]
    """ir-measures' name of the measure, without its parameters (``nDCG``, ``R``)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.ir_measure = parse_measures([self.measure_name + self._parameters()])[0]
        # The column: the registered name, then the parameters as the measure has them.
        self.name = type(self).name + self._parameters()  # type: ignore[misc]

    def _parameters(self) -> str:
        """The relevance level where it is not 1, then the cutoff, as ir-measures writes them
        (``(rel=2)@100``)."""
        level = getattr(self.options, "relevant", 1)
        cutoff = getattr(self.options, "k", None)
        return (f"(rel={level})" if level != 1 else "") + (f"@{cutoff}" if cutoff else "")

    @property
    def rules(self) -> tuple[str, ...]:  # type: ignore[override]
        """The measure as ir-measures names it, how a sample becomes a run, and the libraries'
        versions, whose fixes may change a value."""
        versions = ", ".join(f"{name} {v}" for name, v in library_versions().items())
        return (str(self.ir_measure), ORDER, versions)

    def planned_calls(self, sample: Sample) -> PlannedCalls | None:
        return []  # no judge is asked

    @property
    def least_relevant(self) -> int:
        """The grade an id needs to count: the relevance level, or any positive grade for a
        measure of graded gains."""
        return int(getattr(self.options, "relevant", 1))

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        relevance = sample.relevance
        if sample.context_ids is None:
            raise Unscorable("the sample has no context_ids: what was retrieved is not known")
        if relevance is None:
            raise Unscorable(
                "the sample has no reference_context_ids: which contexts are relevant is not known"
            )
        relevant = {i for i, grade in relevance.items() if grade >= self.least_relevant}
        if not relevant:
            raise Unscorable(
                f"no reference id has grade {self.least_relevant} or more: nothing to retrieve"
            )
        ids = sample.context_ids
        top = ids[: getattr(self.options, "k", None) or len(ids)]
        value = one_query(self.ir_measure, relevance, ids)
        return value, {
            "measure": str(self.ir_measure),
            "retrieved": len(ids),
            "relevant": len(relevant),
            "relevant_ranks": [rank for rank, i in enumerate(top, 1) if i in relevant],
            "unjudged_in_top": sum(1 for i in top if i not in relevance),
        }


class HitRate(IdMetric):
    name = "hit_rate"
    measure_name = "Success"
    options_model = CutoffOptions
    options: CutoffOptions


class Recall(IdMetric):
    name = "recall"
    measure_name = "R"
    options_model = CutoffOptions
    options: CutoffOptions


class Precision(IdMetric):
    name = "precision"
    measure_name = "P"
    options_model = CutoffOptions
    options: CutoffOptions


class MRR(IdMetric):
    name = "mrr"
    measure_name = "RR"
    options_model = WholeRankingOptions
    options: WholeRankingOptions


class MAP(IdMetric):
    name = "map"
    measure_name = "AP"
    options_model = WholeRankingOptions
    options: WholeRankingOptions


class NDCG(IdMetric):
    name = "ndcg"
    measure_name = "nDCG"
    options_model = GainOptions
    options: GainOptions
