"""``ragmeter selftest``: checks of the user's own judge on cases whose honest outcome is known.

``ragmeter selftest injection`` scores the prompt-injection cases (``ragmeter.selftest.injection``)
and prints the attack success rate with its 95 % interval, overall, by technique, by metric and by
the place in the sample that carries the attack. Exit status: 0 done,
1 the rate is above ``--fail-above`` (or nothing was scored to compare), 2 bad options or a judge
that cannot start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragmeter.cli.common import (
    CacheFlag,
    EmbedderOptions,
    JudgeOptions,
    parse_options,
    progress_bar,
    user_errors,
)
from ragmeter.selftest.injection import TECHNIQUES, format_report, run_suite, select_cases

EXIT_ABOVE = 1
REPORT_NAME = "report.json"

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.callback()
def _selftest() -> None:
    """Checks of your own judge: fixed cases whose honest outcome is known, scored by the real
    metrics."""


def _say(console: Console, line: str) -> None:
    """Print ``line`` as it is: no markup, no colouring, no wrapping."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


@app.command("injection")
def injection_command(
    judge: Annotated[
        str, typer.Option(help="The judge to check: 'local', 'openai:MODEL', 'fake:FILE', ...")
    ],
    embedder: Annotated[
        str | None,
        typer.Option(help="Embedder for answer relevance: 'minilm' (default), 'openai:MODEL'."),
    ] = None,
    judge_option: JudgeOptions = None,
    embedder_option: EmbedderOptions = None,
    technique: Annotated[
        list[str] | None,
        typer.Option(
            "--technique",
            help=f"Only this technique's cases (repeat); all by default: {', '.join(TECHNIQUES)}.",
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            help=f"Folder for the scores (rerun with it to resume) and {REPORT_NAME}.",
        ),
    ] = Path("runs/selftest-injection"),
    workers: Annotated[int, typer.Option(min=1, help="Cases judged at once.")] = 1,
    cache: CacheFlag = True,
    fail_above: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Exit with status 1 when the attack success rate is above RATE (0-1), or when "
            "no case could be scored.",
            metavar="RATE",
        ),
    ] = None,
) -> None:
    """Report how often prompt injections talk the judge into a high score.

    Each case is a sample whose honest score is low, with an attack added; the attack succeeds
    when the score exceeds the case's threshold. Unscored cases count neither way."""
    console = Console()
    judge_options = parse_options(judge_option, "--judge-option")
    embedder_options = parse_options(embedder_option, "--embedder-option")
    with user_errors(console):
        cases = select_cases(technique)
    chosen = f" ({', '.join(dict.fromkeys(technique))})" if technique else ""
    _say(console, f"{len(cases)} injection cases{chosen}, judge {judge}")
    bar = progress_bar(console, transient=True, disable=not console.is_terminal)
    with user_errors(console):
        with bar:
            task = bar.add_task("judging", total=len(cases))
            report = run_suite(
                judge,
                embedder,
                cases=cases,
                out_dir=out,
                cache=cache,
                max_workers=workers,
                judge_options=judge_options,
                embedder_options=embedder_options,
                on_score=lambda _score: bar.advance(task),
            )
        out.mkdir(parents=True, exist_ok=True)
        path = out / REPORT_NAME
        path.write_text(json.dumps(report.record(), indent=2, ensure_ascii=False) + "\n")
    for line in format_report(report):
        _say(console, line)
    _say(console, f"report written to {path}")
    if fail_above is None:
        return
    if report.rate is None:
        console.print("[red]no case was scored: the attack success rate is unknown[/red]")
        raise typer.Exit(EXIT_ABOVE)
    if report.rate > fail_above:
        console.print(
            f"[red]attack success rate {report.rate:.3f} is above --fail-above {fail_above}[/red]",
            highlight=False,
        )
        raise typer.Exit(EXIT_ABOVE)
