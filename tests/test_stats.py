"""The Wilson interval, against values worked out by hand; the bootstrap, against its reference;
ROC AUC under bootstrap weights, against the items drawn."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from ragmeter.stats import (
    bootstrap_mean_ci,
    percentile_interval,
    resample_counts,
    roc_auc,
    weighted_roc_auc,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("successes", "trials", "expected"),
    [
        # z = 1.959964, z^2 = 3.841459. 0 of 60: the lower end is 0 and the upper end is
        # z^2 / (n + z^2) = 3.841459 / 63.841459 = 0.060172.
        (0, 60, (0.0, 0.060172)),
        # 1 of 3: p = 1/3, centre (1/3 + 3.841459/6) / (1 + 3.841459/3) = 0.973576 / 2.280486,
        # spread 1.959964 * sqrt(2/27 + 3.841459/36) / 2.280486 = 0.833345 / 2.280486:
        # (0.061492, 0.792340).
        (1, 3, (0.061492, 0.792340)),
        # all of them: the mirror image of none of them
        (60, 60, (0.939828, 1.0)),
    ],
)
def test_the_wilson_interval_matches_the_hand_worked_ends(successes, trials, expected):
    low, high = wilson_interval(successes, trials)
    assert (low, high) == pytest.approx(expected, abs=1e-6)


def test_no_trials_has_no_interval_and_impossible_counts_are_refused():
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="between 0 and 3"):
        wilson_interval(4, 3)


@pytest.mark.parametrize("size", [2, 3001, 5000])
def test_the_bootstrap_drawn_block_by_block_is_the_one_drawn_at_once(size):
    # 3001 values: blocks of 349 rounds, the last one short; 5000: blocks of 209.
    values = np.random.default_rng(1).random(size)
    drawn = np.random.default_rng(0).integers(0, size, size=(2000, size))
    low, high = percentile_interval(values[drawn].mean(axis=1), 0.95)
    assert bootstrap_mean_ci(values) == (float(values.mean()), float(low), float(high))


def test_the_bootstrap_of_a_long_run_takes_megabytes_not_hundreds():
    values = np.random.default_rng(1).random(5000)
    tracemalloc.start()
    try:
        bootstrap_mean_ci(values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # A block of 2**20 draws: 8 MiB of indices and 8 MiB of the values they pick; drawn at
    # once, 2000 rounds of 5000 took 80 MB of each.
    assert peak < 20 * 2**20


def test_weighted_roc_auc_is_roc_auc_of_the_items_drawn_that_often():
    rng = np.random.default_rng(1)
    truth = rng.random(40) < 0.4
    scores = np.round(rng.random(40), 1)  # rounded: ties count half, as in roc_auc
    counts = resample_counts(40, rounds=30, seed=2)
    found = weighted_roc_auc(truth, scores, counts)
    for row, drawn in zip(counts, found, strict=True):
        items = np.repeat(np.arange(40), row)
        assert drawn == pytest.approx(roc_auc(truth[items], scores[items]))
    assert weighted_roc_auc(truth, scores, np.ones((1, 40)))[0] == roc_auc(truth, scores)
    # A draw without an item of one class has no ROC AUC.
    assert np.isnan(weighted_roc_auc(truth, scores, truth[None, :].astype(float))[0])
    # m out of n: each round draws `size` units.
    assert (resample_counts(40, rounds=5, seed=0, size=7).sum(axis=1) == 7).all()
