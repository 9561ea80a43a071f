"""``ragmeter label RUN``: people label what an ``evaluate`` run judged, in a page served from
this machine, each label saved in the run's ``labels.sqlite`` the moment it is given;
``--export FILE`` writes them as the files ``calibrate`` and ``tune`` read; ``--pull`` reads the
labels people gave the run's traces on the Phoenix or MLflow server it read them from into the
same log. Exit status: 0 served until stopped (Ctrl+C), exported or pulled, 2 bad input (or a
server that could not be read)."""

from __future__ import annotations

import secrets
import socket
import sys
import webbrowser
from pathlib import Path
from typing import Annotated, cast
from urllib.parse import urlencode

import typer
from rich.console import Console

from ragmeter.cli.calibrate import evaluation
from ragmeter.cli.common import print_warning, say, user_errors
from ragmeter.heads.ratings import parse_scales
from ragmeter.labels import LABELS_FILE, LabelSession, export
from ragmeter.labels.items import ORDERS, Order
from ragmeter.labels.pull import PullReport, pull_labels
from ragmeter.labels.server import LOOPBACK, LabelServer, check_binding
from ragmeter.traces.run import human_labels, source_name, trace_section
from ragmeter.viewer import open_run

SHOWN_TRACES = 5
"""Traces named for each reason a pulled label was left out; the rest are counted."""
TAKES = {
    "serve": {"metric", "claims", "scale", "data", "annotator", "order", "seed", "host", "port"}
    | {"token", "open_page"},
    "export": {"to_file", "claims", "metric", "annotator"},
    "pull": {"scale", "annotation", "server"},
}
"""The options, by parameter, each of the command's three uses takes (besides the run, and
--pull that picks the use); any other given is refused, not passed over unsaid."""
WHAT = {
    "export": "--export writes the labels already given to a file",
    "pull": "--pull reads the labels people gave the run's traces into its labels",
}


MetricOption = Annotated[
    str | None,
    typer.Option(
        help="The metric whose samples are rated; with --export, the one metric whose "
        "ratings are written. \\[default: the run's first; every rated metric for --export]"
    ),
]
ClaimsOption = Annotated[
    bool,
    typer.Option(
        "--claims",
        help="Label faithfulness's claims (supported, not supported, can't tell) beside "
        "their evidence, for tune, instead of rating samples.",
    ),
]
ScaleOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="[METRIC=]LOW-HIGH",
        help="The rating scale: LOW-HIGH of whole numbers 0-9 (a digit key per level) or "
        "'binary'; with --pull, any LOW-HIGH, METRIC=LOW-HIGH for one metric (repeat). "
        "\\[default: the scale the run's ratings of the metric are on, else the "
        "metric's own (0-3 for passage_relevance), else 1-5; with --pull, else 0-1]",
    ),
]
DataOption = Annotated[
    Path | None,
    typer.Option(
        help="The data file the run scored, to show each sample's passages as it holds "
        "them. \\[default: the passages as the judge read them, from its prompts the run "
        "kept]"
    ),
]
AnnotatorOption = Annotated[
    str | None,
    typer.Option(
        help="Your name, kept with each label (each person can change it on the page); "
        "with --export, only this person's labels. \\[default: your user name; every "
        "person's for --export]"
    ),
]
OrderOption = Annotated[
    str,
    typer.Option(
        help="'random' (seeded: a random draw, as calibrate needs) or 'least-sure' (the "
        "judge's least sure first, for tune; biases calibrate)."
    ),
]
HostOption = Annotated[
    str, typer.Option(help="The address to serve on; any but this machine's needs --token.")
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        envvar="RAGMETER_LABEL_TOKEN",
        help="A secret every request must carry (it is in the printed address); 'auto': a "
        "random one. Set RAGMETER_LABEL_TOKEN to keep it out of the process list.",
    ),
]
OpenPageOption = Annotated[
    bool, typer.Option("--open/--no-open", help="Open the page in your browser.")
]
ToFileOption = Annotated[
    Path | None,
    typer.Option(
        "--export",
        metavar="FILE",
        help="Write the labels instead of serving: ratings (.jsonl/.csv, as calibrate "
        "reads) or, with --claims, claim labels (as tune reads).",
    ),
]
PullOption = Annotated[
    bool,
    typer.Option(
        "--pull",
        help="Instead of serving: read the labels people gave the run's traces where they "
        "were traced (Phoenix span and trace annotations of annotator kind HUMAN, MLflow "
        "feedback from a HUMAN source) into the run's labels, as ratings calibrate and "
        "tune read. A second pull adds only what changed.",
    ),
]
AnnotationOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="METRIC=NAME",
        help="With --pull: people's labels named NAME rate METRIC (repeat). \\[default: "
        "a label rates the metric of its own name]",
    ),
]
ServerOption = Annotated[
    str | None,
    typer.Option(
        help="With --pull: Phoenix's address or MLflow's tracking URI. \\[default: the "
        "one the run read its traces from]"
    ),
]


