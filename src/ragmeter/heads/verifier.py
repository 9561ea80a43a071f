"""The claim verifier's training material, and how far a head fitted on it travels.

The verifier is ``faithfulness.supported``: is this claim supported by this text? Its labelled
claims come from many sources (AttributionBench's four, SummEdits' domains, Factcheck-GPT, BEGIN's
dialogue corpora, WiCE, a team's own file) in AttributionBench's row format, read by
``ragmeter meta attribution`` with the hidden states kept. A head is only worth shipping if it
helps on sources it never saw, so every figure here is **leave one source out**: for each
source, a head is fitted on all the others (its penalty chosen by leaving sources out inside
them too) and read on the one left out, beside the zero-shot read of the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np

from ragmeter import stats
from ragmeter.claims import SUPPORTED
from ragmeter.heads.fitting import PENALTIES, Design, Fitter, Verdicts, gather, predict
from ragmeter.judges.heads import Head
from ragmeter.meta.attribution import Claim, load_attribution
from ragmeter.score import Score
from ragmeter.stats import balanced_accuracy, macro_f1, roc_auc
from ragmeter.store import stored_payloads

INNER_FOLDS = 4
"""Folds of the penalty's choice inside the training sources, each holding whole sources."""


@dataclass
class LabelledClaims:
    """Verdicts on labelled claims, one row per claim: what a verifier head learns from."""

    verdicts: Verdicts
    truth: np.ndarray
    """True where people judged the claim supported."""
    sources: np.ndarray
    """The source each claim comes from: the unit left out."""
    groups: np.ndarray
    """Claims sharing evidence (a document, a question) share a group, and a fold."""
    ids: list[str]

    def __len__(self) -> int:
        return len(self.truth)

    def rows(self, index: np.ndarray) -> LabelledClaims:
        return LabelledClaims(
            self.verdicts.rows(index),
            self.truth[index],
            self.sources[index],
            self.groups[index],
            [self.ids[i] for i in index],
        )

    @classmethod
    def join(cls, parts: Sequence[LabelledClaims]) -> LabelledClaims:
        names = parts[0].verdicts.states
        return cls(
            Verdicts(
                np.concatenate([p.verdicts.zero_shot for p in parts]),
                {n: np.concatenate([p.verdicts.states[n] for p in parts]) for n in names},
            ),
            np.concatenate([p.truth for p in parts]),
            np.concatenate([p.sources for p in parts]),
            np.concatenate([p.groups for p in parts]),
            [i for p in parts for i in p.ids],
        )


def read_run(
    run: Path, claims: Sequence[Claim], states: Sequence[str]
) -> tuple[LabelledClaims, list[str]]:
    """The verdicts of a ``meta attribution`` run on ``claims`` (with the ``states`` kept), and
    notes on what was left out. Claims the run has not read yet are not in it: a run read in
    part gives what it has."""
    by_id = {claim.id: claim for claim in claims}
    scores = [Score.model_validate_json(p) for p in stored_payloads(run / "verdicts.sqlite")]
    scores = [s for s in scores if s.sample_id in by_id and s.scored]
    material, notes = gather(scores, SUPPORTED, states, lambda _: None)
    chosen = [by_id[key] for key in material.samples]
    return LabelledClaims(
        material.verdicts,
        np.array([c.label for c in chosen], dtype=bool),
        np.array([c.source for c in chosen], dtype=object),
        np.array([c.group for c in chosen], dtype=object),
        [c.id for c in chosen],
    ), notes


def load_claims(paths: Sequence[Path]) -> list[Claim]:
    return [claim for path in paths for claim in load_attribution(path)]


def balancing(sources: np.ndarray, truth: np.ndarray, by: str) -> np.ndarray | None:
    """Row weights that give every source (``by="sources"``), every label within a source
    (``"labels"``), or every (source, label) cell (``"both"``) the same total weight; None for
    ``"none"``. Weights average 1, so penalties mean the same as without them."""
    if by == "none":
        return None
    keys = {
        "sources": sources.astype(str),
        "labels": truth.astype(str),
        "both": np.char.add(sources.astype(str), truth.astype(str)),
    }[by]
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[inverse]
    return weights * len(weights) / weights.sum()


def mean_source_auc(truth: np.ndarray, sources: np.ndarray, predicted: np.ndarray) -> float:
    """The mean of each source's ROC AUC (sources with one kind of label are skipped): a head
    that travels ranks well inside every source, not only across them."""
    found = [
        roc_auc(truth[sources == source], predicted[sources == source])
        for source in np.unique(sources)
    ]
    values = [value for value in found if value is not None]
    return float(np.mean(values)) if values else 0.5


@dataclass(frozen=True)
class Recipe:
    """How a verifier head is fitted: the design, and how the rows are balanced."""

    design: Design
    balance: str = "both"
    penalties: tuple[float, ...] = PENALTIES

    @property
    def name(self) -> str:
        return f"{self.design.name}; balanced by {self.balance}"


