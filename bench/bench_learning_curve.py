"""What N labels of a team's own claims buy: the verifier's head refitted as ``ragmeter tune``
refits it (the shipped training claims and the team's N), read on the rest of the team's source,
beside the zero-shot read.

    python bench/bench_learning_curve.py read --out runs/learning    # the judge; resumable
    python bench/bench_learning_curve.py curve --out runs/learning   # from what was read so far

**read** verifies the labelled claims of ``../shared/data/verifier`` and AttributionBench (each
SummEdits domain, BEGIN corpus and AttributionBench source a source of its own, named as
``verifier_sample.py`` and the shipped training set name them) with the judge, one verdict a
claim, and keeps each verdict's zero-shot P(Yes), the hidden states heads read
(``DEFAULT_STATES``, as float16) and the claim's label, source and group, a shard of ``--block``
claims at a time under ``OUT/shards/`` (each written whole, or not at all). The order is fixed
once, in ``OUT/plan.json``: rounds that take whole groups of every source, so a read stopped at
any point has every source in it, and a group's claims back to back, so the judge reads their
evidence once (it is the prompt's prefix). Killed, it resumes where it stopped: a claim in a
shard is never read again (the call cache, on by default, replays the claims of the shard that
was being written). Sources with fewer claims in all than ``--min-read`` are not read;
``--up-to N`` reads no source beyond N claims, so that every source reaches N first.

**curve** reads the shards, nothing else. Each source with at least ``--min-read`` claims read
plays a team in turn: N of its claims are drawn by group (the groups in a seeded order, a
group's claims together; the claims of a group a draw touched are neither label nor test), the
verifier's head is refitted on the shipped training claims of the *other* sources and these N
(``heads.tuning.refit_verifier``, what ``tune`` runs), and read on the rest of the source. For
each N (``--sizes``) and each of ``--draws`` draws (nested: a draw's first 25 labels are among
its first 50, as a team labels on):

- the gain in ROC AUC over the zero-shot read on the rest, and in balanced accuracy (the head
  at 0.5, the zero-shot read at the threshold best on the claims the head learned from);
- whether ``tune`` would have written that head: its out-of-fold gain on the team's N, with
  the 95 % interval from resampling their groups, must lie above zero (and ``tune`` takes no
  fewer than ten claims, of both kinds). A refused head is printed as refused, and "as tune
  decides" counts it as no gain: the team keeps the zero-shot read.

Each figure is the mean over the draws, with the 95 % interval of that mean (a percentile
bootstrap of the draws), and over the sources measured, with the interval from resampling the
sources. An N is measured on a source once at least ``--min-rest`` claims were read beyond it.
Last, the question of a default head with this breadth: each measured source left out in turn,
a head fitted on every claim read of the other sources and read on it, and whether it meets the
rule for becoming the verifier's default (``DEFAULT_RULE``). Every draw's figures are kept in
``OUT/draws.jsonl`` under a key of what decides them (the source's claims read, the training
set, the draw), so a rerun refits only what more reading changed. The curve is written to
``OUT/curve.json``, which ``ragmeter tune --curve`` reads to say what a team's own label count
bought here. ``--workers`` processes refit the draws (as many as the machine has cores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import sys
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from verifier_sample import (
    DATA,
    files_in,
    labelled_files,
    ordered,
    rounds,
    rows_by_source,
    source_of,
)

from ragmeter.claims import SUPPORTED
from ragmeter.cluster import ModelRecipe
from ragmeter.config import parse_options
from ragmeter.heads.curve import FORMAT
from ragmeter.heads.fitting import Verdicts, gather, predict
from ragmeter.heads.tuning import DEFAULT_STATES, refit_verifier
from ragmeter.heads.verifier import (
    LabelledClaims,
    TrainingSet,
    best_threshold,
    leave_one_source_out,
    shipped_training_set,
)
from ragmeter.judges import identity_of
from ragmeter.meta.attribution import Claim, ClaimVerifier, load_attribution
from ragmeter.stats import balanced_accuracy, bootstrap_mean_ci, roc_auc

SIZES = (25, 50, 100, 200, 400)
DRAWS = 20
MIN_READ = 300
MIN_REST = 100
"""Claims read beyond N before N is measured on a source: what the head is read on."""
BLOCK = 10
"""Claims a shard: at most this many verdicts are read again after a kill without the cache."""
PER_ROUND = 20
WHOLE = 1 << 30
"""No cap on a group's claims (``verifier_sample`` caps them for its small sample)."""
FOLDS = 5
"""``tune``'s folds (its default)."""
METHOD = 2
"""Part of every draw's key in ``draws.jsonl``: raised when how a draw is worked out changes."""
DEFAULT_RULE = (0.03, -0.02)
"""What a head must gain out of source to become the verifier's default: this mean ROC AUC gain
over the sources left out, and no source below the second."""


