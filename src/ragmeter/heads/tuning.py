"""``ragmeter tune``: verdict heads fitted on a team's own labels, kept only where they beat the
zero-shot read out of fold.

The verdicts come from an ``evaluate`` run: every Yes/No exchange keeps the zero-shot P(Yes) and,
from the local judge, the hidden states a head reads (``Exchange.states``), so fitting asks the
judge nothing. Two kinds of labels:

- **ratings of samples** (the file ``calibrate`` reads: an ``id`` and a column per metric): the
  head of the metric's Yes/No prompt is fitted through the metric's own aggregation (the mean of
  its verdicts' probabilities), and judged by the Spearman correlation of the metric's values with
  the ratings;
- **labels of claims** (an ``id``, the ``claim`` as the run checked it, and ``supported``: 1/0):
  faithfulness's verdicts are fitted one by one, and judged by ROC AUC.

Every figure is out of fold: a head is fitted on the other folds (its penalty chosen inside them)
and read on the fold held out; the zero-shot read is shown beside it on the same rows. A head is
written only where the gain over the zero-shot read is clearly above zero: the 95 % interval of
the gain, from a paired bootstrap of the out-of-fold predictions over samples (a sample's claims
drawn together), lies above zero. Otherwise the report says what was measured and, from how the
interval narrows with the number of samples in this run's own resamples, about how many labels
would make a gain of the size measured clear zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.claims import SUPPORTED
from ragmeter.criteria import Criterion, CriterionMetric
from ragmeter.heads.fitting import (
    Design,
    Fitter,
    Verdicts,
    gather,
    means_by_group,
)
from ragmeter.heads.ratings import ID_FIELD, Labels, LabelsError, Scale, read_labels, read_rows
from ragmeter.heads.verifier import (
    LabelledClaims,
    LeftOut,
    TrainingSet,
    balancing,
    leave_one_source_out,
    load_claims,
    mean_source_auc,
    read_run,
)
from ragmeter.judges.heads import Head, Heads
from ragmeter.meta.attribution import Claim, load_attribution
from ragmeter.metrics.answer_relevance import COMPLETE
from ragmeter.prompts import YesNoPrompt
from ragmeter.result import Result
from ragmeter.score import Score
from ragmeter.stats import (
    BOOTSTRAP_BLOCK,
    coefficients,
    percentile_interval,
    resample_counts,
    roc_auc,
    weighted_roc_auc,
)

DEFAULT_STATES = ("l_out-16",)
"""The hidden state heads read unless told otherwise: the output of the judge's 16th layer, the
best of those compared on AttributionBench (docs/heads.md)."""
CLAIM_FIELD = "claim"
SUPPORTED_FIELD = "supported"
ROUNDS = 2000
"""Bootstrap resamples of the out-of-fold predictions behind a gain's interval."""
CONFIDENCE = 0.95
MIN_UNITS = 5
"""Fewest samples (or groups of claims) whose resamples can say a gain is clear: resampling one
document's claims, or two, says nothing of how the gain varies from one to the next."""
CURVE = (0.5, 0.75, 1.0)
"""The shares of the samples resampled to see how the gain's interval narrows with more of
them (the m-out-of-n bootstrap), for the estimate of the labels a gain would need."""


@dataclass(frozen=True)
class Aggregation:
    """How a metric's value is made of one prompt's verdicts, for fitting through it."""

    prompt: YesNoPrompt
    usable: Callable[[Mapping[str, Any]], str | None]
    """Given the metric's config: why its value is not the mean of the verdicts, or None."""


def _faithfulness(config: Mapping[str, Any]) -> str | None:
    if config.get("verdicts", "logprob") != "logprob" or not config.get("soft", True):
        return "its value is the mean P(supported) only with verdicts=logprob and soft=true"
    return None


def _answer_relevance(config: Mapping[str, Any]) -> str | None:
    if config.get("score", "completeness") != "completeness":
        return "its value is P(addresses the question) only with score=completeness"
    if config.get("against", "question") != "question":
        return "against=context multiplies two verdicts"
    return None


