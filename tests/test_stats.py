"""The Wilson interval, against values worked out by hand."""

from __future__ import annotations

import pytest

from ragmeter.stats import wilson_interval


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