# --- read: the judge's verdicts, kept as heads read them ------------------------------------------


def claims_in(data: Path) -> dict[str, Claim]:
    """Every labelled claim under ``data`` by id, its source named as the shipped set names it."""
    found: dict[str, Claim] = {}
    for split, path in labelled_files(files_in(data)):
        for claim in load_attribution(path):
            source = source_of({"src_dataset": claim.source}, split)
            found[claim.id] = claim.model_copy(update={"source": source})
    return found


def plan(data: Path, min_read: int, per_round: int, seed: int) -> tuple[list[str], dict[str, int]]:
    """The claims to read, in order (rounds of whole groups of every source, ``verifier_sample``'s
    order with no cap on a group), and the sources left unread for having too few claims."""
    rng = random.Random(seed)
    by_source = rows_by_source(files_in(data))
    kept = {s: rows for s, rows in sorted(by_source.items()) if len(rows) >= min_read}
    per_source = {s: ordered(rows, WHOLE, rng) for s, rows in kept.items()}
    ids = [str(row["id"]) for row in rounds(per_source, per_round)]
    return ids, {s: len(rows) for s, rows in by_source.items() if s not in kept}


def shards(out: Path) -> list[Path]:
    return sorted((out / "shards").glob("[0-9]*.npz"))


def read_ids(out: Path) -> set[str]:
    """The claims already kept, scored or not."""
    done: set[str] = set()
    for path in shards(out):
        with np.load(path, allow_pickle=False) as shard:
            done.update(shard["ids"].tolist())
            done.update(shard["unscored_ids"].tolist())
    return done


def write_shard(out: Path, number: int, claims: Sequence[Claim], scores: list[Any]) -> int:
    """One block's verdicts as a shard, written whole (a temporary file renamed); how many were
    scored. A verdict without its states or zero-shot read is kept as unscored, with why."""
    by_id = {claim.id: claim for claim in claims}
    material, notes = gather(
        [s for s in scores if s.scored], SUPPORTED, DEFAULT_STATES, lambda _: None
    )
    for note in notes:
        print("note:", note, flush=True)
    kept = [by_id[key] for key in material.samples]
    missing = [s for s in scores if s.sample_id not in set(material.samples)]
    arrays: dict[str, np.ndarray] = {
        "ids": np.array([c.id for c in kept], dtype=str),
        "sources": np.array([c.source for c in kept], dtype=str),
        "groups": np.array([c.group for c in kept], dtype=str),
        "truth": np.array([c.label for c in kept], dtype=bool),
        "zero_shot": material.verdicts.zero_shot.astype(np.float32),
        "unscored_ids": np.array([s.sample_id for s in missing], dtype=str),
        "unscored_sources": np.array([by_id[s.sample_id].source for s in missing], dtype=str),
        "unscored_reasons": np.array(
            [s.unscored_reason or "no hidden states or zero-shot read" for s in missing], dtype=str
        ),
    }
    for name in DEFAULT_STATES:
        matrix = material.verdicts.states[name]
        arrays[f"state:{name}"] = (matrix if len(kept) else np.zeros((0, 0))).astype(np.float16)
    folder = out / "shards"
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{number:06d}.partial.npz"
    np.savez(partial, **arrays)
    os.replace(partial, folder / f"{number:06d}.npz")
    return len(kept)


