"""Context relevance with a screen, measured against the full layout's own verdicts.

    python bench/bench_context_screen.py teacher --out runs/context-screen --until 02:20
    python bench/bench_context_screen.py screens --out runs/context-screen

Context relevance asks the judge one Yes/No question per context sentence. A screen decides
cheaply which sentences cannot be needed, and the judge is asked only about the rest; a skipped
sentence counts as not needed. This measures what a screen loses against the full layout
(``screen="none"``), over contexts from four sources:

- **WikiEval** (dev): each question's focused and padded context, the pair people compared;
- **MTRAG** (dev): the passages the answerers of each conversation were given (one context a
  conversation, its last user turn asked after the earlier turns);
- **RAGChecker** (dev) and **LFRQA**: these publish no retrieved passages, so each context is
  two passages, the question's own reference answer (citation markers removed) and the
  reference answer of another question of the same domain that shares the most words with
  this question, as a lexical retriever's wrong hit would; the two in an order fixed by a hash
  of the question.

Two steps, each resumable (their results are kept under ``--out``):

1. **teacher**: the full layout's verdicts with the real judge, one context at a time, the
   sources taken in turn so that a part of the run covers each of them: per sentence P(needed),
   the repeat checks' P(new), the score, the seconds and the judge calls, appended to
   ``teacher.jsonl`` as each context completes. The call cache answers what was asked before,
   so a killed run goes on where it stopped; ``--until HH:MM`` (UTC) stops it at a time of day.
2. **screens**: offline, from ``teacher.jsonl`` and the embedder (MiniLM by default; its vectors
   go to the call cache too). For the chosen screen (``--keep-similarity``, ``--keep-top``),
   per source and pooled: the sentences; those the full layout extracts (P(needed) x P(new) >=
   0.5) and the share of them the screen keeps (recall); the same for every sentence the
   judge found needed (P(needed) >= 0.5, repeats included); the share of the full layout's
   sentence questions, and of all its judge calls, the screen spares; and the mean absolute
   change of the score. Then what a sentence question and a repeat check cost (least squares
   over the contexts judged afresh) and the judging time the screen spares, and the WikiEval
   dev pairs of context relevance (the focused context must score strictly higher; a tie
   counts one half) for the full layout and the screen. (The other screens measured against
   it, a margin below the best sentence, rounds down the ranking, a learned screen and windows,
   were measured with ``--grid`` up to commit 157219b; docs/agreement.md keeps the figures.)

A screened score is worked out from the stored verdicts as the metric works it out: kept
sentences keep their P(needed) (the same question, so the same answer), skipped ones count 0,
and the repeat checks are replayed over the sentences still needed. Where a screen skips a
sentence the full layout showed to later repeat checks (needed, and not found a repeat), a
later check may see other earlier sentences than the teacher's did; its stored answer stands
in, and such contexts are counted (``approx``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.judges.base import cosine_similarity
from ragmeter.judges.registry import resolve_models
from ragmeter.meta.mtrag import load_mtrag
from ragmeter.meta.wikieval import load_wikieval
from ragmeter.metrics.context_relevance import (
    ContextRelevance,
    ContextRelevanceOptions,
    kept_by_similarity,
    screen_query,
)
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession
from ragmeter.text import passage_sentences

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
SOURCES = ("wikieval", "mtrag", "ragchecker", "lfrqa")
CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = """a an the of to in on for and or but is are was were be been being do does did what
which who whom whose when where why how that this these those with from by as at it its can could
should would will shall may might must about into than then there their they them you your i me
my we our he she his her not no yes if so"""
STOP = frozenset(STOP_WORDS.split())
LFRQA_DOMAINS = ("fiqa", "lifestyle", "recreation", "science", "technology", "writing")


@dataclass(frozen=True)
class Item:
    """One context to judge: a sample (question, contexts) from one source."""

    id: str
    source: str
    sample: Sample
    pair: str | None = None
    """For WikiEval: "<question id>/focused" or "<question id>/padded"."""


# --- the contexts -------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOP and len(w) > 2}


def _wrong_hit(question: str, own: int, passages: list[str]) -> int:
    """The passage, not the question's own, that shares the most words with the question."""
    asked = _words(question)
    overlaps = [
        (len(asked & _words(p)), -i) for i, p in enumerate(passages) if i != own and p.strip()
    ]
    return -max(overlaps)[1]


