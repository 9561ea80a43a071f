"""What a decision between two systems was worth on public rated sets, read back for
``ragmeter compare``.

The decision curve (``bench/bench_decisions.py --curve``, shipped as
``ragmeter/judges/decision_curve.json``) holds, under ``sets``, for each rated set and each
metric measured on it: the people's rating it answers, the systems and inputs, the system-level
Kendall tau and Spearman with their intervals, the pairwise decisions on all inputs (``full``),
and for each N inputs drawn the mean shares of decisions (``meta.decisions.curve``) with, by the
size of ragmeter's difference (``by_effect``, keyed by ``meta.decisions.EFFECT_BINS``' lower
edges), how many drawn decisions of pairs the people tell apart had the people's sign.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragmeter.judges.curves import read_curve

FORMAT = "ragmeter-decision-curve/1"
CURVE_FILE = "decision_curve.json"

EFFECT_BINS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.8)
"""Lower edges of the bins of a decision's size: |mean difference| / spread of the differences
(the paired standardized effect; 0.2 is small, 0.5 medium, 0.8 large in Cohen's words)."""


def effect_bin(difference: float, spread: float) -> str:
    """The ``EFFECT_BINS`` bin a difference falls in, named by its lower edge ("0.2")."""
    # No spread: every pair differs by the same amount, as large as an effect gets.
    no_spread = 0.0 if difference == 0 else float("inf")
    effect = abs(difference) / spread if spread > 0 else no_spread
    return f"{max(edge for edge in EFFECT_BINS if effect >= edge):g}"


class DecisionRate(BaseModel):
    """How often decisions like this one had the people's sign, on the sets measured."""

    metric: str
    effect: str
    """The bin of the difference's size (its lower edge)."""
    inputs: int
    """The N measured that the rate is read at (the largest not above the comparison's)."""
    right: int
    draws: int
    sets: list[str]

    @property
    def share(self) -> float:
        return self.right / self.draws

    def sentence(self) -> str:
        return (
            f"on {', '.join(self.sets)}, {self.metric} differences of this size "
            f"(effect {self.effect}+) at {self.inputs} samples were decided as people decided "
            f"them {self.share:.0%} of the time ({self.right} of {self.draws})"
        )


def load_decision_curve(path: Path | None = None) -> tuple[dict[str, Any], str] | None:
    """The curve in ``path``, else the one shipped with ragmeter, with where it came from;
    None where none ships."""
    return read_curve(path, CURVE_FILE, (FORMAT,), "decision curve")


def decision_rate(
    curve: dict[str, Any], metric: str, samples: int, difference: float, spread: float
) -> DecisionRate | None:
    """The rate at which the measured decisions of ``metric`` of this size had the people's
    sign, pooled over the sets it was measured on, each read at its largest N not above
    ``samples`` (its smallest where all are above); None where ``metric`` was never measured
    or no decision of this size was drawn."""
    effect = effect_bin(difference, spread)
    right = draws = 0
    sets, read_at = [], []
    for name, measured in sorted(curve.get("sets", {}).items()):
        found = measured.get(metric)
        if not found or not found.get("sizes"):
            continue
        sizes = sorted(int(n) for n in found["sizes"])
        below = [n for n in sizes if n <= samples]
        n = below[-1] if below else sizes[0]
        counts = found["sizes"][str(n)].get("by_effect", {}).get(effect)
        if counts and counts["draws"]:
            right, draws = right + counts["right"], draws + counts["draws"]
            sets.append(name)
            read_at.append(n)
    if not draws:
        return None
    return DecisionRate(
        metric=metric, effect=effect, inputs=min(read_at), right=right, draws=draws, sets=sets
    )
