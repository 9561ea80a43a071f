"""Verdict heads: read from the judge's hidden states, keyed apart, refused where they do not fit,
and fitted so that they beat the zero-shot read only where the states carry the answer."""

import json
import math

import numpy as np
import pytest

from ragmeter import evaluate
from ragmeter.claims import SUPPORTED
from ragmeter.heads.fitting import Design, Fitter, Verdicts, folds_of, predict
from ragmeter.judges.base import ChatRequest, ChatResponse, identity_of
from ragmeter.judges.cache import CachedJudge, CallCache
from ragmeter.judges.fake import FakeJudge
from ragmeter.judges.heads import Head, Heads, HeadsError, WithHeads, heads_for, logit
from ragmeter.judges.registry import resolve_models

from .conftest import yes_no

SAMPLE = {
    "id": "s1",
    "question": "Where is the tower?",
    "answer": "The tower is in Paris.",
    "contexts": ["The Eiffel Tower stands in Paris."],
}


def probe_reply(p_yes: float, state: list[float]) -> ChatResponse:
    """A Yes/No reply as the local judge gives it: the first token's alternatives and a state."""
    return yes_no(p_yes, {"final": state})


class StatesJudge(FakeJudge):
    """The scripted judge, showing a hidden state with each probe (as the local judge does)."""

    states = ("final",)

    def __init__(self, p_yes: float, state: list[float], responder=None) -> None:
        reply = probe_reply(p_yes, state)
        super().__init__(responder=responder or (lambda request: reply), model="states")


def supported_head(version: str = SUPPORTED.version) -> Head:
    """Reads the first state dimension with weight 1 on top of the zero-shot logit."""
    return Head(
        prompt=SUPPORTED.name,
        prompt_version=version,
        states=("final",),
        center=np.zeros(2),
        scale=np.ones(2),
        weights=np.array([1.0, 0.0]),
        zero_shot_weight=1.0,
        bias=0.0,
        learned_from="a test",
    )


def heads_file(tmp_path, head: Head, judge: dict | None = None):
    heads = Heads({head.prompt: head}, judge or {"name": "fake:states"})
    path = tmp_path / "heads.json"
    heads.save(path)
    return path


def faithfulness(judge, tmp_path, heads_path=None, cache=False):
    options = {"heads": str(heads_path)} if heads_path else {}
    return evaluate([SAMPLE], ["faithfulness"], judge=judge, cache=cache, judge_options=options)


def test_a_head_reads_the_state_on_top_of_the_zero_shot_logit(tmp_path):
    path = heads_file(tmp_path, supported_head())
    result = faithfulness(StatesJudge(0.5, [2.0, 5.0]), tmp_path, path)
    score = result.scores[0]
    # zero-shot logit 0, plus 1 x 2.0 from the state: sigmoid(2)
    assert score.value == pytest.approx(1 / (1 + math.exp(-2.0)), abs=1e-3)
    exchange = score.exchanges[-1]
    assert exchange.zero_shot == pytest.approx(0.5)
    assert exchange.head == f"{SUPPORTED.name}@{Heads.load(path).digest}"
    assert exchange.states is not None and "final" in exchange.states


def test_without_heads_the_verdict_is_the_zero_shot_read_and_the_state_is_kept(tmp_path):
    score = faithfulness(StatesJudge(0.25, [2.0, 5.0]), tmp_path).scores[0]
    assert score.value == pytest.approx(0.25)
    assert score.exchanges[-1].head is None and score.exchanges[-1].zero_shot is None
    assert score.exchanges[-1].states is not None


def test_a_head_fitted_on_another_prompt_version_leaves_the_score_unscored(tmp_path):
    path = heads_file(tmp_path, supported_head(version="0ld0ld0ld0ld"))
    score = faithfulness(StatesJudge(0.5, [2.0, 5.0]), tmp_path, path).scores[0]
    assert score.value is None
    assert "fitted on version 0ld0ld0ld0ld" in score.unscored_reason