def _two_passages(key: str, own: str, other: str) -> list[str]:
    first = hashlib.sha256(key.encode()).digest()[0] % 2 == 0
    return [own, other] if first else [other, own]


def wikieval_items(path: Path) -> list[Item]:
    items = []
    for pair in load_wikieval(path):
        if pair.dimension != "context_relevance":
            continue
        for side, sample in (("focused", pair.preferred), ("padded", pair.rejected)):
            items.append(
                Item(f"wikieval/{pair.id}/{side}", "wikieval", sample, f"{pair.id}/{side}")
            )
    return items


def mtrag_items(path: Path) -> list[Item]:
    seen: dict[str, Item] = {}
    for row in load_mtrag(path):
        if row.conversation in seen or not row.sample.contexts:
            continue
        sample = row.sample.model_copy(update={"id": None, "reference": None})
        seen[row.conversation] = Item(f"mtrag/{row.conversation}", "mtrag", sample)
    return list(seen.values())


def ragchecker_items(path: Path) -> list[Item]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[row["dataset"]].append(row)
    items = []
    for row in rows:
        pool = by_domain[row["dataset"]]
        if len(pool) < 2:
            continue
        passages = [CITATION.sub("", r["gt_answer"]).strip() for r in pool]
        own = pool.index(row)
        other = passages[_wrong_hit(row["query"], own, passages)]
        key = f"ragchecker/{row['instance_id']}"
        contexts = _two_passages(key, passages[own], other)
        items.append(
            Item(key, "ragchecker", Sample(question=row["query"], contexts=contexts, answer=""))
        )
    return items


def lfrqa_items(folder: Path, per_domain: int, pool_size: int = 200) -> list[Item]:
    """``per_domain`` questions of each domain (seeded), each with a wrong hit from a pool of
    ``pool_size`` questions of its domain."""
    items = []
    for domain in LFRQA_DOMAINS:
        file = folder / f"annotations_{domain}_with_citation.jsonl"
        rows = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
        rows = [r for r in rows if (r.get("answer") or "").strip()]
        pool = random.Random(f"lfrqa/{domain}").sample(rows, min(pool_size, len(rows)))
        passages = [
            " ".join(ln.strip() for ln in r["answer"].splitlines() if ln.strip()) for r in pool
        ]
        for own, row in enumerate(pool[:per_domain]):
            other = passages[_wrong_hit(row["question"], own, passages)]
            key = f"lfrqa/{domain}/{row['qid']}"
            contexts = _two_passages(key, passages[own], other)
            items.append(
                Item(key, "lfrqa", Sample(question=row["question"], contexts=contexts, answer=""))
            )
    return items


def all_items(args: argparse.Namespace) -> dict[str, list[Item]]:
    return {
        "wikieval": wikieval_items(args.wikieval),
        "mtrag": mtrag_items(args.mtrag),
        "ragchecker": ragchecker_items(args.ragchecker),
        "lfrqa": lfrqa_items(args.lfrqa, args.lfrqa_per_domain),
    }


def in_turn(by_source: dict[str, list[Item]], limit: int | None) -> Iterator[Item]:
    """The sources in turn, always the one with the fewest sentences so far next, so that a
    part of the run covers every source about equally (a WikiEval question's two contexts
    together: its pair needs both); at most ``limit`` contexts of each."""
    queues: dict[str, list[list[Item]]] = {}
    for source, items in by_source.items():
        items = items[:limit] if limit is not None else items
        step = 2 if source == "wikieval" else 1
        queues[source] = [items[i : i + step] for i in range(0, len(items), step)]
    counted = dict.fromkeys(queues, 0)
    while any(queues.values()):
        source = min((s for s in queues if queues[s]), key=lambda s: (counted[s], s))
        group = queues[source].pop(0)
        counted[source] += sum(len(passage_sentences(i.sample.contexts)) for i in group)
        yield from group


# --- step 1: the teacher ----------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill
            continue
    return records


def _deadline(until: str | None) -> float | None:
    if not until:
        return None
    hour, minute = (int(part) for part in until.split(":"))
    now = dt.datetime.now(dt.UTC)
    end = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if end <= now:
        end += dt.timedelta(days=1)
    return time.time() + (end - now).total_seconds()


