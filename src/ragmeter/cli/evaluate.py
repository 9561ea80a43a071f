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
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from ragmeter.budget import NOT_JUDGED, PRICES_AS_OF, Price, estimate, is_pending, price_for
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
    Workers,
    WriteBack,
    advance,
    fail,
    print_warning,
    progress,
    say,
    user_errors,
)
from ragmeter.cli.settings import say_sources, where_from
from ragmeter.config import DEFAULT_METRICS, RunConfig
from ragmeter.criteria.files import CriteriaError
from ragmeter.data import LoadedDataset, load_samples
from ragmeter.evaluate import BudgetWarning, check_samples, evaluate
from ragmeter.heads.ppi import calibrate_result
from ragmeter.heads.ratings import Labels, parse_scales, read_labels
from ragmeter.limits import MAX_INPUT_CHARS, InputTruncatedWarning
from ragmeter.manifest import RUN_FILE, Counts, RunRecord, config_differences
from ragmeter.metrics import Metric
from ragmeter.report import estimate_table, samples_table, summary_table, throughput, write_outputs
from ragmeter.result import Result
from ragmeter.store import FolderLock
from ragmeter.traces import TraceSet, is_trace_source, parse_since, read_traces, record_traces
from ragmeter.viewer import open_run, write_report
from ragmeter.viewer.charts import check_installed as check_report_installed

EXIT_STOPPED = 3

DataFile = Annotated[
    Path | None,
    typer.Argument(
        metavar="FILE",
        help="JSONL, JSON, CSV or Parquet file of samples; or traces: phoenix:PROJECT, "
        "mlflow:EXPERIMENT, otlp:FILE. \\[default: data in ragmeter.toml's \\[evaluate]]",
        show_default=False,
    ),
]
MetricNames = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated metric or criterion names. \\[default: "
        f"{','.join(DEFAULT_METRICS)}, and each criterion given]"
    ),
]
RunFolder = Annotated[
    Path | None,
    typer.Option(
        help="Results folder; rerun with it to resume. \\[default: runs/FILE without extension]"
    ),
]
ColumnMapping = Annotated[
    str | None, typer.Option(help="Column mapping, e.g. user_input=question,response=answer")
]
SkipInvalid = Annotated[bool, typer.Option(help="Report invalid rows and go on with the rest.")]
ShowSamples = Annotated[bool, typer.Option(help="Also print a row per sample.")]
DryRun = Annotated[bool, typer.Option(help="Estimate calls, tokens and cost; call no model.")]
MaxCost = Annotated[
    float | None, typer.Option(help="Stop before spending more than this many US dollars.")
]
PriceIn = Annotated[float | None, typer.Option(help="US dollars per million prompt tokens.")]
PriceOut = Annotated[float | None, typer.Option(help="US dollars per million completion tokens.")]
MaxInputChars = Annotated[
    int, typer.Option(help="Cut each sample field to this many characters; 0: no limit.")
]
JudgeSeed = Annotated[int | None, typer.Option(help="Seed passed to the judge, if it takes one.")]
Language = Annotated[
    str | None,
    typer.Option(
        help="The language of every sample that gives none of its own (a 'language' "
        "column): an ISO 639-1 code such as de; texts are split into sentences by its "
        "rules. \\[default: detected per sample]"
    ),
]
KeepPlanted = Annotated[
    bool,
    typer.Option(
        help="Leave in text addressed to the judge (an order, a ready verdict, a role "
        "marker) instead of taking it out before judging; it is listed either way."
    ),
]
HtmlReport = Annotated[
    Path | None, typer.Option(help="Also write an HTML report of the run to this file.")
]
FIELD_OF = {"file": "data", "filter_string": "filter"}
"""The configuration's name for each parameter named otherwise here."""
TRACE_ONLY = ("server", "since", "limit", "filter", "dataset")


