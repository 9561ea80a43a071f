"""``ragmeter init [DATA]``: write a commented ``ragmeter.toml`` for the data in front of it, the
metrics chosen among those every sample can be read by."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragmeter.cli.common import fail, user_errors
from ragmeter.config import DEFAULT_METRICS
from ragmeter.config_file import CONFIG_FILE
from ragmeter.data import load_samples
from ragmeter.metrics import metric_by_name

WITH_REFERENCES = ("answer_correctness", "context_recall")
"""Offered besides the default metrics where every sample has a reference answer."""

STARTER = """\
# ragmeter's settings for this folder. `ragmeter evaluate` reads them; an option given on the
# command line overrides its key here. Keys are the command's options with underscores
# (`ragmeter evaluate --help`); a table per command: [evaluate], [compare], [meta.openqa]...

[evaluate]
data = {data}
metrics = {metrics}
judge = "local"                    # or "openai:gpt-4o-mini" (OPENAI_API_KEY in the environment)
# judge_option = {{ timeout = 30 }}
# out = "runs/{stem}"               # the results folder; rerun with it to resume
# workers = 1                      # items judged at once
# max_calls = 1000                 # stop after this many judge calls; rerun to go on
# language = "de"                  # the language of samples that give none

# Options of one metric:
# [evaluate.option.faithfulness]
# soft = false

# A criterion of your own, scored as a metric of its name (docs/criteria.md):
# [criteria.declines]
# question = "Does the answer decline when the context does not hold the answer?"
# reads = ["contexts", "question", "answer"]
"""


def init_command(
    data: Annotated[
        Path,
        typer.Argument(help="The samples file the settings are for (JSONL, JSON, CSV, Parquet)."),
    ],
    force: Annotated[bool, typer.Option(help=f"Replace an existing {CONFIG_FILE}.")] = False,
) -> None:
    """Write a commented ragmeter.toml in this folder for DATA: the metrics its samples can all
    be read by, the local judge, and the settings most often changed."""
    console = Console()
    target = Path.cwd() / CONFIG_FILE
    if target.exists() and not force:
        raise fail(console, f"{target} is here already: --force replaces it")
    with user_errors(console):
        samples = load_samples(data).samples
    offered = [*DEFAULT_METRICS, *(WITH_REFERENCES if all(s.reference for s in samples) else ())]
    readable = [
        name
        for name in offered
        if not any(metric_by_name(name).unreadable(sample) for sample in samples)
    ]
    target.write_text(
        STARTER.format(data=json.dumps(str(data)), metrics=json.dumps(readable), stem=data.stem),
        encoding="utf-8",
    )
    console.print(
        f"wrote {target}: {len(samples)} samples, metrics {', '.join(readable)}; "
        "run `ragmeter evaluate` to score them",
        soft_wrap=True,
        highlight=False,
    )
