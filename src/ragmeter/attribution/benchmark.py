"""Benchmark items: a question, its gold graphs and (when known) its minimum knowledge set.

Two sources are read: our own benchmark files (JSONL of :class:`BenchmarkItem`, as ``evolve``
writes them) and BioKaLMA rows (``id``, ``question_simple``, ``question_complex``,
``knowledge``), read from wherever the user keeps them. BioKaLMA is licensed for non-commercial
use only, so ragmeter never ships or copies it; it only reads the path it is given. BioKaLMA
ships no minimum sets: its questions score correctness and alignment but not precision/recall,
until :func:`build_benchmark` evolves new questions that have them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ragmeter.attribution.evolve import (
    EVOLVE_PROMPTS,
    Evolution,
    evolve,
    pick_triples,
    seed_paragraph,
)
from ragmeter.attribution.graph import (
    Entity,
    GraphError,
    KnowledgeGraph,
    Triple,
    entity_from_record,
    read_jsonl,
)
from ragmeter.judges.base import Judge, identity_of
from ragmeter.records import RecordLog, digest
from ragmeter.score import Usage
from ragmeter.session import JudgeSession


class BenchmarkItem(BaseModel):
    id: str
    question: str
    gold: list[str] = Field(default_factory=list)
    """Ids of the entities whose graphs the question is about."""
    entities: list[Entity] = Field(default_factory=list)
    minimum: list[Triple] | None = None
    """The minimum knowledge set; None when the source has none."""
    paragraph: str | None = None
    """A seed paragraph for evolution; without one, a plain one is written from the graph."""
    source: dict[str, Any] = Field(default_factory=dict)
    evolution: Evolution | None = None
    seconds: float = 0.0
    usage: Usage = Field(default_factory=Usage)

    def graph(self) -> KnowledgeGraph:
        return KnowledgeGraph(self.entities)


def _biokalma_item(row: dict[str, Any], field: str) -> BenchmarkItem:
    entities = [entity_from_record(e) for e in row.get("knowledge") or []]
    question = str(row[field]).strip().removeprefix("question:").strip()
    return BenchmarkItem(
        id=f"biokalma-{row['id']}",
        question=question,
        gold=[e.id for e in entities],
        entities=entities,
        source={"dataset": "biokalma", "row": row["id"], "field": field},
    )


def load_benchmark(
    path: str | Path, *, field: str = "question_complex", skip_empty: bool = True
) -> list[BenchmarkItem]:
    """Items from our benchmark JSONL or from BioKaLMA rows (``field`` picks its question).

    BioKaLMA rows with an empty knowledge list (98 of 1,085) are skipped by default: they have no
    graph to attribute to.
    """
    path = Path(path)
    if not path.is_file():
        raise GraphError(f"no benchmark file at {path}")
    items = []
    for row in read_jsonl(path):
        if "knowledge" in row and field in row:
            item = _biokalma_item(row, field)
        else:
            item = BenchmarkItem.model_validate(row)
        if item.entities or not skip_empty:
            items.append(item)
    return items


def store_graph(items: Sequence[BenchmarkItem]) -> KnowledgeGraph:
    """All the items' entities in one graph: the store retrieval searches."""
    return KnowledgeGraph(e for item in items for e in item.entities)


def evolve_item(
    item: BenchmarkItem,
    judge: Judge,
    *,
    rounds: int = 6,
    seed: int = 0,
    retries: int = 2,
    spares: int = 2,
) -> BenchmarkItem:
    """A new item whose question was evolved from ``item``'s graphs over ``rounds`` rounds
    (round 1 plus one injected triple per further round); the injected triples are its
    minimum set. The triples are chosen by a generator seeded with ``seed`` and the item id,
    so a rerun picks the same ones; ``spares`` more are drawn to replace triples the model
    fails to state."""
    rng = random.Random(f"{seed}:{item.id}")
    paragraph, stated = seed_paragraph(item.entities)
    if item.paragraph:
        paragraph, stated = item.paragraph, []
    injections = max(0, rounds - 1)
    candidates = pick_triples(item.entities, injections + spares, rng, exclude=stated)
    session = JudgeSession(judge, retries=retries)
    started = time.perf_counter()
    names = {e.id: e.name for e in item.entities}
    evolution = evolve(paragraph, candidates, names, session, injections=injections)
    final = evolution.final
    return BenchmarkItem(
        id=item.id,
        question=final.question if final else item.question,
        gold=item.gold,
        entities=item.entities,
        minimum=final.minimum if final else None,
        paragraph=paragraph,
        source={**item.source, "original_question": item.question, "seed": seed},
        evolution=evolution,
        seconds=time.perf_counter() - started,
        usage=session.usage,
    )


def evolved_with(judge: Judge, *, seed: int, rounds: int, spares: int) -> str:
    """How an item was evolved: the judge, the draw and the prompts. The judge's identity is
    read at the call, so an item is stamped once it was evolved, with the identity of the model
    that evolved it: a judge that learned meanwhile to ask its server another way
    (``OpenAIJudge``'s fallbacks) is that model from then on (as ``pipeline.ItemKeys``)."""
    return digest(
        "evolve",
        identity_of(judge).digest,
        seed,
        rounds,
        spares,
        [prompt.version for prompt in EVOLVE_PROMPTS],
    )


def build_benchmark(
    data: str | Path,
    out: Path,
    judge: Judge,
    *,
    n: int = 50,
    seed: int = 0,
    rounds: int = 6,
    retries: int = 2,
    spares: int = 2,
    on_item: Callable[[BenchmarkItem], None] | None = None,
) -> list[BenchmarkItem]:
    """Evolve ``n`` questions from the items of ``data`` (BioKaLMA rows or our own items with
    entities), drawn with ``seed``; append each to ``out`` as it is done.

    Resumable: items already in ``out`` that were evolved the same way (the same judge, seed,
    rounds and spares, and prompts) are kept; any other is evolved again. An item whose evolution
    stopped early is written too, with the reason in ``evolution.stopped``: its last completed
    round is still a question with a true minimum set (only a smaller one).
    """
    rows = load_benchmark(data)
    chosen = random.Random(seed).sample(rows, min(n, len(rows)))
    log = RecordLog(out, BenchmarkItem, key=attrgetter("id"))
    items = []
    for row in chosen:
        item = log.get(row.id)
        wanted = evolved_with(judge, seed=seed, rounds=rounds, spares=spares)
        if item is None or item.source.get("evolved_with") != wanted:
            item = evolve_item(row, judge, rounds=rounds, seed=seed, retries=retries, spares=spares)
            # Stamped once evolved: the judge may have learned to ask its server another way.
            item.source["evolved_with"] = evolved_with(
                judge, seed=seed, rounds=rounds, spares=spares
            )
            log.append(item)
        items.append(item)
        if on_item:
            on_item(item)
    log.rewrite(item.id for item in items)  # one line per question, as the readers expect
    return items


def usable(items: Sequence[BenchmarkItem]) -> list[BenchmarkItem]:
    """Items to run experiments on: evolved ones need at least one injected triple."""
    return [i for i in items if i.evolution is None or i.minimum]
