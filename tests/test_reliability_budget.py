"""Budgets: a dry run estimates calls, tokens and cost without calling a model; ``max_calls`` and
``max_cost`` stop a run cleanly, saving what finished; a rerun with more budget completes it."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.budget import Budget, Price, estimate, price_for
from ragmeter.cli.main import app
from ragmeter.data import write_jsonl
from ragmeter.evaluate import BudgetWarning
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.metrics.context_relevance import SENTENCE_NEEDED
from ragmeter.store import ScoreStore

from .conftest import routed
from .fault_server import FaultServer, marked_samples, statement_writing_metrics
from .test_evaluate import REPLIES, SAMPLES

# Statements written first: faithfulness makes 3 calls per sample here, context relevance 2.
METRICS = statement_writing_metrics()


def budgeted(tmp_path, judge, budget, **options):
    options.setdefault("cache", False)
    return evaluate(
        SAMPLES,
        METRICS,
        judge=judge,
        embedder=HashingEmbedder(),
        out_dir=tmp_path / "out",
        budget=budget,
        **options,
    )


def test_max_calls_stops_cleanly_and_a_rerun_with_more_completes(tmp_path):
    judge = FakeJudge(responder=routed(REPLIES))
    with pytest.warns(BudgetWarning, match="3 items not judged"):
        partial = budgeted(tmp_path, judge, Budget(max_calls=4))
    # faithfulness(a) takes calls 1-3 (statements, 2 verdicts); context_relevance(a) gets call
    # 4 and is refused the 5th; the rest are refused their first.
    assert len(judge.history) == 4
    assert [s.value for s in partial.scores] == [0.75, None, None, None]
    assert partial.run.status == "stopped"
    assert partial.run.budget["calls"] == 4 and partial.run.budget["exhausted"] is True
    counts = partial.run.counts.model_dump()
    assert (counts["scored"], counts["pending"], counts["unscored"]) == (1, 3, 0)
    assert partial.scores[1].unscored_reason == (
        "not judged: the budget ran out (max_calls=4); rerun with a higher budget to continue"
    )
    store = ScoreStore(tmp_path / "out" / "scores.sqlite")
    assert store.count() == 1  # only the finished item is saved
    store.close()

    more = FakeJudge(responder=routed(REPLIES))
    complete = budgeted(tmp_path, more, Budget(max_calls=7))
    # context_relevance(a) 2, faithfulness(b) 3, context_relevance(b) 2: exactly 7
    assert len(more.history) == 7
    assert [s.value for s in complete.scores] == [0.75, 0.0, 0.75, 0.0]
    assert complete.run.status == "complete"
    assert complete.run.counts.resumed == 1


def test_cached_calls_are_free(tmp_path):
    cache = tmp_path / "calls.sqlite"
    with pytest.warns(BudgetWarning):
        budgeted(tmp_path, FakeJudge(responder=routed(REPLIES)), Budget(max_calls=4), cache=cache)
    more = FakeJudge(responder=routed(REPLIES))
    complete = budgeted(tmp_path, more, Budget(max_calls=6), cache=cache)
    # the 4th call (context_relevance(a)'s first) was cached by the stopped run
    assert len(more.history) == 6
    assert complete.run.status == "complete"


def test_max_cost_reserves_the_worst_case_before_each_call(tmp_path):
    # $1 per completion token, prompts free: a yes/no call (max_tokens 1) reserves and costs $1.
    judge = FakeJudge(responder=routed(REPLIES))
    with pytest.warns(BudgetWarning):
        result = evaluate(
            SAMPLES,
            ["context_relevance"],
            judge=judge,
            cache=False,
            budget=Budget(max_cost=3.0, price=Price(input=0.0, output=1e6)),
        )
    # sample a: 2 calls ($2); sample b: the 1st ($3), then $3 + $1 > $3 is refused
    assert len(judge.history) == 3
    assert [s.value for s in result.scores] == [0.0, None]  # P(needed) 0.25 < 0.5
    assert result.run.budget["cost"] == 3.0


def test_max_cost_without_a_price_is_refused_before_any_call():
    with pytest.raises(ValueError, match="max_cost needs the judge's price"):
        evaluate(SAMPLES, judge="openai:mystery-model", cache=False, budget=Budget(max_cost=1))


def test_built_in_prices():
    assert price_for("openai:gpt-4o-mini") == Price(0.15, 0.60)
    assert price_for("openai:gpt-4o-mini-2024-07-18") == Price(0.15, 0.60)
    assert price_for("openai:gpt-4o") == Price(2.50, 10.00)
    assert price_for("local") == Price(0.0, 0.0)
    assert price_for("openai:mystery-model") is None
    assert Price(0.15, 0.60).cost(1_000_000, 500_000) == pytest.approx(0.45)


def test_estimate_follows_each_metric_call_pattern():
    metrics = [metric_by_name(m) for m in ("faithfulness", "context_relevance", "answer_relevance")]
    expected = estimate(SAMPLES, metrics, price=Price(1.0, 2.0))
    rows = {row.metric: row for row in expected.metrics}
    # answers "x fact." and "z fact." are one sentence each, verified as it stands: 1 Yes/No call (1
    # token back) per sample
    assert (rows["faithfulness"].calls, rows["faithfulness"].completion_tokens) == (2, 2)
    # contexts "One fact. Two fact." and "Three fact. Four fact.": 2 sentences each
    assert rows["context_relevance"].calls == 4
    # answer relevance embeds the answer, the question and the context once for its off-topic
    # gate, then asks 2 calls: per sample
    assert rows["answer_relevance"].calls == 4 and rows["answer_relevance"].embedding_calls == 2
    assert expected.calls == 10
    # answer relevance: 8 for the commitment check + 1 for completeness, per sample
    assert rows["answer_relevance"].completion_tokens == 2 * (8 + 1)
    # statements written first (the paper): 1 + 1 calls per sample; completion
    # '{"statements": ["x fact."]}' is 27 characters (7 tokens) + 1 verdict token, the same for
    # "z fact."
    written = estimate(SAMPLES, [metric_by_name("faithfulness", statements="generate")])
    assert (written.calls, written.completion_tokens) == (4, 16)
    # with no context only the commitment check is asked, 8 tokens back
    bare = [s.model_copy(update={"contexts": []}) for s in SAMPLES]
    assert estimate(bare, [metric_by_name("faithfulness")]).calls == 2
    assert estimate(bare, [metric_by_name("faithfulness")]).completion_tokens == 2 * 8
    # its paper form writes 8 + 16 per question, 3 questions, and embeds them with the question,
    # after the gate's embedding
    paper = estimate(SAMPLES, [metric_by_name("answer_relevance", score="similarity")]).metrics[0]
    assert (paper.calls, paper.completion_tokens, paper.embedding_calls) == (2, 2 * (8 + 48), 4)
    # prompt tokens are characters / 4 of the prompts the metric renders
    sentences = {"a": ["One fact.", "Two fact."], "b": ["Three fact.", "Four fact."]}
    rendered = [
        SENTENCE_NEEDED.render({"question": "alpha beta", "sentence": sentence})
        for pair in sentences.values()
        for sentence in pair
    ]
    assert rows["context_relevance"].prompt_tokens == sum(
        math.ceil(len("".join(m.content for m in messages)) / 4) for messages in rendered
    )
    assert expected.cost() == pytest.approx(
        (expected.prompt_tokens * 1.0 + expected.completion_tokens * 2.0) / 1e6
    )


@pytest.mark.parametrize(
    ("faithfulness", "relevance", "calls", "embeddings"),
    [
        # answer relevance's off-topic gate: one embedding call a sample
        ({}, {}, 35, 5),
        ({"statements": "generate"}, {}, 40, 5),
        ({}, {"score": "similarity"}, 30, 10),
    ],
)
def test_estimate_matches_a_real_run_call_for_call(faithfulness, relevance, calls, embeddings):
    # The fault server's written statements are the answer's sentences, as the estimate assumes,
    # and it reports prompt tokens as characters / 4: calls and prompt tokens must agree exactly.
    samples = marked_samples(5)
    metrics = [
        metric_by_name("faithfulness", **faithfulness),
        metric_by_name("context_relevance"),
        metric_by_name("answer_relevance", **relevance),
    ]
    expected = estimate(samples, metrics)
    with FaultServer() as server:
        result = evaluate(
            samples,
            metrics,
            judge=OpenAIJudge("fault", base_url=server.url),
            embedder=OpenAIEmbedder("fault", base_url=server.url),
            cache=False,
        )
    counts = result.run.counts.model_dump()
    assert counts["model_calls"] == expected.calls == calls
    assert counts["prompt_tokens"] == expected.prompt_tokens
    planned_embeddings = sum(row.embedding_calls for row in expected.metrics)
    assert counts["embedding_calls"] == planned_embeddings == embeddings


runner = CliRunner()


def test_dry_run_prints_the_estimate_and_calls_nothing(tmp_path):
    data = tmp_path / "data.jsonl"
    write_jsonl(SAMPLES, data)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["evaluate", str(data), "--dry-run", "--judge", "openai:gpt-4o-mini", "--out", str(out)],
        env={"COLUMNS": "200", "RAGMETER_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert result.exit_code == 0, result.output
    total = next(line for line in result.output.splitlines() if "total" in line)
    assert total.split("│")[3].strip() == "10"  # calls
    assert "$" in total
    assert "OpenAI list prices as of" in result.output
    assert "No model was called." in result.output
    assert not out.exists()


def test_the_cli_stops_at_max_calls_and_says_how_to_continue(tmp_path, monkeypatch):
    data = tmp_path / "data.jsonl"
    write_jsonl(marked_samples(2), data)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "300")
    with FaultServer() as server:
        monkeypatch.setenv("RAGMETER_BASE_URL", server.url)
        base = ["evaluate", str(data), "--judge", "openai:fault", "--out", str(tmp_path / "out")]
        base += ["--metrics", "faithfulness,context_relevance", "--no-show-samples"]
        base += ["--option", "faithfulness.statements=generate"]  # 3 calls per sample
        stopped = runner.invoke(app, [*base, "--max-calls", "5"])
        # faithfulness(0): 3 calls; context_relevance(0): 2 of its 3. Left: its 3 (2 cached),
        # and 3 + 3 for sample 1.
        assert stopped.exit_code == 3, stopped.output
        assert "Stopped at the budget after 5 calls. 1 of 4 items are saved" in stopped.output
        assert "the 3 left need about 9 more calls" in stopped.output
        summary = next(line for line in stopped.output.splitlines() if "context_relevance" in line)
        cells = [cell.strip() for cell in summary.split("│")[4:7]]
        assert cells == ["0", "0", "2"]  # scored, unscored, not judged
        assert stopped.output.count("unscored") == 1  # only the table header: none failed
        assert "run the same command again with --max-calls 9 or more" in stopped.output
        resumed = runner.invoke(app, [*base, "--max-calls", "9"])
    assert resumed.exit_code == 0, resumed.output
    assert "model calls 7, cached 2" in resumed.output
    assert "1 items resumed" in resumed.output


def test_a_metric_that_does_not_plan_its_calls_gets_a_guess():
    class Custom(Metric):
        name = "custom"

        def measure(self, sample, session):
            return 1.0, {}

    row = estimate(SAMPLES, [Custom()]).metrics[0]
    assert row.pattern == "guessed" and row.calls == len(SAMPLES)  # one call per prompt, at least 1
    text = ["".join([s.question, s.answer, *s.contexts]) for s in SAMPLES]
    assert row.prompt_tokens == sum(math.ceil(len(t) / 4) for t in text)
    assert row.completion_tokens == 64 * len(SAMPLES)
    assert estimate([], [Custom()]).metrics[0].pattern == "guessed"
    assert estimate([], [metric_by_name("faithfulness")]).metrics[0].pattern == "known"
