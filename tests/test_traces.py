"""Scoring traces: a LangChain pipeline traced by OpenInference (into Phoenix and an OTLP file)
and by MLflow's autologging (into an MLflow server), its traces read, scored by the scripted
judge, the verdicts written back and read again through each server's own client.

The servers are real (``phoenix serve``, ``mlflow server`` on SQLite, on loopback ports), started
once per module; the tests that need one are skipped, saying why, where its extra is missing.
Each server's own web page is then opened in headless Chromium, to see the verdicts where a
team would look for them; the screenshots are saved under ``test-artifacts/``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.judges.fake import FakeJudge
from ragmeter.manifest import RunRecord
from ragmeter.metrics import metric_by_name
from ragmeter.sample import Sample
from ragmeter.traces import (
    HumanLabel,
    SkippedTrace,
    Span,
    TraceSet,
    evaluate_traces,
    parse_since,
    read_mlflow,
    read_otlp,
    read_phoenix,
    read_traces,
    record_traces,
    samples_from_spans,
    trace_section,
    verdicts_for,
    write_verdicts,
)
from ragmeter.traces.phoenix import IDENTIFIER_PREFIX, PhoenixWriter

from . import traced_app as appmod
from .browser import ARTIFACTS, chromium
from .traced_app import (
    ANSWERS,
    BAD_REASONS,
    COUNTRIES,
    GOOD,
    METRICS,
    QUESTIONS,
    SUPPORTED,
    UNSUPPORTED,
    expected_faithfulness,
    judge_traces,
)

runner = CliRunner()


def needs(*modules: str, program: str | None = None) -> None:
    """Skip, naming what to install, unless ``modules`` import and ``program`` is beside Python."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if program and not Path(sys.executable).with_name(program).exists():
        missing.append(f"the {program!r} command")
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install -e '.[dev]'")


TRACING = ("langchain_core", "openinference.instrumentation.langchain", "opentelemetry.sdk")


def reasons(traces: TraceSet) -> Counter[str]:
    return Counter(skip.reason.split(":")[0] for skip in traces.skipped)


def scripted(model: str = "scripted") -> FakeJudge:
    return FakeJudge(responder=judge_traces, model=model)


def wait_for(read, count: int, timeout: float = 60) -> TraceSet:
    """Read until ``count`` traces are there: a server stores what it receives a little later."""
    deadline = time.monotonic() + timeout
    while True:
        found = read()
        if found.traces >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def scores_of(result) -> dict[tuple[str, str], float | None]:
    return {(s.sample_id, s.metric): s.value for s in result.scores}


# --- spans to samples, by hand --------------------------------------------------------------


def span(trace: str, span_id: str, parent: str | None, kind: str = "CHAIN", **fields) -> Span:
    return Span(trace_id=trace, span_id=span_id, parent_id=parent, name=kind.lower(), kind=kind,
                **fields)  # fmt: skip


def test_a_trace_reads_as_question_contexts_and_answer_and_bad_ones_say_why():
    spans = [
        # A LangChain-style dict input with a chat history, the answer in a dict output.
        span("t1", "r1", None, start_ns=1,
             input='{"question": "And its river?", "chat_history": [{"type": "human", '
                   '"content": "Capital of France?"}, {"type": "ai", "content": "Paris."}]}',
             output={"answer": "The Seine.", "context": []}),
        span("t1", "a1", "r1", "RETRIEVER", start_ns=2, documents=("The Seine flows.",)),
        span("t1", "a2", "r1", "RETRIEVER", start_ns=3, documents=("Paris is big.",)),
        # Two requests of one session: the second gets the first as its earlier turns.
        span("t2", "r2", None, start_ns=10, input="Who wrote Faust?", output="Goethe.",
             session="s"),
        span("t2", "b2", "r2", "RETRIEVER", start_ns=11, documents=("Goethe wrote Faust.",)),
        span("t3", "r3", None, start_ns=20, input=[{"role": "user", "content": "When?"}],
             output={"choices": [{"message": {"role": "assistant", "content": "1808."}}]},
             session="s"),
        span("t3", "b3", "r3", "RETRIEVER", start_ns=21, documents=("Faust appeared in 1808.",)),
        # What cannot be scored.
        span("t4", "r4", None, start_ns=30, input="Hi?", output="Hello."),
        span("t5", "r5", None, start_ns=40, input="Q?", output="A."),
        span("t5", "b5", "r5", "RETRIEVER", start_ns=41, error="timed out"),
        span("t6", "b6", "gone", "RETRIEVER", start_ns=50, documents=("x",)),
        span("t7", "r7", None, start_ns=60, input="Q?", output=None),
        span("t7", "b7", "r7", "RETRIEVER", start_ns=61, documents=("x",)),
    ]  # fmt: skip
    traces = samples_from_spans(spans, source={"source": "test"})
    first, second, third = traces.samples
    assert first == Sample(
        id="t1",
        question="And its river?",
        contexts=["The Seine flows.", "Paris is big."],
        answer="The Seine.",
        history=[("user", "Capital of France?"), ("assistant", "Paris.")],
        metadata={"trace_id": "t1", "span_id": "r1"},
    )
    assert (second.question, second.history) == ("Who wrote Faust?", [])
    assert (third.question, third.answer) == ("When?", "1808.")
    assert [(t.role, t.text) for t in third.history] == [
        ("user", "Who wrote Faust?"),
        ("assistant", "Goethe."),
    ]
    assert {s.trace_id: s.reason.split(":")[0] for s in traces.skipped} == {
        "t4": "no retrieval",
        "t5": "error",
        "t6": "cut short",
        "t7": "no output",
    }
    assert "'retriever' ended in an error: timed out" in traces.skipped[1].reason
    record = traces.record()
    assert record["source"] == "test" and record["trace_ids"] == ["t1", "t2", "t3"]
    assert record["traces_read"] == 7 and len(record["skipped"]) == 4


def test_since_reads_a_time_or_how_long_ago():
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    assert parse_since("90m", now) == datetime(2026, 11, 27, 10, 30, tzinfo=UTC)
    assert parse_since("2d", now) == datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert parse_since("2026-11-27T08:00") == datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    with pytest.raises(ValueError, match="how long ago"):
        parse_since("yesterday")


