"""The retrieved passages of a run's samples, shown beside what a person labels.

A run folder keeps each sample's question and answer (``samples.csv``) but its passages only
inside the judge's prompts, kept with every score: each prompt that checks against them holds
them in a ``<context>`` block, as the judge read them (passages one after another, a context
too long for the judge's window in the parts it was read in), or, for a passage graded alone
(``passage_relevance``), in a ``<passage>`` block. They are read back from there, or, given
the data file the run scored (``--data``), from that file, checked against the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ragmeter.data import load_samples
from ragmeter.manifest import dataset_fingerprint
from ragmeter.result import Result

BLOCK = re.compile(r"<(context|passage)>\n(.*?)\n</\1>", re.S)
"""A context or passage block of a rendered prompt: data cannot close it early
(``prompts._defuse``)."""


def judged_passages(
    result: Result, prefer: Sequence[str]
) -> tuple[dict[str, list[str]], list[str]]:
    """Per sample, the passages as the judge read them: the context (or passage) blocks of
    the first of ``prefer``'s metrics (then the run's others) whose prompts hold any, each
    block once, in the order asked, split into the passages it joined."""
    found: dict[str, list[str]] = {}
    wanted = {sample.key for sample in result.samples}
    for metric in dict.fromkeys([*prefer, *result.metrics]):
        if metric not in result.metrics or not wanted - set(found):
            continue
        for score in result.scores_for(metric):
            if score.sample_id in found or score.sample_id not in wanted:
                continue
            blocks = list(
                dict.fromkeys(
                    block
                    for exchange in score.exchanges
                    for message in exchange.messages
                    if message.role == "user"
                    for block in BLOCK.findall(message.content)
                )
            )
            if blocks:
                # A context joins its passages with blank lines; a passage block is one.
                found[score.sample_id] = [
                    passage
                    for tag, block in blocks
                    for passage in (block.split("\n\n") if tag == "context" else [block])
                    if passage
                ]
    notes = []
    missing = len(wanted - set(found))
    if missing:
        notes.append(
            f"the passages of {missing} sample(s) are not in the judge's prompts the run kept: "
            "give the data file the run scored (--data FILE) to show them"
        )
    return found, notes


def data_passages(path: str | Path, result: Result) -> tuple[dict[str, list[str]], list[str]]:
    """Per sample, the passages of the data file at ``path``, matched by id; a sample whose
    answer there is not the run's is refused (the file is not the one the run scored)."""
    loaded = load_samples(path, on_invalid="skip")  # the run may have skipped some too
    by_key = {sample.key: sample for sample in loaded.samples}
    notes = []
    if loaded.invalid:
        first = loaded.invalid[0]
        notes.append(
            f"{len(loaded.invalid)} row(s) of {path} cannot be read and are not shown (row "
            f"{first.row}, field {first.field!r}: {first.reason})"
        )
    record = result.run.dataset
    if record is not None and record.sha256 != dataset_fingerprint(loaded.samples):
        notes.append(
            f"{path} is not exactly the data the run scored (its samples' fingerprint differs); "
            "the passages shown are the file's"
        )
    found: dict[str, list[str]] = {}
    for sample in result.samples:
        given = by_key.get(sample.key)
        if given is None:
            continue
        if sample.answer and given.answer != sample.answer:
            raise ValueError(
                f"{path}: sample {sample.key!r} answers otherwise than in the run: give the data "
                "file the run scored"
            )
        found[sample.key] = list(given.contexts)
    missing = len(result.samples) - len(found)
    if missing:
        notes.append(f"{missing} sample(s) of the run are not in {path}: shown without passages")
    return found, notes
