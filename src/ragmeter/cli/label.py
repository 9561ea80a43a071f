"""``ragmeter label RUN``: people label what an ``evaluate`` run judged, in a page served from
this machine, each label saved in the run's ``labels.sqlite`` the moment it is given;
``--export FILE`` writes them as the files ``calibrate`` and ``tune`` read. Exit status: 0
served until stopped (Ctrl+C) or exported, 2 bad input."""

from __future__ import annotations

import socket
import sys
import webbrowser
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragmeter.cli.calibrate import evaluation
from ragmeter.cli.common import print_warning, user_errors
from ragmeter.labels import LABELS_FILE, LabelSession, export
from ragmeter.labels.items import Order
from ragmeter.labels.server import LOOPBACK, LabelServer, check_binding
from ragmeter.viewer import open_run


def label_command(
    run: Annotated[Path, typer.Argument(help="An evaluate run's results folder.")],
    metric: Annotated[
        str | None,
        typer.Option(help="The metric whose samples are rated. \\[default: the run's first]"),
    ] = None,
    claims: Annotated[
        bool,
        typer.Option(
            "--claims",
            help="Label faithfulness's claims (supported, not supported, can't tell) beside "
            "their evidence, for tune, instead of rating samples.",
        ),
    ] = False,
    scale: Annotated[
        str | None,
        typer.Option(
            help="The rating scale: LOW-HIGH of whole numbers 0-9 (a digit key per level) or "
            "'binary'. \\[default: the scale the run's ratings of the metric are on, else 1-5]"
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            help="The data file the run scored, to show each sample's passages as it holds "
            "them. \\[default: the passages as the judge read them, from its prompts the run "
            "kept]"
        ),
    ] = None,
    annotator: Annotated[
        str | None,
        typer.Option(
            help="Your name, kept with each label (each person can change it on the page); "
            "with --export, only this person's labels. \\[default: your user name; every "
            "person's for --export]"
        ),
    ] = None,
    order: Annotated[
        str,
        typer.Option(
            help="'random' (seeded: a random draw, as calibrate needs) or 'least-sure' (the "
            "judge's least sure first, for tune; biases calibrate)."
        ),
    ] = "random",
    seed: Annotated[int, typer.Option(help="Seed of the random order.")] = 0,
    host: Annotated[
        str, typer.Option(help="The address to serve on; any but this machine's needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port (0: a free one).")] = 0,
    token: Annotated[
        str | None,
        typer.Option(help="A secret every request must carry (it is in the printed address)."),
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in your browser.")
    ] = True,
    to_file: Annotated[
        Path | None,
        typer.Option(
            "--export",
            metavar="FILE",
            help="Write the labels instead of serving: ratings (.jsonl/.csv, as calibrate "
            "reads) or, with --claims, claim labels (as tune reads).",
        ),
    ] = None,
) -> None:
    """Serve a page for labelling RUN's samples on a metric's scale (or its claims), keyboard
    first; the judge's verdict of each item is shown once you have answered it."""
    console = Console()
    with user_errors(console):
        if to_file is not None:
            result = evaluation(open_run(run))
            rows = export(run, to_file, result, claims=claims, annotator=annotator)
            console.print(f"{rows} rows written to {to_file}", highlight=False, soft_wrap=True)
            return
        check_binding(host, token)
        if order not in ("random", "least-sure"):
            raise ValueError(f"--order {order!r}: use random or least-sure")
        chosen: Order = "random" if order == "random" else "least-sure"
        session = LabelSession.open(
            run,
            claims=claims,
            metric=metric,
            scale=scale,
            order=chosen,
            seed=seed,
            annotator=annotator,
            data=data,
        )
        try:
            server = LabelServer(session, host, port, token)
        except BaseException:
            session.close()
            raise
    for note in session.notes:
        print_warning(console, note)
    what = "claims" if session.kind == "claim" else f"samples on {session.metric}"
    console.print(
        f"labelling {len(session.items)} {what} of {run} at {server.url} (Ctrl+C to stop); "
        f"each label is saved in {run / LABELS_FILE} as it is given",
        highlight=False,
        soft_wrap=True,
    )
    if host not in LOOPBACK:
        console.print(
            f"from another machine: http://{socket.gethostname()}:{server.port}/?token={token}",
            highlight=False,
            soft_wrap=True,
        )
    sys.stdout.flush()
    if open_page:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        session.close()
    console.print(f"stopped; every label given is in {run / LABELS_FILE}", highlight=False)
