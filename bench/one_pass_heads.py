"""Every Yes/No verdict of a sample read at tags inside one pass, taught by the separate layout.

    python bench/one_pass_heads.py ../shared/data/wikieval/wikieval_dev.jsonl --out runs/one-pass

The one pass shows the question; the context one numbered sentence a line, each followed by
"Needed:"; the answer one statement a line, each followed by "Supported:"; and last "Addresses
every part of the question:". It is read once on the local judge's engine, and at each tag the
zero-shot P(Yes) and the hidden state (``l_out-16``) are kept: every verdict of the three default
metrics from one read of the sample, but for whether the answer commits.

Three steps, each resumable (its results are kept under ``--out``):

1. **teacher**: the separate layout's own verdicts on WikiEval's pairs (faithfulness's
   P(supported) per statement, context relevance's P(needed) per sentence, answer relevance's
   P(complete)), with ``evaluate`` (the call cache answers what was asked before);
2. **one pass** over each distinct sample, with the seconds it took;
3. **heads**: for each tag a logistic head over the state and the zero-shot logit
   (``ragmeter.heads.fitting``), taught by the teacher's verdicts (P >= 0.5); every figure is
   out of fold, five folds by question, so no head reads a question it learned from.

Prints, per tag, how often the zero-shot tag and the head agree with the teacher's verdicts,
and the WikiEval pair agreement of the separate layout, of its verdicts alone, of the zero-shot
tags and of the heads (the metric's value from the verdicts: faithfulness their mean, context
relevance the share at 0.5 without the repeat checks, answer relevance P(complete) without the
commitment check). Then the head falling back to the separate layout where it is unsure: for
each band of the head's P(Yes), the share of verdicts and of samples that would be asked
again, and the agreement of the mix; for context relevance also each scored with the separate
layout's repeat checks (``ContextRelevance.from_needed``). With ``--time N`` it also times, on
the first N samples with no cache, the three default metrics in the separate layout against
the one pass, and against the one pass with the repeat checks, in the same process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from one_read_positions import Tags  # the tags' P(Yes), read from the engine's logits

from ragmeter import evaluate
from ragmeter.claims import sort_claims
from ragmeter.evaluate import DEFAULT_METRICS
from ragmeter.heads.fitting import Design, Fitter, Verdicts
from ragmeter.judges.cache import CachedJudge, CallCache
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.registry import get_judge
from ragmeter.meta.pairs import Pair
from ragmeter.meta.wikieval import load_wikieval
from ragmeter.metrics import metric_by_name
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession
from ragmeter.text import passage_sentences, split_sentences

STATE = "l_out-16"
INSTRUCTION = (
    "You judge one exchange of a question-answering assistant. The context follows the "
    "question, one numbered sentence a line; after each, 'Needed:' asks whether the sentence "
    "states information that the answer to the question must use (a sentence merely about the "
    "same subject is not needed). The answer follows, one numbered statement a line; after "
    "each, 'Supported:' asks whether the context states it or directly implies it. Last, say "
    "whether the answer addresses every part of the question. Answer each with Yes or No."
)
TAGS = {
    "context_relevance": "Needed:",
    "faithfulness": "Supported:",
    "answer_relevance": "Addresses every part of the question:",
}
# Where the head's P(Yes) falls inside a band, the separate layout's verdict is asked instead.
FALLBACK_BANDS = ((0.3, 0.7), (0.2, 0.8), (0.1, 0.9), (0.05, 0.95))
METRIC_OF_PAIRS = {
    "faithfulness": "faithfulness",
    "answer_relevance": "answer_relevance",
    "context_relevance": "context_relevance",
}


def statements(sample: Sample) -> list[str]:
    """As faithfulness takes them: the answer's sentences that make a claim, each once."""
    return sort_claims(split_sentences(sample.answer), sample.question)[0]