def teacher(args: argparse.Namespace) -> None:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    path = out / "teacher.jsonl"
    done = {r["id"] for r in read_jsonl(path)}
    deadline = _deadline(args.until)
    items = [i for i in in_turn(all_items(args), args.limit) if i.id not in done]
    print(f"{len(done)} contexts already judged, {len(items)} to go", flush=True)
    judge, _ = resolve_models(
        args.judge, cache=args.cache if args.cache else True, needs_embedder=False
    )
    # The repeat checks asked, each answer kept: the counting with them and with the bar that
    # stands in for them (``repeats_by``) can both be replayed from the record.
    metric = ContextRelevance(screen="none", repeats_by="asking")
    started, sentences_done = time.perf_counter(), 0
    for n, item in enumerate(items, 1):
        if deadline is not None and time.time() >= deadline:
            print("stopped at the deadline; run again to go on", flush=True)
            break
        session = JudgeSession(judge)
        score = metric.score(item.sample, session)
        explanation = score.explanation
        sentences = passage_sentences(item.sample.contexts)
        record = {
            "id": item.id,
            "source": item.source,
            "pair": item.pair,
            "sample": item.sample.model_dump(mode="json", exclude_none=True),
            "sentences": sentences,
            "p_needed": explanation.get("p_needed"),
            "p_new": explanation.get("p_new_information", {}),
            "score": score.value,
            "unscored": score.unscored_reason,
            "seconds": round(score.seconds, 3),
            "model_calls": score.usage.model_calls,
            "cached_calls": score.usage.cached_calls,
            "prompt_tokens": score.usage.prompt_tokens,
        }
        with path.open("a") as file:
            file.write(json.dumps(record) + "\n")
        sentences_done += len(sentences)
        elapsed = time.perf_counter() - started
        print(
            f"{n}/{len(items)} {item.id}: {len(sentences)} sentences, {score.seconds:.1f} s, "
            f"{score.usage.model_calls} calls ({score.usage.cached_calls} cached), score "
            f"{score.value}; {sentences_done} sentences in {elapsed:.0f} s "
            f"({elapsed / max(sentences_done, 1):.2f} s a sentence)",
            flush=True,
        )


# --- step 2: the screens, offline -------------------------------------------------------------


THRESHOLD = 0.5
"""The metric's default: P(needed) (x P(new)) that counts a sentence."""


@dataclass
class Judged:
    """One context as the full layout judged it, with what the screens need."""

    id: str
    source: str
    pair: str | None
    sample: Sample
    sentences: list[str]
    p_needed: list[float]
    p_new: dict[int, float]
    score: float
    seconds: float
    similarity: dict[str, np.ndarray]
    """Each sentence's cosine with the question, per way of embedding the question."""

    @property
    def needed(self) -> list[int]:
        """The sentences the full layout extracts: P(needed) x P(new) >= 0.5."""
        return [i for i in range(len(self.sentences)) if self.counted(i)]

    @property
    def judged_needed(self) -> list[int]:
        """The sentences the judge found needed, P(needed) >= 0.5, repeats or not."""
        return [i for i, p in enumerate(self.p_needed) if p >= THRESHOLD]

    def counted(self, i: int) -> bool:
        return self.p_needed[i] * self.p_new.get(i, 1.0) >= THRESHOLD


def screened_score(judged: Judged, kept: set[int]) -> tuple[float, int, bool]:
    """The score had only ``kept`` been asked, the repeat checks asked, and whether the score
    is approximate.

    The metric's counting replayed: a skipped sentence has P(needed) 0; each needed sentence
    after the first is discounted by its repeat check, which shows the needed sentences before
    it that were not found repeats. While a screen keeps every sentence that the full layout
    showed that way, each check sees what it saw there and its stored answer is exact; where
    it skips one, a later check may see other sentences than the teacher's did, its stored
    answer (or 1, where the teacher asked none) stands in, and the score is approximate."""
    shown = set()
    earlier = False
    for i, p in enumerate(judged.p_needed):
        if p >= THRESHOLD and (not earlier or judged.p_new.get(i, 1.0) >= 0.5):
            shown.add(i)
            earlier = True
    approximate = any(i not in kept for i in shown)
    counted, checks, earlier = 0, 0, False
    for i, p in enumerate(judged.p_needed):
        if i not in kept or p < THRESHOLD:
            continue
        new = 1.0
        if earlier:
            new, checks = judged.p_new.get(i, 1.0), checks + 1
        counted += p * new >= THRESHOLD
        if new >= 0.5:
            earlier = True
    return counted / len(judged.sentences), checks, approximate