def label_command(
    ctx: typer.Context,
    run: Annotated[Path, typer.Argument(help="An evaluate run's results folder.")],
    metric: MetricOption = None,
    claims: ClaimsOption = False,
    scale: ScaleOption = None,
    data: DataOption = None,
    annotator: AnnotatorOption = None,
    order: OrderOption = "random",
    seed: Annotated[int, typer.Option(help="Seed of the random order.")] = 0,
    host: HostOption = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port (0: a free one).")] = 0,
    token: TokenOption = None,
    open_page: OpenPageOption = True,
    to_file: ToFileOption = None,
    pull: PullOption = False,
    annotation: AnnotationOption = None,
    server: ServerOption = None,
) -> None:
    """Serve a page for labelling RUN's samples on a metric's scale (or its claims), keyboard
    first; the judge's verdict of each item is shown once you have answered it. --export writes
    the run's labels as files; --pull reads in those people gave its traces in Phoenix or
    MLflow."""
    console = Console()
    with user_errors(console):
        _refuse_others(ctx, "pull" if pull else "serve" if to_file is None else "export")
        if pull:
            report = _pull(run, scale, annotation, server)
            _print_pull(console, run, report)
            return
        if to_file is not None:
            rows, notes = export(
                run,
                to_file,
                evaluation(open_run(run)),
                claims=claims,
                annotator=annotator,
                metric=metric,
            )
            for note in notes:
                print_warning(console, note)
            say(console, f"{rows} rows written to {to_file}")
            return
        page_scale = _page_scale(scale)
        if token == "auto":
            token = secrets.token_urlsafe(24)
        check_binding(host, token)
        if order not in ORDERS:
            raise ValueError(f"--order {order!r}: use {' or '.join(ORDERS)}")
        chosen = cast(Order, order)
        session = LabelSession.open(
            run,
            claims=claims,
            metric=metric,
            scale=page_scale,
            order=chosen,
            seed=seed,
            annotator=annotator,
            data=data,
        )
        try:
            serving = LabelServer(session, host, port, token)
        except BaseException:
            session.close()
            raise
    _serve(console, run, session, serving, open_page)


def _serve(
    console: Console,
    run: Path,
    session: LabelSession,
    serving: LabelServer,
    open_page: bool,
) -> None:
    """Serve the page until Ctrl+C, saying where it is."""
    for note in session.notes:
        print_warning(console, note)
    what = "claims" if session.kind == "claim" else f"samples on {session.metric}"
    say(
        console,
        f"labelling {len(session.items)} {what} of {run} at {serving.url} (Ctrl+C to stop); "
        f"each label is saved in {run / LABELS_FILE} as it is given",
    )
    if serving.host not in LOOPBACK:
        say(
            console,
            f"from another machine: http://{socket.gethostname()}:{serving.port}/"
            f"?{urlencode({'token': serving.token})}",
        )
    sys.stdout.flush()
    if open_page:
        webbrowser.open(serving.url)
    try:
        serving.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        serving.server_close()
        session.close()
    console.print(f"stopped; every label given is in {run / LABELS_FILE}", highlight=False)


