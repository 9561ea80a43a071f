"""``ragmeter tune``: heads fitted on a run's kept states and a team's labels, written only where
they beat the zero-shot read out of fold clearly (the gain's 95 % interval above zero)."""

import hashlib
import json
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.claims import SUPPORTED
from ragmeter.cli.main import app
from ragmeter.cli.tune import _short_of
from ragmeter.heads.fitting import Design, Verdicts
from ragmeter.heads.tuning import GainInterval, team_weights
from ragmeter.heads.verifier import LabelledClaims, Recipe, TrainingSet
from ragmeter.judges.fake import FakeJudge
from ragmeter.judges.heads import Heads
from ragmeter.meta.attribution import load_attribution, verify_claims

from .conftest import yes_no

runner = CliRunner()
STATEMENT = re.compile(r"<statement>\n(.*?)\n</statement>", re.S)


def _noise(text: str, salt: str) -> float:
    """A number in [0, 1) fixed by the text: deterministic stand-in for what a judge misreads."""
    return int(hashlib.sha256((salt + text).encode()).hexdigest()[:8], 16) / 2**32


class KnowingJudge(FakeJudge):
    """Its zero-shot read knows nothing (P(Yes) by hash); its state knows whether a statement
    says "right" (dimension 0), or nothing at all when ``informative`` is False. ``noise`` is
    how much of dimension 0 is noise rather than that signal (0.1: the signal stands out)."""

    states = ("l_out-16",)

    def __init__(self, informative: bool = True, noise: float = 0.1) -> None:
        super().__init__(responder=self._reply, model="knowing")
        self.informative = informative
        self.noise = noise

    def _reply(self, request):
        statement = STATEMENT.search(request.messages[-1].content).group(1)
        p_yes = 0.2 + 0.6 * _noise(statement, "p")
        signal = 1.0 if "right" in statement and self.informative else 0.0
        state = [signal + self.noise * _noise(statement, "s"), _noise(statement, "t")]
        return yes_no(p_yes, {"l_out-16": state})


def _samples(n: int = 30):
    samples, ratings = [], []
    for i in range(n):
        right = i % 4
        sentences = [f"Claim {i}-{k} is {'right' if k < right else 'wrong'}." for k in range(3)]
        samples.append(
            {"id": f"s{i}", "question": f"Q{i}?", "answer": " ".join(sentences), "contexts": ["C."]}
        )
        ratings.append({"id": f"s{i}", "faithfulness": 1 + right})
    return samples, ratings


def _run(tmp_path, judge):
    samples, ratings = _samples()
    out = tmp_path / "run"
    evaluate(samples, ["faithfulness"], judge=judge, cache=False, out_dir=out)
    labels = tmp_path / "ratings.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in ratings))
    return out, labels


