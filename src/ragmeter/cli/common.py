"""What every command shares: the judge and embedder options, the progress bar, and the error
exit. A command that takes a judge takes ``--judge-option``/``--embedder-option`` from here, so
every provider option works everywhere the same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from ragmeter.cluster import ClusterError
from ragmeter.config import parse_options
from ragmeter.data import DatasetError
from ragmeter.judges import Embedder, Judge, JudgeError, resolve_models
from ragmeter.judges.cache import CallCache
from ragmeter.judges.weights import WeightsError

EXIT_BAD_INPUT = 2

JudgeSpec = Annotated[
    str, typer.Option(help="'local', 'openai:MODEL', 'fake:FILE' or a plugin's provider.")
]
EmbedderSpec = Annotated[str, typer.Option(help="'minilm', 'openai:MODEL', ...")]
JudgeOptions = Annotated[
    list[str] | None,
    typer.Option(
        "--judge-option",
        help="Judge provider option NAME=VALUE (repeat), e.g. timeout=30, json_mode=object.",
    ),
]
EmbedderOptions = Annotated[
    list[str] | None,
    typer.Option("--embedder-option", help="Embedder provider option NAME=VALUE (repeat)."),
]
CacheFlag = Annotated[bool, typer.Option(help="Reuse cached judge calls.")]
SideBySideDesign = Annotated[
    str,
    typer.Option(
        "--design",
        help="Side by side: 'all' pairs, each system against an 'anchor', or 'auto' (all pairs "
        "of up to 4 systems).",
    ),
]
AnchorSystem = Annotated[
    str | None,
    typer.Option("--anchor", help="Side by side: the anchor system (default: the first)."),
]
ResultsFolder = Annotated[Path, typer.Option(help="Results folder; rerun with it to resume.")]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Judge on Ray workers, each with its own judge: 'local' starts a cluster on this "
        "machine, 'auto' or HOST:PORT joins one (needs the 'ray' extra).",
    ),
]
RayActors = Annotated[
    int | None,
    typer.Option(
        "--ray-actors",
        help="Ray workers. \\[default: one per --ray-actor-cpus CPUs of the cluster]",
    ),
]
RayActorCpus = Annotated[
    float, typer.Option("--ray-actor-cpus", help="CPUs Ray sets aside for each worker.")
]
Retries = Annotated[int, typer.Option(help="Further attempts after a failed judge call.")]
Repairs = Annotated[
    int, typer.Option(help="Further attempts after a reply that does not fit the schema.")
]
MaxCalls = Annotated[
    int | None, typer.Option(help="Stop after this many judge calls (cached ones are free).")
]
MetricOptions = Annotated[
    list[str] | None,
    typer.Option(help="Metric option METRIC.PARAM=VALUE (repeat), e.g. faithfulness.soft=false."),
]
CriterionFlags = Annotated[
    list[str] | None,
    typer.Option(
        "--criterion",
        metavar="NAME=QUESTION",
        help="A yes/no criterion in words, scored as the metric NAME (repeat), e.g. "
        '"declines=Does the answer decline when the context does not hold the answer?".',
    ),
]
CriteriaFile = Annotated[
    Path | None,
    typer.Option(
        "--criteria",
        metavar="FILE",
        help="A TOML file of criteria (yes/no, levels, checklists), one [NAME] table each; "
        "see docs/criteria.md.",
    ),
]
Workers = Annotated[
    int, typer.Option(min=1, help="Items judged at once (with --ray: by each worker).")
]
LabelsFiles = Annotated[
    list[Path] | None,
    typer.Option(
        "--labels",
        metavar="FILE",
        help="A person's ratings of some samples (JSONL or CSV: an 'id' and a column per "
        "metric) to estimate the people's mean with the judge's help (PPI++), written to the "
        "run's calibration.json (compare: B - A on the people's scale); one file for every "
        "run, or one per run (repeat).",
    ),
]
LabelScales = Annotated[
    list[str] | None,
    typer.Option(
        "--scale",
        metavar="[METRIC=]LOW-HIGH",
        help="The ratings' scale, e.g. faithfulness=1-4, 0-1 or binary for every metric "
        "(repeat); inferred from the ratings and printed when not given.",
    ),
]

TraceServer = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="With phoenix:PROJECT or mlflow:EXPERIMENT: Phoenix's address or MLflow's tracking "
        "URI (a server or a local store). \\[default: the client's own]",
    ),
]
TraceSince = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="WHEN",
        help="With traces: only those that started at this time (ISO 8601, UTC unless it says) "
        "or this long ago (30m, 24h, 7d) or later.",
    ),
]
TraceLimit = Annotated[
    int | None, typer.Option("--limit", min=1, help="With traces: only the N most recent.")
]
TraceFilter = Annotated[
    str | None,
    typer.Option(
        "--filter",
        help="With mlflow:EXPERIMENT: an MLflow trace filter, e.g. \"tags.env = 'prod'\".",
    ),
]
TraceDataset = Annotated[
    str | None,
    typer.Option(
        "--dataset",
        help="With phoenix:PROJECT: a Phoenix dataset whose examples hold reference answers, "
        "joined to the traces by span, else by question.",
    ),
]
WriteBack = Annotated[
    bool,
    typer.Option(
        "--write-back",
        help="With traces: write each score and its explanation onto its trace (Phoenix span "
        "annotations, MLflow feedback); a rerun writes nothing twice.",
    ),
]

# What a user can get wrong: bad files, bad options, a model that cannot start.
USER_ERRORS = (
    DatasetError,
    OSError,
    ValueError,
    JudgeError,
    WeightsError,
    ImportError,
    ClusterError,
)


def fail(console: Console, problem: object) -> typer.Exit:
    """Print ``problem`` as an error, as written (a path or a reply may hold [brackets] that
    would read as markup); the caller raises the returned exit (status 2)."""
    say(console, f"[red]error:[/red] {escape(str(problem))}")
    return typer.Exit(EXIT_BAD_INPUT)


@contextmanager
def user_errors(
    console: Console, errors: tuple[type[Exception], ...] = USER_ERRORS
) -> Iterator[None]:
    """Turn a user's mistake raised inside the block (one of ``errors``) into an error line and
    exit status 2."""
    try:
        yield
    except errors as exc:
        raise fail(console, exc) from exc


def wide_console() -> Console:
    """The console of a command that prints wide tables: as wide as the terminal, or 160
    columns when the output is piped or captured."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