def up_to(todo: Sequence[Claim], read: Counter[str], most: int) -> list[Claim]:
    """``todo`` without the claims that would take a source beyond ``most`` read (``read``
    counts each source's claims already read; a group begun is read whole)."""
    counts = Counter(read)
    begun: set[tuple[str, str]] = set()
    kept = []
    for claim in todo:
        group = (claim.source, claim.group)
        if counts[claim.source] < most or group in begun:
            kept.append(claim)
            counts[claim.source] += 1
            begun.add(group)
    return kept


def read(args: argparse.Namespace) -> None:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    options = {"heads": "none", "states": ",".join(DEFAULT_STATES)}
    options.update(parse_options(args.judge_option, "--judge-option"))
    cache = False if args.no_cache else (args.cache or True)
    recipe = ModelRecipe(args.judge, cache=cache, needs_embedder=False, judge_options=options)
    judge = recipe.open()[0]
    identity = identity_of(judge).digest
    plan_file = out / "plan.json"
    if plan_file.is_file():
        planned = json.loads(plan_file.read_text())
        if planned["judge_identity"] != identity:
            sys.exit(
                f"{out} was read by {planned['judge']} ({planned['judge_identity'][:12]}); this "
                f"judge is {judge.name} ({identity[:12]}): states of two judges cannot be joined. "
                "Read into another --out."
            )
    else:
        ids, unread = plan(args.data, args.min_read, args.per_round, args.seed)
        planned = {
            "judge": judge.name,
            "judge_identity": identity,
            "states": list(DEFAULT_STATES),
            "prompt_version": SUPPORTED.version,
            "min_read": args.min_read,
            "per_round": args.per_round,
            "seed": args.seed,
            "unread": unread,
            "ids": ids,
        }
        plan_file.write_text(json.dumps(planned))
    for source, count in sorted(planned["unread"].items()):
        print(f"{source}: {count} claims in all, fewer than {planned['min_read']}: not read")
    claims = claims_in(args.data)
    done = read_ids(out)
    todo = [claims[key] for key in planned["ids"] if key not in done]
    if args.up_to is not None:
        todo = up_to(todo, Counter(claims[key].source for key in done), args.up_to)
    if args.limit is not None:
        todo = todo[: args.limit]
    print(
        f"{len(done)} of {len(planned['ids'])} claims already read; reading {len(todo)} with "
        f"{judge.name} (one verdict a claim), {args.block} a shard, into {out}",
        flush=True,
    )
    verify = ClaimVerifier(judge, with_question=True, retries=2)
    number = len(shards(out))
    total = len(done)
    started = time.perf_counter()
    for start in range(0, len(todo), args.block):
        block = todo[start : start + args.block]
        scores = [verify(claim)[1] for claim in block]
        scored = write_shard(out, number, block, scores)
        number += 1
        total += len(block)
        seconds = time.perf_counter() - started
        print(
            f"shard {number - 1:06d}: {scored} of {len(block)} scored; {total} of "
            f"{len(planned['ids'])} read; {seconds / (start + len(block)):.1f} s a claim",
            flush=True,
        )


# --- curve: what N labels buy, from what was read ----------------------------------------------


@dataclass
class Kept:
    """What was read: the scored claims as heads read them, and the unscored ones by source."""

    claims: LabelledClaims
    unscored: Counter[str]
    plan: dict[str, Any]