def test_tune_writes_a_head_that_beats_the_zero_shot_read_and_evaluate_reads_with_it(tmp_path):
    out, labels = _run(tmp_path, KnowingJudge())
    result = runner.invoke(app, ["tune", str(out), str(labels), "--scale", "faithfulness=1-4"])
    assert result.exit_code == 0, result.output
    assert "written to" in result.output
    heads = Heads.load(out / "heads.json")
    head = heads.heads[SUPPORTED.name]
    assert (
        head.states == ("l_out-16",) and "faithfulness ratings of 30 samples" in head.learned_from
    )
    row = next(line for line in result.output.splitlines() if line.startswith("│ faithfulness"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    zero_shot, fitted = float(cells[6]), float(cells[7])
    assert fitted > 0.9 and fitted > zero_shot + 0.3
    # The heads file is what --judge-option heads=FILE reads.
    samples, _ = _samples()
    read = evaluate(
        samples[:4],
        ["faithfulness"],
        judge=KnowingJudge(),
        cache=False,
        judge_options={"heads": str(out / "heads.json")},
    )
    values = [s.value for s in read.scores]
    assert values == sorted(values) and values[3] - values[0] > 0.5  # 0 to 3 right claims


def _gain_cell(output: str) -> tuple[float, float, float]:
    """The gain and its interval as the table prints them: "+0.340 [-0.171, +0.786]"."""
    row = next(line for line in output.splitlines() if line.startswith("│ faithfulness"))
    cell = [c.strip() for c in row.strip("│").split("│")][8]
    gain, low, high = re.fullmatch(r"([-+][\d.]+) \[([-+][\d.]+), ([-+][\d.]+)\]", cell).groups()
    return float(gain), float(low), float(high)


def test_tune_refuses_a_head_that_does_not_beat_the_zero_shot_read(tmp_path):
    out, labels = _run(tmp_path, KnowingJudge(informative=False))
    command = ["tune", str(out), str(labels), "--scale", "faithfulness=1-4"]
    result = runner.invoke(app, command, terminal_width=250)
    assert result.exit_code == 1, result.output
    gain, low, high = _gain_cell(result.output)
    assert gain < 0 and low < 0 < high
    said = next(line for line in result.output.splitlines() if line.startswith("faithfulness:"))
    assert f"gain {gain:+.3f} over the zero-shot read out of fold" in said
    assert f"95 % interval [{low:+.3f}, {high:+.3f}] over 30 ratings" in said
    assert "not clearly above zero; not written" in said
    assert "The measured gain is not above zero, so no number of labels can be estimated" in said
    assert "no head clearly beat the zero-shot read out of fold: nothing written" in result.output
    assert not (out / "heads.json").exists()


def test_a_small_noisy_gain_is_refused_with_what_was_measured_and_the_labels_it_would_need(
    tmp_path,
):
    # The state's signal is buried under three times its size of noise: the head gains on the
    # zero-shot read out of fold, but on 30 ratings its interval still reaches below zero.
    out, labels = _run(tmp_path, KnowingJudge(noise=1 / 0.3))
    command = ["tune", str(out), str(labels), "--scale", "faithfulness=1-4"]
    result = runner.invoke(app, command, terminal_width=250)
    assert result.exit_code == 1, result.output
    assert not (out / "heads.json").exists()
    gain, low, high = _gain_cell(result.output)
    assert gain > 0.1 and low < 0 < high
    said = next(line for line in result.output.splitlines() if line.startswith("faithfulness:"))
    assert f"95 % interval [{low:+.3f}, {high:+.3f}] over 30 ratings: not clearly above" in said
    estimate = re.search(
        r"measured with 15, 23, 30 samples resampled, goes as ([\d.]+)/sqrt\(samples\); if the "
        r"gain stayed at ([-+][\d.]+), its interval would clear zero at about (\d+) ratings "
        r"\((\d+) more\)",
        said,
    )
    assert estimate, said
    assert said.count("An estimate from this run's own figures") == 1
    spread, stayed, needed, more = estimate.groups()
    assert float(stayed) == gain and int(needed) - 30 == int(more) > 0
    # (c / gain)^2 samples, from the printed (rounded) figures.
    assert int(needed) == pytest.approx((float(spread) / gain) ** 2, rel=0.05)
    # The interval at 30 is the curve's last point: its half-width is about c / sqrt(30).
    assert (high - low) / 2 == pytest.approx(float(spread) / 30**0.5, rel=0.25)
    # The figures docs/heads.md quotes from this run (seeded), and the line it quotes (-s).
    assert (gain, low, high, spread, needed) == (0.34, -0.171, 0.786, "2.60", "59")
    print(said)


def test_the_labels_needed_are_where_the_fitted_half_width_meets_the_gain():
    # Half-widths 1/sqrt(m) at m = 16 and 25: c = 1 exactly.
    interval = GainInterval(-0.1, 0.3, units=25, rows=25, half_widths={16: 0.25, 25: 0.2})
    assert interval.spread == pytest.approx(1.0) and not interval.clear
    assert interval.labels_needed(0.1) == 100  # (1 / 0.1)^2 samples
    assert interval.labels_needed(0.05) == 400
    assert interval.labels_needed(0.5) == 26  # already within reach: one more than now
    assert interval.labels_needed(0.0) is None and interval.labels_needed(-0.2) is None
    # Three labelled claims a sample: the samples needed, in claims; two significant figures.
    claims = GainInterval(-0.1, 0.3, units=25, rows=75, half_widths={16: 0.25, 25: 0.2})
    assert claims.labels_needed(0.1) == 300
    assert claims.labels_needed(0.03) == 3400  # 1111.1 samples, 3333.3 claims
    assert GainInterval(0.01, 0.3, units=25, rows=25).clear


def test_a_gain_no_resample_defined_is_said_without_an_interval():
    # Every resample left the figure undefined (one class, or one value, in each draw).
    undefined = GainInterval(math.nan, math.nan, units=6, rows=6, half_widths={6: math.nan})
    assert undefined.labels_needed(0.2) is None and not undefined.clear
    assert _short_of("faithfulness", 0.2, undefined, "ratings") == (
        "faithfulness: gain +0.200 over the zero-shot read out of fold; no resample of the 6 "
        "ratings defined its interval, so it is not clearly above zero; not written."
    )


def test_a_gain_from_fewer_than_five_groups_is_never_clear():
    # 25 claims of two documents: every resample draws from the same two, so the interval
    # lies above zero without saying anything of a third.
    two = GainInterval(0.05, 0.2, units=2, rows=25, half_widths={2: 0.075})
    assert not two.clear and GainInterval(0.05, 0.2, units=5, rows=25).clear
    assert _short_of("ours", 0.1, two, "labelled claims") == (
        "ours: gain +0.100 over the zero-shot read out of fold, from 25 labelled claims of 2 "
        "samples: fewer than 5 samples, too few to tell whether it holds; not written."
    )


def test_claim_labels_teach_the_head_verdict_by_verdict(tmp_path):
    out, _ = _run(tmp_path, KnowingJudge())
    samples, _ = _samples()
    claims = tmp_path / "claims.csv"
    lines = ["id,claim,supported"]
    for sample in samples:
        for sentence in sample["answer"].split(" Claim"):
            text = sentence if sentence.startswith("Claim") else "Claim" + sentence
            lines.append(f"{sample['id']},{text},{int('right' in text)}")
    claims.write_text("\n".join(lines) + "\n")
    command = ["tune", str(out), str(claims), "--out", str(tmp_path / "h.json")]
    result = runner.invoke(app, command, terminal_width=250)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("│ faithfulness"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[2:6] == ["claim labels", "90", "90", "ROC AUC"]
    # Dimension 0 of the state is 1 + noise / 10 for a right claim and noise / 10 for a wrong
    # one: out of fold the head ranks every right claim first.
    assert float(cells[7]) == 1.0 and float(cells[6]) < 0.75
    head = Heads.load(tmp_path / "h.json").heads[SUPPORTED.name]
    assert head.figures["out_of_fold"] == 1.0 and head.figures["rows"] == 90
    assert head.figures["figure"] == "ROC AUC" and head.figures["folds"] == 5
    # Written because the gain's interval, resampling the 30 samples (their claims together),
    # lies above zero; the head records it.
    interval = head.figures["gain_interval"]
    assert interval["samples"] == 30 and 0 < interval["low"] <= interval["high"]
    gain, low, _ = _gain_cell(result.output)
    assert gain == pytest.approx(1.0 - float(cells[6]), abs=1e-3) and low > 0


def test_claim_labels_of_one_kind_or_labelled_twice_otherwise_are_refused(tmp_path):
    out, _ = _run(tmp_path, KnowingJudge())
    claims = tmp_path / "claims.csv"
    wrong = [f"s{i},Claim {i}-{k} is wrong.,0\n" for i in range(0, 30, 4) for k in range(3)]
    claims.write_text("id,claim,supported\n" + "".join(wrong))
    result = runner.invoke(app, ["tune", str(out), str(claims)])
    assert result.exit_code == 2
    assert "a head needs claims of both kinds" in result.output
    claims.write_text("id,claim,supported\ns1,Claim 1-0 is right.,1\ns1,Claim 1-0 is right.,0\n")
    result = runner.invoke(app, ["tune", str(out), str(claims)])
    assert result.exit_code == 2
    assert "row 3, field 'supported': the claim is labelled otherwise in row 2" in result.output


def test_a_run_without_states_fits_nothing_and_says_why(tmp_path):
    class Remote(KnowingJudge):
        states = ()

        def _reply(self, request):
            return super()._reply(request).model_copy(update={"states": None})

    out, labels = _run(tmp_path, Remote())
    result = runner.invoke(app, ["tune", str(out), str(labels), "--scale", "faithfulness=1-4"])
    assert result.exit_code == 2, result.output
    assert "30 sample(s) left out, verdicts without the hidden states l_out-16" in result.output
    assert "no head could be fitted" in result.output


def test_bad_label_rows_are_named(tmp_path):
    out, _ = _run(tmp_path, KnowingJudge())
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        json.dumps({"id": "s1", "claim": "Claim 1-0 is right.", "supported": "maybe"})
        + "\n"
        + json.dumps({"id": "nope", "claim": "x", "supported": 1})
        + "\n"
    )
    result = runner.invoke(app, ["tune", str(out), str(claims)])
    assert result.exit_code == 2
    assert "row 1, field 'supported'" in result.output
    assert "row 2, field 'id'" in result.output


def _training_set(tmp_path) -> Path:
    """Shipped training claims of three sources: dimension 0 of the state says "right"."""
    parts = []
    for source in ["s1", "s2", "s3"]:
        truth = np.arange(40) % 2 == 0
        noise = np.array([_noise(f"{source}{i}", "t") for i in range(40)])
        state = np.column_stack([truth + 0.1 * noise, noise])
        zero = 0.2 + 0.6 * np.array([_noise(f"{source}{i}", "p") for i in range(40)])
        parts.append(
            LabelledClaims(
                Verdicts(zero, {"l_out-16": state}),
                truth,
                np.array([source] * 40, dtype=object),
                np.array([f"{source}-{i // 2}" for i in range(40)], dtype=object),
                [f"{source}-{i}" for i in range(40)],
            )
        )
    design = Design(SUPPORTED.name, SUPPORTED.version, ("l_out-16",), "", components=2)
    recipe = Recipe(design, "both", (0.1, 1.0))
    training = TrainingSet.build(LabelledClaims.join(parts), recipe, SUPPORTED.version)
    path = tmp_path / "training.npz"
    training.save(path)
    return path


def _team_claims(tmp_path, n: int = 30, source=None) -> tuple[Path, Path]:
    """A team's claims in AttributionBench's format, read by a meta attribution run; three a
    group, and ``source(group)`` in a ``source`` column where given."""
    rows = [
        {
            "question": "",
            "claim": f"Claim {i} is {'right' if i % 3 else 'wrong'}.",
            "references": [f"Reference {i}."],
            "attribution_label": "attributable" if i % 3 else "not attributable",
            "id": f"t{i}",
            "group": f"doc{i // 3}",
            **({"source": source(i // 3)} if source else {}),
        }
        for i in range(n)
    ]
    labels = tmp_path / "our_claims.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = tmp_path / "claims-run"
    verify_claims(load_attribution(labels), KnowingJudge(), out_dir=run, cache=False)
    return run, labels


def test_tune_refits_the_verifier_on_the_shipped_claims_and_a_teams_own(tmp_path, monkeypatch):
    training = TrainingSet.load(_training_set(tmp_path))
    monkeypatch.setattr("ragmeter.cli.tune.shipped_training_set", lambda: training)
    run, labels = _team_claims(tmp_path)
    command = ["tune", str(run), str(labels), "--out", str(tmp_path / "h.json")]
    result = runner.invoke(app, command, terminal_width=250)
    assert result.exit_code == 0, result.output
    rows = {
        cells[0]: cells
        for line in result.output.splitlines()
        if line.startswith("│")
        for cells in [[c.strip() for c in line.strip("│").split("│")]]
    }
    # Every source is left out in turn, the team's among them, named as such.
    assert {"s1", "s2", "s3", "our_claims (yours)"} <= set(rows)
    assert rows["our_claims (yours)"][1] == "30"
    # The zero-shot read is noise; the state knows: left out or not, the head ranks them all.
    assert float(rows["our_claims (yours)"][2]) < 0.8
    assert (
        float(rows["our_claims (yours)"][3]) == 1.0 and float(rows["our_claims (yours)"][4]) == 1.0
    )
    # Written: the gain's interval, resampling the team's ten groups of claims, is above zero.
    gain, low, _ = re.fullmatch(r"(\S+) \[(\S+), (\S+)\]", rows["our_claims (yours)"][5]).groups()
    assert float(gain) == pytest.approx(1.0 - float(rows["our_claims (yours)"][2]), abs=1e-3)
    assert float(low) > 0 and rows["s1"][5] == ""
    head = Heads.load(tmp_path / "h.json").heads[SUPPORTED.name]
    assert head.states == ("l_out-16",) and len(head.weights) == 2
    assert "30 of our_claims.jsonl" in head.learned_from
    # Written back over the full state, it reads a claim as the fitted projection did.
    states = {"l_out-16": np.array([1.05, 0.3])}, {"l_out-16": np.array([0.05, 0.3])}
    right, wrong = (head.logit(0.0, head.features(s)) for s in states)
    assert right > 1 and wrong < -1


def test_a_teams_claims_weigh_as_much_as_the_shipped_ones():
    def claims(sources: list[str], truth: list[bool]) -> LabelledClaims:
        n = len(truth)
        return LabelledClaims(
            Verdicts(np.full(n, 0.5), {}),
            np.array(truth),
            np.array(sources, dtype=object),
            np.array([f"g{i}" for i in range(n)], dtype=object),
            [f"c{i}" for i in range(n)],
        )

    shipped = claims(["s1"] * 4 + ["s2"] * 4, [True, True, False, False, True, False, False, False])
    mine = claims(["ours"] * 4, [True, False, False, False])
    # Shipped, each (source, label) cell weighs the same: s1's rows 1 each, s2's Yes 2 and its
    # Noes 2/3. The team's Yes weighs as much as its three Noes. Then the team's 4 rows weigh
    # as much as the shipped 8: 6 each side of 12, averaging 1.
    weights = team_weights(shipped, mine, "both")
    assert weights.tolist() == pytest.approx([0.75] * 4 + [1.5, 0.5, 0.5, 0.5, 3.0, 1.0, 1.0, 1.0])


def test_tune_on_claims_says_what_is_missing(tmp_path, monkeypatch):
    training = TrainingSet.load(_training_set(tmp_path))
    monkeypatch.setattr("ragmeter.cli.tune.shipped_training_set", lambda: training)
    _, labels = _team_claims(tmp_path)
    result = runner.invoke(app, ["tune", str(tmp_path / "nowhere"), str(labels)])
    assert result.exit_code == 2
    assert "not a meta attribution run; read the claims first" in result.output
    stale = replace(training, prompt_version="0ld")
    monkeypatch.setattr("ragmeter.cli.tune.shipped_training_set", lambda: stale)
    run, labels = _team_claims(tmp_path)
    result = runner.invoke(app, ["tune", str(run), str(labels)])
    assert result.exit_code == 2 and "version 0ld" in result.output


def _table_rows(output: str) -> dict[str, list[str]]:
    return {
        cells[0]: cells
        for line in output.splitlines()
        if line.startswith("│")
        for cells in [[c.strip() for c in line.strip("│").split("│")]]
    }


def test_a_teams_claims_are_one_source_though_a_column_names_five(tmp_path, monkeypatch):
    # 30 claims of 10 groups, their "source" column naming five generators of 2 groups each:
    # split, no part could show a clear gain (fewer than 5 groups); pooled, the 10 groups can.
    training = TrainingSet.load(_training_set(tmp_path))
    monkeypatch.setattr("ragmeter.cli.tune.shipped_training_set", lambda: training)
    run, labels = _team_claims(tmp_path, source=lambda group: f"gen{group % 5}")
    target = tmp_path / "h.json"
    command = ["tune", str(run), str(labels), "--out", str(target)]
    result = runner.invoke(app, command, terminal_width=250)
    assert result.exit_code == 0, result.output
    assert (
        "your 30 claims are read as one source, 'our_claims': their 'source' names 5 (--by "
        "source reads each as a source of its own)" in result.output
    )
    rows = _table_rows(result.output)
    assert rows["our_claims (yours)"][1] == "30"
    assert not any(name.startswith("gen") for name in rows)
    gain, low, _ = re.fullmatch(r"(\S+) \[(\S+), (\S+)\]", rows["our_claims (yours)"][5]).groups()
    assert float(gain) == pytest.approx(1.0 - float(rows["our_claims (yours)"][2]), abs=1e-3)
    assert float(low) > 0
    pooled = Heads.load(target).heads[SUPPORTED.name]
    assert "and 30 of our_claims.jsonl read as one source, weighing as much" in pooled.learned_from

    # Asked to split by it, every part is too thin: the same pooled fit, and why.
    target.unlink()
    result = runner.invoke(app, [*command, "--by", "source"], terminal_width=250)
    assert result.exit_code == 0, result.output
    assert (
        "--by source: each of the 5 parts has fewer than 5 groups of claims (gen0 2, gen1 2, "
        "gen2 2, gen3 2, gen4 2), too few to tell whether a gain holds in any; your 30 claims "
        "are read as one source, 'our_claims'" in result.output
    )
    assert _table_rows(result.output)["our_claims (yours)"] == rows["our_claims (yours)"]
    split = Heads.load(target).heads[SUPPORTED.name]
    assert split.learned_from == pooled.learned_from
    assert np.array_equal(split.weights, pooled.weights) and split.bias == pooled.bias


def test_by_splits_a_teams_claims_where_a_part_can_show_a_gain(tmp_path, monkeypatch):
    training = TrainingSet.load(_training_set(tmp_path))
    monkeypatch.setattr("ragmeter.cli.tune.shipped_training_set", lambda: training)
    run, labels = _team_claims(tmp_path, n=60, source=lambda group: "a" if group < 10 else "b")
    command = ["tune", str(run), str(labels), "--out", str(tmp_path / "h.json"), "--by", "source"]
    result = runner.invoke(app, command, terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "your 60 claims are read as 2 source(s) by their 'source': 'a', 'b'" in result.output
    rows = _table_rows(result.output)
    assert rows["a (yours)"][1] == rows["b (yours)"][1] == "30"
    assert "our_claims (yours)" not in rows
    head = Heads.load(tmp_path / "h.json").heads[SUPPORTED.name]
    assert "and 60 of our_claims.jsonl read as 2 sources by 'source'" in head.learned_from
    # A column no row has is a mistake, not one source; ratings have no sources to split.
    result = runner.invoke(app, [*command[:-1], "nope"])
    assert result.exit_code == 2
    assert "our_claims.jsonl: no row has a 'nope' field to split the claims by" in result.output
    out, ratings = _run(tmp_path, KnowingJudge())
    result = runner.invoke(app, ["tune", str(out), str(ratings), "--by", "source"])
    assert result.exit_code == 2
    assert "--by splits claims labelled in AttributionBench's format" in result.output
