"""``ragmeter generate DOCS``: a test set written from a team's own documents.

Exit status: 0 done, 2 bad input or options, 3 stopped at the budget (rerun to continue),
4 short of N samples: every kind of the mix stopped (the documents gave no more, see the
summary's substitutions) or the cap on candidates was reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragmeter.budget import price_for
from ragmeter.cli.common import (
    CacheFlag,
    EmbedderOptions,
    EmbedderSpec,
    JudgeOptions,
    JudgeSpec,
    MaxCalls,
    RayActorCpus,
    RayActors,
    RayAddress,
    Repairs,
    Retries,
    Workers,
    progress,
    user_errors,
)
from ragmeter.config import executor_for, parse_options
from ragmeter.report import estimate_table
from ragmeter.testset import DEFAULT_MIX, GenerationSummary, generate_testset
from ragmeter.testset.chunking import MAX_CHARS
from ragmeter.testset.personas import MAX_PERSONAS
from ragmeter.testset.runner import estimate_testset, output_paths

EXIT_STOPPED = 3
EXIT_SHORT = 4

_MIX_HELP = "Question kinds and their shares, e.g. specific=0.5,multi_hop=0.5. \\[default: " + (
    ",".join(f"{k}={v:g}" for k, v in DEFAULT_MIX.items()) + "]"
)


DocsArgument = Annotated[
    list[Path], typer.Argument(help="Folders or files: Markdown, text, HTML, PDF.")
]
OutOption = Annotated[Path, typer.Option(help="The test set (JSONL); rerun with it to resume.")]
StylesOption = Annotated[
    str,
    typer.Option(help="Question styles and their shares: full, keywords, misspelt."),
]
PersonaOption = Annotated[
    list[str] | None,
    typer.Option(help="Who asks, e.g. 'a new employee' (repeat; one drawn per question)."),
]
PersonasOption = Annotated[
    int,
    typer.Option(
        min=0,
        max=MAX_PERSONAS,
        help="Personas for the judge to write from excerpts of the documents (drawn like "
        "--persona ones).",
    ),
]
MaxCandidatesOption = Annotated[
    int | None, typer.Option(help="Candidates judged at most. \\[default: 4 x N]")
]
CheckOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Check threshold NAME=VALUE (repeat): stands_alone, understood_alone, "
        "supported, closed_book_max, answered, duplicate, copy_run, search_k."
    ),
]
EntitiesOption = Annotated[
    bool, typer.Option(help="Pair chunks that share a named entity first (needs spaCy).")
]
DryRunOption = Annotated[bool, typer.Option(help="Estimate calls and tokens; call no judge.")]


def generate_command(
    docs: DocsArgument,
    n: Annotated[int, typer.Option("--n", min=1, help="Accepted samples wanted.")] = 20,
    out: OutOption = Path("testset.jsonl"),
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    embedder: EmbedderSpec = "minilm",
    embedder_option: EmbedderOptions = None,
    mix: Annotated[str | None, typer.Option(help=_MIX_HELP)] = None,
    styles: StylesOption = "full",
    persona: PersonaOption = None,
    personas: PersonasOption = 0,
    seed: Annotated[int, typer.Option(help="Fixes which chunks, kinds and styles, in order.")] = 0,
    workers: Workers = 1,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
    max_candidates: MaxCandidatesOption = None,
    max_calls: MaxCalls = None,
    max_chars: Annotated[int, typer.Option(help="Largest chunk, in characters.")] = MAX_CHARS,
    check: CheckOption = None,
    entities: EntitiesOption = True,
    dry_run: DryRunOption = False,
    cache: CacheFlag = True,
    retries: Retries = 2,
    repairs: Repairs = 1,
) -> None:
    """Write N questions with references from DOCS, each checked against its source chunks.

    A kind the documents cannot give (two-chunk questions from one short document) is made
    as the other kinds of the mix, and the summary says so.

    Exit status: 0 done, 2 bad input or options, 3 stopped at the budget (rerun to continue),
    4 short of N: the documents gave no more good questions, or --max-candidates was reached.
    """
    console = Console()
    sources = [str(p) for p in docs]
    with user_errors(console):  # before the bar, not under it
        executor = executor_for(ray, ray_actors, ray_actor_cpus, workers)
        judge_options = parse_options(judge_option, "--judge-option")
        common = {
            "mix": mix,
            "styles": styles,
            "personas": persona or (),
            "derive_personas": personas,
            "seed": seed,
            "max_chars": max_chars,
            "entities": entities,
            "quality": parse_options(check, "--check"),
            "embedder_options": parse_options(embedder_option, "--embedder-option"),
        }
    if dry_run:
        _dry_run(console, sources, n, judge, embedder, common)
        return
    with progress(console, "accepted", n) as bar, user_errors(console):
        generated = generate_testset(
            sources,
            n,
            out=out,
            judge=judge,
            embedder=embedder,
            workers=workers,
            executor=executor,
            max_candidates=max_candidates,
            max_calls=max_calls,
            cache=cache,
            retries=retries,
            repairs=repairs,
            judge_options=judge_options,
            on_candidate=lambda _record, accepted: bar.update(bar.task_ids[0], completed=accepted),
            **common,  # type: ignore[arg-type]
        )
    _report(console, generated.summary, out)


def _report(console: Console, summary: GenerationSummary, out: Path) -> None:
    """What was accepted, rejected, substituted and skipped, and where it is; exit 3 when
    stopped at the budget, 4 when short of N."""
    console.print(summary_table(summary))
    print_personas(console, summary)
    for reason, count in summary.rejected.items():
        console.print(f"[yellow]rejected {count}[/yellow] — {reason}")
    for line in substitution_lines(summary):
        console.print(f"[yellow]substituted[/yellow] {escape(line)}", highlight=False)
    for name, reason in summary.skipped_documents.items():
        console.print(f"[yellow]skipped {name}[/yellow] — {reason}", highlight=False)
    paths = output_paths(out)
    per = f"{summary.seconds_per_accepted:.1f}" if summary.seconds_per_accepted else "-"
    console.print(
        f"{summary.accepted} of {summary.requested} accepted from {summary.candidates} "
        f"candidates ({summary.resumed} resumed), {summary.usage.model_calls} model calls, "
        f"{summary.usage.cached_calls} cached, {per} s per accepted sample; test set in "
        f"{paths['testset']}, rejected in {paths['rejected']}, summary in {paths['summary']}",
        highlight=False,
    )
    if summary.status == "stopped":
        console.print("[yellow]Stopped at the budget: rerun the same command to go on.[/yellow]")
        raise typer.Exit(EXIT_STOPPED)
    if summary.status == "short":
        console.print(
            f"[yellow]Short of N: {escape(summary.short_because or '')}. Raise "
            "--max-candidates, give more documents or relax --check.[/yellow]",
            highlight=False,
        )
        raise typer.Exit(EXIT_SHORT)


def _dry_run(
    console: Console,
    sources: list[str],
    n: int,
    judge: str,
    embedder: str,
    common: dict[str, Any],
) -> None:
    with user_errors(console):
        expected = estimate_testset(sources, n, judge=judge, embedder=embedder, **common)
    console.print(estimate_table(expected, title="dry run: expected judge calls by kind"))
    if price_for(judge) is None:
        console.print(f"no price known for {judge!r}: the cost is not estimated")
    console.print("; ".join(expected.notes) + ". No judge was called.")


def summary_table(summary: GenerationSummary) -> Table:
    """Accepted and judged candidates by kind."""
    table = Table(title=f"test set: {summary.accepted} of {summary.requested} ({summary.judge})")
    for column in ("kind", "quota", "candidates", "accepted"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for kind, row in summary.kinds.items():
        table.add_row(kind, str(row["quota"]), str(row["candidates"]), str(row["accepted"]))
    return table


def substitution_lines(summary: GenerationSummary) -> list[str]:
    """Each kind the documents could not give, what was made instead, and why."""
    lines = []
    for sub in summary.substitutions:
        made = ", ".join(f"{count} {kind}" for kind, count in sub.made_as.items())
        lines.append(f"{sub.count} {sub.kind} with {made}: {sub.reason}")
    return lines


def print_personas(console: Console, summary: GenerationSummary) -> None:
    """The personas the judge derived, and those it wrote that were dropped, with why."""
    derived = summary.derived_personas
    if derived is None:
        return
    for persona in derived.personas:
        console.print(f"persona: {escape(persona)}", highlight=False)
    for dropped in derived.dropped:
        console.print(
            f"[yellow]persona dropped[/yellow] — {escape(dropped['reason'])}: "
            f"{escape(dropped['persona'])}",
            highlight=False,
        )
    if derived.failed:
        console.print(
            f"[yellow]no persona derived[/yellow] — {escape(derived.failed)}", highlight=False
        )
