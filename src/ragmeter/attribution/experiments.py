"""The paper's experiments, as conditions an answer is generated under, and the run loop.

- main: each question with its gold graphs, or with the graphs retrieval finds (§5.1);
- conscious incompetence (§5.2): 0-3 triples of the minimum set removed from the graph, the
  removed ones being the [NA] ground truth; removals are nested (round 2 removes round 1's
  triple and one more), drawn reproducibly per item;
- retrieval ablation (§5.3): 0-80% of all the items' graphs replaced by graphs of people the
  question is not about, nested the same way.

Generation and scoring are separate steps with separate record files, so answers can be
generated once and scored by several judges, and each step resumes where it stopped.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ragmeter.attribution.benchmark import BenchmarkItem, store_graph
from ragmeter.attribution.citations import parse_answer
from ragmeter.attribution.generate import GENERATE, generate_answer
from ragmeter.attribution.graph import Entity, KnowledgeGraph, Triple
from ragmeter.attribution.metrics import ENTAILMENT, EntailmentChecker, alignment, na_scores
from ragmeter.attribution.probe import NextTokenProbe
from ragmeter.attribution.quality import quality_version, text_quality
from ragmeter.attribution.records import Condition, GenerationRecord, ScoreRecord
from ragmeter.attribution.retrieval import (
    ENTITY_TYPES,
    Recognizer,
    Retrieval,
    RetrievalAccuracy,
    retrieval_accuracy,
    retrieve,
)
from ragmeter.judges.base import Judge, identity_of
from ragmeter.records import RecordLog, digest
from ragmeter.score import Unscorable, Usage
from ragmeter.session import JudgeSession

INCOMPETENCE_ROUNDS = (0, 1, 2, 3)
ABLATION_ACCURACIES = (1.0, 0.8, 0.6, 0.4, 0.2)


@dataclass(frozen=True)
class Prepared:
    """What the generator is given for one item under one condition."""

    graph: KnowledgeGraph
    absent: list[Triple] = field(default_factory=list)
    retrieval: Retrieval | None = None
    skip: str | None = None
    """Why the item does not take part in this condition (e.g. too small a minimum set)."""


def removal_order(item: BenchmarkItem, seed: int = 0) -> list[Triple]:
    """The item's minimum set in the order its triples are removed, fixed by seed and item."""
    order = list(item.minimum or [])
    random.Random(f"{seed}:{item.id}:remove").shuffle(order)
    return order


def ablation_plan(
    items: Sequence[BenchmarkItem],
    accuracies: Sequence[float],
    store: KnowledgeGraph,
    seed: int = 0,
) -> dict[float, dict[str, list[Entity]]]:
    """For each accuracy, every item's graphs with ``1 - accuracy`` of all graphs replaced.

    The graphs (one per gold entity, over all items) are shuffled once; a lower accuracy
    replaces a longer prefix of that order, so each level keeps the previous level's
    replacements. A replacement is an entity of the store that the item is not about.
    """
    slots = [(item.id, index) for item in items for index in range(len(item.entities))]
    random.Random(f"{seed}:ablation").shuffle(slots)
    pool = store.entities
    replacement: dict[tuple[str, int], Entity] = {}
    for item in items:
        others = [e for e in pool if e.id not in set(item.gold)]
        for index in range(len(item.entities)):
            if others:
                pick = random.Random(f"{seed}:{item.id}:{index}").randrange(len(others))
                replacement[(item.id, index)] = others[pick]
    plan: dict[float, dict[str, list[Entity]]] = {}
    for accuracy in accuracies:
        replaced = set(slots[: round((1 - accuracy) * len(slots))])
        plan[accuracy] = {
            item.id: [
                replacement.get((item.id, i), e) if (item.id, i) in replaced else e
                for i, e in enumerate(item.entities)
            ]
            for item in items
        }
    return plan


Preparer = Callable[[BenchmarkItem], Prepared]


