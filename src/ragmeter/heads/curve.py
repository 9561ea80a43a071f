"""What N labels of a team's own bought elsewhere, read back for ``ragmeter tune``: two learning
curves, one per kind of label.

**Claims** (``bench/bench_learning_curve.py curve``, each source with enough claims read playing a
team in turn, the verifier refitted). The file (``curve.json``) holds, under ``mean``, for each N
measured: the sources it was measured on, how many draws ``tune`` would have written the head in,
and the mean gains over the zero-shot read on the rest of each source (ROC AUC and balanced
accuracy; ``_tuned``: a head ``tune`` would not write counts as no gain), each ``{"mean", "low",
"high"}`` with its 95 % interval over the sources; ``worst`` and ``best`` name the sources at either
end.

**Ratings** (``bench/bench_criteria.py --learn --curve``, a head fitted through a metric's or a
criterion's mean on N rated samples of a rated set, as ``tune`` fits it, and read on the rest).
The file holds, under ``sets``, for each set and each of its ratings: the metric or criterion
that answers it, its reading, the rows rated, and for each N the Spearman of the rest zero-shot
and with the head and the gains (``gain_tuned``: a head ``tune`` would not write counts as no
gain), each ``{"mean", "low", "high"}`` over the draws (``low`` and ``high`` the 2.5 and 97.5
percentiles of the draws), with how many draws ``tune`` wrote the head in.
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from ragmeter.judges.curves import read_curve

FORMAT = "ragmeter-learning-curve/1"
RATINGS_FORMAT = "ragmeter-ratings-curve/1"
CURVE_FILE = "learning_curve.json"
RATINGS_CURVE_FILE = "ratings_curve.json"
"""Measured curves ship beside the verifier's head (``ragmeter.judges``), a file per format."""
SHIPPED = {FORMAT: CURVE_FILE, RATINGS_FORMAT: RATINGS_CURVE_FILE}


def load_curve(path: Path | None, kind: str = FORMAT) -> tuple[dict[str, Any], str] | None:
    """The curve of ``kind`` (a format) in ``path``, else the one shipped with ragmeter, with
    where it came from; None where none ships, or where ``path`` holds the other kind."""
    found = read_curve(path, SHIPPED[kind], tuple(SHIPPED), "curve")
    if found is None or found[0]["format"] != kind:
        return None
    return found


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


def ratings_bought(curve: dict[str, Any], ratings: int, source: str) -> str | None:
    """What ``ratings`` rated samples bought on the rated sets measured: for each set's rating,
    the figures of the largest N measured not above ``ratings`` (the smallest where all are),
    averaged over them; None where nothing was measured."""
    found: list[tuple[str, int, dict[str, Any]]] = []
    for name, measured in sorted(curve.get("sets", {}).items()):
        for rating, entry in sorted(measured.items()):
            sizes = sorted((int(n), figures) for n, figures in entry.get("sizes", {}).items())
            if sizes:
                below = [item for item in sizes if item[0] <= ratings]
                n, figures = below[-1] if below else sizes[0]
                found.append((f"{name} {rating}", n, figures))
    if not found:
        return None
    tuned = [figures["gain_tuned"]["mean"] for _, _, figures in found]
    heads = [figures["gain"]["mean"] for _, _, figures in found]
    worst, best = (found[int(i)] for i in (np.argmin(tuned), np.argmax(tuned)))
    counts = sorted({n for _, n, _ in found})
    span = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    return (
        f"what {ratings} ratings bought elsewhere ({source}): with {span} rated samples of their "
        f"own, the {len(found)} rated criteria measured gained {fmean(tuned):+.3f} Spearman on "
        f"average on the rest of their samples as tune decides ({fmean(heads):+.3f} had every "
        f"head been kept); by criterion from {worst[2]['gain_tuned']['mean']:+.3f} ({worst[0]}) "
        f"to {best[2]['gain_tuned']['mean']:+.3f} ({best[0]})"
    )