QUERIES: dict[str, Callable[[Sample], str]] = {
    "metric": screen_query,
    "question": lambda sample: sample.question,
    "as_shown": lambda sample: "\n".join(sample.asked().values()),
    "question+users": lambda sample: "\n".join(
        [sample.question, *(t.text for t in reversed(sample.history) if t.role == "user")]
    ),
}
"""Ways to embed what is asked: the metric's (the question, then the earlier turns, latest
first); the question alone; as the judge is shown it (the earlier turns, then the question);
the question, then the earlier user turns alone, latest first."""


def load_judged(args: argparse.Namespace) -> list[Judged]:
    from ragmeter.judges.cache import CachedEmbedder, CallCache
    from ragmeter.judges.registry import get_embedder

    records = [r for r in read_jsonl(args.out / "teacher.jsonl") if r.get("score") is not None]
    embedder = CachedEmbedder(
        get_embedder(args.embedder), CallCache(args.cache) if args.cache else CallCache()
    )
    judged = []
    for record in records:
        sample = Sample.model_validate(record["sample"])
        sentences = record["sentences"]
        queries = {name: query(sample) for name, query in QUERIES.items()}
        vectors = embedder.embed([*queries.values(), *sentences])
        k = len(queries)
        similarity = {
            name: cosine_similarity(vectors[k:], vectors[n]) for n, name in enumerate(queries)
        }
        judged.append(
            Judged(
                id=record["id"],
                source=record["source"],
                pair=record.get("pair"),
                sample=sample,
                sentences=sentences,
                p_needed=record["p_needed"],
                p_new={int(i): p for i, p in record["p_new"].items()},
                score=record["score"],
                seconds=record["seconds"],
                similarity=similarity,
            )
        )
    return judged


Screen = Callable[[Judged], set[int]]


def by_similarity(above: float, top: int, query: str = "metric") -> Screen:
    """The metric's embedding screen."""

    def screen(judged: Judged) -> set[int]:
        return set(kept_by_similarity(judged.similarity[query], above, top))

    return screen


@dataclass
class Figures:
    contexts: int
    sentences: int
    needed: int
    kept_needed: int
    judged_needed: int
    kept_judged: int
    asked: int
    calls: int
    full_calls: int
    delta: float
    approximate: int

    @property
    def recall(self) -> float:
        return self.kept_needed / self.needed if self.needed else 1.0

    @property
    def judged_recall(self) -> float:
        return self.kept_judged / self.judged_needed if self.judged_needed else 1.0

    @property
    def saved(self) -> float:
        """The share of the full layout's sentence questions not asked."""
        return 1 - self.asked / self.sentences if self.sentences else 0.0

    @property
    def calls_saved(self) -> float:
        """The share of the full layout's judge calls (repeat checks included) not made."""
        return 1 - self.calls / self.full_calls if self.full_calls else 0.0


def figures(judged: list[Judged], screen: Screen) -> Figures:
    needed = kept_needed = judged_needed = kept_judged = asked = calls = approximate = 0
    deltas = []
    for item in judged:
        kept = screen(item)
        needed += len(item.needed)
        kept_needed += sum(i in kept for i in item.needed)
        judged_needed += len(item.judged_needed)
        kept_judged += sum(i in kept for i in item.judged_needed)
        asked += len(kept)
        value, checks, approx = screened_score(item, kept)
        calls += len(kept) + checks
        deltas.append(abs(value - item.score))
        approximate += approx
    return Figures(
        contexts=len(judged),
        sentences=sum(len(i.sentences) for i in judged),
        needed=needed,
        kept_needed=kept_needed,
        judged_needed=judged_needed,
        kept_judged=kept_judged,
        asked=asked,
        calls=calls,
        full_calls=sum(len(i.sentences) + len(i.p_new) for i in judged),
        delta=float(np.mean(deltas)) if deltas else 0.0,
        approximate=approximate,
    )


