"""``ragmeter evaluate FILE``: score a dataset and print a summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ragmeter.data import DatasetError, load_samples
from ragmeter.evaluate import DEFAULT_METRICS, evaluate
from ragmeter.metrics import metric_by_name, parse_metric_options
from ragmeter.report import samples_table, summary_table, write_outputs


def _parse_columns(text: str | None) -> dict[str, str] | None:
    if not text:
        return None
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise typer.BadParameter("use SOURCE=FIELD pairs, e.g. user_input=question")
    return {source.strip(): target.strip() for source, target in pairs}


def evaluate_command(
    file: Annotated[Path, typer.Argument(help="JSONL, JSON, CSV or Parquet file of samples.")],
    metrics: Annotated[str, typer.Option(help="Comma-separated metric names.")] = ",".join(
        DEFAULT_METRICS
    ),
    judge: Annotated[str, typer.Option(help="'local', 'openai:MODEL', or a plugin.")] = "local",
    embedder: Annotated[str, typer.Option(help="'minilm', 'openai:MODEL', ...")] = "minilm",
    out: Annotated[
        Path | None, typer.Option(help="Results folder; rerun with it to resume. [runs/FILE]")
    ] = None,
    columns: Annotated[
        str | None, typer.Option(help="Column mapping, e.g. user_input=question,response=answer")
    ] = None,
    skip_invalid: Annotated[
        bool, typer.Option(help="Report invalid rows and go on with the rest.")
    ] = False,
    retries: Annotated[int, typer.Option(help="Further attempts per judge call.")] = 2,
    workers: Annotated[int, typer.Option(help="Items judged at once.")] = 1,
    cache: Annotated[bool, typer.Option(help="Reuse cached judge calls.")] = True,
    show_samples: Annotated[bool, typer.Option(help="Also print a row per sample.")] = True,
    option: Annotated[
        list[str] | None,
        typer.Option(help="Metric option METRIC.PARAM=VALUE, e.g. answer_relevance.n=5."),
    ] = None,
) -> None:
    """Score FILE with reference-free RAG metrics and print a summary table."""
    console = Console()
    out_dir = out or Path("runs") / file.stem
    try:
        dataset = load_samples(
            file, columns=_parse_columns(columns), on_invalid="skip" if skip_invalid else "raise"
        )
    except (DatasetError, OSError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    for row in dataset.invalid:
        console.print(f"[yellow]skipped row {row.row}, field {row.field!r}:[/yellow] {row.reason}")

    names = [m.strip() for m in metrics.split(",") if m.strip()]
    try:
        options = parse_metric_options(option or [])
        chosen = [metric_by_name(name, **options.pop(name, {})) for name in names]
        if options:
            raise ValueError(f"options given for metrics not chosen: {', '.join(options)}")
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    with progress:
        task = progress.add_task("judging", total=len(dataset.samples) * len(chosen))
        try:
            result = evaluate(
                dataset,
                chosen,
                judge=judge,
                embedder=embedder,
                out_dir=out_dir,
                cache=cache,
                retries=retries,
                max_workers=workers,
                on_score=lambda _score: progress.advance(task),
            )
        except ValueError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc

    write_outputs(result, out_dir)
    if show_samples:
        console.print(samples_table(result))
    console.print(summary_table(result, title=f"ragmeter: {file.name} ({result.run['judge']})"))
    for row in result.summary():
        for reason, count in row.unscored_reasons.items():
            console.print(f"[yellow]{row.metric}: {count} unscored[/yellow] — {reason}")
    usage = result.usage()
    console.print(
        f"model calls {usage.model_calls}, cached {usage.cached_calls}, "
        f"tokens {usage.prompt_tokens} in / {usage.completion_tokens} out; results in {out_dir}/"
    )