class FlakyServer:
    """A writer whose server refuses the first ``fails`` requests, then keeps what it is sent."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.kept: dict[tuple[str, str], float | None] = {}

    def describe(self):
        return {"server": "flaky"}

    def existing(self, verdicts):
        return {}

    def write(self, verdicts, replacing):
        if self.fails:
            self.fails -= 1
            raise ConnectionError("connection reset")
        for v in verdicts:
            self.kept[(v.trace_id, v.metric)] = v.value


def scored_sample_traces() -> tuple:
    samples = [
        Sample(id=f"t{i}", question=q, contexts=[appmod.PASSAGES[i]], answer=a,
               metadata={"trace_id": f"t{i}", "span_id": f"s{i}"})
        for i, (q, a) in enumerate(zip(QUESTIONS[:3], ANSWERS[:3], strict=True))
    ]  # fmt: skip
    traces = TraceSet(samples, source={"source": "test"})
    result = evaluate_traces(traces, ["faithfulness"], judge=scripted(), cache=False)
    return traces, result


def test_a_failed_write_is_retried_and_a_lasting_failure_reported():
    _, result = scored_sample_traces()
    verdicts = verdicts_for(result)
    assert [v.value for v in verdicts] == [0.9, 0.9, 0.9]

    flaky = FlakyServer(fails=1)
    report = write_verdicts(verdicts, flaky, retries=2, backoff=0)
    assert (report.written, report.failed, report.attempts) == (3, [], 3)  # existing, fail, ok
    assert flaky.kept == {(f"t{i}", "faithfulness"): 0.9 for i in range(3)}

    down = FlakyServer(fails=10)
    report = write_verdicts(verdicts, down, retries=2, backoff=0)
    assert report.written == 0 and len(report.failed) == 3 and down.kept == {}
    assert report.failed[0]["error"] == "ConnectionError: connection reset"


def test_people_s_labels_become_ratings_of_the_samples_their_traces_are(tmp_path):
    from ragmeter import evaluate
    from ragmeter.heads.ratings import parse_scale
    from ragmeter.labels import LabelStore, fold
    from ragmeter.labels.pull import pull_labels

    samples = [
        Sample(id=f"t{i}", question=q, contexts=[appmod.PASSAGES[i]], answer=a,
               metadata={"trace_id": f"t{i}", "span_id": f"s{i}"})
        for i, (q, a) in enumerate(zip(QUESTIONS[:3], ANSWERS[:3], strict=True))
    ]  # fmt: skip
    traces = TraceSet(samples, [SkippedTrace("t9", "no retrieval: no retriever span")],
                      source={"source": "test"})  # fmt: skip
    out = tmp_path / "run"
    result = evaluate_traces(traces, ["faithfulness", "answer_relevance"], judge=scripted(),
                             out_dir=out, cache=False)  # fmt: skip
    section = trace_section(result)
    found = [
        HumanLabel("t0", "faithfulness", "phoenix:ann", label="Yes", at=10.0),
        # Two of ann's labels of t1 changed in the same second: the later made stands.
        HumanLabel("t1", "faithfulness", "phoenix:ann", label="no", at=20.0, made=7),
        HumanLabel("t1", "faithfulness", "phoenix:ann", score=1.0, at=20.0, made=5),
        HumanLabel("t1", "faithfulness", "phoenix:bob", score=1.0, note="  fine  "),
        HumanLabel("t2", "helpful", "phoenix:cy", score=0.5),
        HumanLabel("t2", "answer_relevance", "phoenix:bob", score=4.0),
        HumanLabel("t9", "faithfulness", "phoenix:ann", label="no"),
        HumanLabel("t7", "faithfulness", "phoenix:ann", label="no"),
        HumanLabel("t2", "faithfulness", "phoenix:ann", label="sort of"),
    ]

    def pull(**options):
        return pull_labels(out, result, section, found, source="phoenix:p", **options)

    report = pull(names={"helpful": "answer_relevance"})
    assert report.read == 9 and report.superseded == 1
    assert dict(report.added) == {("faithfulness", "phoenix:ann"): 2,
                                  ("faithfulness", "phoenix:bob"): 1}  # fmt: skip
    assert report.scales == {"faithfulness": "binary"} and report.inferred == ["faithfulness"]
    assert {(x.reason, x.trace_id) for x in report.left_out} == {
        ("on a trace the run left out (no retrieval)", "t9"),
        ("on a trace the run did not read", "t7"),
        ("faithfulness: neither a number nor yes/no ('sort of')", "t2"),
        # 0.5 alone would be on 0-1; 4 is not: neither is taken on a scale nobody stated.
        ("answer_relevance: values from 0.5 to 4 on a scale nobody stated (say it: --scale "
         "answer_relevance=LOW-HIGH)", "t2"),
    }  # fmt: skip
    assert len(report.left_out) == 5
    with LabelStore(out / "labels.sqlite") as store:
        standing = {
            (who, item.sample_id): e for (who, item), e in fold(store.events()).labels.items()
        }
    assert {k: e.value for k, e in standing.items()} == {
        ("phoenix:ann", "t0"): 1.0, ("phoenix:ann", "t1"): 0.0, ("phoenix:bob", "t1"): 1.0,
    }  # fmt: skip
    assert standing[("phoenix:bob", "t1")].note == "fine"

    # On 1-5, 0.5 is off the scale and 4 is on it; faithfulness is already on binary.
    again = pull(
        names={"helpful": "answer_relevance"}, scales={"answer_relevance": parse_scale("1-5")}
    )
    assert again.already == 3 and dict(again.added) == {("answer_relevance", "phoenix:bob"): 1}
    assert ("answer_relevance: off the scale 1-5 (0.5)", "t2") in {
        (x.reason, x.trace_id) for x in again.left_out
    }
    # A yes on 1-5 is no rating of 1: it is left out, saying why.
    found.append(HumanLabel("t0", "answer_relevance", "phoenix:cy", label="yes"))
    third = pull(scales={"answer_relevance": parse_scale("1-5")})
    assert ("answer_relevance: a yes/no label (yes) on the scale 1-5", "t0") in {
        (x.reason, x.trace_id) for x in third.left_out
    }
    assert not third.added
    with pytest.raises(ValueError, match="on the scale binary, not 1-5"):
        pull(scales={None: parse_scale("1-5")})
    with pytest.raises(ValueError, match="tone is not a metric of the run"):
        pull(names={"x": "tone"})

    # Only a tracing server holds people's labels; a run not scored from traces has none.
    from_test = runner.invoke(app, ["label", str(out), "--pull"])
    assert from_test.exit_code == 2 and "read from a Phoenix or MLflow server" in from_test.output
    plain = tmp_path / "plain"
    evaluate(samples, ["faithfulness"], judge=scripted(), out_dir=plain, cache=False)
    refused = runner.invoke(app, ["label", str(plain), "--pull"])
    assert refused.exit_code == 2 and "not scored from traces" in refused.output


def test_human_labels_of_a_run_whose_record_names_no_mlflow_experiment_say_what_is_missing():
    from ragmeter.traces.run import human_labels

    with pytest.raises(ValueError) as refused:
        human_labels({"source": "mlflow", "server": "http://127.0.0.1:1"})
    said = str(refused.value)
    assert said.startswith("the run's record of its traces names no MLflow experiment (neither "
                           "'experiment' nor 'experiment_id'")  # fmt: skip
    assert "None" not in said


def test_a_metric_scores_rows_as_a_phoenix_evaluator():
    needs("phoenix.evals")
    import pandas as pd
    from phoenix.evals import evaluate_dataframe

    from ragmeter.traces.scorers import phoenix_evaluator

    frame = pd.DataFrame(
        {
            "input": QUESTIONS[:3],
            "output": ["Paris.", "Madrid.", "Rome."],  # the second is not in its context
            "context": [[appmod.PASSAGES[0]], [appmod.PASSAGES[1]], appmod.PASSAGES[2]],
        }
    )
    evaluator = phoenix_evaluator("faithfulness", judge=scripted("phoenix-evals"), cache=False)
    scored = evaluate_dataframe(dataframe=frame, evaluators=[evaluator], hide_tqdm_bar=True)
    scores = [json.loads(cell) if isinstance(cell, str) else cell
              for cell in scored["faithfulness_score"]]  # fmt: skip
    assert [s["score"] for s in scores] == [0.9, 0.2, 0.9]
    assert "Madrid" in scores[1]["explanation"] and scores[1]["kind"] == "llm"


# --- OpenInference into Phoenix and an OTLP file --------------------------------------------

PROJECT = "capitals"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    """A Phoenix server that has received the pipeline's 20 requests and 3 bad ones; the OTLP
    file holds the same spans."""
    needs("phoenix.client", *TRACING, program="phoenix")
    folder = tmp_path_factory.mktemp("phoenix")
    file = folder / "spans.jsonl"
    with appmod.phoenix_server(folder) as url:
        appmod.HOLD.clear()
        with appmod.openinference_tracing(url, PROJECT, file):
            assert appmod.run_good_requests() == ANSWERS
            held = appmod.run_bad_requests(cut_short="held")
            found = wait_for(lambda: read_phoenix(PROJECT, server=url), GOOD + 3)
        assert found.traces == GOOD + 3, found.record()
        try:
            yield url, file
        finally:
            appmod.HOLD.set()  # the held request finishes: nothing is left running
            if held is not None:
                held.join(timeout=30)


def test_phoenix_traces_are_scored_written_back_once_and_read_back_equal(phoenix, tmp_path):
    url, _ = phoenix
    traces = read_phoenix(PROJECT, server=url)
    assert len(traces.samples) == GOOD
    assert reasons(traces) == Counter(BAD_REASONS)
    assert sorted(s.question for s in traces.samples) == sorted(QUESTIONS)
    by_question = {s.question: s for s in traces.samples}
    assert [by_question[q].answer for q in QUESTIONS] == ANSWERS
    assert all(len(s.contexts) == 2 for s in traces.samples)

    out = tmp_path / "run"
    judge = scripted()
    result = evaluate_traces(traces, METRICS, judge=judge, out_dir=out, cache=False,
                             write_back=True)  # fmt: skip
    section = trace_section(result)
    assert section is not None
    written = section["write_back"]
    assert (written["written"], written["unchanged"], written["failed"]) == (GOOD * 3, 0, [])
    assert written["server"].rstrip("/") == url and written["project"] == PROJECT
    faithfulness = {s.sample_id: s.value for s in result.scores_for("faithfulness")}
    for sample in traces.samples:
        expected = expected_faithfulness(sample.question, sample.answer)
        assert faithfulness[sample.key] == pytest.approx(expected)
    assert sorted(faithfulness.values()).count(pytest.approx(0.2)) == len(appmod.WRONG)

    # The run's record says what was read.
    record = RunRecord.read(out).model_extra["traces"]
    assert record["project"] == PROJECT and record["source"] == "phoenix"
    assert sorted(record["trace_ids"]) == sorted(s.key for s in traces.samples)
    assert Counter(s["reason"].split(":")[0] for s in record["skipped"]) == Counter(BAD_REASONS)

    # Again: the scores come from the run folder, and nothing is written twice.
    again = evaluate_traces(read_phoenix(PROJECT, server=url), METRICS, judge=scripted(),
                            out_dir=out, cache=False, write_back=True)  # fmt: skip
    second = trace_section(again)["write_back"]
    assert (second["written"], second["replaced"], second["unchanged"]) == (0, 0, GOOD * 3)
    assert again.run.counts.judged == 0

    # Read back through Phoenix's own client: one annotation per span and metric, equal.
    from phoenix.client import Client

    client = Client(base_url=url)
    spans = {s.metadata["span_id"]: s.key for s in traces.samples}
    annotations = client.spans.get_span_annotations(
        span_ids=list(spans), project_identifier=PROJECT, include_annotation_names=METRICS
    )
    ours = [a for a in annotations if a.get("identifier", "").startswith(IDENTIFIER_PREFIX)]
    assert len(ours) == GOOD * 3
    assert Counter((a["span_id"], a["name"]) for a in ours).most_common(1)[0][1] == 1
    scores = scores_of(result)
    explanations = {(v.trace_id, v.metric): v.explanation for v in verdicts_for(result)}
    for annotation in ours:
        key = (spans[annotation["span_id"]], annotation["name"])
        assert annotation["result"]["score"] == pytest.approx(scores[key])
        assert annotation["result"]["explanation"] == explanations[key]
        assert annotation["annotator_kind"] == "LLM"
        assert annotation["metadata"]["judge"] == "fake:scripted"


def test_phoenix_writes_that_fail_are_retried_reported_and_the_scores_kept(phoenix, tmp_path):
    url, _ = phoenix
    from phoenix.client import Client

    traces = read_phoenix(PROJECT, server=url)
    closed = f"http://127.0.0.1:{appmod.free_port()}"  # nothing listens there
    traces.writer = PhoenixWriter(Client(base_url=closed), PROJECT)
    out = tmp_path / "run"
    result = evaluate_traces(traces, ["faithfulness"], judge=scripted("unreachable"),
                             out_dir=out, cache=False)  # fmt: skip
    result = record_traces(result, traces, out, write_back=True, retries=1)
    report = trace_section(result)["write_back"]
    assert report["written"] == 0 and report["attempts"] == 2  # reading what is there failed
    assert len(report["failed"]) == GOOD and "ConnectError" in report["failed"][0]["error"]
    assert sum(1 for s in result.scores if s.scored) == GOOD  # every score kept
    assert RunRecord.read(out).model_extra["traces"]["write_back"]["failed"] == report["failed"]


def test_the_otlp_file_reads_as_phoenix_does(phoenix):
    url, file = phoenix
    from_file = read_otlp(file)
    from_server = read_phoenix(PROJECT, server=url)
    assert from_file.samples == from_server.samples
    assert reasons(from_file) == Counter(BAD_REASONS)
    assert from_file.record()["file"] == str(file)


def test_the_command_line_scores_a_phoenix_project_and_writes_back(phoenix, tmp_path):
    url, _ = phoenix
    script = tmp_path / "replies.jsonl"
    script.write_text("".join(json.dumps("Yes" if i % 2 else "No") + "\n" for i in range(GOOD)))
    out = tmp_path / "run"
    command = ["evaluate", f"phoenix:{PROJECT}", "--server", url, "--since", "1h", "--limit",
               "100", "--metrics", "faithfulness", "--judge", f"fake:{script}", "--out", str(out),
               "--write-back", "--no-cache"]  # fmt: skip
    first = runner.invoke(app, command)
    assert first.exit_code == 0, first.output
    assert f"{GOOD} samples from {GOOD + 3} traces" in first.output
    for reason in BAD_REASONS:
        assert reason in first.output
    assert f"verdicts written back: {GOOD} new, 0 replaced, 0 already there" in first.output
    values = [json.loads(line)["value"] for line in (out / "scores.jsonl").read_text().splitlines()]
    assert sorted(values) == [0.0] * (GOOD // 2) + [1.0] * (GOOD // 2)

    again = runner.invoke(app, command)
    assert again.exit_code == 0, again.output
    assert f"verdicts written back: 0 new, 0 replaced, {GOOD} already there" in again.output

    bad = runner.invoke(app, ["evaluate", f"otlp:{tmp_path / 'x.json'}", "--write-back",
                              "--judge", "fake"])  # fmt: skip
    assert bad.exit_code == 2 and "no server" in bad.output


DATASET = "capitals-references"
PORTUGAL, SWEDEN, HUNGARY, ROMANIA = 4, 9, 14, 15
"""Requests by position: Portugal and Sweden are answered wrong; Hungary's two examples
disagree, Romania's holds no reference."""