AGGREGATIONS: dict[str, Aggregation] = {
    "faithfulness": Aggregation(SUPPORTED, _faithfulness),
    "answer_relevance": Aggregation(COMPLETE, _answer_relevance),
}
"""The metrics whose ratings can teach a head through their aggregation."""


def _criterion_aggregation(config: Mapping[str, Any]) -> Aggregation | None:
    """A criterion whose value is the mean of one prompt's verdicts, from its run record."""
    if "criterion" not in config:
        return None
    try:
        metric = CriterionMetric(Criterion.model_validate(config["criterion"]))
    except ValueError:
        return None
    prompt = metric.verdicts_prompt()
    return None if prompt is None else Aggregation(prompt, lambda _: None)


def aggregation_of(metric: str, config: Mapping[str, Any]) -> Aggregation | str:
    """How ``metric``'s value (under its run ``config``) is made of one prompt's verdicts, for
    a head fitted through it; or why it is not."""
    aggregation = AGGREGATIONS.get(metric) or _criterion_aggregation(config)
    if aggregation is None:
        fittable = ", ".join(sorted(AGGREGATIONS))
        return (
            f"heads are fitted through the mean of a metric's verdicts, which {fittable} and "
            "yes/no criteria have; rate one of those or give claim labels"
        )
    reason = aggregation.usable(config)
    return f"cannot be fitted through its value: {reason}" if reason else aggregation


def _statements(score: Score) -> list[str] | None:
    statements = score.explanation.get("statements")
    if not isinstance(statements, list):
        return None
    return [str(item.get("statement", "")) for item in statements if isinstance(item, dict)]


@dataclass(frozen=True)
class GainInterval:
    """The 95 % interval of a head's out-of-fold gain over the zero-shot read, and how it
    narrows with the number of samples resampled."""

    low: float
    high: float
    units: int
    """Samples resampled: the rated samples, or the samples whose claims were labelled."""
    rows: int
    """Labels behind them: ratings, or labelled claims."""
    half_widths: dict[int, float] = field(default_factory=dict)
    """The interval's half-width with that many samples resampled (m out of ``units``)."""

    @property
    def clear(self) -> bool:
        """Whether the whole interval lies above zero, from at least ``MIN_UNITS`` samples."""
        return self.units >= MIN_UNITS and self.low > 0

    @property
    def spread(self) -> float | None:
        """``c`` of the half-width fitted as ``c / sqrt(samples)`` to ``half_widths`` (least
        squares); None where no half-width was measured."""
        found = {m: h for m, h in self.half_widths.items() if math.isfinite(h)}
        if not found:
            return None
        return sum(h / math.sqrt(m) for m, h in found.items()) / sum(1 / m for m in found)

    def labels_needed(self, gain: float | None) -> int | None:
        """About how many labels (of the kind given) would make the half-width fall under
        ``gain``, if the gain stayed as measured and the half-width went as ``c / sqrt(n)``:
        an estimate from this run's own resamples. None where the gain is not above zero."""
        c = self.spread
        if gain is None or gain <= 0 or c is None or not self.units:
            return None
        samples = max((c / gain) ** 2, self.units + 1)
        return _round_up(samples * self.rows / self.units)

    def record(self) -> dict[str, Any]:
        return {
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "confidence": CONFIDENCE,
            "samples": self.units,
            "half_widths": {str(m): round(h, 4) for m, h in self.half_widths.items()},
        }


def _round_up(value: float) -> int:
    """``value`` rounded up to two significant figures (an estimate has no more)."""
    whole = math.ceil(value)
    if whole < 100:
        return whole
    step = 10 ** (len(str(whole)) - 2)
    return math.ceil(whole / step) * step


def _gain_interval(
    gains: Callable[[int, int], np.ndarray], units: int, rows: int, seed: int
) -> GainInterval:
    """The interval of the gains ``gains(size, seed)`` gives over ``ROUNDS`` resamples of
    ``size`` of the ``units`` samples, at the full size and at the ``CURVE`` shares of it."""
    half_widths: dict[int, float] = {}
    low = high = math.nan
    for share in CURVE:
        size = max(3, math.ceil(units * share)) if share < 1 else units
        if size > units or size in half_widths:
            continue
        found = percentile_interval(gains(size, seed)[:, None], CONFIDENCE)
        at_low, at_high = float(found[0][0]), float(found[1][0])
        half_widths[size] = (at_high - at_low) / 2
        if size == units:
            low, high = at_low, at_high
    return GainInterval(low, high, units, rows, half_widths)


