"""What N labels of a team's own claims bought elsewhere: the learning curve of the verifier's
refit, as ``bench/bench_learning_curve.py curve`` measures it (each source with enough claims
read playing a team in turn), read back for ``ragmeter tune``.

The file (``curve.json``) holds, under ``mean``, for each N measured: the sources it was measured
on, how many draws ``tune`` would have written the head in, and the mean gains over the zero-shot
read on the rest of each source (ROC AUC and balanced accuracy; ``_tuned``: a head ``tune`` would
not write counts as no gain), each ``{"mean", "low", "high"}`` with its 95 % interval over the
sources; ``worst`` and ``best`` name the sources at either end.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

FORMAT = "ragmeter-learning-curve/1"
CURVE_FILE = "learning_curve.json"
"""A measured curve ships here, beside the verifier's head (``ragmeter.judges``)."""


class CurveError(ValueError):
    """A curve file that cannot be read."""


def load_curve(path: Path | None) -> tuple[dict[str, Any], str] | None:
    """The curve in ``path``, else the one shipped beside the verifier's head, with where it came
    from; None where there is none."""
    if path is None:
        resource = resources.files("ragmeter.judges").joinpath(CURVE_FILE)
        if not resource.is_file():
            return None
        text, source = resource.read_text(), "the curve shipped with ragmeter"
    else:
        try:
            text, source = path.read_text(), str(path)
        except OSError as exc:
            raise CurveError(f"cannot read the learning curve {path}: {exc}") from None
    try:
        curve = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CurveError(f"{source}: not JSON: {exc}") from None
    if not isinstance(curve, dict) or curve.get("format") != FORMAT:
        raise CurveError(f"{source}: not a learning curve (its 'format' is not {FORMAT!r})")
    return curve, source


def bought(curve: dict[str, Any], labels: int, source: str) -> str | None:
    """What ``labels`` claims bought on the sources measured: the figures of the largest N
    measured that is not above ``labels`` (the smallest where all are); None where nothing was
    measured."""
    measured = sorted((int(n), found) for n, found in curve.get("mean", {}).items())
    if not measured:
        return None
    below = [item for item in measured if item[0] <= labels]
    n, found = below[-1] if below else measured[0]

    def cell(name: str) -> str:
        value = found[name]
        return f"{value['mean']:+.3f} [{value['low']:+.3f}, {value['high']:+.3f}]"

    worst, best = found["worst"], found["best"]
    return (
        f"what {labels} labelled claims bought elsewhere ({source}): with {n} labels of their "
        f"own, the {found['sources']} sources measured gained {cell('auc_gain_tuned')} ROC AUC "
        f"and {cell('balanced_gain_tuned')} balanced accuracy on the rest of their claims, as "
        f"tune decides (it wrote the head in {found['written']} of {found['draws']} draws; a "
        f"head it refused counts as no gain); by source from "
        f"{worst['auc_gain_tuned']:+.3f} ({worst['source']}) to {best['auc_gain_tuned']:+.3f} "
        f"({best['source']})"
    )