def city(index: int) -> str:
    return f"{COUNTRIES[index][1]}."


def reference_examples(url: str, traces: TraceSet) -> list[dict]:
    """A dataset as a team curates one: examples made from the traced spans (the root span of
    the first five requests, the retriever span of the next five), each with the right answer;
    examples that give only the question; two that disagree; one for a request that was never
    scored; one with no reference at all."""
    from phoenix.client import Client

    spans = Client(base_url=url).spans.get_spans(project_identifier=PROJECT, limit=10_000)
    retriever = {s["context"]["trace_id"]: s["context"]["span_id"]
                 for s in spans if s["span_kind"] == "RETRIEVER"}  # fmt: skip
    by_question = {s.question: s for s in traces.samples}
    root = [by_question[q].metadata["span_id"] for q in QUESTIONS[:5]]
    inner = [retriever[by_question[q].key] for q in QUESTIONS[5:10]]
    return [
        *({"input": {"input": QUESTIONS[i]}, "output": {"output": city(i)}, "span_id": span}
          for i, span in enumerate([*root, *inner])),
        *({"input": {"question": QUESTIONS[i]}, "output": {"expected_output": city(i)}}
          for i in range(10, 14)),
        {"input": {"question": QUESTIONS[HUNGARY]}, "output": {"output": city(HUNGARY)}},
        {"input": {"question": QUESTIONS[HUNGARY]}, "output": {"output": "Vienna."}},
        {"input": {"question": "What is the capital of Malta?"}, "output": {"output": "Valletta."}},
        {"input": {"question": QUESTIONS[ROMANIA]}, "output": {}},
    ]  # fmt: skip