def evaluate_command(
    ctx: typer.Context,
    file: DataFile = None,
    metrics: MetricNames = None,
    criterion: CriterionFlags = None,
    criteria: CriteriaFile = None,
    judge: JudgeSpec = "local",
    embedder: EmbedderSpec = "minilm",
    out: RunFolder = None,
    columns: ColumnMapping = None,
    skip_invalid: SkipInvalid = False,
    retries: Retries = 2,
    repairs: Repairs = 1,
    workers: Workers = 1,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
    cache: CacheFlag = True,
    show_samples: ShowSamples = True,
    option: MetricOptions = None,
    judge_option: JudgeOptions = None,
    embedder_option: EmbedderOptions = None,
    dry_run: DryRun = False,
    max_calls: MaxCalls = None,
    max_cost: MaxCost = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
    max_input_chars: MaxInputChars = MAX_INPUT_CHARS,
    seed: JudgeSeed = None,
    language: Language = None,
    keep_planted: KeepPlanted = False,
    html: HtmlReport = None,
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
    summary table. Options not given come from ragmeter.toml's \\[evaluate] table, if any.

    Exit status: 0 done, 2 bad input or options, 3 stopped at the budget (rerun to continue).
    """
    console = Console()
    say_sources(ctx, console)
    run_evaluation(*_run_config(ctx, console), console, dry_run=dry_run)


def _run_config(ctx: typer.Context, console: Console) -> tuple[RunConfig, list[Metric]]:
    """The run the command's parameters describe, and its metrics built; a bad value is named
    with where it came from."""
    values = {FIELD_OF.get(name, name): value for name, value in ctx.params.items()}
    del values["dry_run"]  # how to run, not what the run is
    try:
        config = RunConfig(**values)
    except ValidationError as exc:
        problem = exc.errors()[0]
        field = str(problem["loc"][0])
        name = next((p for p, f in FIELD_OF.items() if f == field), field)
        raise fail(console, f"{where_from(ctx, name)}{field}: {problem['msg']}") from None
    if config.data is None:
        raise fail(console, "no samples: give FILE, or data under [evaluate] in ragmeter.toml")
    try:
        chosen = config.chosen_metrics()
    except CriteriaError as exc:  # names the criteria file's own line already
        raise fail(console, exc) from exc
    except ValueError as exc:  # the metrics' names, or else their options: say where given
        try:
            config.model_copy(update={"option": {}}).chosen_metrics()
        except ValueError as named:
            raise fail(console, f"{where_from(ctx, 'metrics')}{named}") from named
        raise fail(console, f"{where_from(ctx, 'option')}{exc}") from exc
    return config, chosen


def run_evaluation(
    config: RunConfig, chosen: list[Metric], console: Console, *, dry_run: bool = False
) -> None:
    """Score the run ``config`` describes with its metrics ``chosen`` (``config.chosen_metrics()``),
    printing as it goes; or, with ``dry_run``, say what it would cost."""
    assert config.data is not None
    dataset, traces = _samples(config, console)
    with user_errors(console):
        config.executor()  # a bad Ray setting is said before judging
        if config.html is not None:
            check_report_installed()  # before judging, not after
        ratings = _ratings(config.labels, config.scale, dataset, chosen)  # before judging
        check_samples(dataset.samples, chosen)  # before the progress bar, not under it
        price = config.price()
        if dry_run:
            _dry_run(dataset, chosen, price, config.judge, config.max_input_chars or None, console)
            return
        config.budget()
    out_dir = config.results_folder()
    config = config.naming(chosen)
    _say_changes(config, out_dir, console)
    # The folder is held from the first score to the last export: another run on it stops at
    # once instead of judging the same items and overwriting these files. A full disk or a
    # damaged store ends in an error line that says what to do.
    with user_errors(console), FolderLock(out_dir):
        result = _judge(config, dataset, chosen, console)
        if traces is not None:
            result = _write_back(result, traces, out_dir, config.write_back, console)
        _report(result, Path(config.data), out_dir, config.show_samples, console)
        if ratings is not None:
            calibration = calibrate_result(result, ratings, run=str(out_dir))
            calibration.write(out_dir)
            print_calibration(console, calibration)
        if config.html is not None:
            written = write_report([open_run(out_dir)], config.html)
            say(console, f"report written to {written}")
        if result.run.status == "stopped":
            console.print(f"[yellow]{_stopped_message(result, chosen, price, out_dir)}[/yellow]")
            raise typer.Exit(EXIT_STOPPED)


def _samples(config: RunConfig, console: Console) -> tuple[LoadedDataset, TraceSet | None]:
    """The samples of the file, or of the traces, the configuration names."""
    spec = config.data or ""
    if is_trace_source(spec):
        return _read_traces(spec, config, console)
    given = [f"--{name}" for name in TRACE_ONLY if getattr(config, name) is not None]
    if given or config.write_back:
        raise fail(
            console,
            f"{', '.join([*given, *(['--write-back'] if config.write_back else [])])} "
            "applies to traces (phoenix:PROJECT, mlflow:EXPERIMENT, otlp:FILE)",
        )
    with user_errors(console):
        dataset = load_samples(
            Path(spec),
            columns=config.columns,
            on_invalid="skip" if config.skip_invalid else "raise",
        )
    for row in dataset.invalid:
        console.print(f"[yellow]skipped row {row.row}, field {row.field!r}:[/yellow] {row.reason}")
    return dataset, None


def _say_changes(config: RunConfig, out_dir: Path, console: Console) -> None:
    """On a rerun into a results folder, what this run's configuration changes."""
    if not (out_dir / RUN_FILE).is_file():
        return
    try:
        before = RunRecord.read(out_dir).config
    except ValueError:  # a record the run rewrites: nothing to compare with
        return
    if before is not None:
        changed = config_differences(before, config.recorded())
        if changed:
            say(
                console,
                f"this run's configuration differs from the last one in {out_dir}/: "
                + "; ".join(changed),
            )


def _judge(
    config: RunConfig, dataset: LoadedDataset, chosen: list[Metric], console: Console
) -> Result:
    """Every score, with a progress bar; each warning said once the bar is done."""
    total = len(dataset.samples) * len(chosen)
    with progress(console, "judging", total) as bar, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputTruncatedWarning)
        warnings.simplefilter("ignore", BudgetWarning)  # said below, with what to do
        with user_errors(console):
            result = evaluate(dataset, chosen, config=config, on_score=lambda _: advance(bar))
    for warning in caught:
        print_warning(console, warning.message)
    return result


