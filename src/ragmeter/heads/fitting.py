"""Fitting verdict heads (``ragmeter.judges.heads``) on labelled verdicts, and measuring them out
of fold.

Two kinds of labels teach a head:

- **per verdict**: a person said whether this claim is supported (AttributionBench, a team's
  per-claim labels). The head is a logistic regression on the verdict's hidden states with the
  zero-shot logit as an input whose weight is not penalised, so with too little data it stays at
  (a calibration of) the zero-shot read;
- **per sample, through the metric's aggregation**: a person rated a sample (MTRAG's
  faithfulness ratings), and the metric's value is the mean of its verdicts' probabilities. The
  head is fitted so that this mean tracks the rating (squared error on the 0-1 scale).

The penalty on the hidden-state weights is chosen by cross-validation inside the training data,
so a figure reported out of fold never saw its own rows, not even to pick the penalty.
Needs scipy (``pip install 'ragmeter[tune]'``); reading with a fitted head needs only numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.judges.base import unpack_state
from ragmeter.judges.heads import Head, logit, sigmoid
from ragmeter.prompts import YesNoPrompt
from ragmeter.score import Exchange, Score

PENALTIES = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
"""Candidate L2 penalties on the standardised state weights, per unit of training weight."""
SCALE_FLOOR = 1e-3


@dataclass
class Verdicts:
    """The verdicts of one Yes/No prompt as heads read them: zero-shot P(Yes) and hidden
    states, one row per verdict; ``groups`` says which sample each belongs to (for fits through
    a metric's aggregation)."""

    zero_shot: np.ndarray
    states: dict[str, np.ndarray]
    groups: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.zero_shot)

    def rows(self, index: np.ndarray) -> Verdicts:
        return Verdicts(
            self.zero_shot[index],
            {name: matrix[index] for name, matrix in self.states.items()},
            None if self.groups is None else self.groups[index],
        )

    def logits(self) -> np.ndarray:
        return np.array([logit(float(p)) for p in self.zero_shot])

    def matrix(self, names: Sequence[str]) -> np.ndarray:
        if not names:
            return np.zeros((len(self), 0))
        return np.concatenate([self.states[name] for name in names], axis=1).astype(np.float64)


def _require_scipy() -> Any:
    try:
        from scipy import optimize
    except ImportError as exc:  # pragma: no cover - the extra names it
        raise ImportError("fitting heads needs scipy: pip install 'ragmeter[tune]'") from exc
    return optimize


@dataclass(frozen=True)
class Design:
    """What a head reads and how it is fitted: the states (none: a calibration of P(Yes)).

    Every design is a linear read of the states, so each is written as the same ``Head`` (a
    center, a scale and weights over the states side by side) and read the same way."""

    prompt: str
    prompt_version: str
    states: tuple[str, ...]
    learned_from: str
    pooled: bool = False
    """Read the mean of the states (layers) rather than the states side by side: one direction
    shared by the layers, a fraction of the weights to learn."""
    components: int | None = None
    """Fit the weights in the span of the training states' first principal components (after
    standardising): fewer directions, less room to learn one corpus's style."""

    @property
    def name(self) -> str:
        reads = " + ".join(self.states) or "P(Yes) alone"
        if self.pooled and len(self.states) > 1:
            reads = f"mean of {reads}"
        return reads + (f", {self.components} components" if self.components else "")


Loss = Callable[[np.ndarray, np.ndarray, np.ndarray, float], tuple[float, np.ndarray]]
"""(parameters [a, b, w...], zero-shot logits, standardised states, penalty) -> loss, gradient."""


def _verdict_loss(labels: np.ndarray, weights: np.ndarray | None = None) -> Loss:
    """Log-loss of per-verdict labels, each row counted ``weights[i]`` times (once if None)."""
    counts = np.ones(len(labels)) if weights is None else weights

    def loss(theta: np.ndarray, z: np.ndarray, x: np.ndarray, penalty: float) -> Any:
        a, b, w = theta[0], theta[1], theta[2:]
        score = a * z + b + x @ w
        p = sigmoid(score)
        # Log-loss written stably: log(1 + e^s) - y s.
        value = counts @ (np.logaddexp(0, score) - labels * score) + 0.5 * penalty * w @ w
        residual = (p - labels) * counts
        gradient = np.concatenate([[residual @ z, residual.sum()], x.T @ residual + penalty * w])
        return value, gradient

    return loss