def test_a_phoenix_dataset_gives_the_traces_their_references(phoenix, tmp_path):
    url, _ = phoenix
    from phoenix.client import Client

    examples = reference_examples(url, read_phoenix(PROJECT, server=url))
    Client(base_url=url).datasets.create_dataset(name=DATASET, examples=examples)

    traces = read_phoenix(PROJECT, server=url, dataset=DATASET)
    assert traces.source["references"] == {
        "dataset": DATASET, "examples": 18, "without_reference": 1, "by_trace": 10,
        "by_question": 4, "unmatched": 3, "ambiguous": 1,  # Malta's, and Hungary's two
    }  # fmt: skip
    references = {s.question: s.reference for s in traces.samples}
    assert [references[q] for q in QUESTIONS[:14]] == [city(i) for i in range(14)]
    assert references[QUESTIONS[HUNGARY]] is None and references[QUESTIONS[ROMANIA]] is None

    metrics = ["answer_correctness", "context_recall"]
    # The references are bare city names, which would be read as short answers; read as claims
    # here, the scripted verifier's values check where each reference came from.
    as_claims = [metric_by_name(name, reading="claims") for name in metrics]
    result = evaluate_traces(traces, as_claims, judge=scripted(), out_dir=tmp_path / "run",
                             cache=False)  # fmt: skip
    scores = scores_of(result)
    for index, sample in enumerate(by_position(traces)):
        correctness = scores[(sample.key, "answer_correctness")]
        recall = scores[(sample.key, "context_recall")]
        if index >= 14:  # no reference: unscored, and said so
            assert correctness is None and recall is None
            continue
        # The answer against the reference, both ways (F1 of the two); the reference found in
        # the passages retrieved.
        right = SUPPORTED if sample.answer == city(index) else UNSUPPORTED
        assert correctness == pytest.approx(right)
        assert recall == pytest.approx(expected_faithfulness(sample.question, city(index)))
    assert scores[(by_position(traces)[PORTUGAL].key, "answer_correctness")] == pytest.approx(
        UNSUPPORTED
    )  # answered Madrid, Lisbon expected
    unscored = [s for s in result.scores if s.value is None]
    assert len(unscored) == 2 * (GOOD - 14) and "reference" in unscored[0].unscored_reason
    assert RunRecord.read(tmp_path / "run").model_extra["traces"]["references"]["by_trace"] == 10

    command = ["evaluate", f"phoenix:{PROJECT}", "--server", url, "--dataset", DATASET,
               "--metrics", ",".join(metrics), "--judge", "fake", "--dry-run"]  # fmt: skip
    shown = runner.invoke(app, command)
    assert shown.exit_code == 0, shown.output
    assert (
        f"references from dataset {DATASET}: 10 by trace, 4 by question; 3 examples matched "
        "no trace read" in shown.output
    )
    missing = runner.invoke(app, [*command[:-1], "--dataset", "no-such-dataset"])
    assert missing.exit_code == 2 and "no-such-dataset" in missing.output