def load(out: Path) -> Kept:
    zero, truth, sources, groups, ids = [], [], [], [], []
    states: dict[str, list[np.ndarray]] = {name: [] for name in DEFAULT_STATES}
    unscored: Counter[str] = Counter()
    seen: set[str] = set()
    for path in shards(out):
        with np.load(path, allow_pickle=False) as shard:
            fresh = np.array([key not in seen for key in shard["ids"].tolist()], dtype=bool)
            seen.update(shard["ids"].tolist())
            zero.append(shard["zero_shot"][fresh].astype(np.float64))
            truth.append(shard["truth"][fresh])
            sources.append(shard["sources"][fresh])
            groups.append(shard["groups"][fresh])
            ids += shard["ids"][fresh].tolist()
            for name in DEFAULT_STATES:
                if fresh.any():
                    states[name].append(shard[f"state:{name}"][fresh].astype(np.float64))
            unscored.update(shard["unscored_sources"].tolist())
    plan_file = out / "plan.json"
    planned = json.loads(plan_file.read_text()) if plan_file.is_file() else {}
    if not ids:
        sys.exit(f"{out}: nothing read yet (python bench/bench_learning_curve.py read --out {out})")
    claims = LabelledClaims(
        Verdicts(
            np.concatenate(zero), {name: np.concatenate(rows) for name, rows in states.items()}
        ),
        np.concatenate(truth).astype(bool),
        np.concatenate(sources).astype(object),
        np.concatenate(groups).astype(object),
        ids,
    )
    return Kept(claims, unscored, planned)


@dataclass
class Draw:
    """One draw of N labels on one source: the head's gains on the rest, and tune's verdict."""

    auc_gain: float
    balanced_gain: float
    written: bool
    zero_shot_auc: float
    rest: int