def _mean_loss(groups: np.ndarray, targets: dict[Any, float]) -> Loss:
    """Squared error between each group's mean P(Yes) and its target (0-1)."""
    names, inverse = np.unique(groups, return_inverse=True)
    wanted = np.array([targets[name] for name in names])
    sizes = np.bincount(inverse, minlength=len(names)).astype(float)

    def loss(theta: np.ndarray, z: np.ndarray, x: np.ndarray, penalty: float) -> Any:
        a, b, w = theta[0], theta[1], theta[2:]
        p = sigmoid(a * z + b + x @ w)
        means = np.bincount(inverse, weights=p, minlength=len(names)) / sizes
        error = means - wanted
        # d mean_g / d score_i = p_i (1 - p_i) / |g|
        through = 2 * error[inverse] * p * (1 - p) / sizes[inverse]
        value = error @ error + 0.5 * penalty * w @ w
        gradient = np.concatenate([[through @ z, through.sum()], x.T @ through + penalty * w])
        return value, gradient

    return loss


def _standardise(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    center = matrix.mean(axis=0) if len(matrix) else np.zeros(matrix.shape[1])
    scale = matrix.std(axis=0) if len(matrix) else np.ones(matrix.shape[1])
    return center, np.maximum(scale, SCALE_FLOOR)


def _read(design: Design, verdicts: Verdicts) -> np.ndarray:
    """The states as the design reads them: side by side, or their mean."""
    if design.pooled and len(design.states) > 1:
        return np.mean([verdicts.matrix((name,)) for name in design.states], axis=0)
    return verdicts.matrix(design.states)


def fit(design: Design, verdicts: Verdicts, loss: Loss, penalty: float, weight: float) -> Head:
    """A head fitted by L-BFGS from the zero-shot read (a = 1, b = 0, w = 0); ``weight`` is the
    training set's size in the loss's units, which the penalty is scaled by."""
    optimize = _require_scipy()
    z = verdicts.logits()
    raw = _read(design, verdicts)
    center, scale = _standardise(raw)
    x = (raw - center) / scale
    basis = None
    if design.components and design.components < min(x.shape):
        # The weights live in the span of the first principal directions, each standardised
        # (as a ``verifier.TrainingSet``'s projections are): fitted there, then written back
        # as weights over the standardised states.
        directions = np.linalg.svd(x, full_matrices=False)[2][: design.components].T
        projected = x @ directions
        basis = directions / np.maximum(projected.std(axis=0), SCALE_FLOOR)
        x = x @ basis
    start = np.concatenate([[1.0, 0.0], np.zeros(x.shape[1])])
    # The states' weights are penalised in proportion to the data, so one penalty means the
    # same for a hundred labels or ten thousand.
    strength = penalty * weight
    result = optimize.minimize(
        loss, start, args=(z, x, strength), jac=True, method="L-BFGS-B", options={"maxiter": 500}
    )
    theta = result.x
    weights = theta[2:] if basis is None else basis @ theta[2:]
    if design.pooled and len(design.states) > 1:
        # The mean of k states read as the states side by side: each state's center is the
        # mean's, and its scale k times the mean's.
        k = len(design.states)
        center, scale, weights = np.tile(center, k), np.tile(scale * k, k), np.tile(weights, k)
    return Head(
        prompt=design.prompt,
        prompt_version=design.prompt_version,
        states=design.states,
        center=center,
        scale=scale,
        weights=weights,
        zero_shot_weight=float(theta[0]),
        bias=float(theta[1]),
        learned_from=design.learned_from,
    )


def predict(head: Head, verdicts: Verdicts) -> np.ndarray:
    """P(Yes) of each verdict as ``head`` reads it."""
    raw = verdicts.matrix(head.states)
    x = (raw - head.center) / head.scale if head.states else np.zeros((len(verdicts), 0))
    return np.asarray(sigmoid(head.logit(verdicts.logits(), x)), dtype=float)


def means_by_group(groups: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Each group's mean prediction (a sample's value is the mean of its verdicts), by group."""
    keys = sorted(set(groups.tolist()))
    return {key: float(predicted[groups == key].mean()) for key in keys}


def folds_of(keys: Sequence[Any], folds: int, seed: int) -> np.ndarray:
    """A fold number per row; rows sharing a key (a sample's verdicts) share a fold."""
    unique = sorted(set(keys), key=str)
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[i]: n % folds for n, i in enumerate(order)}
    return np.array([fold_of[key] for key in keys])


@dataclass
class Fitted:
    head: Head
    penalty: float


class Fitter:
    """Fits one design to one kind of label, choosing the penalty by inner cross-validation."""

    def __init__(
        self,
        design: Design,
        verdicts: Verdicts,
        *,
        labels: np.ndarray | None = None,
        weights: np.ndarray | None = None,
        targets: dict[Any, float] | None = None,
        score: Callable[[np.ndarray, np.ndarray], float],
        penalties: Sequence[float] = PENALTIES,
        folds: int = 5,
        seed: int = 0,
        together: Sequence[Any] | None = None,
        anchored: np.ndarray | None = None,
    ) -> None:
        """Per-verdict ``labels`` (0/1, one per verdict), or per-group ``targets`` (0-1 by
        group, with ``verdicts.groups``); ``weights`` counts each labelled verdict that many
        times (to balance sources and labels); ``score(rows, predicted)`` says how good predictions
        are (higher is better) for the inner choice of penalty. ``together`` gives each
        verdict a key; verdicts that share one share a fold (claims about the same references:
        a head that saw one of them would be read on text it has learned). ``anchored`` rows
        are always trained on and never held out: a shipped set a team's labels add to, so
        that the penalty is the one that reads the team's own rows best."""
        if (labels is None) == (targets is None):
            raise ValueError("give labels for the verdicts or targets for their groups")
        if targets is not None and verdicts.groups is None:
            raise ValueError("targets by group need the verdicts' groups")
        self.design = design
        self.verdicts = verdicts
        self.labels = labels
        self.weights = weights
        self.targets = targets
        self.score = score
        self.penalties = tuple(penalties) if design.states else (0.0,)
        self.folds = folds
        self.seed = seed
        self.together = None if together is None else np.asarray(together, dtype=object)
        self.anchored = np.empty(0, dtype=int) if anchored is None else np.asarray(anchored)

    def _keys(self, rows: np.ndarray) -> list[Any]:
        if self.together is not None:
            return list(self.together[rows])
        groups = self.verdicts.groups
        return list(rows) if groups is None or self.targets is None else list(groups[rows])

    def _fit(self, rows: np.ndarray, penalty: float) -> Head:
        verdicts = self.verdicts.rows(rows)
        if self.labels is not None:
            counts = None if self.weights is None else self.weights[rows]
            loss = _verdict_loss(self.labels[rows], counts)
            total = len(rows) if counts is None else float(counts.sum())
            return fit(self.design, verdicts, loss, penalty, total)
        assert self.targets is not None and verdicts.groups is not None
        groups = len(set(verdicts.groups.tolist()))
        loss = _mean_loss(verdicts.groups, self.targets)
        return fit(self.design, verdicts, loss, penalty, groups)

    def fitted(self, rows: np.ndarray | None = None) -> Fitted:
        """The head fitted on ``rows`` (all by default), its penalty chosen by an inner
        cross-validation on the same rows (those not anchored)."""
        rows = np.arange(len(self.verdicts)) if rows is None else rows
        if len(self.penalties) == 1:
            return Fitted(self._fit(rows, self.penalties[0]), self.penalties[0])
        kept = np.intersect1d(rows, self.anchored)
        scored = np.setdiff1d(rows, self.anchored) if len(kept) else rows
        inner = folds_of(self._keys(scored), self.folds, self.seed + 1)
        best, best_score = self.penalties[0], -np.inf
        for penalty in self.penalties:
            predicted = np.empty(len(scored))
            for fold in range(self.folds):
                held = inner == fold
                if held.any():
                    head = self._fit(np.concatenate([kept, scored[~held]]), penalty)
                    predicted[held] = predict(head, self.verdicts.rows(scored[held]))
            value = self.score(scored, predicted)
            if value > best_score:
                best, best_score = penalty, value
        return Fitted(self._fit(rows, best), best)

    def out_of_fold(self) -> np.ndarray:
        """Every verdict's P(Yes) from a head fitted without its fold (penalty chosen inside),
        in the order of the verdicts; with ``anchored`` rows, of the others only."""
        rows = np.setdiff1d(np.arange(len(self.verdicts)), self.anchored)
        outer = folds_of(self._keys(rows), self.folds, self.seed)
        predicted = np.empty(len(rows))
        for fold in range(self.folds):
            held = outer == fold
            if held.any():
                head = self.fitted(np.concatenate([self.anchored, rows[~held]])).head
                predicted[held] = predict(head, self.verdicts.rows(rows[held]))
        return predicted


def zero_shot_of(exchange: Exchange) -> float | None:
    """The zero-shot P(Yes) of a verdict, whichever way the run read it."""
    return exchange.zero_shot if exchange.head else exchange.probability


def _verdicts(score: Score, prompt: YesNoPrompt) -> list[Exchange]:
    """The answered Yes/No exchanges of ``prompt`` in ``score``, in the order asked (a retried
    question ends in one answered exchange)."""
    return [e for e in score.exchanges if e.prompt == prompt.name and e.probability is not None]


@dataclass
class Material:
    """The verdicts of one prompt gathered from a run: one row per verdict."""

    verdicts: Verdicts
    samples: list[str]
    claims: list[str]


def gather(
    scores: Sequence[Score],
    prompt: YesNoPrompt,
    states: Sequence[str],
    claims_of: Callable[[Score], list[str] | None],
) -> tuple[Material, list[str]]:
    """The verdicts of ``prompt`` in ``scores`` with the ``states`` a head reads, and notes on
    what was left out (a score without such verdicts, verdicts without the states)."""
    zero_shot: list[float] = []
    rows: dict[str, list[np.ndarray]] = {name: [] for name in states}
    samples: list[str] = []
    claims: list[str] = []
    left_out: dict[str, list[str]] = {}
    for score in scores:
        exchanges = _verdicts(score, prompt)
        if not exchanges:
            continue
        texts = claims_of(score) or [""] * len(exchanges)
        if len(texts) != len(exchanges):
            reason = "their verdicts and claims differ in number"
        elif any(not set(states) <= set(e.states or ()) for e in exchanges):
            reason = (
                f"verdicts without the hidden states {', '.join(states)} (a judge that does "
                "not show them)"
            )
        elif any(zero_shot_of(e) is None for e in exchanges):
            reason = "a verdict without its zero-shot read"
        else:
            reason = ""
        if reason:
            left_out.setdefault(reason, []).append(score.sample_id)
            continue
        for exchange, text in zip(exchanges, texts, strict=True):
            zero_shot.append(float(zero_shot_of(exchange)))  # type: ignore[arg-type]
            for name in states:
                rows[name].append(unpack_state(exchange.states[name]))  # type: ignore[index]
            samples.append(score.sample_id)
            claims.append(text)
    matrices = {name: np.array(vectors) for name, vectors in rows.items()}
    verdicts = Verdicts(np.array(zero_shot), matrices, np.array(samples, dtype=object))
    notes = [
        f"{len(keys)} sample(s) left out, {reason}: {', '.join(keys[:3])}"
        + (", ..." if len(keys) > 3 else "")
        for reason, keys in left_out.items()
    ]
    return Material(verdicts, samples, claims), notes