def pair_agreement(judged: list[Judged], screen: Screen | None) -> tuple[float, int]:
    """WikiEval's context relevance pairs: the focused context must score strictly higher (a
    tie counts one half); the share over the pairs whose two contexts were both judged."""
    values: dict[str, dict[str, float]] = defaultdict(dict)
    for item in judged:
        if item.pair is None:
            continue
        question, side = item.pair.rsplit("/", 1)
        value = item.score if screen is None else screened_score(item, screen(item))[0]
        values[question][side] = value
    outcomes = [
        1.0 if v["focused"] > v["padded"] else 0.5 if v["focused"] == v["padded"] else 0.0
        for v in values.values()
        if len(v) == 2
    ]
    return (sum(outcomes) / len(outcomes) if outcomes else float("nan")), len(outcomes)


def table(judged: list[Judged], screens_: dict[str, Screen]) -> None:
    by_source: dict[str, list[Judged]] = defaultdict(list)
    for item in judged:
        by_source[item.source].append(item)
    groups = {**{s: by_source[s] for s in SOURCES if by_source[s]}, "pooled": judged}
    print(
        f"{'screen':<30}{'source':<11}{'ctx':>4}{'sent':>6}{'needed':>7}{'recall':>7}"
        f"{'P>=.5':>6}{'recall':>7}{'q saved':>8}{'calls saved':>12}{'|dscore|':>9}{'approx':>7}"
    )
    for name, screen in screens_.items():
        for source, items in groups.items():
            f = figures(items, screen)
            print(
                f"{name:<30}{source:<11}{f.contexts:>4}{f.sentences:>6}{f.needed:>7}"
                f"{f.recall:>7.3f}{f.judged_needed:>6}{f.judged_recall:>7.3f}{f.saved:>8.3f}"
                f"{f.calls_saved:>12.3f}{f.delta:>9.4f}{f.approximate:>7}"
            )


def costs(out: Path) -> np.ndarray | None:
    """What a sentence question and a repeat check cost the full layout: least squares over
    the contexts judged with no call answered from the cache, of the prompt tokens read and
    of the seconds, on the sentences' characters, the questions and the checks: both said, the
    seconds' coefficients returned."""
    rows = [
        r
        for r in read_jsonl(out / "teacher.jsonl")
        if r.get("score") is not None and not r["cached_calls"]
    ]
    if len(rows) < 5:
        return None
    design = np.array(
        [
            [sum(len(s) for s in r["sentences"]) / 4, len(r["sentences"]), len(r["p_new"]), 1]
            for r in rows
        ]
    )
    tokens = np.linalg.lstsq(design, [r["prompt_tokens"] for r in rows], rcond=None)[0]
    seconds = np.linalg.lstsq(design, [r["seconds"] for r in rows], rcond=None)[0]
    questions, checks = design[:, 1].sum(), design[:, 2].sum()
    characters = 4 * design[:, 0].sum() / questions
    in_checks = seconds[2] * checks / float((design @ seconds).sum())
    print(
        f"over {len(rows)} contexts judged afresh ({questions:.0f} sentence questions of "
        f"{characters:.0f} characters on average, {checks:.0f} repeat checks, which took "
        f"{in_checks:.2f} of the fitted time): prompt tokens read = {tokens[0]:.2f} x "
        f"characters/4 + {tokens[1]:.1f} a sentence question + {tokens[2]:.1f} a repeat check "
        f"+ {tokens[3]:.0f}; seconds = {seconds[0]:.4f} x characters/4 + {seconds[1]:.3f} a "
        f"sentence question + {seconds[2]:.2f} a repeat check + {seconds[3]:.1f}\n"
    )
    return seconds


def time_spared(judged: list[Judged], screen: Screen, seconds: np.ndarray) -> float:
    """The share of the full layout's judging time the screen spares, by the fitted seconds."""

    def fitted(item: Judged, kept: set[int], checks: int) -> float:
        characters = sum(len(item.sentences[i]) for i in kept) / 4
        return float(seconds @ [characters, len(kept), checks, 1])

    full = spent = 0.0
    for item in judged:
        kept = screen(item)
        full += fitted(item, set(range(len(item.sentences))), len(item.p_new))
        spent += fitted(item, kept, screened_score(item, kept)[1])
    return 1 - spent / full if full else 0.0