def fit_head(data: LabelledClaims, recipe: Recipe) -> tuple[Head, float]:
    """A head fitted on every row of ``data``, its penalty chosen by leaving whole sources out
    (``INNER_FOLDS`` folds): the penalty that travels, not the one that fits."""
    truth, sources = data.truth, data.sources
    folds = min(INNER_FOLDS, len(set(sources.tolist())))
    fitter = Fitter(
        recipe.design,
        data.verdicts,
        labels=truth.astype(float),
        weights=balancing(sources, truth, recipe.balance),
        score=lambda rows, predicted: mean_source_auc(truth[rows], sources[rows], predicted),
        penalties=recipe.penalties,
        folds=max(folds, 2),
        together=list(sources) if folds >= 2 else list(data.groups),
    )
    fitted = fitter.fitted()
    return fitted.head, fitted.penalty


@dataclass
class SourceFigures:
    """One source left out: the zero-shot read and the head fitted without it, on its rows."""

    source: str
    claims: int
    supported: int
    zero_shot_auc: float | None
    head_auc: float | None
    zero_shot_balanced: float
    """Balanced accuracy of the zero-shot read at the threshold best on the other sources."""
    head_balanced: float
    """Balanced accuracy of the head at 0.5 (its probabilities are calibrated)."""
    zero_shot_macro_f1: float
    head_macro_f1: float

    @property
    def gain(self) -> float | None:
        """The head's ROC AUC over the zero-shot read's (None where a label is missing)."""
        if self.head_auc is None or self.zero_shot_auc is None:
            return None
        return self.head_auc - self.zero_shot_auc


def best_threshold(truth: np.ndarray, probability: np.ndarray) -> float:
    """The threshold with the best balanced accuracy (the nearest to 0.5 among equals)."""
    candidates = np.unique(np.round(probability, 3))
    return stats.best_threshold(candidates, lambda t: balanced_accuracy(truth, probability >= t))


@dataclass
class LeftOut:
    """A recipe measured by leaving each source out in turn."""

    recipe: Recipe
    figures: list[SourceFigures]
    predicted: np.ndarray
    """Every row's P(supported) from the head fitted without its source."""

    def gains(self) -> list[float]:
        return [f.gain for f in self.figures if f.gain is not None]

    def mean_gain(self) -> float:
        return float(np.mean(self.gains())) if self.gains() else 0.0

    def worst_gain(self) -> float:
        return min(self.gains(), default=0.0)


def leave_one_source_out(
    data: LabelledClaims, recipe: Recipe, sources: Sequence[str] | None = None
) -> LeftOut:
    """For each source (all by default): a head fitted on the other sources, read on it."""
    predicted = np.full(len(data), np.nan)
    figures = []
    for source in sources or sorted(set(data.sources.tolist())):
        held = data.sources == source
        train = data.rows(np.flatnonzero(~held))
        head, _ = fit_head(train, recipe)
        test_rows = np.flatnonzero(held)
        read = predict(head, data.verdicts.rows(test_rows))
        predicted[test_rows] = read
        truth = data.truth[test_rows]
        zero = data.verdicts.zero_shot[test_rows]
        cut = best_threshold(train.truth, train.verdicts.zero_shot)
        figures.append(
            SourceFigures(
                source=source,
                claims=len(test_rows),
                supported=int(truth.sum()),
                zero_shot_auc=roc_auc(truth, zero),
                head_auc=roc_auc(truth, read),
                zero_shot_balanced=balanced_accuracy(truth, zero >= cut),
                head_balanced=balanced_accuracy(truth, read >= 0.5),
                zero_shot_macro_f1=macro_f1(truth, zero >= cut),
                head_macro_f1=macro_f1(truth, read >= 0.5),
            )
        )
    return LeftOut(recipe, figures, predicted)


def with_figures(head: Head, left_out: LeftOut, learned_from: str) -> Head:
    """The head as shipped: what it learned from, and its leave-one-source-out figures."""
    figures = {
        "figure": "ROC AUC, each source left out in turn",
        "recipe": left_out.recipe.name,
        "sources": {
            f.source: {
                "claims": f.claims,
                "zero_shot": None if f.zero_shot_auc is None else round(f.zero_shot_auc, 3),
                "head": None if f.head_auc is None else round(f.head_auc, 3),
            }
            for f in left_out.figures
        },
        "mean_gain": round(left_out.mean_gain(), 3),
        "worst_gain": round(left_out.worst_gain(), 3),
    }
    return replace(head, learned_from=learned_from, figures=figures)


TRAINING_FILE = "verifier_training.npz"
"""The shipped head's training claims, kept as a head reads them, so that a team refits on top
of them (``ragmeter tune RUN CLAIMS``). They ship beside the head they fitted, in
``ragmeter.judges`` (``judges.heads.BUNDLED_FILE``), since the two are written together."""


