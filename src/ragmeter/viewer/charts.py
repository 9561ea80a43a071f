"""The report's charts, as Vega-Lite specs made with Altair (``pip install 'ragmeter[report]'``).

Each function returns a plain dict (the spec with its data inline), so the page embeds it as it
is and draws it with the Vega libraries inlined in the same file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import platformdirs

from ragmeter.manifest import atomic_write_text

INSTALL = "pip install 'ragmeter[report]'"
WIDTH = 260


def altair() -> Any:
    """Altair, imported only when a report is drawn: the default install stays lean."""
    try:
        import altair as alt
    except ImportError as exc:
        raise ImportError(f"the HTML report needs Altair: {INSTALL}") from exc
    return alt


def _spec(chart: Any) -> dict[str, Any]:
    return dict(chart.configure_view(stroke=None).to_dict())


def score_histogram(metric: str, values: Sequence[float]) -> dict[str, Any]:
    """How a metric's scores spread over [0, 1], in ten bins."""
    alt = altair()
    data = alt.Data(values=[{"score": v} for v in values])
    chart = (
        alt.Chart(data, title=metric.replace("_", " "), width=WIDTH, height=140)
        .mark_bar(color="#4c78a8")
        .encode(
            alt.X("score:Q", bin=alt.Bin(extent=[0, 1], step=0.1), title="score"),
            alt.Y("count():Q", title="samples"),
        )
    )
    return _spec(chart)


def intervals(
    rows: Sequence[dict[str, Any]],
    *,
    label: str,
    value: str,
    low: str,
    high: str,
    title: str,
    zero: float | None = None,
) -> dict[str, Any]:
    """A point per row with its interval as a whisker (ratings, differences of means); a rule
    at ``zero`` marks "no difference"."""
    alt = altair()
    data = alt.Data(values=[r for r in rows if r.get(value) is not None])
    base = alt.Chart(data, title=title, width=WIDTH + 140)
    y = alt.Y(f"{label}:N", sort=alt.EncodingSortField(value, order="descending"), title=None)
    layers = [
        base.mark_rule(color="#4c78a8", strokeWidth=2).encode(
            alt.X(f"{low}:Q", title=value.replace("_", " "), scale=alt.Scale(zero=False)),
            alt.X2(f"{high}:Q"),
            y,
        ),
        base.mark_point(filled=True, size=70, color="#1f3b57").encode(
            alt.X(f"{value}:Q"), y, tooltip=[f"{label}:N", f"{value}:Q", f"{low}:Q", f"{high}:Q"]
        ),
    ]
    if zero is not None:
        layers.append(
            alt.Chart(alt.Data(values=[{"zero": zero}]))
            .mark_rule(color="#999", strokeDash=[4, 3])
            .encode(alt.X("zero:Q"))
        )
    return _spec(alt.layer(*layers))


def grouped_bars(
    rows: Sequence[dict[str, Any]], *, x: str, group: str, value: str, title: str
) -> dict[str, Any]:
    """Bars of ``value`` per ``x``, side by side per ``group`` (agreement per dimension and
    method, win rates per domain and system, citation measures per condition)."""
    alt = altair()
    data = alt.Data(values=[r for r in rows if r.get(value) is not None])
    chart = (
        alt.Chart(data, title=title, width=WIDTH + 140, height=170)
        .mark_bar()
        .encode(
            alt.X(f"{x}:N", title=None, axis=alt.Axis(labelAngle=0)),
            alt.XOffset(f"{group}:N"),
            alt.Y(f"{value}:Q", title=value.replace("_", " ")),
            alt.Color(f"{group}:N", title=group.replace("_", " ")),
            tooltip=[f"{x}:N", f"{group}:N", alt.Tooltip(f"{value}:Q", format=".3f")],
        )
    )
    return _spec(chart)


def vl_convert() -> Any:
    """``vl-convert-python``, the source of the inlined Vega scripts, imported when needed."""
    try:
        import vl_convert
    except ImportError as exc:
        raise ImportError(f"the HTML report needs vl-convert-python: {INSTALL}") from exc
    return vl_convert


def check_installed() -> None:
    """Raise the ``ImportError`` saying what to install before a long run, not after it."""
    altair()
    vl_convert()


def javascript() -> str:
    """Vega, Vega-Lite and Vega-Embed in one script, from the ``vl-convert-python`` package (no
    network): the version Altair's own offline HTML uses. Kept in the user cache folder, since
    bundling takes about a second."""
    altair()
    vlc = vl_convert()
    from altair.utils._importers import vl_version_for_vl_convert

    version = vl_version_for_vl_convert()
    path = (
        Path(platformdirs.user_cache_dir("ragmeter"))
        / "vega"
        / f"vega-embed-{vlc.__version__}-{version}.js"
    )
    if path.is_file():
        return path.read_text(encoding="utf-8")
    bundle: str = vlc.javascript_bundle(vl_version=version)
    with contextlib.suppress(OSError):  # a read-only cache only costs the second next time
        atomic_write_text(path, bundle)
    return bundle