def test_a_head_that_needs_states_the_reply_lacks_is_refused(tmp_path):
    path = heads_file(tmp_path, supported_head())
    stateless = probe_reply(0.5, [0.0, 0.0]).model_copy(update={"states": None})
    judge = StatesJudge(0.5, [0.0, 0.0], responder=lambda request: stateless)
    score = faithfulness(judge, tmp_path, path).scores[0]
    assert score.value is None and "does not carry" in score.unscored_reason
    narrow = StatesJudge(0.5, [0.0, 0.0, 0.0])  # three numbers where the head reads two
    score = faithfulness(narrow, tmp_path, path).scores[0]
    assert score.value is None and "reads 2 numbers of final, and the reply carries 3" in (
        score.unscored_reason
    )


def test_heads_that_read_states_the_judge_does_not_keep_are_refused_before_judging(tmp_path):
    path = heads_file(tmp_path, supported_head())
    plain = FakeJudge(responder=lambda r: probe_reply(0.5, [0.0, 0.0]), model="states")
    with pytest.raises(HeadsError, match="reads the hidden state 'final', which the judge"):
        resolve_models(plain, cache=False, judge_options={"heads": str(path)})


def test_a_heads_file_with_numbers_that_cannot_be_read_is_refused(tmp_path):
    path = heads_file(tmp_path, supported_head())
    data = json.loads(path.read_text())
    data["heads"][SUPPORTED.name]["scale"] = [1.0, 0.0]
    path.write_text(json.dumps(data))
    with pytest.raises(HeadsError, match="scale <= 0"):
        Heads.load(path)
    data["heads"][SUPPORTED.name]["scale"] = [1.0, 1.0]
    data["heads"][SUPPORTED.name]["weights"] = [float("nan"), 0.0]
    path.write_text(json.dumps(data))
    with pytest.raises(HeadsError, match="not finite"):
        Heads.load(path)


def test_heads_fitted_on_another_judge_are_refused(tmp_path):
    path = heads_file(tmp_path, supported_head(), judge={"name": "fake:other"})
    with pytest.raises(HeadsError, match="fitted on the judge fake:other"):
        resolve_models(StatesJudge(0.5, [0, 0]), cache=False, judge_options={"heads": str(path)})
    weights = heads_file(tmp_path, supported_head(), judge={"weights_sha256": "ab" * 32})
    with pytest.raises(HeadsError, match="fitted on the states of weights abab"):
        resolve_models(StatesJudge(0.5, [0, 0]), cache=False, judge_options={"heads": str(weights)})


