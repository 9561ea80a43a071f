"""The `ragmeter` command. Each subcommand lives in its own module and calls a public function."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragmeter.cli.arena import app as arena_app
from ragmeter.cli.attribution import app as attribution_app
from ragmeter.cli.cache import app as cache_app
from ragmeter.cli.calibrate import calibrate_command
from ragmeter.cli.common import show_warnings_plainly, user_errors
from ragmeter.cli.compare import compare_command
from ragmeter.cli.decisions import decisions_command
from ragmeter.cli.evaluate import evaluate_command
from ragmeter.cli.generate import generate_command
from ragmeter.cli.init import init_command
from ragmeter.cli.label import label_command
from ragmeter.cli.meta import app as meta_app
from ragmeter.cli.report import report_command
from ragmeter.cli.retrieval import retrieval_command
from ragmeter.cli.selftest import app as selftest_app
from ragmeter.cli.settings import apply_settings_file
from ragmeter.cli.tune import tune_command
from ragmeter.config_file import CONFIG_FILE

app = typer.Typer(no_args_is_help=True, add_completion=False)
app.command("init")(init_command)
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
def _root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="The settings file: a table per command of option values, which the command "
            f"line overrides. \\[default: {CONFIG_FILE}, or pyproject.toml's \\[tool.ragmeter], "
            "in the working folder]",
        ),
    ] = None,
) -> None:
    """Measure how good a retrieval-augmented generation system is."""
    console = Console(stderr=True)
    show_warnings_plainly(console)
    if ctx.invoked_subcommand == "init":  # it writes the file: one that is broken is replaced
        return
    with user_errors(console):
        apply_settings_file(ctx, config)