def preparer(
    condition: Condition,
    *,
    store: KnowledgeGraph | None = None,
    recognizer: Recognizer | None = None,
    plan: dict[str, list[Entity]] | None = None,
    seed: int = 0,
) -> Preparer:
    """The function that builds each item's knowledge under ``condition``."""

    def prepare(item: BenchmarkItem) -> Prepared:
        retrieval = None
        if plan is not None:
            graph = KnowledgeGraph(plan[item.id])
        elif condition.retrieval == "retrieve":
            if store is None:
                raise ValueError("retrieval needs a graph store")
            retrieval = retrieve(item.question, store, recognizer)
            graph = store.subgraph(retrieval.selected)
        else:
            graph = item.graph()
        if not condition.removed:
            return Prepared(graph=graph, retrieval=retrieval)
        order = removal_order(item, seed)
        if len(order) < condition.removed:
            return Prepared(
                graph=graph,
                skip=f"minimum set of {len(order)} < {condition.removed} triples to remove",
            )
        absent = order[: condition.removed]
        return Prepared(graph=graph.without(absent), absent=absent, retrieval=retrieval)

    return prepare


@dataclass
class GenerationRun:
    records: list[GenerationRecord]
    skipped: Counter[str]


def generate_answers(
    items: Sequence[BenchmarkItem],
    condition: Condition,
    prepare: Preparer,
    generator: Judge,
    log: RecordLog[GenerationRecord],
    *,
    retries: int = 2,
    max_tokens: int = 768,
    on_record: Callable[[GenerationRecord], None] | None = None,
) -> GenerationRun:
    """Generate (or reuse from ``log``) one attributed answer per item under ``condition``."""
    run = GenerationRun(records=[], skipped=Counter())
    for item in items:
        prepared = prepare(item)
        if prepared.skip:
            run.skipped[prepared.skip] += 1
            continue
        record = log.get(generation_key(item, condition, prepared, generator, max_tokens))
        if record is None or record.answer is None:
            record = _generate_one(item, condition, prepared, generator, retries, max_tokens)
            log.append(record)
        run.records.append(record)
        if on_record:
            on_record(record)
    return run


def generation_key(
    item: BenchmarkItem, condition: Condition, prepared: Prepared, generator: Judge, max_tokens: int
) -> str:
    """What an answer is filed under: what the generator saw, and who generated it how.

    What the generator saw decides the answer, not the condition's name: conditions that give an
    item the same graph (accuracy 100% and 0 removed) share one answer. The generator's identity
    is read at the call, so a new answer's key is worked out once it was generated: a generator
    that learned meanwhile to ask its server another way (``OpenAIJudge``'s fallbacks) made the
    answer as the model of its new identity, which a rerun asks for (as ``pipeline.ItemKeys``).
    """
    return digest(
        "generation",
        item.id,
        item.question,
        condition.retrieval,
        prepared.graph.render(),
        [t.key for t in prepared.absent],
        [t.key for t in item.minimum or []],
        identity_of(generator).digest,
        GENERATE.version,
        max_tokens,
    )


def _generate_one(
    item: BenchmarkItem,
    condition: Condition,
    prepared: Prepared,
    generator: Judge,
    retries: int,
    max_tokens: int,
) -> GenerationRecord:
    session = JudgeSession(generator, retries=retries)
    started = time.perf_counter()
    answer, error = None, None
    try:
        answer = generate_answer(item.question, prepared.graph, session, max_tokens=max_tokens)
    except Unscorable as exc:
        error = exc.reason
    return GenerationRecord(
        key=generation_key(item, condition, prepared, generator, max_tokens),
        item_id=item.id,
        condition=condition,
        question=item.question,
        minimum=item.minimum,
        absent=prepared.absent,
        graph=prepared.graph.entities,
        names={e.id: e.name for e in item.entities},
        retrieval=prepared.retrieval,
        generator=generator.name,
        answer=answer,
        error=error,
        seconds=time.perf_counter() - started,
        usage=session.usage,
        exchanges=session.exchanges,
    )


