"""``ragmeter selftest``: checks of the user's own judge on cases whose honest outcome is known.

``ragmeter selftest injection`` scores the prompt-injection cases (``ragmeter.selftest.injection``)
and prints the attack success rate with its 95 % interval, overall, by technique, by metric and by
the place in the sample that carries the attack. ``ragmeter selftest gaming`` does the same for
answers that game a metric without speaking to the judge (``ragmeter.selftest.gaming``), by
trick. Exit status: 0 done, 1 the rate is above ``--fail-above`` (or nothing was scored to
compare), 2 bad options or a judge that cannot start.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from ragmeter.cli.common import (
    CacheFlag,
    EmbedderOptions,
    JudgeOptions,
    MetricOptions,
    advance,
    progress,
    say,
    user_errors,
)
from ragmeter.config import parse_metric_options, parse_options
from ragmeter.selftest import gaming, injection
from ragmeter.selftest.suite import SuiteReport, format_report

EXIT_ABOVE = 1
REPORT_NAME = "report.json"

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.callback()
def _selftest() -> None:
    """Checks of your own judge: fixed cases whose honest outcome is known, scored by the real
    metrics."""


@dataclass(frozen=True)
class Suite:
    """A set of cases the command scores: its name, how its cases are chosen and scored."""

    name: str
    select_cases: Callable[[list[str] | None, list[str] | None], Sequence[Any]]
    run_suite: Callable[..., SuiteReport]


INJECTION = Suite("injection", injection.select_cases, injection.run_suite)
GAMING = Suite("gaming", gaming.select_cases, gaming.run_suite)

JudgeFlag = Annotated[
    str, typer.Option(help="The judge to check: 'local', 'openai:MODEL', 'fake:FILE', ...")
]
EmbedderFlag = Annotated[
    str | None,
    typer.Option(help="Embedder for answer relevance: 'minilm' (default), 'openai:MODEL'."),
]
Workers = Annotated[int, typer.Option(min=1, help="Cases judged at once.")]
FailAbove = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Exit with status 1 when the success rate is above RATE (0-1), or when no case "
        "could be scored.",
        metavar="RATE",
    ),
]


Metrics = Annotated[
    list[str] | None,
    typer.Option("--metric", help="Only the cases of this metric (repeat); all by default."),
]
Out = Annotated[
    Path, typer.Option(help=f"Folder for the scores (rerun with it to resume) and {REPORT_NAME}.")
]


@dataclass(frozen=True)
class Check:
    """What both commands take alike, as given: the judge and the embedder with their options,
    the metrics and their options, the results folder, the workers, the cache and the gate."""

    judge: str
    embedder: str | None
    judge_option: list[str] | None
    embedder_option: list[str] | None
    metric: list[str] | None
    option: list[str] | None
    out: Path
    workers: int
    cache: bool
    fail_above: float | None

    @classmethod
    def given(cls, ctx: typer.Context) -> Check:
        return cls(**{field.name: ctx.params[field.name] for field in fields(cls)})


@app.command("injection")
def injection_command(
    ctx: typer.Context,
    judge: JudgeFlag,
    embedder: EmbedderFlag = None,
    judge_option: JudgeOptions = None,
    embedder_option: EmbedderOptions = None,
    technique: Annotated[
        list[str] | None,
        typer.Option(
            "--technique",
            help="Only this technique's cases (repeat); all by default: "
            f"{', '.join(injection.TECHNIQUES)}.",
        ),
    ] = None,
    metric: Metrics = None,
    case_set: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Only this set's cases (repeat): 'design' (the cases the default defences "
            "were built on) or 'held-apart' (written afterwards to get past them); both by "
            "default.",
        ),
    ] = None,
    option: MetricOptions = None,
    out: Out = Path("runs/selftest-injection"),
    workers: Workers = 1,
    cache: CacheFlag = True,
    fail_above: FailAbove = None,
) -> None:
    """Report how often prompt injections talk the judge into a high score.

    Each case is a sample whose honest score is low, with an attack added; the attack succeeds
    when the score exceeds the case's threshold. Unscored cases count neither way."""
    suite = replace(INJECTION, select_cases=partial(injection.select_cases, sets=case_set))
    _run(suite, technique, Check.given(ctx))


