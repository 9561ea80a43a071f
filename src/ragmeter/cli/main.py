"""The `ragmeter` command. Each subcommand lives in its own module and calls a public function."""

from __future__ import annotations

import typer
from rich.console import Console

from ragmeter.cli.arena import app as arena_app
from ragmeter.cli.attribution import app as attribution_app
from ragmeter.cli.cache import app as cache_app
from ragmeter.cli.calibrate import calibrate_command
from ragmeter.cli.common import show_warnings_plainly
from ragmeter.cli.compare import compare_command
from ragmeter.cli.decisions import decisions_command
from ragmeter.cli.evaluate import evaluate_command
from ragmeter.cli.generate import generate_command
from ragmeter.cli.label import label_command
from ragmeter.cli.meta import app as meta_app
from ragmeter.cli.report import report_command
from ragmeter.cli.retrieval import retrieval_command
from ragmeter.cli.selftest import app as selftest_app
from ragmeter.cli.tune import tune_command

app = typer.Typer(no_args_is_help=True, add_completion=False)
app.command("evaluate")(evaluate_command)
app.command("report")(report_command)
app.command("compare")(compare_command)
app.command("retrieval")(retrieval_command)
app.command("calibrate")(calibrate_command)
app.command("tune")(tune_command)
app.command("label")(label_command)
app.command("generate")(generate_command)
app.add_typer(attribution_app, name="attribution")
app.add_typer(arena_app, name="arena")
meta_app.command("decisions")(decisions_command)
app.add_typer(meta_app, name="meta")
app.add_typer(cache_app, name="cache")
app.add_typer(selftest_app, name="selftest")


@app.callback()
def _root() -> None:
    """Measure how good a retrieval-augmented generation system is."""
    show_warnings_plainly(Console(stderr=True))
