"""The claim verifier's heads: balanced rows, pooled layers, principal components, and the
leave-one-source-out measurement, on synthetic verdicts whose answers are known."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragmeter.heads.fitting import Design, Fitter, Verdicts, predict
from ragmeter.heads.verifier import (
    LabelledClaims,
    Recipe,
    balancing,
    best_threshold,
    leave_one_source_out,
    load_claims,
    mean_source_auc,
)
from ragmeter.stats import balanced_accuracy

pytest.importorskip("scipy")


def test_balanced_accuracy_is_the_mean_recall_of_each_class():
    truth = np.array([True, True, False, False, False])
    predicted = np.array([True, False, False, False, True])
    # Recall of supported: 1/2; of unsupported: 2/3.
    assert balanced_accuracy(truth, predicted) == pytest.approx((1 / 2 + 2 / 3) / 2)
    # Saying Yes to everything is 0.5 whatever the balance.
    assert balanced_accuracy(truth, np.ones(5, dtype=bool)) == 0.5


def test_balancing_gives_each_cell_the_same_weight_and_keeps_the_mean_at_one():
    sources = np.array(["a", "a", "a", "b"], dtype=object)
    truth = np.array([True, True, False, True])
    # Cells: (a, yes) two rows, (a, no) one, (b, yes) one -> 1/2, 1/2, 1, 1, scaled to mean 1.
    assert balancing(sources, truth, "both") == pytest.approx([2 / 3, 2 / 3, 4 / 3, 4 / 3])
    # By source: a's three rows share a's weight -> 1/3, 1/3, 1/3, 1 scaled by 4/2.
    assert balancing(sources, truth, "sources") == pytest.approx([2 / 3, 2 / 3, 2 / 3, 2])
    assert balancing(sources, truth, "none") is None


def test_mean_source_auc_skips_a_source_with_one_kind_of_label():
    truth = np.array([True, False, True, True])
    sources = np.array(["a", "a", "b", "b"], dtype=object)
    predicted = np.array([0.9, 0.1, 0.2, 0.3])
    assert mean_source_auc(truth, sources, predicted) == 1.0


def test_best_threshold_takes_the_best_balanced_accuracy():
    truth = np.array([True, True, False, False])
    probability = np.array([0.9, 0.7, 0.6, 0.2])
    assert best_threshold(truth, probability) == 0.7


def _synthetic(seed: int, n: int = 240) -> tuple[Verdicts, np.ndarray]:
    """The label is in the first state dimension; the zero-shot read is weak."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.5
    signal = np.where(truth, 1.0, -1.0) + rng.normal(0, 0.6, n)
    zero = 1 / (1 + np.exp(-(0.3 * np.where(truth, 1, -1) + rng.normal(0, 1, n))))
    noise = rng.normal(0, 1, (n, 5))
    return Verdicts(zero, {"a": np.column_stack([signal, noise])}), truth


def test_a_pooled_head_reads_the_mean_of_its_layers():
    verdicts, truth = _synthetic(0)
    rng = np.random.default_rng(1)
    # Two "layers": the same signal with their own noise; the head reads their mean.
    a = verdicts.states["a"]
    b = a + rng.normal(0, 0.3, a.shape)
    both = Verdicts(verdicts.zero_shot, {"a": a, "b": b})
    design = Design("p", "v", ("a", "b"), "synthetic", pooled=True)
    fitter = Fitter(
        design, both, labels=truth.astype(float), score=lambda r, p: 0.0, penalties=(0.1,)
    )
    head = fitter.fitted().head
    assert len(head.weights) == 2 * a.shape[1]
    # Written as the layers side by side, it gives what a head on their mean gives.
    mean = (a + b) / 2
    k = 2
    center, scale, weights = head.center[:6], head.scale[:6] / k, head.weights[:6]
    by_hand = 1 / (
        1
        + np.exp(
            -(
                head.zero_shot_weight * both.logits()
                + head.bias
                + ((mean - center) / scale) @ weights
            )
        )
    )
    assert predict(head, both) == pytest.approx(by_hand, abs=1e-9)
    assert ((predict(head, both) >= 0.5) == truth).mean() > 0.85


def test_a_head_in_few_components_has_weights_in_their_span():
    verdicts, truth = _synthetic(2)
    design = Design("p", "v", ("a",), "synthetic", components=2)
    fitter = Fitter(
        design, verdicts, labels=truth.astype(float), score=lambda r, p: 0.0, penalties=(0.1,)
    )
    head = fitter.fitted().head
    x = (verdicts.states["a"] - head.center) / head.scale
    directions = np.linalg.svd(x, full_matrices=False)[2]
    # Nothing of the weights lies along the four directions left out.
    assert np.abs(directions[2:] @ head.weights).max() < 1e-8
    assert np.abs(directions[:2] @ head.weights).max() > 1e-3