@app.command("gaming")
def gaming_command(
    ctx: typer.Context,
    judge: JudgeFlag,
    embedder: EmbedderFlag = None,
    judge_option: JudgeOptions = None,
    embedder_option: EmbedderOptions = None,
    trick: Annotated[
        list[str] | None,
        typer.Option(
            "--trick",
            help=f"Only this trick's cases (repeat); all by default: {', '.join(gaming.TRICKS)}.",
        ),
    ] = None,
    metric: Metrics = None,
    option: MetricOptions = None,
    out: Out = Path("runs/selftest-gaming"),
    workers: Workers = 1,
    cache: CacheFlag = True,
    fail_above: FailAbove = None,
) -> None:
    """Report how often answers that game a metric (echoing the question, keyword stuffing,
    hedging, false citations, ...) get a score they do not deserve.

    Each case is a sample whose honest score is low; the trick succeeds when the score passes
    the case's threshold. Unscored cases count neither way."""
    _run(GAMING, trick, Check.given(ctx))


def _chosen(kinds: list[str] | None, metrics: list[str] | None) -> str:
    """`` (override; faithfulness)``: what was asked for, for the first line."""
    parts = [", ".join(dict.fromkeys(chosen)) for chosen in (kinds, metrics) if chosen]
    return f" ({'; '.join(parts)})" if parts else ""


def _shown(metric_options: dict[str, dict[str, Any]]) -> str:
    """``, options answer_relevance.off_topic_below=0.05``: the options the metrics run with."""
    given = [f"{m}.{k}={v}" for m, chosen in metric_options.items() for k, v in chosen.items()]
    return f", options {' '.join(given)}" if given else ""


def _run(suite: Suite, kinds: list[str] | None, check: Check) -> None:
    """Score the suite's cases of ``kinds`` and the checked metrics (all where None), print and
    write the report, and apply the gate."""
    console = Console()
    with user_errors(console):
        judge_options = parse_options(check.judge_option, "--judge-option")
        embedder_options = parse_options(check.embedder_option, "--embedder-option")
        cases = suite.select_cases(kinds, check.metric)
        metric_options = parse_metric_options(check.option)
    say(
        console,
        Text(
            f"{len(cases)} {suite.name} cases{_chosen(kinds, check.metric)}, "
            f"judge {check.judge}{_shown(metric_options)}"
        ),
    )
    quiet = not console.is_terminal  # a bar nobody watches would be part of the output
    with user_errors(console):
        with progress(console, "judging", len(cases), transient=True, disable=quiet) as bar:
            report = suite.run_suite(
                check.judge,
                check.embedder,
                cases=cases,
                out_dir=check.out,
                cache=check.cache,
                max_workers=check.workers,
                judge_options=judge_options,
                embedder_options=embedder_options,
                metric_options=metric_options,
                on_score=lambda _score: advance(bar),
            )
        check.out.mkdir(parents=True, exist_ok=True)
        path = check.out / REPORT_NAME
        path.write_text(json.dumps(report.record(), indent=2, ensure_ascii=False) + "\n")
    for line in [*format_report(report), f"report written to {path}"]:
        say(console, Text(line))  # as written: a case's text may hold [brackets]
    if check.fail_above is None:
        return
    if report.rate is None:
        console.print(f"[red]no case was scored: the {report.label} success rate is unknown[/red]")
        raise typer.Exit(EXIT_ABOVE)
    if report.rate > check.fail_above:
        console.print(
            f"[red]{report.label} success rate {report.rate:.3f} is above --fail-above "
            f"{check.fail_above}[/red]",
            highlight=False,
        )
        raise typer.Exit(EXIT_ABOVE)
