"""One self-contained HTML file per report: the page's data, its script and the Vega libraries
all inline, so it opens from disk with no server and no network.

The data (``views.py``) is stored gzip-compressed and base64-encoded: judge exchanges repeat the
same instructions and contexts many times over, and compress about tenfold. The browser inflates
it with its built-in ``DecompressionStream``.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from ragmeter.manifest import atomic_write_text
from ragmeter.version import __version__
from ragmeter.viewer.charts import javascript
from ragmeter.viewer.compare import compare_runs, rank_runs
from ragmeter.viewer.folders import OpenedRun
from ragmeter.viewer.views import comparison_sections, describe, ranking_sections, run_sections

COMPARABLE = ("evaluate", "arena")


def build_page(runs: Sequence[OpenedRun], *, rounds: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The report's data: with two runs of a kind that compares, their comparison first; with
    two evaluate runs or more, their ranking on every shared metric."""
    if not runs:
        raise ValueError("no run to report")
    sections: list[dict[str, Any]] = []
    labels = ["A", "B"] if len(runs) == 2 else [str(i + 1) for i in range(len(runs))]
    runs_ranked = len(runs) >= 2 and all(run.kind == "evaluate" for run in runs)
    if len(runs) == 2 and runs[0].kind == runs[1].kind and runs[0].kind in COMPARABLE:
        try:
            comparison = compare_runs(runs[0], runs[1], rounds=rounds, seed=seed)
        except ValueError as exc:  # two runs of other samples are still shown side by side
            sections.append({"heading": "No comparison", "problems": [str(exc)]})
            runs_ranked = False
        else:
            sections += comparison_sections(comparison)
    if runs_ranked:
        try:
            ranked = rank_runs(runs, rounds=rounds, seed=seed)
        except ValueError as exc:
            sections.append({"heading": "No ranking", "problems": [str(exc)]})
        else:
            sections += ranking_sections(ranked)
    for label, run in zip(labels, runs, strict=True):
        prefix = f"{label} · " if len(runs) > 1 else ""
        sections += run_sections(run, prefix)
    return {
        "title": "ragmeter: " + " vs ".join(r.label for r in runs),
        "runs": [
            {"label": label, "about": describe(run), "notes": run.notes}
            for label, run in zip(labels, runs, strict=True)
        ],
        "generated": f"{datetime.now(UTC).isoformat(timespec='seconds')} by ragmeter {__version__}",
        "sections": sections,
    }


def render(page: dict[str, Any]) -> str:
    """The whole HTML document for ``page``."""
    static = resources.files("ragmeter.viewer") / "static"
    data = gzip.compress(json.dumps(page, ensure_ascii=False).encode(), compresslevel=6, mtime=0)
    return _document(
        title=html.escape(page["title"]),
        css=(static / "report.css").read_text(encoding="utf-8"),
        vega=_script(javascript()),
        script=_script((static / "report.js").read_text(encoding="utf-8")),
        data=base64.b64encode(data).decode(),
    )


def write_report(
    runs: Sequence[OpenedRun], path: str | Path, *, rounds: int = 2000, seed: int = 0
) -> Path:
    """Write the report of ``runs`` to ``path`` (written whole, then renamed into place)."""
    target = Path(path)
    atomic_write_text(target, render(build_page(runs, rounds=rounds, seed=seed)))
    target.chmod(0o644)  # a report is for reading: not the private mode of a temporary file
    return target


def _script(text: str) -> str:
    """Script text safe inside a <script> element: no early ``</script``, in any letter case
    (HTML ends the element at ``</SCRIPT`` too)."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE)


def _document(title: str, css: str, vega: str, script: str, data: str) -> str:
    # Joined, not formatted: the CSS and scripts are full of braces.
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{title}</title>",
            f"<style>\n{css}\n</style>",
            f"<script>\n{vega}\n</script>",
            "</head>",
            "<body>",
            '<main id="report"><p class="loading">Loading the report…</p></main>',
            f'<script type="application/octet-stream" id="ragmeter-data">{data}</script>',
            f"<script>\n{script}\n</script>",
            "</body>",
            "</html>",
            "",
        ]
    )
