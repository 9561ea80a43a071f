"""The claim verifier in five languages against native speakers (MEMERAG), zero-shot.

    python bench/bench_languages.py ../shared/data/memerag --out runs/languages/memerag \\
        [--per-language 120] [--judge local]
    python bench/bench_languages.py --english FILE [--threshold 0.648] [--limit N]

MEMERAG's dev files (``LANG_dev.jsonl``, AttributionBench rows with ``language``) are read whole
questions at a time, the languages in turn, so a run stopped early holds about as much of each
language. Verdicts are kept in ``--out`` (resumable); nothing is fitted on the labels. Printed per
language, and per language and variant (``src_dataset``): rows, ROC AUC and balanced accuracy at
P(supported) 0.5, each with a 95 % interval from resampling questions, the unscored rows, the rows
whose passages were cut to the judge's budget, and the median seconds a claim took when judged.

``--english FILE`` checks that English figures hold where the evidence is now chosen: the rows of
an AttributionBench-format file whose references exceed ``MAX_REFERENCE_TOKENS`` are verified
twice, shown the references' first 6,000 characters (as before) and the chosen sentences (now),
and ROC AUC and accuracy at ``--threshold`` are printed for both. The other rows are shown what
they were shown before.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np

from ragmeter.claims import SUPPORTED
from ragmeter.judges.registry import resolve_models
from ragmeter.meta.attribution import (
    Claim,
    Verdict,
    load_attribution,
    references_context,
    statement_for,
    verify_claims,
)
from ragmeter.score import Score
from ragmeter.session import JudgeSession
from ragmeter.stats import (
    balanced_accuracy,
    percentile_interval,
    resample_counts,
    roc_auc,
    weighted_roc_auc,
)
from ragmeter.store import stored_payloads

LANGUAGES = ("en", "de", "es", "fr", "hi")
ROUNDS = 2000


def interleaved(folder: Path, per_language: int | None) -> list[Claim]:
    """Each language's claims by whole questions in a fixed shuffled order (up to
    ``per_language`` rows: the files list one variant's questions before the other's), the
    languages taking turns question by question."""
    queues = []
    for language in LANGUAGES:
        by_group: dict[str, list[Claim]] = defaultdict(list)
        for claim in load_attribution(folder / f"{language}_dev.jsonl"):
            by_group[claim.group].append(claim)
        order = list(by_group.values())
        random.Random(0).shuffle(order)
        groups, taken = [], 0
        for claims in order:
            if per_language is not None and taken >= per_language:
                break
            groups.append(claims)
            taken += len(claims)
        queues.append(groups)
    out = []
    for turn in range(max(len(q) for q in queues)):
        for groups in queues:
            if turn < len(groups):
                out.extend(groups[turn])
    return out


def figures(claims: list[Claim], verdicts: list[Verdict]) -> dict[str, object]:
    """ROC AUC and balanced accuracy with intervals over questions, for the scored rows."""
    rows = [(c, v) for c, v in zip(claims, verdicts, strict=True) if v.p_supported is not None]
    truth = np.array([v.label for _, v in rows])
    p = np.array([v.p_supported for _, v in rows], dtype=float)
    groups = sorted({c.group for c, _ in rows})
    index = {g: i for i, g in enumerate(groups)}
    member = np.array([index[c.group] for c, _ in rows])
    weights = resample_counts(len(groups), rounds=ROUNDS)[:, member]
    auc_low, auc_high = percentile_interval(weighted_roc_auc(truth, p, weights)[:, None])
    accuracies = []
    for row in weights:
        positive, negative = (row * truth).sum(), (row * ~truth).sum()
        if positive and negative:
            hit = (p >= 0.5) == truth
            accuracies.append(
                0.5
                * ((row * (hit & truth)).sum() / positive + (row * (hit & ~truth)).sum() / negative)
            )
    acc_low, acc_high = percentile_interval(np.array(accuracies)[:, None])
    seconds = [v.seconds for _, v in rows if v.seconds]
    return {
        "rows": len(claims),
        "questions": len(groups),
        "unscored": len(claims) - len(rows),
        "cut": sum(v.truncated for v in verdicts),
        "roc_auc": roc_auc(truth, p),
        "roc_auc_95": [float(auc_low[0]), float(auc_high[0])],
        "balanced_accuracy": balanced_accuracy(truth, p >= 0.5),
        "balanced_accuracy_95": [float(acc_low[0]), float(acc_high[0])],
        "median_seconds": float(np.median(seconds)) if seconds else None,
    }


def _line(name: str, f: dict[str, object]) -> str:
    auc = f["roc_auc"]
    return (
        f"{name:<18} {f['rows']:>5} {f['questions']:>5}  "
        f"{'—' if auc is None else f'{auc:.3f}'} "
        f"[{f['roc_auc_95'][0]:.2f}, {f['roc_auc_95'][1]:.2f}]  "
        f"{f['balanced_accuracy']:.3f} [{f['balanced_accuracy_95'][0]:.2f}, "
        f"{f['balanced_accuracy_95'][1]:.2f}]  {f['unscored']:>3} {f['cut']:>4}  "
        f"{f['median_seconds'] or 0:.1f}"
    )


OLD_CUT = 6000
"""Characters of the references shown before evidence was chosen."""


def english_check(path: Path, judge_spec: str, threshold: float, limit: int | None) -> None:
    """The rows of ``path`` whose references are cut (the first ``limit``), verified as before
    and as now."""
    judge, _ = resolve_models(judge_spec, None, cache=True, needs_embedder=False)
    cut = [c for c in load_attribution(path) if references_context(c, c.claim, judge).left_out]
    cut = cut[:limit]
    before, after = [], []
    for claim in cut:
        statement = statement_for(claim, True)
        for shown, kept in (
            ("\n\n".join(claim.references)[:OLD_CUT], before),
            (references_context(claim, statement, judge).text, after),
        ):
            session = JudgeSession(judge)
            kept.append(session.ask_yes_no(SUPPORTED, {"context": shown, "statement": statement}))
    truth = np.array([c.label for c in cut])
    for name, p in (("first 6,000 characters", before), ("chosen sentences", after)):
        p = np.array(p)
        accuracy = float(((p >= threshold) == truth).mean())
        auc = roc_auc(truth, p)  # None where the rows hold one label only
        print(
            f"{path.name}: {len(cut)} rows cut, {name}: ROC AUC "
            f"{'—' if auc is None else f'{auc:.3f}'}, "
            f"accuracy at {threshold} {accuracy:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, nargs="?", help="MEMERAG's dev files")
    parser.add_argument("--english", type=Path, help="an English claim file to check instead")
    parser.add_argument("--threshold", type=float, default=0.648)
    parser.add_argument("--limit", type=int, default=None, help="with --english: rows checked")
    parser.add_argument("--out", type=Path, default=Path("runs/languages/memerag"))
    parser.add_argument("--per-language", type=int, default=None, help="rows a language, about")
    parser.add_argument("--judge", default="local")
    parser.add_argument("--no-judge", action="store_true", help="report what the folder holds")
    args = parser.parse_args()
    if args.english:
        english_check(args.english, args.judge, args.threshold, args.limit)
        return
    claims = interleaved(args.folder, args.per_language)
    if args.no_judge:
        done = _stored(args.out, claims)
        claims = [c for c in claims if c.id in done]
        verdicts = [done[c.id] for c in claims]
    else:
        verdicts = verify_claims(claims, args.judge, out_dir=args.out, cache=False)
    by: dict[str, list[int]] = defaultdict(list)
    for position, claim in enumerate(claims):
        by[claim.language].append(position)
        by[f"{claim.language} {claim.source}"].append(position)
    print(
        f"{'':<18} {'rows':>5} {'quest':>5}  ROC AUC [95%]       bal. acc. [95%]     "
        "uns  cut  s/claim"
    )
    table = {}
    for name in sorted(by, key=lambda n: (LANGUAGES.index(n.split()[0]), n)):
        picked = by[name]
        table[name] = figures([claims[i] for i in picked], [verdicts[i] for i in picked])
        print(_line(name, table[name]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "languages.json").write_text(json.dumps(table, indent=2))


def _stored(out: Path, claims: list[Claim]) -> dict[str, Verdict]:
    """The verdicts ``out`` holds for ``claims`` (by the id of the claim), without a judge."""
    payloads = stored_payloads(out / "verdicts.sqlite")
    found = {s.sample_id: s for s in map(Score.model_validate_json, filter(None, payloads))}
    labels = {c.id: c.label for c in claims}
    return {
        i: Verdict(
            id=i,
            label=labels[i],
            p_supported=s.value,
            unscored_reason=s.unscored_reason,
            left_out=s.explanation.get("left_out"),
            seconds=s.seconds,
        )
        for i, s in found.items()
        if i in labels
    }


if __name__ == "__main__":
    main()