def by_position(traces: TraceSet) -> list[Sample]:
    """The samples in the order their questions were asked."""
    by_question = {s.question: s for s in traces.samples}
    return [by_question[q] for q in QUESTIONS]


# --- the verdicts in each server's own page ---------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


UI_WAIT = 120_000
"""Milliseconds to wait for a page to show what the servers hold (a loaded machine renders
these single-page applications slowly)."""


def shown_scores(text: str, pattern: str) -> dict[str, float]:
    """Each metric's score as a page shows it, ``pattern`` matching the number after the
    metric's name."""
    found = {}
    for metric in METRICS:
        match = re.search(re.escape(metric) + pattern, text)
        assert match, f"{metric} is not shown: {text[:2000]}"
        found[metric] = float(match[1])
    return found


def test_phoenix_shows_the_verdicts_on_the_trace(phoenix, browser, tmp_path):
    url, _ = phoenix
    from phoenix.client import Client

    traces = read_phoenix(PROJECT, server=url)
    result = evaluate_traces(traces, METRICS, judge=scripted(), out_dir=tmp_path / "run",
                             cache=False, write_back=True)  # fmt: skip
    assert trace_section(result)["write_back"]["failed"] == []
    portugal = by_position(traces)[PORTUGAL]  # answered Madrid: faithfulness is low
    scores = {m: scores_of(result)[(portugal.key, m)] for m in METRICS}
    assert scores["faithfulness"] == pytest.approx(UNSUPPORTED)

    project = Client(base_url=url).projects.get(project_name=PROJECT)["id"]
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/projects/{project}/spans/{portugal.key}")
    info = page.get_by_role("complementary", name="Detail drawer").get_by_role(
        "tabpanel", name="Info"
    )
    info.get_by_role("button", name="Annotations", exact=True).click(timeout=UI_WAIT)
    badges = info.get_by_role("button", name=re.compile("mean score"))
    badges.nth(len(METRICS) - 1).wait_for(timeout=UI_WAIT)
    assert badges.count() == len(METRICS)
    assert info.get_by_text("Madrid.").first.is_visible()
    text = "\n".join(badges.all_inner_texts())
    # A badge shows the mean of the span's annotations of that name: the run's score, and any
    # other judge's written on the same span by an earlier run (the command-line test's).
    held = Client(base_url=url).spans.get_span_annotations(
        span_ids=[portugal.metadata["span_id"]],
        project_identifier=PROJECT,
        include_annotation_names=METRICS,
    )
    ours = {a["name"]: a["result"]["score"] for a in held
            if a.get("identifier", "").startswith(IDENTIFIER_PREFIX)
            and a["metadata"]["judge"] == "fake:scripted"}  # fmt: skip
    assert ours == {m: pytest.approx(v) for m, v in scores.items()}
    means = {m: statistics.mean(a["result"]["score"] for a in held if a["name"] == m)
             for m in METRICS}  # fmt: skip
    shown = shown_scores(text, r"\s*μ\s*([\d.]+)")
    assert shown == {m: pytest.approx(v, abs=0.005) for m, v in means.items()}
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_role("complementary", name="Detail drawer").screenshot(
        path=str(ARTIFACTS / "traces-phoenix.png")
    )


# --- MLflow ---------------------------------------------------------------------------------

EXPERIMENT = "capitals"


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """An MLflow server whose experiment holds the pipeline's 20 autologged requests and 3 bad
    ones; yields its address and the folder of its SQLite store."""
    needs("mlflow", "langchain_core", program="mlflow")
    folder = tmp_path_factory.mktemp("mlflow")
    with appmod.mlflow_server(folder) as url:
        with appmod.mlflow_tracing(url, EXPERIMENT):
            assert appmod.run_good_requests() == ANSWERS
            appmod.run_bad_requests(cut_short="stream")
        yield url, folder


MLFLOW_BAD = Counter({"no retrieval": 1, "error": 1, "no output": 1})
"""A stream stopped after its first chunk ends its root span without an output in MLflow."""


def test_mlflow_traces_are_scored_written_back_once_and_read_back_equal(mlflow_server, tmp_path):
    url, _ = mlflow_server
    import mlflow

    traces = wait_for(lambda: read_mlflow(EXPERIMENT, tracking_uri=url), GOOD + 3)
    assert len(traces.samples) == GOOD and reasons(traces) == MLFLOW_BAD
    by_question = {s.question: s for s in traces.samples}
    assert [by_question[q].answer for q in QUESTIONS] == ANSWERS

    out = tmp_path / "run"
    result = evaluate_traces(traces, METRICS, judge=scripted(), out_dir=out, cache=False,
                             write_back=True)  # fmt: skip
    report = trace_section(result)["write_back"]
    assert (report["written"], report["failed"]) == (GOOD * 3, [])
    for score in result.scores_for("faithfulness"):
        sample = next(s for s in traces.samples if s.key == score.sample_id)
        assert score.value == pytest.approx(expected_faithfulness(sample.question, sample.answer))

    again = evaluate_traces(read_mlflow(EXPERIMENT, tracking_uri=url), METRICS, judge=scripted(),
                            out_dir=out, cache=False, write_back=True)  # fmt: skip
    second = trace_section(again)["write_back"]
    assert (second["written"], second["replaced"], second["unchanged"]) == (0, 0, GOOD * 3)

    # Read back through MLflow's own client: one feedback per trace and metric, equal.
    client = mlflow.MlflowClient(url)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    found = client.search_traces(locations=[experiment.experiment_id], max_results=100)
    scores = scores_of(result)
    explanations = {(v.trace_id, v.metric): v.explanation for v in verdicts_for(result)}
    seen = Counter()
    for trace in found:
        for assessment in trace.info.assessments:
            if assessment.name not in METRICS or assessment.source.source_type != "LLM_JUDGE":
                continue
            key = (trace.info.trace_id, assessment.name)
            seen[key] += 1
            assert assessment.feedback.value == pytest.approx(scores[key])
            assert assessment.rationale == explanations[key]
            assert assessment.source.source_id == "fake:scripted"
    assert len(seen) == GOOD * 3 and set(seen.values()) == {1}