class OnePass(Tags):
    """The sample read once with its tags, on the local judge's engine (ChatML)."""

    def read(self, sample: Sample) -> dict[str, np.ndarray | float]:
        """Per tag kind, zero-shot P(Yes) and states in order; the seconds and tokens read."""
        tokenize = self.engine.tokenize
        tokens = tokenize(
            f"<|im_start|>system\n{INSTRUCTION}<|im_end|>\n<|im_start|>user\n"
            f"Question: {sample.question}\n\nContext:\n"
        )
        kinds: list[str] = []
        positions: list[int] = []

        def tag(kind: str, text: str) -> None:
            nonlocal tokens
            tokens += tokenize(text + TAGS[kind])
            kinds.append(kind)
            positions.append(len(tokens) - 1)

        for number, sentence in enumerate(passage_sentences(sample.contexts), 1):
            tag("context_relevance", f"[{number}] {sentence}\n")
            tokens += tokenize("\n")
        tokens += tokenize("\nAnswer:\n")
        for number, statement in enumerate(statements(sample), 1):
            tag("faithfulness", f"({number}) {statement}\n")
            tokens += tokenize("\n")
        tag("answer_relevance", "\n")
        tokens += tokenize("<|im_end|>\n")
        clock = time.perf_counter()
        probes = self.engine.read_at(tokens, positions)
        seconds = time.perf_counter() - clock
        out: dict[str, np.ndarray | float] = {"seconds": seconds, "read": probes[0].read}
        for kind in TAGS:
            mine = [p for p, k in zip(probes, kinds, strict=True) if k == kind]
            out[f"{kind}.p"] = np.array([self.p_yes(p.logits) for p in mine])
            out[f"{kind}.states"] = np.array([p.states[STATE] for p in mine], dtype=np.float32)
        return out


def distinct(pairs: list[Pair]) -> dict[str, Sample]:
    samples: dict[str, Sample] = {}
    for pair in pairs:
        for sample in (pair.preferred, pair.rejected):
            samples.setdefault(sample.key, sample)
    return samples


def teacher(pairs: list[Pair], judge: LocalJudge, out: Path) -> dict[str, dict[str, list[float]]]:
    """Per dimension, per sample key, the separate layout's verdicts and (under "value") its
    score, from ``evaluate`` on that dimension's pairs (resumable in ``out``)."""
    found: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for dimension, metric in METRIC_OF_PAIRS.items():
        samples = list(distinct([p for p in pairs if p.dimension == dimension]).values())
        result = evaluate(samples, [metric], judge=judge, out_dir=out / "teacher" / dimension)
        for score in result.scores:
            found[dimension][score.sample_id] = verdicts_of(metric, score.explanation)
            found[dimension][score.sample_id + "/value"] = [score.value]
    return found


def verdicts_of(metric: str, explanation: dict) -> list[float]:
    if metric == "faithfulness":
        return [s["p_supported"] for s in explanation.get("statements", [])]
    if metric == "context_relevance":
        return list(explanation["p_needed"])
    # answer relevance: an answer that does not commit was never asked whether it is complete
    return [] if explanation.get("noncommittal") else [explanation["p_complete"]]


def passes(samples: dict[str, Sample], reader: OnePass, out: Path) -> dict[str, dict]:
    folder = out / "pass"
    folder.mkdir(parents=True, exist_ok=True)
    found = {}
    for key, sample in samples.items():
        path = folder / f"{key}.npz"
        if not path.exists():
            read = reader.read(sample)
            np.savez(path, **read)
            print(f"one pass {key}: {read['seconds']:.1f} s, {read['read']} tokens", flush=True)
        with np.load(path) as kept:
            found[key] = {name: kept[name] for name in kept.files}
    return found


@dataclass
class Rows:
    """One tag kind's verdicts over the samples that have a teacher verdict for each."""

    keys: list[str]
    question: list[str]
    zero_shot: np.ndarray
    states: np.ndarray
    taught: np.ndarray  # the teacher's P(Yes)
    labels: np.ndarray  # the teacher's verdicts (P >= 0.5)

    def by_sample(self, values: np.ndarray) -> dict[str, np.ndarray]:
        """``values`` (one a row) split by sample key."""
        keys = np.array(self.keys)
        return {key: values[keys == key] for key in dict.fromkeys(self.keys)}


def rows_of(
    kind: str, taught: dict[str, list[float]], read: dict[str, dict], question_of: dict[str, str]
) -> Rows:
    keys, questions, zero, states, taught_p = [], [], [], [], []
    for key, verdicts in taught.items():
        if key.endswith("/value"):
            continue
        p, s = read[key][f"{kind}.p"], read[key][f"{kind}.states"]
        if kind == "answer_relevance" and not verdicts:
            continue
        if len(verdicts) != len(p):
            raise SystemExit(f"{kind} {key}: {len(verdicts)} teacher verdicts, {len(p)} tags")
        keys += [key] * len(p)
        questions += [question_of[key]] * len(p)
        zero.append(p)
        states.append(s)
        taught_p.append(np.array(verdicts))
    teacher_p = np.concatenate(taught_p)
    return Rows(
        keys,
        questions,
        np.concatenate(zero),
        np.concatenate(states),
        teacher_p,
        (teacher_p >= 0.5).astype(float),
    )