@dataclass(frozen=True)
class ScoreOptions:
    """Which judged metrics to compute; citation quality needs no judge and is always there."""

    alignment: bool = True
    na: bool = True
    quality: bool = True


def score_answers(
    generations: Sequence[GenerationRecord],
    judge: Judge,
    log: RecordLog[ScoreRecord],
    options: ScoreOptions = ScoreOptions(),
    *,
    retries: int = 2,
    entailment_probe: NextTokenProbe | None = None,
    on_record: Callable[[ScoreRecord], None] | None = None,
) -> list[ScoreRecord]:
    """Judge each generated answer (or reuse its record); answers that failed are skipped."""
    entailment_probe = entailment_probe or NextTokenProbe(top_logprobs=5)
    records = []
    for generation in generations:
        if generation.answer is None:
            continue
        record = log.get(score_key(generation, judge, options, entailment_probe))
        if record is None:
            record = _score_one(generation, judge, options, retries, entailment_probe)
            log.append(record)
        records.append(record)
        if on_record:
            on_record(record)
    return records


def score_key(
    generation: GenerationRecord,
    judge: Judge,
    options: ScoreOptions,
    entailment_probe: NextTokenProbe,
) -> str:
    """What a score is filed under: the generation, the answer itself (a generation redone under
    the same key is scored afresh), the judge, the prompts and what is asked of them.

    The judge's identity is read at the call, so a new score's key is worked out once it was
    judged (see :func:`generation_key`)."""
    return digest(
        "score",
        generation.key,
        generation.answer,
        identity_of(judge).digest,
        [ENTAILMENT.version, *quality_version()],
        asdict(options),
        [entailment_probe.top_logprobs],
    )


def _score_one(
    generation: GenerationRecord,
    judge: Judge,
    options: ScoreOptions,
    retries: int,
    entailment_probe: NextTokenProbe,
) -> ScoreRecord:
    started = time.perf_counter()
    answer = parse_answer(generation.answer or "")
    graph = KnowledgeGraph(generation.graph)
    session = JudgeSession(judge, retries=retries)
    checker = EntailmentChecker(session, entailment_probe)
    record = ScoreRecord(
        key="",  # filed once judged, under the identity it was judged with
        generation_key=generation.key,
        item_id=generation.item_id,
        condition=generation.condition,
        judge=judge.name,
    )
    if options.alignment:
        record.alignment = alignment(answer, graph, checker)
    if options.na and generation.absent:
        names = {**generation.names, **{e.id: e.name for e in generation.graph}}
        record.na = na_scores(answer, generation.absent, names, checker)
    usage = Usage()
    usage.add(session.usage)
    if options.quality:
        inputs = {
            "question": generation.question,
            "knowledge": graph.render(),
            "answer": answer.text,
        }
        record.quality = text_quality(generation.item_id, inputs, judge, retries=retries)
        for score in record.quality.values():
            usage.add(score.usage)
    record.usage = usage
    record.exchanges = session.exchanges
    record.seconds = time.perf_counter() - started
    record.judge = judge.name
    record.key = score_key(generation, judge, options, entailment_probe)
    return record


EXPERIMENTS = ("main", "incompetence", "retrieval", "all")