def test_row_weights_count_a_row_that_many_times():
    verdicts, truth = _synthetic(3, n=60)
    design = Design("p", "v", ("a",), "synthetic")
    labels = truth.astype(float)
    twice = np.concatenate([np.arange(60), np.arange(30)])
    repeated = Fitter(
        design, verdicts.rows(twice), labels=labels[twice], score=lambda r, p: 0.0,
        penalties=(1.0,),
    ).fitted().head  # fmt: skip
    weights = np.concatenate([np.full(30, 2.0), np.ones(30)])
    weighted = Fitter(
        design, verdicts, labels=labels, weights=weights, score=lambda r, p: 0.0,
        penalties=(1.0,),
    ).fitted().head  # fmt: skip
    # The same loss, but the centring and scaling of the states differ: compare predictions.
    assert np.corrcoef(predict(repeated, verdicts), predict(weighted, verdicts))[0, 1] > 0.99


def _claims(seed: int, sources: list[str], flip: str | None = None) -> LabelledClaims:
    parts = []
    for number, source in enumerate(sources):
        verdicts, truth = _synthetic(seed + number, n=120)
        if source == flip:
            # A source whose style the states mistake: the signal points the other way.
            verdicts.states["a"][:, 0] *= -1
        parts.append(
            LabelledClaims(
                verdicts,
                truth,
                np.array([source] * len(truth), dtype=object),
                np.array([f"{source}-{i // 3}" for i in range(len(truth))], dtype=object),
                [f"{source}-{i}" for i in range(len(truth))],
            )
        )
    return LabelledClaims.join(parts)


def test_leaving_each_source_out_reads_it_with_a_head_that_never_saw_it():
    data = _claims(10, ["s1", "s2", "s3", "s4"])
    recipe = Recipe(Design("p", "v", ("a",), "synthetic"), "both", (0.1, 1.0))
    left = leave_one_source_out(data, recipe)
    assert [f.source for f in left.figures] == ["s1", "s2", "s3", "s4"]
    assert [f.claims for f in left.figures] == [120] * 4
    assert not np.isnan(left.predicted).any()
    # The states carry the label in every source: the head gains everywhere.
    assert left.worst_gain() > 0.1
    assert all(f.head_balanced > f.zero_shot_balanced for f in left.figures)


def test_a_source_unlike_the_others_shows_as_a_loss():
    data = _claims(20, ["s1", "s2", "s3", "s4"], flip="s4")
    recipe = Recipe(Design("p", "v", ("a",), "synthetic"), "both", (0.1, 1.0))
    left = leave_one_source_out(data, recipe)
    by_source = {f.source: f for f in left.figures}
    assert by_source["s4"].head_auc < by_source["s4"].zero_shot_auc
    assert left.worst_gain() == pytest.approx(
        by_source["s4"].head_auc - by_source["s4"].zero_shot_auc
    )


def test_claims_carry_their_source_and_group(tmp_path):
    rows = [
        {"question": "q1", "claim": "c", "references": ["r"], "attribution_label":
         "attributable", "src_dataset": "S", "id": "1", "group": "g"},
        {"question": "q2", "claim": "c", "references": ["r"], "attribution_label":
         "not attributable", "src_dataset": "T", "id": "2"},
    ]  # fmt: skip
    path = tmp_path / "claims.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows))
    first, second = load_claims([path])
    assert (first.source, first.group, first.label) == ("S", "g", True)
    # Without a group, a question's claims share their references.
    assert (second.source, second.group, second.label) == ("T", "question:q2", False)


def test_the_shipped_head_is_what_its_shipped_training_set_fits():
    from ragmeter.claims import SUPPORTED
    from ragmeter.heads.verifier import shipped_training_set
    from ragmeter.judges.heads import bundled_heads

    training = shipped_training_set()
    assert training is not None
    shipped = bundled_heads().heads[SUPPORTED.name]
    refitted, _ = training.fit()
    assert shipped.states == training.states
    assert shipped.prompt_version == training.prompt_version == SUPPORTED.version
    # The heads file keeps six significant digits of each number.
    assert np.allclose(refitted.weights, shipped.weights, rtol=1e-4, atol=1e-6)
    assert refitted.bias == pytest.approx(shipped.bias, abs=1e-4)
    assert refitted.zero_shot_weight == pytest.approx(shipped.zero_shot_weight, abs=1e-4)
    # Every source the shipped head was measured on left out is in the training set.
    assert set(shipped.figures["sources"]) == set(training.claims.sources.tolist())
