"""``ragmeter cache``: where the judge-call cache is, what it holds per model, and clearing it.

The cache spares repeated judge calls across runs; its keys hash each model's identity, so a
stale entry is never served, only kept until pruned.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.filesize import decimal
from rich.table import Table

from ragmeter.cli.common import fail
from ragmeter.judges.cache import CacheWarning, CallCache, default_cache_path

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Where the judge-call cache is, what it holds per model, and clearing it.",
)

CachePath = Annotated[
    Path | None,
    typer.Option("--path", help="The cache file. \\[default: the user cache folder]"),
]


def _open(path: Path | None, console: Console) -> CallCache:
    target = path or default_cache_path()
    if not target.exists():
        console.print(f"no cache at {target} yet: nothing has been cached")
        raise typer.Exit(0)
    with warnings.catch_warnings():  # said below as an error: here nothing runs without it
        warnings.simplefilter("ignore", CacheWarning)
        cache = CallCache(target)
    if cache.problem is not None:
        raise fail(console, f"{cache.problem}: move it away (or delete it) to start afresh")
    return cache


def _day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


@app.command("info")
def info_command(path: CachePath = None) -> None:
    """Where the cache is, and its entries and size per judge and embedder."""
    console = Console()
    with _open(path, console) as cache:
        entries = cache.entries()
    console.print(f"cache: {cache.path} ({decimal(cache.path.stat().st_size)} on disk)")
    table = Table(title="entries per model and identity (what the keys hash)")
    table.add_column("model", overflow="fold")
    for column in ("kind", "identity", "entries", "size", "oldest", "newest"):
        table.add_column(column, justify="right" if column in ("entries", "size") else "left")
    for entry in entries:
        table.add_row(
            entry.model,
            "judge" if entry.kind == "replies" else "embedder",
            entry.identity[:8],
            str(entry.entries),
            decimal(entry.size),
            _day(entry.oldest),
            _day(entry.newest),
        )
    console.print(table)


@app.command("clear")
def clear_command(
    path: CachePath = None,
    model: Annotated[
        str | None, typer.Option(help="Only this model's entries, as PROVIDER:MODEL.")
    ] = None,
) -> None:
    """Remove every entry (or one model's)."""
    console = Console()
    with _open(path, console) as cache:
        removed = cache.clear(model)
    console.print(f"removed {removed} entries from {cache.path}")


@app.command("prune")
def prune_command(
    older_than: Annotated[
        float, typer.Option("--older-than", help="Remove entries made more than DAYS ago.")
    ],
    path: CachePath = None,
) -> None:
    """Remove the entries older than a number of days."""
    console = Console()
    if older_than < 0:
        raise fail(console, "--older-than must be a number of days >= 0")
    with _open(path, console) as cache:
        removed = cache.prune(older_than)
    console.print(f"removed {removed} entries older than {older_than:g} days from {cache.path}")