def experiment_conditions(
    kind: str, retrieval: str = "gold", *, quality: bool = True, full: bool = False
) -> list[tuple[Condition, ScoreOptions]]:
    """The conditions of an experiment and what to judge under each.

    Judge calls go where the paper reports them: alignment and text quality for the main
    condition, [NA] checks where knowledge was removed, citation quality (judge-free)
    everywhere. ``full`` adds alignment to every condition.
    """
    if kind not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {kind!r}; choose from {', '.join(EXPERIMENTS)}")
    main = ScoreOptions(alignment=True, na=False, quality=quality)
    side = ScoreOptions(alignment=full, na=True, quality=False)
    conditions: list[tuple[Condition, ScoreOptions]] = []
    if kind == "main":
        conditions.append((Condition(name="main", retrieval=retrieval), main))
    if kind in {"incompetence", "all"}:
        for k in INCOMPETENCE_ROUNDS:
            name = f"removed {k}" if k else "main"
            options = side if k else main
            conditions.append((Condition(name=name, removed=k, retrieval=retrieval), options))
    if kind in {"retrieval", "all"}:
        accuracies = ABLATION_ACCURACIES if kind == "retrieval" else ABLATION_ACCURACIES[1:]
        for accuracy in accuracies:
            name = f"accuracy {round(100 * accuracy)}"
            options = ScoreOptions(alignment=full, na=False, quality=False)
            conditions.append((Condition(name=name, accuracy=accuracy), options))
    return conditions


GENERATIONS_FILE = "generations.jsonl"
SCORES_FILE = "scores.jsonl"


@dataclass
class ConditionRun:
    condition: Condition
    generations: list[GenerationRecord]
    scores: list[ScoreRecord]
    skipped: Counter[str]


def run_conditions(
    items: Sequence[BenchmarkItem],
    conditions: Sequence[tuple[Condition, ScoreOptions]],
    *,
    generator: Judge,
    judge: Judge | None,
    out_dir: Path,
    store: KnowledgeGraph | None = None,
    recognizer: Recognizer | None = None,
    seed: int = 0,
    retries: int = 2,
    max_tokens: int = 768,
    on_generation: Callable[[GenerationRecord], None] | None = None,
    on_score: Callable[[ScoreRecord], None] | None = None,
) -> list[ConditionRun]:
    """Generate and (when a judge is given) score every item under every condition, appending
    records to ``out_dir`` as they complete; a rerun reuses every finished record."""
    generations = RecordLog(out_dir / GENERATIONS_FILE, GenerationRecord)
    scores = RecordLog(out_dir / SCORES_FILE, ScoreRecord)
    accuracies = [c.accuracy for c, _ in conditions if c.accuracy < 1.0]
    plans = (
        ablation_plan(items, accuracies, store or store_graph(items), seed) if accuracies else {}
    )
    entailment_probe = NextTokenProbe(5)
    runs = []
    for condition, options in conditions:
        prepare = preparer(
            condition,
            store=store,
            recognizer=recognizer,
            plan=plans.get(condition.accuracy),
            seed=seed,
        )
        generated = generate_answers(
            items,
            condition,
            prepare,
            generator,
            generations,
            retries=retries,
            max_tokens=max_tokens,
            on_record=on_generation,
        )
        judged = []
        if judge is not None:
            judged = score_answers(
                generated.records,
                judge,
                scores,
                options,
                retries=retries,
                entailment_probe=entailment_probe,
                on_record=on_score,
            )
        runs.append(ConditionRun(condition, generated.records, judged, generated.skipped))
    return runs


RETRIEVAL_FILE = "retrieval.jsonl"


def run_retrieval(
    items: Sequence[BenchmarkItem],
    store: KnowledgeGraph,
    recognizer: Recognizer,
    *,
    out_dir: Path | None = None,
    types: Mapping[str, frozenset[str]] = ENTITY_TYPES,
) -> tuple[list[Retrieval], RetrievalAccuracy]:
    """Retrieve for every item and score it against the item's gold graphs; with ``out_dir``,
    one JSON line per question (what was recognised, the candidates and the choice)."""
    results = [retrieve(item.question, store, recognizer, types) for item in items]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        with (out_dir / RETRIEVAL_FILE).open("w", encoding="utf-8") as handle:
            for item, result in zip(items, results, strict=True):
                row = {
                    "item_id": item.id,
                    "gold": item.gold,
                    "selected": result.selected,
                    **result.model_dump(),
                }
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    accuracy = retrieval_accuracy((r.selected, i.gold) for r, i in zip(results, items, strict=True))
    return results, accuracy