def screens(args: argparse.Namespace) -> None:
    judged = load_judged(args)
    if not judged:
        raise SystemExit(f"nothing judged yet in {args.out / 'teacher.jsonl'}")
    seconds = sum(i.seconds for i in judged)
    count = sum(len(i.sentences) for i in judged)
    print(
        f"{len(judged)} contexts, {count} sentences judged by the full layout in {seconds:.0f} s "
        f"({seconds / count:.2f} s a sentence, repeat checks included)\n"
    )
    seconds_fit = costs(args.out)
    everything = [
        i for i in judged if screened_score(i, set(range(len(i.sentences))))[0] != i.score
    ]
    if everything:
        print(
            f"the replay misses the stored score of {len(everything)} contexts: {everything[0].id}"
        )
    chosen = by_similarity(args.keep_similarity, args.keep_top, args.query)
    table(judged, {"none (full layout)": lambda item: set(range(len(item.sentences)))})
    print()
    table(judged, {f"embedding >= {args.keep_similarity} or top {args.keep_top}": chosen})
    print("\nneeded sentences the chosen screen skips:")
    for item in judged:
        kept = chosen(item)
        ranks = np.argsort(-item.similarity[args.query], kind="stable")
        for i in item.needed:
            if i not in kept:
                rank = int(np.where(ranks == i)[0][0]) + 1
                print(
                    f"  {item.id} [{i}] sim {item.similarity[args.query][i]:.3f} rank {rank}/"
                    f"{len(item.sentences)} p {item.p_needed[i]:.2f}: {item.sentences[i][:100]!r}"
                )
    if seconds_fit is not None:
        groups = {s: [i for i in judged if i.source == s] for s in SOURCES}
        groups["wikieval focused"] = [i for i in judged if (i.pair or "").endswith("/focused")]
        spared = ", ".join(
            f"{name} {time_spared(items, chosen, seconds_fit):.2f}"
            for name, items in {**groups, "pooled": judged}.items()
            if items
        )
        print(f"\njudging time the chosen screen spares, by the fitted seconds: {spared}")
    full, n = pair_agreement(judged, None)
    screened, _ = pair_agreement(judged, chosen)
    print(
        f"\nWikiEval dev pairs of context relevance ({n} pairs): full layout {full:.2f}, "
        f"screened {screened:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    steps = parser.add_subparsers(dest="step", required=True)
    for name in ("teacher", "screens"):
        step = steps.add_parser(name)
        step.add_argument("--out", type=Path, default=Path("runs/context-screen"))
        step.add_argument(
            "--cache", type=Path, default=None, help="call cache (default: the user's)"
        )
        step.add_argument("--wikieval", type=Path, default=DATA / "wikieval/wikieval_dev.jsonl")
        step.add_argument("--mtrag", type=Path, default=DATA / "mtrag/mtrag_dev.jsonl")
        step.add_argument(
            "--ragchecker", type=Path, default=DATA / "ragchecker/ragchecker_dev.jsonl"
        )
        step.add_argument("--lfrqa", type=Path, default=DATA / "lfrqa")
        step.add_argument("--lfrqa-per-domain", type=int, default=10)
    defaults = ContextRelevanceOptions()
    check = steps.choices["screens"]
    check.add_argument("--embedder", default="minilm")
    check.add_argument("--keep-similarity", type=float, default=defaults.keep_similarity)
    check.add_argument("--keep-top", type=int, default=defaults.keep_top)
    check.add_argument("--query", choices=list(QUERIES), default="metric")
    teach = steps.choices["teacher"]
    teach.add_argument("--judge", default="local")
    teach.add_argument("--limit", type=int, default=None, help="at most N contexts a source")
    teach.add_argument("--until", default=None, help="stop at this time of day, HH:MM UTC")
    teach.add_argument("--list", action="store_true", help="only count the contexts and sentences")
    args = parser.parse_args()
    if args.step == "teacher" and args.list:
        for source, items in all_items(args).items():
            items = items[: args.limit] if args.limit is not None else items
            count = sum(len(passage_sentences(i.sample.contexts)) for i in items)
            print(f"{source}: {len(items)} contexts, {count} sentences")
        return
    {"teacher": teacher, "screens": screens}[args.step](args)


if __name__ == "__main__":
    sys.exit(main())
