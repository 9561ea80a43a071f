"""``generate_testset()``: questions, references and their source chunks, written by the judge
from a team's own documents and checked before they are kept.

How a run goes:

1. The documents are read (``documents.py``), cut into chunks and near-copies dropped
   (``chunking.py``); chunks of at least ``min_words`` words can be a question's source.
2. Candidates are planned in a fixed order from the seed: kinds interleaved by their shares
   (``queries.py``), each kind walking the shuffled chunks from its own starting point, a
   paired kind taking the source chunk's nearest chunk by embedding (a chunk sharing a named
   entity with it first, when spaCy is installed) as the second; style and persona drawn per
   candidate. A kind stops being planned once it has its quota of accepted samples, or when
   it can give no more (its sources used up, or its share of the candidates used): what it
   lacks then goes to the other kinds of the mix, and the summary says so (``filling.py``).
3. Each candidate is written by the judge (a typed prompt; an unusable reply after the
   session's repairs rejects it with the reason) and checked (``quality.py``).
4. Candidates that passed are accepted in plan order unless their question is a near-copy of
   an accepted one (embedding cosine >= 0.92); ``n`` counts accepted samples.

Every judged candidate is appended to ``<out>.candidates.jsonl`` (a ``RecordLog``) under a
key made of everything that shapes it (its chunks and fact, kind, style, persona, the prompts,
the judge's identity, the check thresholds and rules), so a rerun after a kill asks nothing
twice, and a candidate judged under other rules is judged again: judged
candidates come from the log, and the calls of the one in progress from the call cache.

Candidates are judged by this process's threads or by Ray workers (``spread.py``); the plan,
the log and the acceptance stay here. Personas may be written by the judge from the documents
first (``personas.py``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from ragmeter.budget import Estimate, price_for
from ragmeter.cluster import Executor, ModelRecipe, RayExecutor, WorkerDied
from ragmeter.judges import Embedder, Judge
from ragmeter.judges.base import identity_of
from ragmeter.judges.registry import DEFAULT_EMBEDDER, get_embedder
from ragmeter.language import detect_language
from ragmeter.records import RecordLog, digest
from ragmeter.score import Unscorable, Usage
from ragmeter.session import JudgeSession
from ragmeter.testset.candidates import CandidateRecord
from ragmeter.testset.chunking import MAX_CHARS, MIN_CHARS, unit_rows
from ragmeter.testset.drafts import Draft, Rejected
from ragmeter.testset.estimate import candidates_needed, estimate_candidates
from ragmeter.testset.filling import KindQuotas, Substitution, no_more, share_used
from ragmeter.testset.follow_ups import RULE as FOLLOW_UP_RULE
from ragmeter.testset.follow_ups import as_follow_up
from ragmeter.testset.personas import MAX_PERSONAS, DerivedPersonas, estimate_personas
from ragmeter.testset.personas import derive_personas as derive_personas_of
from ragmeter.testset.planning import Corpus, Plan, plans
from ragmeter.testset.quality import QualityOptions, check
from ragmeter.testset.quality import versions as check_versions
from ragmeter.testset.queries import (
    DECLINE,
    DEFAULT_MIX,
    DEFAULT_STYLES,
    FACT_KINDS,
    KINDS,
    STYLES,
    FollowUp,
    Unanswered,
    Written,
    fact_sentence,
    misspell,
    parse_mix,
    writing_prompt,
)
from ragmeter.testset.spread import CandidateJob, Search, judging, lost_candidate

MIN_WORDS = 25
"""A chunk shorter than this (a heading, a table's header) is not a question's source."""
CANDIDATES_PER_SAMPLE = 4
"""The default cap on candidates: ``n`` times this."""
WRITE_TOKENS = 400

Status = Literal["accepted", "rejected", "surplus"]


class GenerationSummary(BaseModel):
    """What a run made and why it kept or dropped each candidate (``<out>.summary.json``)."""

    status: Literal["complete", "short", "stopped"]
    """``short``: the candidates ran out before ``n`` were accepted; ``stopped``: the budget
    ran out (rerun to continue)."""
    requested: int
    accepted: int
    candidates: int
    resumed: int
    rejected: dict[str, int]
    """Rejected candidates by reason."""
    kinds: dict[str, dict[str, int]]
    """Per kind: quota (what the mix asked), candidates, accepted."""
    substitutions: list[Substitution] = []
    """Samples of a kind the documents could not give, made as other kinds, and why."""
    short_because: str | None = None
    """Why a ``short`` run ended before ``n`` were accepted."""
    documents: int
    skipped_documents: dict[str, str]
    chunks: int
    near_identical_chunks: int
    judge: str
    usage: Usage
    seconds: float
    seconds_per_accepted: float | None
    settings: dict[str, Any]
    derived_personas: DerivedPersonas | None = None
    """What ``derive_personas`` gave: the personas kept, those dropped and why."""


@dataclass
class Generated:
    """A run's test set, its rejected candidates and its summary."""

    samples: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    summary: GenerationSummary


OnCandidate = Callable[[CandidateRecord, int], None]
"""Called with each judged candidate and the number accepted so far."""


def _write(plan: Plan, session: JudgeSession) -> Draft:
    """The judge's question and reference for ``plan`` (``Unscorable`` when unusable)."""
    prompt = writing_prompt(plan.kind, plan.style)
    # One chunk's inputs are "title", "passage", "fact"; two chunks' are numbered.
    numbered = [f" {n}" if len(plan.chunks) == 2 else "" for n in range(1, len(plan.chunks) + 1)]
    inputs: dict[str, str] = {}
    for suffix, chunk in zip(numbered, plan.chunks, strict=True):
        if chunk.title:
            inputs[f"title{suffix}"] = chunk.title
        inputs[f"passage{suffix}"] = chunk.text
    if plan.kind in FACT_KINDS:  # after the passages, as the prompts' examples show them
        for suffix, chunk in zip(numbered, plan.chunks, strict=True):
            fact = fact_sentence(chunk.text, plan.fact)
            if fact is None:
                raise Rejected("no fact sentence in its chunk", f"chunk{suffix or ' 1'}")
            inputs[f"fact{suffix}"] = fact
    if plan.persona:
        inputs["persona"] = plan.persona
    texts = [c.text for c in plan.chunks]
    # Questions in the documents' language (an unanswerable one, with no chunk, in English).
    prompt = prompt.in_language(detect_language(texts))
    reply = session.ask(prompt, inputs, max_tokens=WRITE_TOKENS)
    if isinstance(reply, FollowUp):
        first, second = reply.first_question.strip(), reply.question.strip()
        follow_up = as_follow_up(first, second)
        if follow_up is None:
            raise Rejected(
                "follow-up shares no subject with its first turn",
                f"first {first!r}, second {second!r}",
            )
        history = [
            {"role": "user", "content": first},
            {"role": "assistant", "content": reply.first_answer.strip()},
        ]
        return Draft(plan.kind, follow_up, reply.answer.strip(), texts, history)
    if isinstance(reply, Unanswered):
        question, expected = reply.question.strip(), reply.expected_answer.strip()
        return Draft(plan.kind, question, DECLINE, [], expected=expected)
    assert isinstance(reply, Written)
    question = reply.question.strip()
    if plan.style == "misspelt":
        question = misspell(question, f"{plan.index}:{question}")
    return Draft(plan.kind, question, reply.answer.strip(), texts)


def _judge_candidate(
    plan: Plan,
    key: str,
    judge: Judge,
    embedder: Embedder,
    quality: QualityOptions,
    search: Search,
    retries: int,
    repairs: int,
) -> CandidateRecord:
    started = time.perf_counter()
    session = JudgeSession(judge, embedder, retries=retries, repairs=repairs)
    record = CandidateRecord.of(plan, key)
    if plan.pairing:
        record.checks["pairing"] = plan.pairing
    try:
        draft = _write(plan, session)
        record.question, record.reference, record.history = (
            draft.question,
            draft.reference,
            draft.history,
        )
        check(draft, session, quality, search, record.checks)
    except Rejected as exc:
        record.outcome, record.reason, record.detail = "rejected", exc.reason, exc.detail
    except Unscorable as exc:
        record.outcome, record.reason, record.detail = "rejected", "unusable reply", exc.reason
    record.usage = session.usage
    record.seconds = round(time.perf_counter() - started, 3)
    return record


def _sample_row(record: CandidateRecord, plan_chunks: Sequence[str]) -> dict[str, Any]:
    """A test-set line: ragmeter's names and ragas's (``user_input``, ``reference``,
    ``reference_contexts``) side by side, so both read it as it is."""
    assert record.question is not None
    row: dict[str, Any] = {
        "id": f"testset-{record.key[:12]}",
        "question": record.question,
        "user_input": record.question,
        "reference": record.reference,
        # An unanswerable question has no source: its chunk only gave the topic.
        "reference_contexts": [] if record.kind == "unanswerable" else list(plan_chunks),
    }
    if record.history:
        row["history"] = record.history
    row["metadata"] = {
        "kind": record.kind,
        "style": record.style,
        "persona": record.persona,
        "sources": record.sources,
        "documents": sorted({s["document"] for s in record.sources}),
        "checks": record.checks,
    }
    return row


def _settings_key(
    judge: Judge,
    embedder: Embedder,
    quality: QualityOptions,
    max_chars: int,
    min_chars: int,
) -> str:
    """What shapes every candidate's verdict: the models, the thresholds, the prompts that
    write and check it, and the rules of the checks (``quality.versions``), so a candidate
    judged under other rules is judged again rather than read back from the log."""
    prompts = [writing_prompt(k, s).version for k in KINDS for s in STYLES]
    return digest(
        identity_of(judge).digest,
        identity_of(embedder).digest,
        quality.identity(),
        prompts,
        check_versions(),
        DECLINE,
        FOLLOW_UP_RULE,
        max_chars,
        min_chars,
    )


def _candidate_key(settings: str, plan: Plan) -> str:
    return digest(
        settings,
        plan.kind,
        plan.style,
        plan.persona,
        [(c.id, c.text, c.title) for c in plan.chunks],
        plan.fact,
    )


def output_paths(out: Path) -> dict[str, Path]:
    """Where a run writes: the test set, the candidates log, the rejected, the summary."""
    stem = out.with_suffix("") if out.suffix else out
    return {
        "testset": out,
        "candidates": stem.with_name(stem.name + ".candidates.jsonl"),
        "rejected": stem.with_name(stem.name + ".rejected.jsonl"),
        "summary": stem.with_name(stem.name + ".summary.json"),
        "personas": stem.with_name(stem.name + ".personas.json"),
    }


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    import json

    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    tmp.replace(path)


def _write_sets(paths: dict[str, Path], run: _Run) -> None:
    paths["testset"].parent.mkdir(parents=True, exist_ok=True)
    _write_jsonl(paths["testset"], run.samples)
    _write_jsonl(paths["rejected"], run.rejected)


def _chosen(
    mix: Mapping[str, float] | str | None,
    styles: Mapping[str, float] | str | None,
    quality: QualityOptions | Mapping[str, Any] | None,
) -> tuple[dict[str, float], dict[str, float], QualityOptions]:
    """The question kinds, styles and checks asked for, validated (defaults where None); what
    ``generate_testset`` and ``estimate_testset`` both start from."""
    chosen_mix = parse_mix(mix if mix is not None else DEFAULT_MIX, KINDS, "question kind")
    chosen_styles = parse_mix(
        styles if styles is not None else DEFAULT_STYLES, STYLES, "question style"
    )
    checks = (
        quality
        if isinstance(quality, QualityOptions)
        else QualityOptions.parse(quality, "the test-set checks")
    )
    return chosen_mix, chosen_styles, checks


def generate_testset(
    documents: Any,
    n: int,
    *,
    out: str | Path | None = None,
    judge: str | Judge = "local",
    embedder: str | Embedder | None = None,
    mix: str | Mapping[str, float] | None = None,
    styles: str | Mapping[str, float] | None = None,
    personas: Sequence[str] = (),
    derive_personas: int = 0,
    seed: int = 0,
    workers: int = 1,
    executor: Executor | RayExecutor = "threads",
    max_candidates: int | None = None,
    max_calls: int | None = None,
    max_chars: int = MAX_CHARS,
    min_chars: int = MIN_CHARS,
    min_words: int = MIN_WORDS,
    entities: bool = True,
    quality: QualityOptions | Mapping[str, Any] | None = None,
    cache: bool | str | Path = True,
    retries: int = 2,
    repairs: int = 1,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    on_candidate: OnCandidate | None = None,
) -> Generated:
    """Write ``n`` checked questions with references from ``documents``.

    Args:
        documents: a folder or file path, or a list of paths, texts, LangChain ``Document``s
            or LlamaIndex nodes (see ``read_documents``).
        n: accepted samples wanted.
        out: the test set (JSONL); beside it ``.candidates.jsonl`` (every judged candidate:
            rerunning with the same ``out`` resumes from it), ``.rejected.jsonl`` and
            ``.summary.json``. None keeps everything in memory (no resuming).
        judge: a spec (``"local"``, ``"openai:gpt-4o-mini"``) or a ``Judge``.
        embedder: a spec or an ``Embedder``; MiniLM by default.
        mix: kind shares, ``"specific=0.3,abstract=0.2,..."``; ``DEFAULT_MIX`` when None.
        styles: style shares (``full``, ``keywords``, ``misspelt``); all ``full`` when None.
        personas: who asks (one drawn per candidate); none by default.
        derive_personas: personas for the judge to write from excerpts of the documents
            (1 to 8, see ``personas.py``), drawn from beside the given ones; 0 for none.
        seed: fixes the plan: which chunks, kinds, styles and personas, in which order.
        workers: candidates judged at once (with Ray: by each worker). A batch of candidates
            is planned before it is judged, so with more than one at once a kind can get a
            passed candidate past its quota (kept as ``surplus``), and the set depends on the
            seed and the batch's size: ``workers``, or on Ray ``workers`` times the workers.
        executor: "threads" (this process), "ray" (the cluster ``RAY_ADDRESS`` names, or a
            new one here) or a ``RayExecutor``: each Ray worker loads its own judge and
            embedder; the plan, the candidates log and the acceptance stay in this process.
        max_candidates: candidates judged at most; ``n`` x 4 when None.
        max_calls: judge calls that reach the model (cached calls are free); when they run
            out the run stops cleanly, status ``stopped``, and a rerun resumes.
        max_chars: the chunk size limit.
        min_chars: the size below which a section joins the next.
        min_words: the shortest chunk a question is written from.
        entities: pair chunks that share a named entity first (needs spaCy, the
            ``attribution`` extra; without it, or False, pairs are made by embedding alone).
        quality: the check thresholds (``QualityOptions``).
        cache: the call cache: True for the user cache folder, a path, or False.
        retries: further attempts after a failed call.
        repairs: further attempts after an unusable reply.
        judge_options: the judge provider's options when the judge is given by spec.
        embedder_options: the embedder provider's options when it is given by spec.
        on_candidate: called with each judged candidate and the count accepted so far.

    Raises:
        ValueError: bad options, or documents that give no chunk to write from.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if not 0 <= derive_personas <= MAX_PERSONAS:
        raise ValueError(f"derive_personas must be 0 to {MAX_PERSONAS}, not {derive_personas}")
    chosen_mix, chosen_styles, checks = _chosen(mix, styles, quality)
    clock = time.perf_counter()
    recipe = ModelRecipe(
        judge,
        embedder,
        cache=cache,
        judge_options=judge_options,
        embedder_options=embedder_options,
    )
    paths = output_paths(Path(out)) if out is not None else None
    with judging(executor, workers, recipe, max_calls) as where:
        judge_model, embed_model = where.judge, where.embedder
        corpus = Corpus.read(documents, embed_model, max_chars, min_chars, min_words, entities)
        derived: DerivedPersonas | None = None
        stopped = False
        if derive_personas:
            derived = derive_personas_of(
                corpus,
                derive_personas,
                seed=seed,
                given=personas,
                duplicate=checks.duplicate,
                where=where,
                retries=retries,
                repairs=repairs,
                saved=paths["personas"] if paths else None,
            )
            stopped = derived is None
        drawn = [*personas, *(derived.personas if derived else [])]
        limit = max_candidates if max_candidates is not None else n * CANDIDATES_PER_SAMPLE
        log: RecordLog[CandidateRecord] | None = (
            RecordLog(paths["candidates"], CandidateRecord) if paths else None
        )
        settings = _settings_key(judge_model, embed_model, checks, max_chars, min_chars)
        run = _Run(KindQuotas(chosen_mix, n, limit / n), checks, embed_model)
        planned_order = plans(corpus, chosen_mix, chosen_styles, drawn, seed, checks.duplicate)
        job = CandidateJob(_judge_candidate, corpus.index, checks, retries, repairs)
        while not run.full() and run.judged < limit and not stopped:
            batch = run.next_plans(planned_order, min(where.at_once, limit - run.judged))
            if not batch:
                break
            keyed = [(plan, _candidate_key(settings, plan)) for plan in batch]
            decided = {key: log.get(key) for _, key in keyed} if log is not None else {}
            resumed = {key for key, record in decided.items() if record is not None}
            fresh = [(plan, key) for plan, key in keyed if key not in resumed]
            for position, outcome in where.map(job, fresh):  # logged as they come back
                plan, key = fresh[position]
                if outcome is None:  # the budget ran out before it was decided
                    stopped = True
                    continue
                if isinstance(outcome, WorkerDied):
                    outcome = lost_candidate(plan, key, outcome)
                elif log is not None:
                    log.append(outcome)
                decided[key] = outcome
            for plan, key in keyed:  # taken in plan order, wherever they were judged
                record = decided.get(key)
                if record is not None:
                    run.take(plan, record, resumed=key in resumed)
                    if on_candidate is not None:
                        on_candidate(record, len(run.samples))
            if paths is not None:  # a run killed later still leaves the set so far
                _write_sets(paths, run)
        executed = where.describe()
    status: Literal["complete", "short", "stopped"] = (
        "complete" if len(run.samples) >= n else "stopped" if stopped else "short"
    )
    seconds = time.perf_counter() - clock
    usage = run.usage.model_copy()
    if derived is not None:
        usage.add(derived.usage)
    summary = GenerationSummary(
        status=status,
        requested=n,
        accepted=len(run.samples),
        candidates=run.judged,
        resumed=run.resumed,
        rejected=dict(Counter(r["reason"] for r in run.rejected).most_common()),
        kinds={
            kind: {
                "quota": quota,
                "candidates": run.tried[kind],
                "accepted": run.accepted[kind],
            }
            for kind, quota in run.kinds.asked.items()
        },
        substitutions=list(run.kinds.substitutions.values()),
        short_because=run.short_because(limit) if status == "short" else None,
        documents=len(corpus.read_from.documents),
        skipped_documents={s.name: s.reason for s in corpus.read_from.skipped},
        chunks=len(corpus.chunks),
        near_identical_chunks=len(corpus.dropped),
        judge=judge_model.name,
        usage=usage,
        seconds=round(seconds, 2),
        seconds_per_accepted=round(run.seconds / len(run.samples), 2) if run.samples else None,
        settings={
            "n": n,
            "mix": chosen_mix,
            "styles": chosen_styles,
            "personas": list(personas),
            "derive_personas": derive_personas,
            "seed": seed,
            "workers": workers,
            "executor": executed,
            "max_candidates": limit,
            "max_calls": max_calls,
            "max_chars": max_chars,
            "min_chars": min_chars,
            "min_words": min_words,
            "entities": corpus.entities.available,
            "checks": checks.model_dump(),
        },
        derived_personas=derived,
    )
    if paths is not None:
        _write_sets(paths, run)
        paths["summary"].write_text(summary.model_dump_json(indent=2))
    return Generated(run.samples, run.rejected, summary)


class _Run:
    """What a run has accepted so far, and the choice of the next candidates."""

    def __init__(self, kinds: KindQuotas, quality: QualityOptions, embedder: Embedder):
        self.kinds = kinds
        self.quality = quality
        self.embedder = embedder
        self.accepted: Counter[str] = Counter()
        self.tried: Counter[str] = Counter()
        self.samples: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.vectors: list[np.ndarray] = []
        self.judged = 0
        self.resumed = 0
        self.usage = Usage()
        self.seconds = 0.0

    def full(self) -> bool:
        return self.kinds.done(self.accepted)

    def next_plans(
        self, plans: Iterator[tuple[str, Callable[[], Plan | None]]], size: int
    ) -> list[Plan]:
        """Up to ``size`` planned candidates of kinds still short of their quota (counting
        the ones planned in this batch as if they passed). A kind that can give no more
        stops here, and what it lacks goes to the others (``filling``)."""
        batch: list[Plan] = []
        pending: Counter[str] = Counter()
        self.kinds.substitute(self.accepted, pending)
        idle = 0
        if size < 1 or self.full():
            return batch
        for kind, make in plans:
            if not self.kinds.needs(kind, self.accepted[kind] + pending[kind]):
                idle += 1
                if idle > 10 * len(KINDS):  # every kind is full or stopped
                    break
                continue
            idle = 0
            planned = self.tried[kind] + pending[kind]
            plan = None
            if self.kinds.share_used(kind, planned):
                assert self.kinds.per_sample is not None
                why = share_used(planned, self.accepted[kind], self.kinds.per_sample)
            else:
                plan = make()
                why = no_more(kind, planned, self.accepted[kind])
            if plan is None:
                self.kinds.stop(kind, why)
                self.kinds.substitute(self.accepted, pending)
                continue
            pending[kind] += 1
            batch.append(plan)
            if len(batch) >= size:  # stop before taking the schedule's next turn
                break
        return batch

    def take(self, plan: Plan, record: CandidateRecord, *, resumed: bool) -> None:
        """Count a judged candidate and accept it when it passed, its kind is short, and its
        question is no near-copy of an accepted one."""
        self.judged += 1
        self.resumed += resumed
        self.tried[record.kind] += 1
        self.usage.add(record.usage)
        self.seconds += record.seconds
        status: Status = "rejected"
        reason, detail = record.reason, record.detail
        if record.outcome == "passed":
            assert record.question is not None
            vector = unit_rows(self.embedder.embed([record.question]))[0]
            cosines = [float(v @ vector) for v in self.vectors]
            closest = max(cosines, default=0.0)
            record.checks["nearest_accepted_cosine"] = round(closest, 4)
            if self.accepted[record.kind] >= self.kinds.wanted[record.kind]:
                status, reason, detail = "surplus", "surplus", "its kind's quota was full"
            elif closest >= self.quality.duplicate:
                copy = self.samples[int(np.argmax(cosines))]["question"]
                reason, detail = "near-duplicate", f"cosine {closest:.3f} to {copy!r}"
            else:
                status = "accepted"
                self.vectors.append(vector)
                self.accepted[record.kind] += 1
                self.samples.append(_sample_row(record, [c.text for c in plan.chunks]))
        if status != "accepted":
            self.rejected.append(
                {
                    "status": status,
                    "reason": reason,
                    "detail": detail,
                    **record.model_dump(exclude={"outcome", "reason", "detail"}),
                }
            )

    def short_because(self, limit: int) -> str:
        """Why the run ended before ``n`` were accepted (it was not stopped by the budget)."""
        if self.judged >= limit:
            return f"the cap of {limit} candidates (--max-candidates) was reached"
        stopped = "; ".join(f"{kind}: {why}" for kind, why in self.kinds.stopped.items())
        return f"no kind of the mix can give more ({stopped})"


def estimate_testset(
    documents: Any,
    n: int,
    *,
    judge: str = "local",
    embedder: str | Embedder | None = None,
    mix: str | Mapping[str, float] | None = None,
    styles: str | Mapping[str, float] | None = None,
    personas: Sequence[str] = (),
    derive_personas: int = 0,
    seed: int = 0,
    max_chars: int = MAX_CHARS,
    min_chars: int = MIN_CHARS,
    min_words: int = MIN_WORDS,
    entities: bool = True,
    quality: QualityOptions | Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
) -> Estimate:
    """The judge calls, tokens and (for a judge with a known price) cost of
    ``generate_testset`` with the same arguments, without calling the judge: the candidates
    it would plan first, each taken through every check (see ``estimate.py``)."""
    chosen_mix, chosen_styles, checks = _chosen(mix, styles, quality)
    embed_model = (
        embedder
        if embedder is not None and not isinstance(embedder, str)
        else get_embedder(embedder or DEFAULT_EMBEDDER, **(embedder_options or {}))
    )
    corpus = Corpus.read(documents, embed_model, max_chars, min_chars, min_words, entities)
    planned = candidates_needed(n)
    run = _Run(KindQuotas(chosen_mix, planned, None), checks, embed_model)
    planned_order = plans(corpus, chosen_mix, chosen_styles, personas, seed, checks.duplicate)
    batch = run.next_plans(planned_order, planned)
    expected = estimate_candidates(
        [(p.kind, p.style, [c.text for c in p.chunks]) for p in batch],
        checks.search_k,
        price_for(judge),
    )
    if derive_personas:
        expected.metrics.insert(0, estimate_personas(corpus, derive_personas, seed))
    return expected
