"""``ragmeter evaluate FILE``: score a dataset, or an application's traces
(``phoenix:PROJECT``, ``mlflow:EXPERIMENT``, ``otlp:FILE``), and print a summary.

Exit status: 0 done, 2 bad input or options, 3 stopped at the budget (rerun to continue).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from ragmeter.budget import (
    NOT_JUDGED,
    PRICES_AS_OF,
    Budget,
    Price,
    estimate,
    is_pending,
    price_for,
)
from ragmeter.cli.calibrate import print_calibration
from ragmeter.cli.common import (
    USER_ERRORS,
    CacheFlag,
    CriteriaFile,
    CriterionFlags,
    EmbedderOptions,
    EmbedderSpec,
    JudgeOptions,
    JudgeSpec,
    LabelScales,
    LabelsFiles,
    MaxCalls,
    MetricOptions,
    RayActorCpus,
    RayActors,
    RayAddress,
    Repairs,
    Retries,
    TraceDataset,
    TraceFilter,
    TraceLimit,
    TraceServer,
    TraceSince,
    WriteBack,
    configured_metrics,
    defined_criteria,
    executor_for,
    fail,
    parse_options,
    print_warning,
    progress_bar,
    user_errors,
)
from ragmeter.data import LoadedDataset, load_samples
from ragmeter.evaluate import DEFAULT_METRICS, BudgetWarning, check_samples, evaluate
from ragmeter.heads.ppi import calibrate_result
from ragmeter.heads.ratings import Labels, parse_scales, read_labels
from ragmeter.limits import MAX_INPUT_CHARS, InputTruncatedWarning
from ragmeter.manifest import Counts
from ragmeter.metrics import Metric
from ragmeter.report import estimate_table, samples_table, summary_table, throughput, write_outputs
from ragmeter.result import Result
from ragmeter.store import FolderLock
from ragmeter.traces import TraceSet, is_trace_source, parse_since, read_traces, record_traces
from ragmeter.viewer import open_run, write_report
from ragmeter.viewer.charts import check_installed as check_report_installed

EXIT_STOPPED = 3


def _parse_columns(text: str | None) -> dict[str, str] | None:
    if not text:
        return None
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise typer.BadParameter("use SOURCE=FIELD pairs, e.g. user_input=question")
    return {source.strip(): target.strip() for source, target in pairs}


def _price(judge: str, price_in: float | None, price_out: float | None) -> Price | None:
    if price_in is None and price_out is None:
        return price_for(judge)
    if price_in is None or price_out is None:
        raise typer.BadParameter("give both --price-in and --price-out")
    return Price(price_in, price_out)


def _budget(
    max_calls: int | None, max_cost: float | None, price: Price | None, judge: str
) -> Budget | None:
    if max_calls is None and max_cost is None:
        return None
    if max_cost is not None and price is None:
        raise typer.BadParameter(
            f"--max-cost needs a price and none is built in for {judge!r}: give --price-in and "
            "--price-out (US dollars per million tokens)"
        )
    return Budget(max_calls=max_calls, max_cost=max_cost, price=price)


def _load(file: Path, columns: str | None, skip_invalid: bool, console: Console) -> LoadedDataset:
    with user_errors(console):
        dataset = load_samples(
            file, columns=_parse_columns(columns), on_invalid="skip" if skip_invalid else "raise"
        )
    for row in dataset.invalid:
        console.print(f"[yellow]skipped row {row.row}, field {row.field!r}:[/yellow] {row.reason}")
    return dataset


def _read_traces(
    spec: str,
    options: dict[str, Any],
    write_back: bool,
    console: Console,
) -> tuple[LoadedDataset, TraceSet]:
    """The samples of the traces ``spec`` names; each trace left out is said with its reason."""
    if write_back and spec.startswith("otlp:"):
        raise fail(console, f"{spec}: traces read from a file have no server to write back to")
    with user_errors(console):
        since = parse_since(options["since"]) if options["since"] else None
    try:
        traces = read_traces(
            spec,
            server=options["server"],
            since=since,
            limit=options["limit"],
            filter_string=options["filter"],
            dataset=options["dataset"],
        )
    except Exception as exc:  # a server or client fails in many ways; each ends the command
        problem = exc if isinstance(exc, USER_ERRORS) else f"{type(exc).__name__}: {exc}"
        raise fail(console, f"cannot read the traces of {spec}: {problem}") from exc
    if write_back and traces.writer is None:
        raise fail(console, f"{spec}: traces read from a file have no server to write back to")
    for skip in traces.skipped:
        console.print(
            f"[yellow]left out trace {skip.trace_id}:[/yellow] {escape(skip.reason)}",
            soft_wrap=True,
            highlight=False,
        )
    console.print(
        f"{len(traces.samples)} samples from {traces.traces} traces of {spec}"
        + (f"; {len(traces.skipped)} left out" if traces.skipped else ""),
        soft_wrap=True,
        highlight=False,
    )
    joined = traces.source.get("references")
    if joined is not None:
        console.print(
            f"references from dataset {joined['dataset']}: {joined['by_trace']} by trace, "
            f"{joined['by_question']} by question; {joined['unmatched']} examples matched no "
            "trace read",
            soft_wrap=True,
            highlight=False,
        )
    return LoadedDataset(traces.samples, []), traces


def _write_back(
    result: Result, traces: TraceSet, out_dir: Path, write_back: bool, console: Console
) -> Result:
    """Put the traces read (and, with ``write_back``, the verdicts written) in the run's
    record, saying what was written."""
    result = record_traces(result, traces, out_dir, write_back=write_back)
    section = (result.run.model_extra or {}).get("traces", {})
    report = section.get("write_back")
    if report is not None:
        console.print(
            f"verdicts written back: {report['written']} new, {report['replaced']} replaced, "
            f"{report['unchanged']} already there"
            + (f", [red]{len(report['failed'])} failed[/red]" if report["failed"] else ""),
            highlight=False,
        )
        for failure in report["failed"][:5]:
            console.print(
                f"[red]not written:[/red] trace {failure['trace_id']}, {failure['metric']}: "
                f"{escape(failure['error'])}",
                soft_wrap=True,
                highlight=False,
            )
    return result


def _dry_run(
    dataset: LoadedDataset,
    chosen: list[Metric],
    price: Price | None,
    judge: str,
    max_input_chars: int | None,
    console: Console,
) -> None:
    expected = estimate(dataset.samples, chosen, price=price, max_input_chars=max_input_chars)
    console.print(estimate_table(expected))
    if price is None:
        console.print(f"no price known for {judge!r}: give --price-in/--price-out for a cost")
    elif price_for(judge) == price and price.input:
        console.print(
            f"prices: OpenAI list prices as of {PRICES_AS_OF} (${price.input}/M in, "
            f"${price.output}/M out); override with --price-in/--price-out"
        )
    console.print("; ".join(expected.notes) + ". No model was called.")


def _stopped_message(result: Result, chosen: list[Metric], price: Price | None, out: Path) -> str:
    """Say what was saved, what is left, about how much it needs, and how to go on."""
    pending: dict[str, list[Any]] = defaultdict(list)
    samples = {s.key: s for s in result.samples}
    for score in result.briefs():
        if is_pending(score):
            pending[score.metric].append(samples[score.sample_id])
    left = [estimate(pending[m.name], [m], price=price) for m in chosen if pending[m.name]]
    calls = sum(e.calls for e in left)
    costs = [e.cost() for e in left]
    cost = sum(c for c in costs if c is not None) if all(c is not None for c in costs) else None
    counts, budget = result.run.counts or Counts(), result.run.budget or {}
    spent = f"{budget['calls']} calls" + (
        f", ${budget['cost']:.4f}" if budget.get("cost") is not None else ""
    )
    flags = []
    if budget.get("max_calls") is not None:
        flags.append(f"--max-calls {calls}")
    if budget.get("max_cost") is not None and cost is not None:
        flags.append(f"--max-cost {math.ceil(cost * 1.2 * 100) / 100:.2f}")
    saved = counts.items - counts.pending
    return (
        f"Stopped at the budget after {spent}. {saved} of {counts.items} items are saved in "
        f"{out}/; the {counts.pending} left need about {calls} more calls"
        + (f" (about ${cost:.4f})" if cost is not None else "")
        + ". To continue, run the same command again"
        + (f" with {' and '.join(flags)} or more" if flags else " with a higher budget")
        + "; saved items are not judged again."
    )


def evaluate_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="JSONL, JSON, CSV or Parquet file of samples; or traces: phoenix:PROJECT, "
            "mlflow:EXPERIMENT, otlp:FILE."
        ),
    ],
    metrics: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated metric or criterion names. \\[default: "
            f"{','.join(DEFAULT_METRICS)}, and each criterion given]"
        ),
    ] = None,
    criterion: CriterionFlags = None,
    criteria: CriteriaFile = None,
    judge: JudgeSpec = "local",
    embedder: EmbedderSpec = "minilm",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Results folder; rerun with it to resume. \\[default: runs/FILE without extension]"
        ),
    ] = None,
    columns: Annotated[
        str | None, typer.Option(help="Column mapping, e.g. user_input=question,response=answer")
    ] = None,
    skip_invalid: Annotated[
        bool, typer.Option(help="Report invalid rows and go on with the rest.")
    ] = False,
    retries: Retries = 2,
    repairs: Repairs = 1,
    workers: Annotated[
        int, typer.Option(help="Items judged at once (with --ray: by each worker).")
    ] = 1,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
    cache: CacheFlag = True,
    show_samples: Annotated[bool, typer.Option(help="Also print a row per sample.")] = True,
    option: MetricOptions = None,
    judge_option: JudgeOptions = None,
    embedder_option: EmbedderOptions = None,
    dry_run: Annotated[
        bool, typer.Option(help="Estimate calls, tokens and cost; call no model.")
    ] = False,
    max_calls: MaxCalls = None,
    max_cost: Annotated[
        float | None, typer.Option(help="Stop before spending more than this many US dollars.")
    ] = None,
    price_in: Annotated[
        float | None, typer.Option(help="US dollars per million prompt tokens.")
    ] = None,
    price_out: Annotated[
        float | None, typer.Option(help="US dollars per million completion tokens.")
    ] = None,
    max_input_chars: Annotated[
        int, typer.Option(help="Cut each sample field to this many characters; 0: no limit.")
    ] = MAX_INPUT_CHARS,
    seed: Annotated[
        int | None, typer.Option(help="Seed passed to the judge, if it takes one.")
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(
            help="The language of every sample that gives none of its own (a 'language' "
            "column): an ISO 639-1 code such as de; texts are split into sentences by its "
            "rules. \\[default: detected per sample]"
        ),
    ] = None,
    keep_planted: Annotated[
        bool,
        typer.Option(
            help="Leave in text addressed to the judge (an order, a ready verdict, a role "
            "marker) instead of taking it out before judging; it is listed either way."
        ),
    ] = False,
    html: Annotated[
        Path | None, typer.Option(help="Also write an HTML report of the run to this file.")
    ] = None,
    labels: LabelsFiles = None,
    scale: LabelScales = None,
    server: TraceServer = None,
    since: TraceSince = None,
    limit: TraceLimit = None,
    filter_string: TraceFilter = None,
    dataset: TraceDataset = None,
    write_back: WriteBack = False,
) -> None:
    """Score FILE, or an application's traces, with reference-free RAG metrics and print a
    summary table.

    Exit status: 0 done, 2 bad input or options, 3 stopped at the budget (rerun to continue).
    """
    console = Console()
    spec = str(file)
    traces: TraceSet | None = None
    trace_options = {
        "server": server,
        "since": since,
        "limit": limit,
        "filter": filter_string,
        "dataset": dataset,
    }
    if is_trace_source(spec):
        out_dir = out or Path("runs") / spec.replace(":", "-").replace("/", "-")
        dataset, traces = _read_traces(spec, trace_options, write_back, console)
    else:
        given = [f"--{name}" for name, value in trace_options.items() if value is not None]
        if given or write_back:
            raise fail(
                console,
                f"{', '.join([*given, *(['--write-back'] if write_back else [])])} "
                "applies to traces (phoenix:PROJECT, mlflow:EXPERIMENT, otlp:FILE)",
            )
        out_dir = out or Path("runs") / file.stem
        dataset = _load(file, columns, skip_invalid, console)
    with user_errors(console):
        defined = defined_criteria(criterion, criteria)
        chosen = configured_metrics(metrics, option, defined)
        executor = executor_for(ray, ray_actors, ray_actor_cpus, workers)
        if html is not None:
            check_report_installed()  # before judging, not after
        ratings = _ratings(labels, scale, dataset, chosen)  # checked before judging
        check_samples(dataset.samples, chosen)  # before the progress bar, not under it
        judge_options = parse_options(judge_option, "--judge-option")
        embedder_options = parse_options(embedder_option, "--embedder-option")
    price = _price(judge, price_in, price_out)
    limit = max_input_chars or None
    if dry_run:
        _dry_run(dataset, chosen, price, judge, limit, console)
        return
    budget = _budget(max_calls, max_cost, price, judge)
    # The folder is held from the first score to the last export: another run on it stops at
    # once instead of judging the same items and overwriting these files. A full disk or a
    # damaged store ends in an error line that says what to do.
    with user_errors(console), FolderLock(out_dir):
        progress = progress_bar(console)
        with progress, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InputTruncatedWarning)
            warnings.simplefilter("ignore", BudgetWarning)  # said below, with what to do
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
                    repairs=repairs,
                    max_workers=workers,
                    on_score=lambda _score: progress.advance(task),
                    judge_options=judge_options,
                    embedder_options=embedder_options,
                    budget=budget,
                    max_input_chars=limit,
                    seed=seed,
                    executor=executor,
                    language=language,
                    planted="keep" if keep_planted else "remove",
                )
            except USER_ERRORS as exc:
                raise fail(console, exc) from exc
        for warning in caught:
            print_warning(console, warning.message)
        if traces is not None:
            result = _write_back(result, traces, out_dir, write_back, console)
        _report(result, file, out_dir, show_samples, console)
        if ratings is not None:
            calibration = calibrate_result(result, ratings, run=str(out_dir))
            calibration.write(out_dir)
            print_calibration(console, calibration)
        if html is not None:
            with user_errors(console):
                written = write_report([open_run(out_dir)], html)
            console.print(f"report written to {written}", soft_wrap=True, highlight=False)
        if result.run.status == "stopped":
            console.print(f"[yellow]{_stopped_message(result, chosen, price, out_dir)}[/yellow]")
            raise typer.Exit(EXIT_STOPPED)


def _ratings(
    files: list[Path] | None, scale: list[str] | None, dataset: LoadedDataset, chosen: list[Metric]
) -> Labels | None:
    """The ``--labels`` file read against the dataset's samples and the chosen metrics."""
    if not files:
        return None
    if len(files) > 1:
        raise ValueError(f"{len(files)} --labels files for one run: give one")
    path = files[0]
    ids = [s.key for s in dataset.samples]
    return read_labels(path, ids, [m.name for m in chosen], parse_scales(scale))


def _report(
    result: Result, file: Path, out_dir: Path, show_samples: bool, console: Console
) -> None:
    write_outputs(result, out_dir)
    if show_samples:
        console.print(samples_table(result))
    console.print(summary_table(result, title=f"ragmeter: {file.name} ({result.run.judge})"))
    for row in result.summary():
        for reason, count in row.unscored_reasons.items():
            if not reason.startswith(NOT_JUDGED):
                console.print(f"[yellow]{row.metric}: {count} unscored[/yellow] — {reason}")
    counts = result.run.counts or Counts()
    console.print(
        f"model calls {counts.model_calls}, cached {counts.cached_calls}, "
        f"tokens {counts.prompt_tokens} in / {counts.completion_tokens} out; "
        f"{counts.resumed} items resumed from {out_dir}/, {counts.judged} judged now; "
        f"results in {out_dir}/"
    )
    pace = throughput(result)
    if pace is not None:
        console.print(pace, soft_wrap=True, highlight=False)