def _refuse_others(ctx: typer.Context, use: str) -> None:
    """Refuse the options given that ``use`` (serve, export or pull) does not take, naming
    them: an option passed over unsaid would let a person think it did something."""
    others = [p for p in ctx.command.params if p.name not in {"run", "pull", *TAKES[use]}]
    given = []
    for param in others:
        # The enum of the click typer ships: by name.
        source = ctx.get_parameter_source(param.name or "")
        if source is not None and source.name == "COMMANDLINE":
            given.append("/".join([*param.opts, *param.secondary_opts]))  # as they are typed
    if not given:
        return
    if use == "serve":  # what serving does not take is --pull's
        raise ValueError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for --pull")
    verb = "does" if len(given) == 1 else "do"
    raise ValueError(f"{WHAT[use]}: {', '.join(given)} {verb} not apply to it")


def _page_scale(scale: list[str] | None) -> str | None:
    """The page's one scale: a bare LOW-HIGH (METRIC=LOW-HIGH is for --pull)."""
    if not scale:
        return None
    if len(scale) > 1 or "=" in scale[0]:
        raise ValueError(
            "--scale: the page rates one metric on one scale (LOW-HIGH or binary; "
            "METRIC=LOW-HIGH is for --pull)"
        )
    return scale[0]


def _pull(
    run: Path, scale: list[str] | None, annotation: list[str] | None, server: str | None
) -> PullReport:
    """The labels people gave the run's traces, pulled into its labels."""
    result = evaluation(open_run(run))
    section = trace_section(result)
    if section is None:
        raise ValueError(
            f"{run}: not scored from traces (ragmeter evaluate phoenix:PROJECT or "
            "mlflow:EXPERIMENT): there is no server to pull people's labels from"
        )
    names: dict[str, str] = {}
    for item in annotation or []:
        metric, sep, name = item.partition("=")
        if not sep or not metric.strip() or not name.strip():
            raise ValueError(f"--annotation {item!r}: use METRIC=NAME")
        names[name.strip()] = metric.strip()
    scales = parse_scales(scale)
    source = source_name(section)
    try:
        found = human_labels(section, server=server)
    except ValueError:  # said plainly already (a file holds no labels, no such experiment)
        raise
    except Exception as exc:  # a server or client fails in many ways; each ends the command
        where = server or section.get("server") or "its default address"
        raise ValueError(f"cannot read people's labels from {source} at {where}: {exc}") from exc
    return pull_labels(run, result, section, found, source=source, names=names, scales=scales)


def _print_pull(console: Console, run: Path, report: PullReport) -> None:
    """What was pulled, added and left out, each left-out label counted under its reason."""
    say(console, f"{report.read} label(s) people gave the traces of {report.source}")
    added = sum(report.added.values())
    each = ", ".join(
        f"{metric} by {who}: {count}" for (metric, who), count in sorted(report.added.items())
    )
    changed = f"; {report.changed} changed on the server since the last pull"
    say(
        console,
        f"added to {run / LABELS_FILE}: {added} rating(s)"
        + (f" ({each})" if each else "")
        + f"; {report.already} already there"
        + (changed if report.changed else ""),
    )
    if report.superseded:
        say(
            console,
            f"{report.superseded} earlier label(s) by the same person of the same trace and "
            "metric: the latest is kept",
        )
    for metric in report.inferred:
        say(
            console,
            f"{metric}: scale {report.scales[metric]}, read from the values; give --scale "
            f"{metric}=LOW-HIGH if it is wider",
        )
    grouped = report.left_out_by_reason()
    if grouped:
        print_warning(console, f"{len(report.left_out)} label(s) left out:")
    for reason, items in grouped.items():
        traces = sorted({item.trace_id for item in items})
        named = ", ".join(traces[:SHOWN_TRACES]) + (
            f" and {len(traces) - SHOWN_TRACES} more" if len(traces) > SHOWN_TRACES else ""
        )
        say(console, f"  {len(items)} {reason}: trace(s) {named}")
    if added or report.already:
        say(
            console,
            "calibrate and tune read them with the run's other labels, and the labelling "
            "page shows how far you agree with them",
        )