def test_an_mlflow_expectation_is_the_reference_and_a_local_store_reads_alike(mlflow_server):
    url, folder = mlflow_server
    import mlflow
    from mlflow.entities import Expectation
    from mlflow.tracing.client import TracingClient

    traces = read_mlflow(EXPERIMENT, tracking_uri=url, limit=5)
    assert traces.traces == 5 and traces.source["limit"] == 5
    first = traces.samples[0]
    TracingClient(url).log_assessment(
        first.key, Expectation(name="expected_response", value="The reference.")
    )
    store = f"sqlite:///{folder / 'mlflow.db'}"  # the server's own store, read directly
    local = read_mlflow(EXPERIMENT, tracking_uri=store)
    by_id = {s.key: s for s in local.samples}
    assert by_id[first.key].reference == "The reference."
    assert len(local.samples) == GOOD and local.source["server"] == store
    assert mlflow.get_tracking_uri() != url  # the process-wide setting was left alone

    since = read_mlflow(EXPERIMENT, tracking_uri=url, since=parse_since("1h"),
                        filter_string="trace.status = 'OK'")  # fmt: skip
    assert len(since.samples) == GOOD and "error" not in reasons(since)


def test_a_metric_scores_traces_inside_mlflow_genai_evaluate(mlflow_server):
    url, _ = mlflow_server
    import mlflow

    from ragmeter.traces.scorers import mlflow_scorer

    client = mlflow.MlflowClient(url)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(url)
    try:
        mlflow.set_experiment(EXPERIMENT)
        latest = mlflow.search_traces(
            locations=[experiment.experiment_id], max_results=4, order_by=["timestamp_ms DESC"]
        )
        faithfulness = mlflow_scorer("faithfulness", judge=scripted("in-mlflow"), name="rm_faith")
        mlflow.genai.evaluate(data=latest, scorers=[faithfulness])
    finally:
        mlflow.set_tracking_uri(before)
    # The four latest: the three bad requests, and the last good one (Estonia, answered wrong).
    found = read_mlflow(EXPERIMENT, tracking_uri=url)
    last = next(s for s in found.samples if s.question == QUESTIONS[-1])
    feedback = {}
    for trace in client.search_traces(locations=[experiment.experiment_id], max_results=100):
        for assessment in trace.info.assessments:
            if assessment.name == "rm_faith":
                feedback[trace.info.trace_id] = assessment
    assert feedback[last.key].feedback.value == pytest.approx(expected_faithfulness(
        last.question, last.answer))  # fmt: skip
    assert feedback[last.key].source.source_id == "fake:in-mlflow"
    errors = {
        trace_id: a.feedback.error.error_message
        for trace_id, a in feedback.items()
        if a.feedback.error is not None
    }
    assert Counter(m.split(":")[0] for m in errors.values()) == MLFLOW_BAD


def test_mlflow_shows_the_verdicts_on_the_trace(mlflow_server, browser, tmp_path):
    url, _ = mlflow_server
    traces = wait_for(lambda: read_mlflow(EXPERIMENT, tracking_uri=url), GOOD + 3)
    result = evaluate_traces(traces, METRICS, judge=scripted(), out_dir=tmp_path / "run",
                             cache=False, write_back=True)  # fmt: skip
    assert trace_section(result)["write_back"]["failed"] == []
    portugal = by_position(traces)[PORTUGAL]
    scores = {m: scores_of(result)[(portugal.key, m)] for m in METRICS}
    assert scores["faithfulness"] == pytest.approx(UNSUPPORTED)

    page = browser.new_page(viewport={"width": 1280, "height": 720})
    # A first visit gets a tip laid over the page; it is dismissed whenever it shows.
    page.add_locator_handler(page.get_by_role("button", name="Got it"), lambda tip: tip.click())
    page.goto(f"{url}/#/experiments/{traces.source['experiment_id']}/traces")
    page.get_by_role("link", name=f"Open trace {portugal.key} — input").click(timeout=UI_WAIT)
    page.get_by_role("button", name="Assess").click(timeout=UI_WAIT)
    drawer = page.get_by_role("dialog").filter(has=page.get_by_text(re.compile(r"^Feedback \(")))
    drawer.wait_for(timeout=UI_WAIT)
    text = drawer.inner_text()
    assert "Madrid." in text
    shown = shown_scores(text, r"\s+([\d.]+)")
    assert shown == {m: pytest.approx(v) for m, v in scores.items()}
    box = drawer.bounding_box()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(  # the trace and its assessments, not the empty space below them
        path=str(ARTIFACTS / "traces-mlflow.png"),
        clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": 540},
    )


def test_traces_from_a_file_cannot_take_verdicts_back(tmp_path):
    file = tmp_path / "empty.jsonl"
    file.write_text('{"resourceSpans": []}\n')
    assert read_otlp(file).traces == 0
    with pytest.raises(ValueError, match="no server"):
        evaluate_traces(f"otlp:{file}", ["faithfulness"], judge=scripted(), write_back=True)


def test_only_phoenix_reads_references_from_a_dataset():
    with pytest.raises(ValueError, match="expected_response expectation"):
        read_traces("mlflow:capitals", dataset="references")


def test_an_unfinished_skip_is_kept_with_its_reason():
    traces = samples_from_spans([], skipped=[SkippedTrace("t", "cut short: in flight")])
    assert traces.skipped_reasons() == {"cut short": 1}
    assert traces.record()["skipped"] == [{"trace_id": "t", "reason": "cut short: in flight"}]


# --- people's labels, where they gave them, read back as ratings ------------------------------