def out_of_fold(kind: str, rows: Rows) -> np.ndarray:
    verdicts = Verdicts(rows.zero_shot, {STATE: rows.states})

    def log_likelihood(index: np.ndarray, predicted: np.ndarray) -> float:
        y, p = rows.labels[index], np.clip(predicted, 1e-6, 1 - 1e-6)
        return float(np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))

    design = Design(kind, "bench", (STATE,), "the separate layout's verdicts on WikiEval dev")
    fitter = Fitter(
        design, verdicts, labels=rows.labels, score=log_likelihood, together=rows.question
    )
    return fitter.out_of_fold()


AGGREGATE: dict[str, Callable[[np.ndarray], float]] = {
    "faithfulness": lambda p: float(np.mean(p)) if len(p) else float("nan"),
    "context_relevance": lambda p: float(np.mean(p >= 0.5)),
    "answer_relevance": lambda p: float(p[0]),
}


def agreement(pairs: list[Pair], value: Callable[[Sample], float]) -> float:
    total = 0.0
    for pair in pairs:
        preferred, rejected = value(pair.preferred), value(pair.rejected)
        total += 1.0 if preferred > rejected else 0.5 if preferred == rejected else 0.0
    return total / len(pairs)


class RepeatChecks:
    """Context relevance from P(needed) read elsewhere, with the separate layout's repeat
    checks asked through the metric itself; counts the checks and their seconds."""

    label = "with the separate layout's repeat checks"

    def __init__(self, samples: dict[str, Sample], judge: LocalJudge, cache: bool = True) -> None:
        self.samples = samples
        self.metric = metric_by_name("context_relevance")
        self.session = JudgeSession(CachedJudge(judge, CallCache()) if cache else judge)
        self.scored = 0
        self.seconds = 0.0

    def __call__(self, key: str, p_needed: np.ndarray) -> float:
        """Context relevance from these P(needed), asking the repeat checks they call for."""
        clock = time.perf_counter()
        value, _ = self.metric.from_needed(self.samples[key], p_needed.tolist(), self.session)
        self.seconds += time.perf_counter() - clock
        self.scored += 1
        return value

    def asked(self) -> str:
        calls = self.session.exchanges
        fresh = sum(not e.cached for e in calls)
        return (
            f"repeat checks: {len(calls) / self.scored:.1f} a scored context, {fresh} of "
            f"{len(calls)} not cached, {self.seconds:.0f} s in all"
        )


def measure(
    kind: str,
    pairs: list[Pair],
    taught: dict[str, list[float]],
    read: dict[str, dict],
    question_of: dict[str, str],
    rescore: RepeatChecks | None = None,
) -> dict:
    """One tag kind's verdict and pair agreement: zero-shot, head, and the head falling back
    to the separate layout's verdict where it is unsure; printed and returned. ``rescore``
    adds the pair agreement of each mix scored by it."""
    rows = rows_of(kind, taught, read, question_of)
    predicted = out_of_fold(kind, rows)
    zero_ok = np.mean((rows.zero_shot >= 0.5) == rows.labels)
    head_ok = np.mean((predicted >= 0.5) == rows.labels)
    print(
        f"{kind}: {len(rows.labels)} verdicts, teacher Yes {rows.labels.mean():.2f}; agree "
        f"with the teacher: zero-shot tags {zero_ok:.2f}, head (out of fold) {head_ok:.2f}"
    )
    pairs = [p for p in pairs if p.dimension == kind]

    def pair_agreement(verdicts: np.ndarray, rescored: RepeatChecks | None = None) -> float:
        """The pairs' agreement with each sample's value from its verdicts (by ``rescored``
        where given); a sample with none (an answer that does not commit) scores 0."""
        found = rows.by_sample(verdicts)

        def value(sample: Sample) -> float:
            if sample.key not in found:
                return 0.0
            if rescored:
                return rescored(sample.key, found[sample.key])
            return AGGREGATE[kind](found[sample.key])

        return agreement(pairs, value)

    figures = {
        "separate": agreement(pairs, lambda s: taught[s.key + "/value"][0]),
        # The separate layout's verdicts alone, without what the tags do not ask (context
        # relevance's repeat checks): the most the tags can reach.
        "separate_verdicts": pair_agreement(rows.taught),
        "zero_shot": pair_agreement(rows.zero_shot),
        "head": pair_agreement(predicted),
    }
    print(
        f"  WikiEval pairs ({len(pairs)}): separate {figures['separate']:.2f} (its verdicts "
        f"alone {figures['separate_verdicts']:.2f}), zero-shot tags {figures['zero_shot']:.2f}, "
        f"head {figures['head']:.2f}"
    )
    if rescore:
        figures["head_rescored"] = pair_agreement(predicted, rescore)
        print(f"  head, {rescore.label}: pairs {figures['head_rescored']:.2f}")
    fallback = []
    for low, high in FALLBACK_BANDS:
        unsure = (predicted > low) & (predicted < high)
        mixed = np.where(unsure, rows.taught, predicted)
        samples_unsure = len({key for key, u in zip(rows.keys, unsure, strict=True) if u})
        fallback.append(
            {
                "band": [low, high],
                "verdicts_asked": float(unsure.mean()),
                "samples_asked": samples_unsure,
                "agree": float(np.mean((mixed >= 0.5) == rows.labels)),
                "pairs": pair_agreement(mixed),
            }
        )
        rescored = ""
        if rescore:
            fallback[-1]["pairs_rescored"] = pair_agreement(mixed, rescore)
            rescored = f" ({rescore.label}: {fallback[-1]['pairs_rescored']:.2f})"
        print(
            f"  head unsure in ({low}, {high}), the separate verdict asked instead: "
            f"{unsure.mean():.2f} of verdicts, in {samples_unsure} of "
            f"{len(set(rows.keys))} samples; agree {fallback[-1]['agree']:.2f}, "
            f"pairs {fallback[-1]['pairs']:.2f}{rescored}"
        )
    return {
        "verdicts": len(rows.labels),
        "agree_zero_shot": float(zero_ok),
        "agree_head": float(head_ok),
        "pairs": figures,
        "fallback": fallback,
    }