def _read_traces(spec: str, config: RunConfig, console: Console) -> tuple[LoadedDataset, TraceSet]:
    """The samples of the traces ``spec`` names; each trace left out is said with its reason."""
    if config.write_back and spec.startswith("otlp:"):
        raise fail(console, f"{spec}: traces read from a file have no server to write back to")
    with user_errors(console):
        since = parse_since(config.since) if config.since else None
    try:
        traces = read_traces(
            spec,
            server=config.server,
            since=since,
            limit=config.limit,
            filter_string=config.filter,
            dataset=config.dataset,
        )
    except Exception as exc:  # a server or client fails in many ways; each ends the command
        problem = exc if isinstance(exc, USER_ERRORS) else f"{type(exc).__name__}: {exc}"
        raise fail(console, f"cannot read the traces of {spec}: {problem}") from exc
    if config.write_back and traces.writer is None:
        raise fail(console, f"{spec}: traces read from a file have no server to write back to")
    for skip in traces.skipped:
        say(console, f"[yellow]left out trace {skip.trace_id}:[/yellow] {escape(skip.reason)}")
    say(
        console,
        f"{len(traces.samples)} samples from {traces.traces} traces of {spec}"
        + (f"; {len(traces.skipped)} left out" if traces.skipped else ""),
    )
    joined = traces.source.get("references")
    if joined is not None:
        say(
            console,
            f"references from dataset {joined['dataset']}: {joined['by_trace']} by trace, "
            f"{joined['by_question']} by question; {joined['unmatched']} examples matched no "
            "trace read",
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
            say(
                console,
                f"[red]not written:[/red] trace {failure['trace_id']}, {failure['metric']}: "
                f"{escape(failure['error'])}",
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
        say(console, pace)