def pulled_rows(output: str) -> dict[str, str]:
    """The lines of ``label --pull`` that say what was left out, by their reason."""
    return {
        line.strip().split(": trace(s) ")[0]: line.strip().split(": trace(s) ")[1]
        for line in output.splitlines()
        if ": trace(s) " in line
    }


def test_human_annotations_in_phoenix_are_pulled_as_ratings_that_calibrate_reads(phoenix, tmp_path):
    url, _ = phoenix
    from phoenix.client import Client

    from ragmeter.labels import LabelSession, LabelStore, fold

    # The 20 most recent traces: the three bad requests and the good ones from position 3 on;
    # the first three were not read.
    traces = read_phoenix(PROJECT, server=url, limit=20)
    out = tmp_path / "run"
    result = evaluate_traces(traces, ["faithfulness"], judge=scripted(), out_dir=out,
                             cache=False, write_back=True)  # fmt: skip
    assert trace_section(result)["write_back"]["failed"] == []
    asked = {q: i for i, q in enumerate(QUESTIONS)}
    at = {asked[s.question]: s for s in traces.samples}
    assert sorted(at) == list(range(3, GOOD))
    client = Client(base_url=url)
    spans = client.spans.get_spans(project_identifier=PROJECT, limit=10_000)
    retriever = {s["context"]["trace_id"]: s["context"]["span_id"]
                 for s in spans if s["span_kind"] == "RETRIEVER"}  # fmt: skip
    root = {s["context"]["trace_id"]: s["context"]["span_id"] for s in spans if not s["parent_id"]}
    right = {i: i not in appmod.WRONG for i in range(GOOD)}

    def annotate(span_id, who, name="faithfulness", kind="HUMAN", **result):
        client.spans.add_span_annotation(span_id=span_id, annotation_name=name,
                                         annotator_kind=kind, identifier=who, sync=True,
                                         **result)  # fmt: skip

    # Alice says yes or no on the root span (Portugal, 4, is left to the page's own test).
    for i in [3, 5, 6, 7, 8, 9, 10]:
        annotate(at[i].metadata["span_id"], "alice", label="yes" if right[i] else "no")
    annotate(retriever[at[3].key], "alice", label="Yes", explanation="again, on the retriever")
    # Bob scores; carol labels a whole trace; dave annotates a retriever span.
    for i in [10, 11, 12, 13, 14]:
        annotate(at[i].metadata["span_id"], "bob", score=float(right[i]))
    client.traces.add_trace_annotation(trace_id=at[15].key, annotation_name="faithfulness",
                                       annotator_kind="HUMAN", label="Yes", identifier="carol",
                                       sync=True)  # fmt: skip
    annotate(retriever[at[16].key], "dave", score=1.0)
    # What cannot be a rating of the run, each said: a trace it did not read, one it left out,
    # a name that is no metric of it, a label that is neither a number nor yes/no.
    first = next(s for s in read_phoenix(PROJECT, server=url).samples if s.question == QUESTIONS[0])
    annotate(first.metadata["span_id"], "alice", label="yes")
    no_retrieval = next(s.trace_id for s in traces.skipped if s.reason.startswith("no retrieval"))
    annotate(root[no_retrieval], "erin", score=0.0)
    annotate(at[5].metadata["span_id"], "alice", name="tone", label="polite")
    annotate(at[6].metadata["span_id"], "frank", label="maybe")
    # Another judge's annotation is not a person's label: not read at all.
    annotate(at[7].metadata["span_id"], "other-judge", kind="LLM", score=0.0)

    pulled = runner.invoke(app, ["label", str(out), "--pull"], terminal_width=250)
    assert pulled.exit_code == 0, pulled.output
    assert f"19 label(s) people gave the traces of phoenix:{PROJECT}" in pulled.output
    assert (
        "14 rating(s) (faithfulness by phoenix:alice: 7, faithfulness by phoenix:bob: 5, "
        "faithfulness by phoenix:carol: 1, faithfulness by phoenix:dave: 1); 0 already there"
    ) in pulled.output
    assert "1 earlier label(s) by the same person of the same trace and metric" in pulled.output
    assert "faithfulness: scale binary, read from the values" in pulled.output
    assert "4 label(s) left out" in pulled.output
    left = pulled_rows(pulled.output)
    assert left == {
        "1 on a trace the run did not read": first.key,
        "1 on a trace the run left out (no retrieval)": no_retrieval,
        "1 named 'tone': not a metric of the run (map it: --annotation METRIC=NAME)": at[5].key,
        "1 faithfulness: neither a number nor yes/no ('maybe')": at[6].key,
    }

    # In the run's log, each person under their own name, with what they said.
    with LabelStore(out / "labels.sqlite") as store:
        standing = fold(store.events("rating")).labels
    by_person = Counter(who for who, _ in standing)
    assert by_person == {"phoenix:alice": 7, "phoenix:bob": 5, "phoenix:carol": 1,
                         "phoenix:dave": 1}  # fmt: skip
    alice_3 = standing[("phoenix:alice", next(k for w, k in standing if k.sample_id == at[3].key))]
    assert alice_3.value == 1.0 and alice_3.note == "again, on the retriever"
    assert alice_3.order == f"pulled from phoenix:{PROJECT}" and alice_3.judge == SUPPORTED

    # Pulled again: nothing is added twice.
    again = runner.invoke(app, ["label", str(out), "--pull"], terminal_width=250)
    assert again.exit_code == 0, again.output
    assert "0 rating(s); 14 already there" in again.output

    # calibrate reads them. Rated: positions 3 and 5-16, 13 samples; the people said no to the
    # two answered wrong (9 and 14) and yes to the rest, as the judge did (0.9 against 0.2).
    done = runner.invoke(app, ["calibrate", str(out)], terminal_width=250)
    assert done.exit_code == 0, done.output
    assert "14 of the 14 ratings were pulled from phoenix:capitals, where people chose" in (
        done.output
    )
    found = json.loads((out / "calibration.json").read_text())["metrics"][0]
    people = found["result"]
    assert (people["rated"], people["unrated"]) == (13, 4)
    # Ratings alone: 11/13, their variance 13/12 * (11/13) * (2/13) = 11/78.
    assert people["labels_only"]["estimate"] == pytest.approx(11 / 13)
    # The judge's line to the ratings is exact (0.2 -> 0, 0.9 -> 1) in every fold: g = y on
    # the rated, [0, 1, 1, 0] on the unrated (positions 4, 17, 18, 19), variance 1/3. lambda =
    # (11/78 / 13) / (11/78 / 13 + 1/3 / 4) = 11 / 95.5 = 22/191; the estimate
    # 11/13 + 22/191 * (1/2 - 11/13) = 11/13 - 22/191 * 9/26 = 0.806283.
    assert people["weight"] == pytest.approx(22 / 191)
    assert people["ppi"]["estimate"] == pytest.approx(11 / 13 - 22 / 191 * 9 / 26)

    # The labelling page counts them among the people to agree with.
    session = LabelSession.open(out, metric="faithfulness", annotator="me")
    try:
        assert session.scale.text == "0-1"
        key = next(item.key for item in session.items if item.key.sample_id == at[9].key)
        state = session.answer("me", key.text(), 0.0)
    finally:
        session.close()
    assert {"with": "phoenix:alice", "items": 1, "agreement": 1.0, "kappa": None} in state[
        "agreement"
    ]

    # Bob changes his mind on 13 in Phoenix: the next pull adds that, standing over the old.
    annotate(at[13].metadata["span_id"], "bob", score=0.0)
    changed = runner.invoke(app, ["label", str(out), "--pull"], terminal_width=250)
    assert "1 rating(s) (faithfulness by phoenix:bob: 1); 13 already there; 1 changed" in (
        changed.output
    )
    with LabelStore(out / "labels.sqlite") as store:
        standing = fold(store.events("rating")).labels
    assert [e.value for (who, k), e in standing.items()
            if who == "phoenix:bob" and k.sample_id == at[13].key] == [0.0]  # fmt: skip