@dataclass
class TrainingSet:
    """Labelled claims as a head reads them, without their text: each claim's state projected
    on a few principal directions of the training states (after standardising), its zero-shot
    P(Yes), its label, source and group. A head fitted on the projections is written back as a
    head over the full state (``head_over_states``), which the judge reads as any other."""

    states: tuple[str, ...]
    center: np.ndarray
    scale: np.ndarray
    basis: np.ndarray
    """Standardised state -> projection: one column per principal direction."""
    claims: LabelledClaims
    """The projections, as the single state ``PROJECTED``."""
    prompt_version: str
    balance: str = "both"
    penalties: tuple[float, ...] = PENALTIES
    """How heads are fitted on it (``Recipe``): the shipped head's way, which a refit keeps."""

    PROJECTED = "projected"

    @classmethod
    def build(cls, data: LabelledClaims, recipe: Recipe, prompt_version: str) -> TrainingSet:
        """The claims of ``data`` in the first ``recipe.design.components`` principal
        directions of their states, for heads fitted the recipe's way."""
        states, components = recipe.design.states, recipe.design.components
        if not components or recipe.design.pooled:
            raise ValueError("a training set keeps a design's principal components of its states")
        raw = data.verdicts.matrix(states)
        center = raw.mean(axis=0)
        scale = np.maximum(raw.std(axis=0), 1e-3)
        basis = np.linalg.svd((raw - center) / scale, full_matrices=False)[2][:components].T
        found = cls(
            states, center, scale, basis, data, prompt_version, recipe.balance, recipe.penalties
        )
        return replace(found, claims=found.project(data))

    def recipe(self) -> Recipe:
        """How a head is fitted on the projections."""
        design = Design(SUPPORTED.name, self.prompt_version, (self.PROJECTED,), "")
        return Recipe(design, self.balance, self.penalties)

    def fit(self) -> tuple[Head, float]:
        """A head fitted on these claims, written over the states, and its penalty (a team's
        claims join them in ``heads.tuning.refit_verifier``)."""
        head, penalty = fit_head(self.claims, self.recipe())
        return self.head_over_states(head), penalty

    def project(self, data: LabelledClaims) -> LabelledClaims:
        """Other claims (a team's), read by the same judge, in this set's projection."""
        missing = [name for name in self.states if name not in data.verdicts.states]
        if missing:
            raise ValueError(
                f"the claims' verdicts lack the hidden state {missing[0]!r}, which the shipped "
                "training set was read with: read them keeping it (--judge-option "
                f"states={','.join(self.states)})"
            )
        raw = data.verdicts.matrix(self.states)
        projected = ((raw - self.center) / self.scale) @ self.basis
        return replace(
            data, verdicts=Verdicts(data.verdicts.zero_shot, {self.PROJECTED: projected})
        )

    def head_over_states(self, head: Head) -> Head:
        """A head fitted on the projections, as a head over the full states:
        ``w . (p - c) / s`` with ``p = ((x - center) / scale) @ basis`` is
        ``((x - center) / scale) @ (basis @ (w / s)) - (w / s) . c``."""
        per_unit = head.weights / head.scale
        return replace(
            head,
            states=self.states,
            center=self.center,
            scale=self.scale,
            weights=self.basis @ per_unit,
            bias=head.bias - float(per_unit @ head.center),
        )

    def save(self, path: Path) -> None:
        data = self.claims
        np.savez_compressed(
            path,
            states=np.array(self.states),
            center=self.center.astype(np.float32),
            scale=self.scale.astype(np.float32),
            basis=self.basis.astype(np.float16),
            projected=data.verdicts.states[self.PROJECTED].astype(np.float16),
            zero_shot=data.verdicts.zero_shot.astype(np.float32),
            truth=data.truth,
            sources=data.sources.astype(str),
            groups=data.groups.astype(str),
            prompt_version=np.array(self.prompt_version),
            balance=np.array(self.balance),
            penalties=np.array(self.penalties),
        )

    @classmethod
    def load(cls, path: Path) -> TrainingSet:
        with np.load(path, allow_pickle=False) as found:
            truth = found["truth"].astype(bool)
            claims = LabelledClaims(
                Verdicts(
                    found["zero_shot"].astype(np.float64),
                    {cls.PROJECTED: found["projected"].astype(np.float64)},
                ),
                truth,
                found["sources"].astype(object),
                found["groups"].astype(object),
                [f"shipped-{i}" for i in range(len(truth))],
            )
            return cls(
                tuple(str(name) for name in found["states"]),
                found["center"].astype(np.float64),
                found["scale"].astype(np.float64),
                found["basis"].astype(np.float64),
                claims,
                str(found["prompt_version"]),
                str(found["balance"]),
                tuple(float(value) for value in found["penalties"]),
            )


def shipped_training_set() -> TrainingSet | None:
    """The shipped head's training claims, where the package has them."""
    resource = resources.files("ragmeter.judges").joinpath(TRAINING_FILE)
    if not resource.is_file():
        return None
    with resources.as_file(resource) as path:
        return TrainingSet.load(path)