def say(console: Console, text: str | Text) -> None:
    """Print ``text`` unwrapped, with no colours guessed for its numbers and paths: a long path
    stays whole to copy."""
    console.print(text, highlight=False, soft_wrap=True)


def print_warning(console: Console, message: Warning | str) -> None:
    """One ``warning:`` line, the message as written."""
    say(console, f"[yellow]warning:[/yellow] {escape(str(message))}")


def print_reasons(console: Console, counts: Mapping[str, int], what: str, after: str = "") -> None:
    """A yellow line per reason with how many items it left ``what``: ``3 unscored — the judge
    call failed``."""
    for reason, count in counts.items():
        console.print(f"[yellow]{count} {what}[/yellow] — {reason}{after}")


def show_warnings_plainly(console: Console) -> None:
    """Print each warning (a skipped record line, a cut input) as one ``warning:`` line on
    ``console`` instead of Python's ``file:line: Category`` form."""
    warnings.showwarning = lambda message, *_, **__: print_warning(console, message)


def open_models(
    console: Console,
    judge: str,
    judge_options: list[str] | None,
    *,
    cache: bool | Path | CallCache = True,
    embedder: str | None = None,
    embedder_options: list[str] | None = None,
) -> tuple[Judge, Embedder | None]:
    """The judge (and the embedder, when one is named) behind the call cache; a bad spec or
    option, or a model that cannot start, ends the command with status 2."""
    with user_errors(console):
        judge_values = parse_options(judge_options, "--judge-option")
        embedder_values = parse_options(embedder_options, "--embedder-option")
    try:
        return resolve_models(
            judge,
            embedder,
            cache=cache,
            needs_embedder=embedder is not None,
            judge_options=judge_values,
            embedder_options=embedder_values,
        )
    except Exception as exc:  # a provider can fail to start in many ways; each ends the command
        problem = exc if isinstance(exc, USER_ERRORS) else f"{type(exc).__name__}: {exc}"
        raise fail(console, f"cannot start the models: {problem}") from exc


class ProgressBar(Progress):
    """rich's ``Progress``, but a bar that never moved is not left behind when its block fails:
    after a refused input the error is the last thing a command says, not ``judging 0/36``. A
    bar that moved stays, to say how far the command got."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        failed = exc_val is not None and not (
            isinstance(exc_val, typer.Exit) and exc_val.exit_code == 0
        )
        if failed and not self.disable and not any(task.completed for task in self.tasks):
            self.live.transient = True  # erased where it was drawn, never printed elsewhere
            self.live.stop()
            return
        super().__exit__(exc_type, exc_val, exc_tb)


def progress_bar(console: Console, **options: Any) -> Progress:
    """The progress bar of every command; ``options`` go to rich's ``Progress``."""
    return ProgressBar(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        **options,
    )


@contextmanager
def progress(console: Console, description: str, total: int, **options: Any) -> Iterator[Progress]:
    """A progress bar with one task; ``advance(bar)`` moves it on. ``options`` go to rich's
    ``Progress``."""
    bar = progress_bar(console, **options)
    with bar:
        bar.add_task(description, total=total)
        yield bar


def advance(bar: Progress, steps: float = 1) -> None:
    bar.advance(bar.task_ids[0], steps)