def _spearman_gains(head: np.ndarray, zero: np.ndarray, target: np.ndarray) -> Callable:
    """Gains in Spearman's correlation with ``target`` of per-sample values, over resamples of
    the samples (paired: the head and the zero-shot read on the same draw)."""

    def gains(size: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        found = np.empty(ROUNDS)
        block = max(1, BOOTSTRAP_BLOCK // size)
        for start in range(0, ROUNDS, block):
            drawn = rng.integers(0, len(target), (min(block, ROUNDS - start), size))
            truth = target[drawn]
            found[start : start + len(drawn)] = coefficients(
                head[drawn], truth, "spearman"
            ) - coefficients(zero[drawn], truth, "spearman")
        return found

    return gains


def _auc_gains(
    truth: np.ndarray, head: np.ndarray, zero: np.ndarray, groups: Sequence[Any]
) -> tuple[Callable, int]:
    """Gains in ROC AUC over resamples of whole groups (a sample's claims share its texts and
    its fold, so they are drawn together); and how many groups there are."""
    _, inverse = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    units = int(inverse.max()) + 1

    def gains(size: int, seed: int) -> np.ndarray:
        weights = resample_counts(units, rounds=ROUNDS, seed=seed, size=size)[:, inverse]
        return weighted_roc_auc(truth, head, weights) - weighted_roc_auc(truth, zero, weights)

    return gains, units


@dataclass
class TunedHead:
    """One head as ``tune`` fitted it, with its out-of-fold figure beside the zero-shot one."""

    metric: str
    prompt: str
    labels: str
    """What taught it: "ratings" or "claim labels"."""
    figure: str
    """The agreement measured: "Spearman" or "ROC AUC"."""
    rows: int
    verdicts: int
    zero_shot: float | None
    head: float | None
    penalty: float | None
    fitted: Head | None
    interval: GainInterval | None = None
    """The gain's 95 % interval over resamples of the samples (None where no gain)."""

    @property
    def gain(self) -> float | None:
        if self.zero_shot is None or self.head is None:
            return None
        return self.head - self.zero_shot

    @property
    def kept(self) -> bool:
        """Written: its gain's whole interval lies above zero."""
        return self.fitted is not None and self.interval is not None and self.interval.clear

    def labels_needed(self) -> int | None:
        """About how many labels would make the measured gain clear zero (an estimate)."""
        return None if self.interval is None else self.interval.labels_needed(self.gain)

    def figures(self, folds: int, seed: int) -> dict[str, Any]:
        """What the written head records of how it was measured."""
        return {
            "figure": self.figure,
            "out_of_fold": self.head,
            "zero_shot": self.zero_shot,
            "gain_interval": None if self.interval is None else self.interval.record(),
            "rows": self.rows,
            "folds": folds,
            "seed": seed,
        }


@dataclass
class TuneReport:
    heads: list[TunedHead]
    notes: list[str]
    folds: int
    seed: int

    def written(self, judge: dict[str, Any], source: str) -> Heads | None:
        """The heads that beat the zero-shot read, as one set, each with its figures; None
        when none does."""
        kept = {
            h.prompt: replace(h.fitted, figures=h.figures(self.folds, self.seed))
            for h in self.heads
            if h.kept and h.fitted is not None
        }
        return Heads(heads=kept, judge=judge, source=source) if kept else None


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3:
        return None
    value = coefficients(x[None, :], y[None, :], "spearman")[0]
    return None if np.isnan(value) else float(value)


def rating_agreement(
    groups: np.ndarray, targets: Mapping[str, float]
) -> Callable[[np.ndarray, np.ndarray], float | None]:
    """Spearman between the ratings (``targets``, by sample) and the per-sample means of
    verdicts ``predicted`` for ``rows`` (whose samples ``groups`` names); None where undefined."""

    def agreement(rows: np.ndarray, predicted: np.ndarray) -> float | None:
        means = means_by_group(groups[rows], predicted)
        keys = list(means)
        return _spearman(np.array([means[k] for k in keys]), np.array([targets[k] for k in keys]))

    return agreement


def penalty_score(
    agreement: Callable[[np.ndarray, np.ndarray], float | None],
) -> Callable[[np.ndarray, np.ndarray], float]:
    """``agreement`` as a penalty is chosen by: a fold without a defined one counts as the
    worst."""

    def score(rows: np.ndarray, predicted: np.ndarray) -> float:
        found = agreement(rows, predicted)
        return -1.0 if found is None else found

    return score


def tune_ratings(
    result: Result,
    people: Labels,
    metric: str,
    states: Sequence[str],
    *,
    folds: int,
    seed: int,
    source: str,
) -> tuple[TunedHead | None, list[str]]:
    """The head of ``metric``'s prompt fitted through its mean to the ratings ``people`` gave it."""
    ratings, scale = people.ratings[metric], people.scales[metric]
    config = result.run.metrics[metric].config if metric in result.run.metrics else {}
    aggregation = aggregation_of(metric, config)
    if isinstance(aggregation, str):
        return None, [f"{metric}: {aggregation}"]
    scores = [s for s in result.scores_for(metric) if s.scored and s.sample_id in ratings]
    material, notes = gather(scores, aggregation.prompt, states, lambda _: None)
    rated = len(set(material.samples))
    if rated < 2 * folds:
        return None, [
            *notes,
            f"{metric}: {rated} rated samples with verdicts; {2 * folds} are needed for "
            f"{folds} folds",
        ]
    targets = {key: (ratings[key] - scale.low) / (scale.high - scale.low) for key in ratings}
    tuned = rating_head(
        metric,
        aggregation.prompt,
        material.verdicts,
        targets,
        states,
        folds=folds,
        seed=seed,
        learned_from=f"{metric} ratings of {rated} samples ({source})",
    )
    return tuned, notes


def rating_head(
    metric: str,
    prompt: YesNoPrompt,
    verdicts: Verdicts,
    targets: Mapping[str, float],
    states: Sequence[str],
    *,
    folds: int,
    seed: int,
    learned_from: str,
) -> TunedHead:
    """A head of ``prompt`` fitted through the per-sample mean of ``verdicts`` to ``targets``
    (ratings on 0-1, by sample), measured out of fold beside the zero-shot read, with its
    gain's interval: what ``tune`` decides on, given the verdicts of the rated samples."""
    groups = verdicts.groups
    assert groups is not None
    agreement = rating_agreement(groups, targets)
    design = Design(prompt.name, prompt.version, tuple(states), learned_from)
    fitter = Fitter(
        design,
        verdicts,
        targets=dict(targets),
        score=penalty_score(agreement),
        folds=folds,
        seed=seed,
    )
    everything = np.arange(len(verdicts))
    out_of_fold = fitter.out_of_fold()
    zero_shot = agreement(everything, verdicts.zero_shot)
    head = agreement(everything, out_of_fold)
    fitted = fitter.fitted()
    zero_means = means_by_group(groups, verdicts.zero_shot)
    head_means = means_by_group(groups, out_of_fold)
    keys = list(head_means)
    interval = None
    if zero_shot is not None and head is not None:
        gains = _spearman_gains(
            np.array([head_means[k] for k in keys]),
            np.array([zero_means[k] for k in keys]),
            np.array([targets[k] for k in keys]),
        )
        interval = _gain_interval(gains, len(keys), len(keys), seed)
    return TunedHead(
        metric=metric,
        prompt=prompt.name,
        labels="ratings",
        figure="Spearman",
        rows=len(keys),
        verdicts=len(verdicts),
        zero_shot=zero_shot,
        head=head,
        penalty=fitted.penalty,
        fitted=fitted.head,
        interval=interval,
    )


def read_claim_labels(path: Path, result: Result) -> dict[tuple[str, str], bool]:
    """(sample id, claim) -> supported, from a file of claim labels; every bad row is named."""
    known = {s.key for s in result.samples}
    labels: dict[tuple[str, str], bool] = {}
    first_row: dict[tuple[str, str], int] = {}
    problems: list[str] = []
    for number, row in read_rows(path):
        key = str(row.get(ID_FIELD) or "").strip()
        claim = str(row.get(CLAIM_FIELD) or "").strip()
        value = str(row.get(SUPPORTED_FIELD, "")).strip().lower()
        if not key or key not in known:
            problems.append(f"row {number}, field {ID_FIELD!r}: {key!r} is not a sample of the run")
        elif not claim:
            problems.append(f"row {number}, field {CLAIM_FIELD!r}: missing")
        elif value not in ("1", "0", "true", "false", "1.0", "0.0"):
            problems.append(f"row {number}, field {SUPPORTED_FIELD!r}: {value!r} is not 1 or 0")
        elif (key, claim) in labels and labels[(key, claim)] != (value in ("1", "true", "1.0")):
            problems.append(
                f"row {number}, field {SUPPORTED_FIELD!r}: the claim is labelled otherwise in "
                f"row {first_row[(key, claim)]}"
            )
        else:
            labels[(key, claim)] = value in ("1", "true", "1.0")
            first_row.setdefault((key, claim), number)
    if problems:
        raise LabelsError.listing(path, problems)
    if not labels:
        raise LabelsError(f"{path}: no claim labels")
    return labels


def tune_claims(
    result: Result,
    labels: Mapping[tuple[str, str], bool],
    states: Sequence[str],
    *,
    folds: int,
    seed: int,
    source: str,
) -> tuple[TunedHead | None, list[str]]:
    """Faithfulness's head fitted on claims labelled one by one."""
    scores = [s for s in result.scores_for("faithfulness") if s.scored]
    material, notes = gather(scores, SUPPORTED, states, _statements)
    pairs = list(zip(material.samples, material.claims, strict=True))
    rows = np.array([i for i, pair in enumerate(pairs) if pair in labels], dtype=int)
    unmatched = len(labels) - len(rows)
    if unmatched:
        notes.append(
            f"{unmatched} labelled claim(s) are not among the run's faithfulness statements "
            "(the claim must be the statement as the run checked it); left out"
        )
    if len(rows) < 2 * folds:
        return None, [*notes, f"{len(rows)} labelled claims found; {2 * folds} are needed"]
    verdicts = material.verdicts.rows(rows)
    truth = np.array([labels[pairs[i]] for i in rows])
    if truth.all() or not truth.any():
        raise LabelsError(
            f"every labelled claim found in the run is {'supported' if truth.all() else 'not'}"
            ": a head needs claims of both kinds"
        )

    def auc(rows_: np.ndarray, predicted: np.ndarray) -> float:
        """For choosing a penalty: a fold of one kind of claim tells nothing (0.5)."""
        found = roc_auc(truth[rows_], predicted)
        return 0.5 if found is None else found

    learned = f"{len(rows)} labelled faithfulness claims ({source})"
    design = Design(SUPPORTED.name, SUPPORTED.version, tuple(states), learned)
    # A sample's claims share its texts: they share a fold, so no head is read on a text it
    # learned from.
    fitter = Fitter(
        design,
        verdicts,
        labels=truth.astype(float),
        score=auc,
        folds=folds,
        seed=seed,
        together=[pairs[i][0] for i in rows],
    )
    everything = np.arange(len(rows))
    out_of_fold = fitter.out_of_fold()
    fitted = fitter.fitted()
    gains, units = _auc_gains(truth, out_of_fold, verdicts.zero_shot, [pairs[i][0] for i in rows])
    return TunedHead(
        metric="faithfulness",
        prompt=SUPPORTED.name,
        labels="claim labels",
        figure="ROC AUC",
        rows=len(rows),
        verdicts=len(rows),
        zero_shot=auc(everything, verdicts.zero_shot),
        head=auc(everything, out_of_fold),
        penalty=fitted.penalty,
        fitted=fitted.head,
        interval=_gain_interval(gains, units, len(rows), seed),
    ), notes


def is_claim_file(path: Path) -> bool:
    rows = read_rows(path)
    return bool(rows) and CLAIM_FIELD in rows[0][1]


def tune(
    result: Result,
    labels: Path,
    *,
    scales: Mapping[str | None, Scale] | None = None,
    states: Sequence[str] = DEFAULT_STATES,
    folds: int = 5,
    seed: int = 0,
) -> TuneReport:
    """Heads fitted on ``labels`` (ratings of samples or labels of claims) over ``result``'s
    verdicts, each with its out-of-fold agreement beside the zero-shot read's."""
    if is_claim_file(labels):
        claims = read_claim_labels(labels, result)
        return tune_labelled(
            result, claims=claims, states=states, folds=folds, seed=seed, source=labels.name
        )
    read = read_labels(labels, [s.key for s in result.samples], result.metrics, scales)
    return tune_labelled(
        result, ratings=read, states=states, folds=folds, seed=seed, source=labels.name
    )


def tune_labelled(
    result: Result,
    *,
    ratings: Labels | None = None,
    claims: Mapping[tuple[str, str], bool] | None = None,
    states: Sequence[str] = DEFAULT_STATES,
    folds: int = 5,
    seed: int = 0,
    source: str,
) -> TuneReport:
    """Heads fitted on labels already read (``ratings`` of samples, or ``claims`` labelled
    one by one, from a file or from the run's own labels) over ``result``'s verdicts."""
    found: list[tuple[TunedHead | None, list[str]]] = []
    if claims is not None:
        found.append(tune_claims(result, claims, states, folds=folds, seed=seed, source=source))
    if ratings is not None:
        found += [
            tune_ratings(result, ratings, metric, states, folds=folds, seed=seed, source=source)
            for metric in ratings.ratings
        ]
    heads = [tuned for tuned, _ in found if tuned]
    return TuneReport(heads, [note for _, notes in found for note in notes], folds, seed)


def is_attribution_file(path: Path) -> bool:
    """Labelled claims in AttributionBench's row format (``attribution_label``), as
    ``meta attribution`` reads them."""
    rows = read_rows(path)
    return bool(rows) and "attribution_label" in rows[0][1]


@dataclass
class VerifierTuning:
    """A verifier head refitted on the shipped training claims and a team's own, with the
    leave-one-source-out table that has the team's source(s) in it."""

    left_out: LeftOut
    yours: list[str]
    """The team's sources."""
    with_yours: dict[str, float | None]
    """Each of the team's sources read by heads fitted on the shipped claims and the rest of
    the team's (``folds`` folds, a group per fold; ``refit_verifier``): what its labels add."""
    head: Head
    notes: list[str]
    folds: int
    intervals: dict[str, GainInterval] = field(default_factory=dict)
    """Each of the team's sources: the 95 % interval of :meth:`gain`, over resamples of its
    groups."""
    read_as: str = ""
    """How the team's claims were read: as one source, or split by a column, and why."""

    def gain(self, source: str) -> float | None:
        """What the team's labels add on its source: its out-of-fold ROC AUC over zero-shot."""
        zero = next(f.zero_shot_auc for f in self.left_out.figures if f.source == source)
        found = self.with_yours.get(source)
        return None if found is None or zero is None else found - zero

    def clear(self, source: str) -> bool:
        """Whether the gain on ``source`` is clearly above zero (its whole interval)."""
        found = self.intervals.get(source)
        return found is not None and self.gain(source) is not None and found.clear


@dataclass
class Refit:
    """The verifier's head refitted on the shipped training claims and a team's, with what
    ``tune`` decides on: each of the team's sources read out of fold by heads fitted on the
    shipped claims and the rest of its own, and the gain's interval over its groups."""

    head: Head
    """Fitted on every claim, written over the states; ``learned_from`` is left to the caller."""
    penalty: float
    out_of_fold: dict[str, float | None]
    """Each of the team's sources: its ROC AUC read out of fold (``folds``, a group per fold)."""
    zero_shot: dict[str, float | None]
    """Each of the team's sources: the zero-shot read's ROC AUC on the same claims."""
    intervals: dict[str, GainInterval]

    def gain(self, source: str) -> float | None:
        found, zero = self.out_of_fold.get(source), self.zero_shot.get(source)
        return None if found is None or zero is None else found - zero

    def clear(self, source: str) -> bool:
        """Whether ``tune`` writes the head for ``source``: its gain's whole interval lies
        above zero."""
        found = self.intervals.get(source)
        return found is not None and self.gain(source) is not None and found.clear


def team_weights(shipped: LabelledClaims, mine: LabelledClaims, balance: str) -> np.ndarray:
    """Row weights for the shipped claims followed by a team's: the shipped ones balanced as
    the shipped head was, the team's by (source, label) among themselves, and the team's
    together weighing as much as all the shipped ones. Added at the weight of their number,
    a team's hundred claims would be an eighth of the verifier's lesson (beside 681); here
    they are half of it, and the shipped claims keep it from learning what a hundred claims
    cannot tell apart.
    Weights average 1."""
    base = balancing(shipped.sources, shipped.truth, balance)
    base = np.ones(len(shipped)) if base is None else base
    own = balancing(mine.sources, mine.truth, "both")
    assert own is not None  # "both" always weighs
    weights = np.concatenate([base / base.sum(), own / own.sum()])
    return weights * len(weights) / weights.sum()


def refit_verifier(
    training: TrainingSet, mine: LabelledClaims, *, folds: int = 5, seed: int = 0
) -> Refit:
    """The verifier's head refitted on ``training``'s claims and ``mine`` (a team's claims,
    already in ``training``'s projection), as ``tune`` refits it, and what ``tune`` decides
    on: what the team's labels add on each of its sources, out of fold.

    The team's claims weigh as much as the shipped ones (``team_weights``), and the penalty is
    the one that reads the team's held-out claims best: the shipped claims are always trained
    on and never scored. Out of fold, the team's groups are held out in turn (``folds``) and
    the penalty is chosen again inside each fold, so no figure saw its own claims."""
    joined = LabelledClaims.join([training.claims, mine])
    shipped = np.arange(len(training.claims))
    recipe = training.recipe()
    truth, sources = joined.truth, joined.sources
    fitter = Fitter(
        recipe.design,
        joined.verdicts,
        labels=truth.astype(float),
        weights=team_weights(training.claims, mine, recipe.balance),
        score=lambda rows, predicted: mean_source_auc(truth[rows], sources[rows], predicted),
        penalties=recipe.penalties,
        folds=folds,
        seed=seed,
        together=list(joined.groups),
        anchored=shipped,
    )
    predicted = fitter.out_of_fold()
    with_yours: dict[str, float | None] = {}
    zero_shot: dict[str, float | None] = {}
    intervals: dict[str, GainInterval] = {}
    for source in sorted(set(mine.sources.tolist())):
        rows = np.flatnonzero(mine.sources == source)
        zero = mine.verdicts.zero_shot[rows]
        with_yours[source] = roc_auc(mine.truth[rows], predicted[rows])
        zero_shot[source] = roc_auc(mine.truth[rows], zero)
        gains, units = _auc_gains(mine.truth[rows], predicted[rows], zero, list(mine.groups[rows]))
        intervals[source] = _gain_interval(gains, units, len(rows), seed)
    fitted = fitter.fitted()
    return Refit(
        training.head_over_states(fitted.head), fitted.penalty, with_yours, zero_shot, intervals
    )


SOURCE_FIELDS = ("src_dataset", "source")
"""Columns that may name where a team's claims come from. ``tune`` reads a team's claims as one
source all the same unless told to split them (``by``): a team's own labels are one domain,
and a hundred of them split five ways leave every part too few groups for a clear gain."""


def _splitting(labels: Path) -> dict[str, int]:
    """The ``SOURCE_FIELDS`` of ``labels`` that name more than one value, with how many."""
    rows = [row for _, row in read_rows(labels)]
    values = {
        name: {str(row.get(name) or "").strip() for row in rows} - {""} for name in SOURCE_FIELDS
    }
    return {name: len(found) for name, found in values.items() if len(found) > 1}


def _team_claims(labels: Path, by: str | None) -> list[Claim]:
    """The claims of ``labels``, each's source the value of its column ``by`` (the file's name
    where a row has none), or the file's name for every claim without ``by``."""
    if by is None:
        return [claim.model_copy(update={"source": labels.stem}) for claim in load_claims([labels])]
    claims = load_attribution(labels, source_field=by)
    if not any(claim.source for claim in claims):
        raise LabelsError(f"{labels}: no row has a {by!r} field to split the claims by")
    return [c if c.source else c.model_copy(update={"source": labels.stem}) for c in claims]


def _pooled(read: LabelledClaims, labels: Path, by: str | None) -> tuple[LabelledClaims, str]:
    """The team's claims as ``tune`` reads them, and a sentence that says how: as one source,
    unless ``by`` split them into parts of which one at least has ``MIN_UNITS`` groups (a part
    with fewer can never show a clear gain, so a split into only such parts is no use)."""
    pooled = replace(read, sources=np.full(len(read), labels.stem, dtype=object))
    one = f"your {len(read)} claims are read as one source, {labels.stem!r}"
    if by is None:
        found = _splitting(labels)
        said = "; ".join(
            f"their {name!r} names {count} (--by {name} reads each as a source of its own)"
            for name, count in found.items()
        )
        return pooled, one + (f": {said}" if said else "")
    groups = {
        str(source): len(set(read.groups[read.sources == source].tolist()))
        for source in sorted(set(read.sources.tolist()))
    }
    if len(groups) > 1 and all(count < MIN_UNITS for count in groups.values()):
        parts = ", ".join(f"{source} {count}" for source, count in groups.items())
        return pooled, (
            f"--by {by}: each of the {len(groups)} parts has fewer than {MIN_UNITS} groups of "
            f"claims ({parts}), too few to tell whether a gain holds in any; {one}"
        )
    names = ", ".join(repr(source) for source in groups)
    return read, (
        f"your {len(read)} claims are read as {len(groups)} source(s) by their {by!r}: {names}"
    )


def tune_verifier(
    run: Path,
    labels: Path,
    training: TrainingSet,
    *,
    folds: int = 5,
    seed: int = 0,
    by: str | None = None,
) -> VerifierTuning:
    """The verifier's head refitted on the shipped training claims plus the labelled claims in
    ``labels`` (AttributionBench's format), over the verdicts a ``meta attribution`` run on
    them kept. The team's claims are one source, named after the file, unless ``by`` names a
    column whose values are sources of their own; a split whose every part is too thin for a
    clear gain falls back to one source, and ``read_as`` says so."""
    if training.prompt_version != SUPPORTED.version:
        raise LabelsError(
            f"the shipped training claims were read with version {training.prompt_version} of "
            f"{SUPPORTED.name}, and this is version {SUPPORTED.version}: they cannot be joined"
        )
    claims = _team_claims(labels, by)
    if not (run / "verdicts.sqlite").is_file():
        raise LabelsError(
            f"{run}: not a meta attribution run; read the claims first: ragmeter meta "
            f"attribution {labels} --out {run} --judge-option states={','.join(training.states)}"
        )
    read, notes = read_run(run, claims, training.states)
    if len(read) < 2 * folds:
        raise LabelsError(f"{run}: {len(read)} of the {len(claims)} claims were read")
    if read.truth.all() or not read.truth.any():
        raise LabelsError(f"{labels}: a head needs claims of both kinds; these are all of one")
    read, read_as = _pooled(read, labels, by)
    mine = training.project(read)
    shipped = set(training.claims.sources.tolist())
    clashing = sorted(set(mine.sources.tolist()) & shipped)
    if clashing:
        notes.append(f"your source {clashing[0]!r} is also a shipped source: read as one")
    joined = LabelledClaims.join([training.claims, mine])
    left_out = leave_one_source_out(joined, training.recipe())
    refit = refit_verifier(training, mine, folds=folds, seed=seed)
    yours = sorted(refit.out_of_fold)
    as_sources = "one source" if len(yours) == 1 else f"{len(yours)} sources by {by!r}"
    learned = (
        f"the shipped training claims ({len(training.claims)}, balanced by {training.balance}) "
        f"and {len(mine)} of {labels.name} read as {as_sources}, weighing as much; penalty "
        f"{refit.penalty:g}"
    )
    final = replace(refit.head, learned_from=learned)
    return VerifierTuning(
        left_out, yours, refit.out_of_fold, final, notes, folds, refit.intervals, read_as
    )