def timed(samples: list[Sample], judge: LocalJudge, reader: OnePass) -> None:
    """The three default metrics in the separate layout, with no cache, against the one pass
    and the repeat checks the separate layout's P(needed) call for, on the same samples in the
    same process."""
    metrics = [metric_by_name(name) for name in DEFAULT_METRICS]
    with tempfile.TemporaryDirectory() as scratch:
        clock = time.perf_counter()
        result = evaluate(samples, metrics, judge=judge, cache=False, out_dir=Path(scratch) / "run")
        separate = (time.perf_counter() - clock) / len(samples)
        needed = {
            score.sample_id: score.explanation["p_needed"]
            for score in result.scores  # read from the run's store, so inside its folder
            if score.metric == "context_relevance" and score.explanation
        }
    clock = time.perf_counter()
    for sample in samples:
        reader.read(sample)
    one = (time.perf_counter() - clock) / len(samples)
    checks = RepeatChecks({s.key: s for s in samples}, judge, cache=False)
    for key, p_needed in needed.items():
        checks(key, np.array(p_needed))
    both = one + checks.seconds / len(samples)
    print(
        f"timed on {len(samples)} samples: separate layout, three metrics {separate:.1f} s a "
        f"sample ({60 / separate:.2f} a minute); one pass {one:.1f} s ({60 / one:.2f} a minute,"
        f" {separate / one:.2f}x); one pass and the repeat checks {both:.1f} s "
        f"({60 / both:.2f} a minute, {separate / both:.2f}x; {checks.asked()})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", type=Path, help="WikiEval rows or pair records")
    parser.add_argument("--out", type=Path, default=Path("runs/one-pass"))
    parser.add_argument("--time", type=int, default=0, help="time the first N samples")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--judge", default="local", help="a judge with an engine to read at")
    args = parser.parse_args()
    pairs = load_wikieval(args.data)
    questions = list(dict.fromkeys(p.id for p in pairs))[: args.limit]
    pairs = [p for p in pairs if p.id in questions]
    judge = get_judge(args.judge)
    if not hasattr(judge, "_engine"):
        parser.error(f"{args.judge}: the tags are read on a judge's engine, as local's")
    reader = OnePass(judge)
    samples = distinct(pairs)
    question_of = {key: sample.question for key, sample in samples.items()}
    read = passes(samples, reader, args.out)
    taught = teacher(pairs, judge, args.out)
    seconds = [float(r["seconds"]) for r in read.values()]
    tokens = [int(r["read"]) for r in read.values()]
    print(
        f"one pass: {len(read)} samples, median {statistics.median(seconds):.1f} s, "
        f"{statistics.median(tokens):.0f} tokens read"
    )
    rescore = {"context_relevance": RepeatChecks(samples, judge)}
    report = {
        kind: measure(kind, pairs, taught[kind], read, question_of, rescore.get(kind))
        for kind in TAGS
    }
    print(rescore["context_relevance"].asked())
    (args.out / "report.json").write_text(json.dumps(report, indent=2))
    if args.time:
        timed(list(samples.values())[: args.time], judge, reader)


if __name__ == "__main__":
    main()