def test_heads_change_the_identity_but_not_the_call_cache(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    judge = StatesJudge(0.5, [2.0, 5.0])
    plain, _ = resolve_models(judge, cache=cache, needs_embedder=False)
    path = heads_file(tmp_path, supported_head())
    read, _ = resolve_models(
        judge, cache=cache, needs_embedder=False, judge_options={"heads": str(path)}
    )
    assert isinstance(read, WithHeads)
    assert identity_of(read).digest != identity_of(plain).digest
    assert identity_of(read).settings["heads"] == Heads.load(path).digest
    first = evaluate([SAMPLE], ["faithfulness"], judge=plain, cache=False)
    calls = len(judge.history)
    second = evaluate([SAMPLE], ["faithfulness"], judge=read, cache=False)
    assert len(judge.history) == calls  # the raw reply came from the cache
    assert first.scores[0].value == pytest.approx(0.5)
    assert second.scores[0].value == pytest.approx(1 / (1 + math.exp(-2.0)), abs=1e-3)


def test_a_stored_probe_without_the_judges_states_is_asked_again(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    request = ChatRequest(messages=(), max_tokens=1, top_logprobs=10)
    bare = FakeJudge(
        responder=lambda r: probe_reply(0.5, [1.0, 1.0]).model_copy(update={"states": None}),
        model="states",
    )
    CachedJudge(bare, cache).complete(request)
    showing = StatesJudge(0.5, [1.0, 1.0])
    reply = CachedJudge(showing, cache).complete(request)
    assert not reply.cached and len(showing.history) == 1
    assert CachedJudge(showing, cache).complete(request).cached


def test_the_run_record_names_the_heads(tmp_path):
    path = heads_file(tmp_path, supported_head())
    out = tmp_path / "run"
    evaluate(
        [SAMPLE],
        ["faithfulness"],
        judge=StatesJudge(0.5, [2.0, 5.0]),
        cache=False,
        out_dir=out,
        judge_options={"heads": str(path)},
    )
    judge = json.loads((out / "run.json").read_text())["models"]["judge"]
    assert judge["heads"]["learned_from"] == {SUPPORTED.name: "a test"}
    assert judge["settings"]["heads"] == Heads.load(path).digest


def test_heads_files_round_trip_and_bad_ones_are_named(tmp_path):
    path = heads_file(tmp_path, supported_head())
    again = Heads.load(path)
    assert again.digest == Heads.load(path).digest
    assert again.heads[SUPPORTED.name].weights.tolist() == [1.0, 0.0]
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    with pytest.raises(HeadsError, match="not a heads file"):
        Heads.load(tmp_path / "bad.json")
    with pytest.raises(HeadsError, match="cannot read heads"):
        Heads.load(tmp_path / "missing.json")


def test_zero_shot_is_one_option_away_and_auto_reads_only_the_bundled_judge():
    judge = StatesJudge(0.5, [0, 0])
    assert heads_for("none", judge) is None
    assert heads_for("auto", judge) is None  # not the bundled weights


def test_logit_is_clipped_where_the_no_was_not_among_the_alternatives():
    assert logit(1.0) == 12.0 and logit(0.0) == -12.0
    assert logit(0.5) == 0.0


def test_a_head_beats_the_zero_shot_read_only_where_the_states_know_better():
    rng = np.random.default_rng(0)
    n = 400
    truth = rng.random(n) < 0.5
    signal = np.where(truth, 1.0, -1.0) + rng.normal(0, 0.5, n)
    # The zero-shot read is weak; one state dimension carries the label, the rest is noise.
    zero_shot = 1 / (1 + np.exp(-(0.3 * np.where(truth, 1, -1) + rng.normal(0, 1, n))))
    states = np.column_stack([signal, rng.normal(0, 1, (n, 7))])
    verdicts = Verdicts(zero_shot, {"final": states})
    design = Design("p", "v", ("final",), "synthetic")

    def accuracy(rows, predicted):
        return float(((predicted >= 0.5) == truth[rows]).mean())

    fitter = Fitter(
        design, verdicts, labels=truth.astype(float), score=accuracy, penalties=(0.01, 0.1, 1.0)
    )
    out_of_fold = fitter.out_of_fold()
    assert accuracy(np.arange(n), out_of_fold) > 0.9
    assert accuracy(np.arange(n), zero_shot) < 0.75
    head = fitter.fitted().head
    assert abs(head.weights[0]) > 5 * np.abs(head.weights[1:]).max()
    assert np.allclose(
        predict(head, verdicts), predict(Head.from_json(head.to_json()), verdicts), atol=1e-4
    )


def test_a_head_fitted_through_the_mean_tracks_the_samples_ratings():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(60), 4)
    rating = rng.random(60)
    # Each verdict's state says how supported it is; the sample's rating is their mean.
    support = np.clip(rating[groups] + rng.normal(0, 0.1, len(groups)), 0, 1)
    states = np.column_stack([support, rng.normal(0, 1, (len(groups), 3))])
    verdicts = Verdicts(np.full(len(groups), 0.5), {"final": states}, groups)
    design = Design("p", "v", ("final",), "synthetic")
    targets = dict(enumerate(rating))

    def fit_of(rows, predicted):
        means = {g: predicted[groups[rows] == g].mean() for g in set(groups[rows].tolist())}
        return -sum((means[g] - targets[g]) ** 2 for g in means)

    fitter = Fitter(design, verdicts, targets=targets, score=fit_of, penalties=(0.01, 0.1, 1.0))
    predicted = fitter.out_of_fold()
    means = np.array([predicted[groups == g].mean() for g in range(60)])
    assert np.corrcoef(means, rating)[0, 1] > 0.9


def test_anchored_rows_are_always_learned_from_and_never_held_out():
    rng = np.random.default_rng(2)
    n, team = 200, 40
    truth = rng.random(n + team) < 0.5
    # The anchored rows' label is in dimension 0, the team's in dimension 1.
    states = rng.normal(0, 1, (n + team, 2))
    states[:n, 0] += np.where(truth[:n], 2.0, -2.0)
    states[n:, 1] += np.where(truth[n:], 2.0, -2.0)
    verdicts = Verdicts(np.full(n + team, 0.5), {"final": states})
    scored: list[np.ndarray] = []

    def accuracy(rows, predicted):
        scored.append(rows)
        return float(((predicted >= 0.5) == truth[rows]).mean())

    def team_accuracy(weights):
        fitter = Fitter(
            Design("p", "v", ("final",), "synthetic"),
            verdicts,
            labels=truth.astype(float),
            weights=weights,
            score=accuracy,
            penalties=(0.01, 1.0),
            anchored=np.arange(n),
        )
        predicted = fitter.out_of_fold()
        assert len(predicted) == team  # one prediction a team row
        return float(((predicted >= 0.5) == truth[n:]).mean())

    # Outnumbered five to one, the team's rows are read partly by the anchored rows' direction;
    # weighing as much as them, by their own.
    outnumbered = team_accuracy(None)
    equal = team_accuracy(np.concatenate([np.full(n, 0.5 / n), np.full(team, 0.5 / team)]))
    assert outnumbered <= 0.85 and equal >= 0.9  # 32 and 37 of the 40 here
    # The penalty was only ever chosen on team rows: 5 outer folds, 2 penalties each; the
    # first outer fold's inner choice scored the team rows outside it.
    assert len(scored) == 20 and all(rows.min() >= n for rows in scored)
    rows = np.arange(n, n + team)
    outside = rows[folds_of(list(rows), 5, 0) != 0]
    assert [r.tolist() for r in scored[:2]] == [outside.tolist()] * 2


def test_folds_keep_a_samples_verdicts_together():
    folds = folds_of(["a", "a", "b", "c", "c", "d"], 2, seed=0)
    assert folds[0] == folds[1] and folds[3] == folds[4]
    assert set(folds.tolist()) == {0, 1}


def test_the_local_judge_refuses_a_layer_it_cannot_read_by_position():
    from ragmeter.judges.base import JudgeError
    from ragmeter.judges.llama_engine import _check_layers

    _check_layers(("l_out-0", "l_out-26", "result_norm"), layers=28)
    # The last layer's output is kept at the output rows only; layer 28 does not exist.
    for name in ("l_out-27", "l_out-28"):
        with pytest.raises(JudgeError, match="layers l_out-0 to l_out-26"):
            _check_layers((name,), layers=28)


def test_a_judge_resolved_once_keeps_its_read_when_resolved_again(tmp_path):
    path = heads_file(tmp_path, supported_head())
    read, _ = resolve_models(
        StatesJudge(0.5, [2.0, 5.0]), cache=False, judge_options={"heads": str(path)}
    )
    again, _ = resolve_models(read, cache=False, needs_embedder=False)
    assert again is read  # not wrapped a second time
    plain = StatesJudge(0.5, [2.0, 5.0])
    zero_shot, _ = resolve_models(plain, cache=False, needs_embedder=False)
    assert zero_shot is plain  # a Judge object is read as it comes: zero-shot here
    # What meta ragchecker --pairwise does: the judge opened with its options, then evaluated.
    score = evaluate([SAMPLE], ["faithfulness"], judge=read, cache=False).scores[0]
    assert score.value == pytest.approx(1 / (1 + math.exp(-2.0)), abs=1e-3)
    score = evaluate([SAMPLE], ["faithfulness"], judge=zero_shot, cache=False).scores[0]
    assert score.value == pytest.approx(0.5)
