"""The outcome of an evaluation: every score, and summaries that are pure functions of them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ragmeter.data import InvalidRow
from ragmeter.manifest import RunRecord
from ragmeter.sample import Sample
from ragmeter.score import Score, Usage
from ragmeter.stats import bootstrap_mean_ci

if TYPE_CHECKING:
    import pandas as pd


class MetricSummary(BaseModel):
    metric: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    scored: int
    unscored: int
    unscored_reasons: dict[str, int]


@dataclass
class Result:
    samples: list[Sample]
    metrics: list[str]
    scores: list[Score]
    run: RunRecord
    """The run record (``run.json``)."""
    invalid_rows: list[InvalidRow] = field(default_factory=list)

    def scores_for(self, metric: str) -> list[Score]:
        return [s for s in self.scores if s.metric == metric]

    def summary(self) -> list[MetricSummary]:
        rows = []
        for metric in self.metrics:
            scores = self.scores_for(metric)
            values = [s.value for s in scores if s.value is not None]
            reasons = Counter(s.unscored_reason or "" for s in scores if s.value is None)
            ci = bootstrap_mean_ci(values)
            rows.append(
                MetricSummary(
                    metric=metric,
                    mean=ci[0] if ci else None,
                    ci_low=ci[1] if ci else None,
                    ci_high=ci[2] if ci else None,
                    scored=len(values),
                    unscored=len(scores) - len(values),
                    unscored_reasons=dict(reasons),
                )
            )
        return rows

    def usage(self) -> Usage:
        total = Usage()
        for score in self.scores:
            total.add(score.usage)
        return total

    def to_pandas(self) -> pd.DataFrame:
        """One row per sample, a column per metric (``<NA>`` where unscored) and, per metric, a
        ``<metric>_unscored_reason`` column saying why."""
        import pandas as pd

        by_key = {(s.sample_id, s.metric): s for s in self.scores}
        rows = []
        for sample in self.samples:
            row: dict[str, Any] = {
                "id": sample.key,
                "question": sample.question,
                "answer": sample.answer,
            }
            for metric in self.metrics:
                score = by_key.get((sample.key, metric))
                row[metric] = score.value if score else None
                row[f"{metric}_unscored_reason"] = score.unscored_reason if score else None
            rows.append(row)
        frame = pd.DataFrame(rows)
        # Nullable floats: an unscored cell is <NA> beside its reason, never a bare NaN.
        return frame.astype({metric: "Float64" for metric in self.metrics})