def test_human_feedback_in_mlflow_is_pulled_as_ratings_that_calibrate_reads(
    mlflow_server, tmp_path
):
    url, _ = mlflow_server
    import mlflow
    from mlflow.entities import AssessmentSource

    traces = wait_for(lambda: read_mlflow(EXPERIMENT, tracking_uri=url), GOOD + 3)
    out = tmp_path / "run"
    metrics = ["faithfulness", "answer_relevance"]
    result = evaluate_traces(traces, metrics, judge=scripted(), out_dir=out, cache=False,
                             write_back=True)  # fmt: skip
    assert trace_section(result)["write_back"]["failed"] == []
    at = by_position(traces)
    ana = AssessmentSource(source_type="HUMAN", source_id="ana@example.com")
    ben = AssessmentSource(source_type="HUMAN", source_id="ben@example.com")
    errored = next(s.trace_id for s in traces.skipped if s.reason.startswith("error"))
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(url)
    try:
        # Ana says whether each answer is grounded in what was retrieved (9 is not: Oslo).
        for i in [0, 1, 2, 3, 5, 6, 7, 8, 9]:
            mlflow.log_feedback(trace_id=at[i].key, name="grounded",
                                value=i not in appmod.WRONG, source=ana)  # fmt: skip
        # On 12 she first said no, then corrected herself: the correction stands.
        first = mlflow.log_feedback(trace_id=at[12].key, name="grounded", value=False, source=ana)
        mlflow.override_feedback(trace_id=at[12].key, assessment_id=first.assessment_id,
                                 value=True, rationale="misread it", source=ana)  # fmt: skip
        # Ben rates how helpful four answers are, 1 to 5.
        for i, rating in zip([10, 11, 13, 14], [5, 4, 4, 2], strict=True):
            mlflow.log_feedback(trace_id=at[i].key, name="helpfulness", value=rating, source=ben)
        mlflow.log_feedback(trace_id=errored, name="grounded", value=False, source=ana)
        # A judge's feedback is not a person's label: not read at all.
        mlflow.log_feedback(trace_id=at[1].key, name="grounded", value=False,
                            source=AssessmentSource(source_type="LLM_JUDGE",
                                                    source_id="another-judge"))  # fmt: skip
    finally:
        mlflow.set_tracking_uri(before)

    pull = ["label", str(out), "--pull"]
    # Named otherwise than the run's metrics: nothing is taken for a rating unasked.
    unmapped = runner.invoke(app, pull, terminal_width=250)
    assert unmapped.exit_code == 0, unmapped.output
    assert "15 label(s) people gave the traces of mlflow:capitals" in unmapped.output
    assert "added to" in unmapped.output and ": 0 rating(s); 0 already there" in unmapped.output
    left = pulled_rows(unmapped.output)
    assert left["1 on a trace the run left out (error)"] == errored
    assert left["10 named 'grounded': not a metric of the run (map it: --annotation METRIC=NAME)"]
    assert left["4 named 'helpfulness': not a metric of the run (map it: --annotation METRIC=NAME)"]

    # Mapped: grounded rates faithfulness (true/false as 1/0); helpfulness needs its scale.
    mapped = [*pull, "--annotation", "faithfulness=grounded",
              "--annotation", "answer_relevance=helpfulness"]  # fmt: skip
    without_scale = runner.invoke(app, mapped, terminal_width=250)
    assert "10 rating(s) (faithfulness by mlflow:ana@example.com: 10)" in without_scale.output
    assert pulled_rows(without_scale.output)[
        "4 answer_relevance: values from 2 to 5 on a scale nobody stated (say it: --scale "
        "answer_relevance=LOW-HIGH)"
    ]
    scaled = runner.invoke(app, [*mapped, "--scale", "answer_relevance=1-5"], terminal_width=250)
    assert scaled.exit_code == 0, scaled.output
    assert (
        "4 rating(s) (answer_relevance by mlflow:ben@example.com: 4); 10 already there"
        in scaled.output
    )

    done = runner.invoke(app, ["calibrate", str(out)], terminal_width=250)
    assert done.exit_code == 0, done.output
    found = {m["metric"]: m for m in json.loads((out / "calibration.json").read_text())["metrics"]}
    # Faithfulness: ten answers rated, nine of them grounded (12 as corrected).
    faithfulness = found["faithfulness"]["result"]
    assert (faithfulness["rated"], faithfulness["unrated"]) == (10, GOOD - 10)
    assert faithfulness["labels_only"]["estimate"] == pytest.approx(0.9)
    # Answer relevance on Ben's 1-5: (5 + 4 + 4 + 2) / 4.
    relevance = found["answer_relevance"]
    assert (relevance["scale"]["low"], relevance["scale"]["high"]) == (1, 5)
    assert relevance["result"]["rated"] == 4
    assert relevance["result"]["labels_only"]["estimate"] == pytest.approx(3.75)