def draw_order(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The rows in the order a team labels them: its groups in a random order, each group's
    rows together, in a random order."""
    names = sorted(set(groups.tolist()))
    order = []
    for index in rng.permutation(len(names)):
        members = np.flatnonzero(groups == names[index])
        order.extend(rng.permutation(members).tolist())
    return np.array(order, dtype=int)


def one_draw(base: TrainingSet, mine: LabelledClaims, rest: LabelledClaims, seed: int) -> Draw:
    """The head refitted on ``base`` and ``mine`` (projected) as ``tune`` refits it, read on
    ``rest`` (raw states) beside the zero-shot read."""
    source = str(mine.sources[0])
    refit = refit_verifier(base, mine, folds=FOLDS, seed=seed)
    both_kinds = bool(mine.truth.any() and not mine.truth.all())
    written = len(mine) >= 2 * FOLDS and both_kinds and refit.clear(source)
    read = predict(refit.head, rest.verdicts)
    zero = rest.verdicts.zero_shot
    truth = rest.truth
    learned_truth = np.concatenate([base.claims.truth, mine.truth])
    learned_zero = np.concatenate([base.claims.verdicts.zero_shot, mine.verdicts.zero_shot])
    cut = best_threshold(learned_truth, learned_zero)
    zero_auc = roc_auc(truth, zero)
    head_auc = roc_auc(truth, read)
    assert zero_auc is not None and head_auc is not None
    return Draw(
        auc_gain=head_auc - zero_auc,
        balanced_gain=balanced_accuracy(truth, read >= 0.5) - balanced_accuracy(truth, zero >= cut),
        written=written,
        zero_shot_auc=zero_auc,
        rest=len(rest),
    )


def digest(*parts: Any) -> str:
    material = hashlib.sha256()
    for part in parts:
        material.update(part.tobytes() if isinstance(part, np.ndarray) else str(part).encode())
        material.update(b"\0")
    return material.hexdigest()[:24]


def training_digest(training: TrainingSet) -> str:
    claims = training.claims
    return digest(
        training.basis, training.center, claims.verdicts.zero_shot, claims.truth,
        "|".join(claims.sources.tolist()), training.balance, training.penalties,
    )  # fmt: skip


class DrawStore:
    """Every draw's figures by a key of what decides them, appended as they are worked out."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                if line.strip():
                    record = json.loads(line)
                    self.found[record["key"]] = record["draw"]

    def get(self, key: str) -> Draw | None:
        found = self.found.get(key)
        return None if found is None else Draw(**found)

    def put(self, key: str, draw: Draw) -> None:
        self.found[key] = asdict(draw)
        with self.path.open("a") as handle:
            handle.write(json.dumps({"key": key, "draw": asdict(draw)}) + "\n")


_SHARED: tuple[TrainingSet, LabelledClaims, LabelledClaims, int] | None = None
"""One source's training set, claims (projected and raw) and seed, for the draws' workers:
set before they are forked, so each draw sends only its rows."""


def _drawn(rows: tuple[np.ndarray, np.ndarray]) -> Draw:
    assert _SHARED is not None
    base, projected, own, seed = _SHARED
    labels, rest = rows
    return one_draw(base, projected.rows(labels), own.rows(rest), seed)


def source_draws(
    kept: LabelledClaims,
    source: str,
    training: TrainingSet,
    sizes: Sequence[int],
    draws: int,
    seed: int,
    store: DrawStore,
    trained: str,
    workers: int = 1,
) -> Iterator[tuple[int, list[Draw]]]:
    """For each N: the draws on ``source`` (a draw whose rest holds one kind of claim only
    is left out), those not in ``store`` worked out by ``workers`` processes."""
    global _SHARED
    rows = np.flatnonzero(kept.sources == source)
    own = kept.rows(rows)
    base = replace(
        training, claims=training.claims.rows(np.flatnonzero(training.claims.sources != source))
    )
    read_digest = digest("|".join(sorted(own.ids)))
    planned: list[tuple[int, str, np.ndarray, np.ndarray]] = []
    for number in range(draws):
        rng = np.random.default_rng([seed, number, zlib.crc32(source.encode())])
        order = draw_order(own.groups, rng)
        for n in sizes:
            labels = order[:n]
            touched = set(own.groups[labels].tolist())
            rest = np.array([i for i in range(len(own)) if own.groups[i] not in touched], dtype=int)
            if not len(rest) or own.truth[rest].all() or not own.truth[rest].any():
                continue
            key = digest(METHOD, source, n, number, seed, read_digest, trained, FOLDS)
            planned.append((n, key, labels, rest))
    missing = [(key, (labels, rest)) for _, key, labels, rest in planned if store.get(key) is None]
    if missing:
        _SHARED = (base, training.project(own), own, seed)
        jobs = [job for _, job in missing]
        forked = multiprocessing.get_context("fork")
        with forked.Pool(workers) if workers > 1 and len(jobs) > 1 else nullcontext() as pool:
            # Each draw is kept as it comes: a killed curve loses no draw worked out.
            done = pool.imap(_drawn, jobs) if pool else map(_drawn, jobs)
            for (key, _), draw in zip(missing, done, strict=True):
                store.put(key, draw)
    found: dict[int, list[Draw]] = {n: [] for n in sizes}
    for n, key, _, _ in planned:
        draw = store.get(key)
        assert draw is not None
        found[n].append(draw)
    yield from found.items()


def summarised(values: Sequence[float], seed: int) -> dict[str, float] | None:
    found = bootstrap_mean_ci(values, seed=seed)
    if found is None:
        return None
    mean, low, high = found
    return {"mean": round(mean, 4), "low": round(low, 4), "high": round(high, 4)}


def point(draws: list[Draw], seed: int) -> dict[str, Any]:
    auc = [d.auc_gain for d in draws]
    balanced = [d.balanced_gain for d in draws]
    return {
        "draws": len(draws),
        "written": sum(d.written for d in draws),
        "rest": round(float(np.mean([d.rest for d in draws]))),
        "zero_shot_auc": round(float(np.mean([d.zero_shot_auc for d in draws])), 4),
        "auc_gain": summarised(auc, seed),
        "auc_gain_tuned": summarised(
            [g if d.written else 0.0 for g, d in zip(auc, draws, strict=True)], seed
        ),
        "balanced_gain": summarised(balanced, seed),
        "balanced_gain_tuned": summarised(
            [g if d.written else 0.0 for g, d in zip(balanced, draws, strict=True)], seed
        ),
    }


FIGURES = ("auc_gain", "auc_gain_tuned", "balanced_gain", "balanced_gain_tuned")


def over_sources(points: dict[str, dict[str, Any]], seed: int) -> dict[str, Any]:
    """The mean over the sources of each source's mean, with the interval from resampling the
    sources; and how often tune wrote the head."""
    found: dict[str, Any] = {
        "sources": len(points),
        "draws": sum(p["draws"] for p in points.values()),
        "written": sum(p["written"] for p in points.values()),
    }
    for figure in FIGURES:
        found[figure] = summarised([p[figure]["mean"] for p in points.values()], seed)
    by_gain = sorted(points, key=lambda s: points[s]["auc_gain_tuned"]["mean"])
    found["worst"] = {
        "source": by_gain[0],
        "auc_gain_tuned": points[by_gain[0]]["auc_gain_tuned"]["mean"],
    }
    found["best"] = {
        "source": by_gain[-1],
        "auc_gain_tuned": points[by_gain[-1]]["auc_gain_tuned"]["mean"],
    }
    return found


def _cell(found: dict[str, float] | None) -> str:
    if found is None:
        return "—"
    return f"{found['mean']:+.3f} [{found['low']:+.3f}, {found['high']:+.3f}]"


def curve(args: argparse.Namespace) -> None:
    out: Path = args.out
    kept = load(out)
    training = TrainingSet.load(args.training) if args.training else shipped_training_set()
    if training is None:
        sys.exit("this installation ships no training claims for the verifier: give --training")
    if (
        training.prompt_version != SUPPORTED.version
        or kept.plan.get("prompt_version", SUPPORTED.version) != SUPPORTED.version
    ):
        sys.exit(
            f"the training claims or the reading were made with another version of {SUPPORTED.name}"
        )
    sizes = sorted(int(n) for n in args.sizes.split(","))
    claims = kept.claims
    read = Counter(claims.sources.tolist())
    print(f"\n## 1. What was read ({out})\n")
    print("| source | read | supported | groups | unscored | measured |")
    print("|---|---|---|---|---|---|")
    sources = sorted(set(read) | set(kept.unscored))
    measured = [s for s in sources if read[s] >= args.min_read]
    for source in sources:
        rows = claims.sources == source
        groups = len(set(claims.groups[rows].tolist()))
        state = "yes" if source in measured else f"not yet (fewer than {args.min_read} read)"
        print(
            f"| {source} | {read[source]} | {int(claims.truth[rows].sum())} | {groups} | "
            f"{kept.unscored[source]} | {state} |"
        )
    for source, count in sorted(kept.plan.get("unread", {}).items()):
        print(f"| {source} | 0 | | | | never: {count} claims in all |")
    store = DrawStore(out / "draws.jsonl")
    trained = training_digest(training)
    points: dict[str, dict[str, dict[str, Any]]] = {}
    print(f"\n## 2. Each source as a team: N labels drawn by group, {args.draws} draws\n")
    print(
        "| source | N | rest | ROC AUC zero-shot | ROC AUC gain, head | tune wrote | ROC AUC gain "
        "as tune decides | bal. acc. gain, head | bal. acc. gain as tune decides |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    started = time.perf_counter()
    for source in measured:
        wanted = [n for n in sizes if read[source] >= n + args.min_rest]
        points[source] = {}
        for n, draws in source_draws(
            claims, source, training, wanted, args.draws, args.seed, store, trained, args.workers
        ):
            if not draws:
                continue
            found = point(draws, args.seed)
            points[source][str(n)] = found
            refused = found["draws"] - found["written"]
            print(
                f"| {source} | {n} | {found['rest']} | {found['zero_shot_auc']:.3f} | "
                f"{_cell(found['auc_gain'])} | {found['written']} of {found['draws']}"
                f"{f' ({refused} refused)' if refused else ''} | "
                f"{_cell(found['auc_gain_tuned'])} | "
                f"{_cell(found['balanced_gain'])} | {_cell(found['balanced_gain_tuned'])} |",
                flush=True,
            )
        for n in sizes:
            if n not in wanted:
                print(
                    f"| {source} | {n} | | | not measured: fewer than {n + args.min_rest} "
                    "read | | | | |"
                )
    mean: dict[str, Any] = {}
    for n in sizes:
        at = {source: found[str(n)] for source, found in points.items() if str(n) in found}
        if at:
            mean[str(n)] = over_sources(at, args.seed)
    print("\n## 3. Over the sources measured (each source's mean; interval over the sources)\n")
    print(
        "| N | sources | tune wrote | ROC AUC gain, head | ROC AUC gain as tune decides | "
        "bal. acc. gain, head | bal. acc. gain as tune decides |"
    )
    print("|---|---|---|---|---|---|---|")
    for n, found in mean.items():
        print(
            f"| {n} | {found['sources']} | {found['written']} of {found['draws']} | "
            f"{_cell(found['auc_gain'])} | {_cell(found['auc_gain_tuned'])} | "
            f"{_cell(found['balanced_gain'])} | {_cell(found['balanced_gain_tuned'])} |"
        )
    breadth = out_of_source(training, claims, measured)
    not_measured = {s: read[s] for s in sources if s not in measured}
    if not_measured:
        print(
            "\nnot yet measured (fewer than "
            f"{args.min_read} claims read): "
            + ", ".join(f"{s} ({count})" for s, count in sorted(not_measured.items()))
        )
    record = {
        "format": FORMAT,
        "figure": (
            "gain over the zero-shot read on the rest of a source, of the verifier refitted on "
            "the shipped training claims of the other sources and N of the source's own, drawn "
            "by group; 'tuned': a head tune would not write counts as no gain"
        ),
        "judge": kept.plan.get("judge"),
        "sizes": sizes,
        "draws": args.draws,
        "min_read": args.min_read,
        "training": f"{len(training.claims)} claims of "
        f"{len(set(training.claims.sources.tolist()))} sources",
        "sources": {s: {"read": read[s], "points": points[s]} for s in measured},
        "not_measured": not_measured,
        "mean": mean,
        "out_of_source": breadth,
    }
    (out / "curve.json").write_text(json.dumps(record, indent=1) + "\n")
    if args.chart:
        args.chart.write_text(chart(record))
        print(f"chart: {args.chart}")
    print(f"\nwritten: {out / 'curve.json'} ({time.perf_counter() - started:.0f} s)")


CHARTED = {"auc_gain": "the head refitted", "auc_gain_tuned": "as tune decides"}
"""The figures the chart draws, by the name its legend gives them."""


def chart(record: dict[str, Any]) -> str:
    """The curve as an SVG (needs ``ragmeter[report]``): the mean ROC AUC gain over the sources
    with its interval, of the head refitted and as tune decides (a head it refuses counts as no
    gain), and each measured source's head gain as a thin line."""
    from ragmeter.viewer.charts import altair, vl_convert

    alt = altair()
    lines = [
        {"labels": int(n), "source": source, "gain": found["auc_gain"]["mean"]}
        for source, measured in record["sources"].items()
        for n, found in measured["points"].items()
    ]
    means = [
        {"labels": int(n), "figure": named, **(found[figure] or {})}  # None: not measured
        for n, found in record["mean"].items()
        for figure, named in CHARTED.items()
    ]
    x = alt.X("labels:Q", scale=alt.Scale(type="log"), title="labelled claims of one's own")
    color = alt.Color("figure:N", title=None, legend=alt.Legend(orient="bottom"))
    mean = alt.Chart(alt.Data(values=means))
    layers = alt.layer(
        alt.Chart(alt.Data(values=lines))
        .mark_line(strokeWidth=1, opacity=0.3, color="#888")
        .encode(x, alt.Y("gain:Q", title="ROC AUC gain over zero-shot"), alt.Detail("source:N")),
        mean.mark_rule(strokeWidth=2).encode(x, y="low:Q", y2="high:Q", color=color),
        mean.mark_line(strokeWidth=3, point=True).encode(x, y="mean:Q", color=color),
        alt.Chart(alt.Data(values=[{"zero": 0}]))
        .mark_rule(color="#999", strokeDash=[4, 3])
        .encode(y="zero:Q"),
    ).properties(width=420, height=260, title="What a team's own claim labels buy")
    return str(vl_convert().vegalite_to_svg(layers.to_dict()))


def out_of_source(
    training: TrainingSet, claims: LabelledClaims, measured: Sequence[str]
) -> dict[str, Any]:
    """The default-head question with this breadth: a head fitted (in the shipped training set's
    projection and recipe) on every claim read of the other sources, read on each measured
    source, beside the zero-shot read; and whether it meets ``DEFAULT_RULE``."""
    print("\n## 4. Leave one source out: a head fitted on every other source read\n")
    if not measured:
        print("no source measured yet")
        return {}
    print("| source | claims | ROC AUC zero-shot | ROC AUC head | gain |")
    print("|---|---|---|---|---|")
    left = leave_one_source_out(training.project(claims), training.recipe(), measured)
    for f in left.figures:
        zero, head, gain = (
            "undefined" if v is None else f"{v:{form}}"
            for v, form in ((f.zero_shot_auc, ".3f"), (f.head_auc, ".3f"), (f.gain, "+.3f"))
        )
        print(f"| {f.source} | {f.claims} | {zero} | {head} | {gain} |")
    least_mean, least_worst = DEFAULT_RULE
    meets = left.mean_gain() >= least_mean and left.worst_gain() >= least_worst
    print(
        f"\nmean gain {left.mean_gain():+.3f}, worst {left.worst_gain():+.3f}: "
        f"{'meets' if meets else 'does not meet'} the rule for a default head (mean "
        f"{least_mean:+.2f}, none below {least_worst:+.2f})"
    )
    return {
        "sources": {f.source: f.gain for f in left.figures},
        "mean_gain": left.mean_gain(),
        "worst_gain": left.worst_gain(),
        "meets_default_rule": meets,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    reading = commands.add_parser("read", help="read the claims with the judge (resumable)")
    reading.add_argument("--out", type=Path, required=True)
    reading.add_argument("--judge", default="local")
    reading.add_argument("--judge-option", action="append", help="NAME=VALUE, as ragmeter's")
    reading.add_argument("--cache", help="the call cache file (default: the user's)")
    reading.add_argument("--no-cache", action="store_true")
    reading.add_argument("--data", type=Path, default=DATA, help="../shared/data's layout")
    reading.add_argument("--min-read", type=int, default=MIN_READ)
    reading.add_argument("--per-round", type=int, default=PER_ROUND)
    reading.add_argument("--block", type=int, default=BLOCK)
    reading.add_argument("--seed", type=int, default=0)
    reading.add_argument("--limit", type=int, help="read at most this many claims, then stop")
    reading.add_argument(
        "--up-to",
        type=int,
        help="read no source beyond this many claims (whole groups): every source to it first",
    )
    curving = commands.add_parser("curve", help="the curve from what was read (no judge)")
    curving.add_argument("--out", type=Path, required=True)
    curving.add_argument("--training", type=Path, help="a verifier_training.npz (default: shipped)")
    curving.add_argument("--sizes", default=",".join(map(str, SIZES)))
    curving.add_argument("--draws", type=int, default=DRAWS)
    curving.add_argument("--min-read", type=int, default=MIN_READ)
    curving.add_argument("--min-rest", type=int, default=MIN_REST)
    curving.add_argument("--seed", type=int, default=0)
    curving.add_argument("--chart", type=Path, help="write the curve as an SVG here")
    curving.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes refitting draws"
    )
    args = parser.parse_args()
    if args.command == "read":
        try:
            read(args)
        except KeyboardInterrupt:
            print(f"stopped; the same command resumes where it stopped ({args.out})")
    else:
        curve(args)


if __name__ == "__main__":
    main()
