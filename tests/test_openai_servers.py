"""OpenAI-compatible servers as they are: the judge finds out which ways of asking a server
accepts (a JSON schema, log-probabilities) from its first refusal, a request the server refuses is
never sent again as it was, and a reply with more items than asked for keeps the first ones."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import httpx
import pytest

from ragmeter import evaluate
from ragmeter.judges import FakeJudge, RequestRefused
from ragmeter.judges.openai import ServerFallbackWarning
from ragmeter.judges.transport import HttpClient, TransportOptions
from ragmeter.manifest import RunRecord
from ragmeter.metrics import Faithfulness
from ragmeter.metrics.answer_relevance import questions_prompt
from ragmeter.prompts import ReplyError
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession, measured

from .fault_server import Faults, FaultServer, marked_samples, statement_writing_metrics

QUICK = {"backoff": 0.001, "timeout": 5, "deadline": 30}
# Statements written as JSON: each item's first request asks for a JSON reply.
METRICS = statement_writing_metrics()


def run(server: FaultServer, tmp_path: Path, name: str, **options: object):
    return evaluate(
        marked_samples(2),
        METRICS,
        judge="openai:fault-judge",
        judge_options={"base_url": server.url, **QUICK, **options},
        cache=tmp_path / f"{name}.sqlite",
        out_dir=tmp_path / name,
    )


def values(result) -> dict[tuple[str, str], float | None]:
    return {(s.sample_id, s.metric): s.value for s in result.scores}


def chat(server: FaultServer):
    return [s for s in server.seen if s.path.endswith("/chat/completions")]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The scores from a server that accepts every way of asking."""
    tmp_path = tmp_path_factory.mktemp("clean")
    with FaultServer() as server:
        result = run(server, tmp_path, "clean")
    assert result.run.counts.unscored == 0
    return result


def test_a_server_refusing_json_schema_is_asked_once_then_with_json_object(tmp_path, clean):
    with FaultServer(Faults(refuse=frozenset({"json_schema"}))) as server:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run(server, tmp_path, "refusing")
        seen = chat(server)
    refused = [s for s in seen if s.fault == "refused"]
    assert len(refused) == 1 and refused[0] is seen[0]
    assert refused[0].response_format["type"] == "json_schema"
    json_requests = [s for s in seen[1:] if s.response_format is not None]
    assert json_requests and all(
        s.response_format["type"] == "json_object" and "schema" in s.response_format
        for s in json_requests
    )
    fallbacks = [w for w in caught if issubclass(w.category, ServerFallbackWarning)]
    assert len(fallbacks) == 1
    assert "refused response_format 'schema' (HTTP 500)" in str(fallbacks[0].message)
    assert values(result) == values(clean) and result.run.counts.unscored == 0
    judge = RunRecord.read(tmp_path / "refusing").models["judge"]
    assert judge.settings["json_mode"] == "object_schema"
    assert judge.model_extra["json_mode"] == "object_schema"
    assert judge.model_extra["fallbacks"] == [str(fallbacks[0].message)]
    assert judge.identity != clean.run.models["judge"].identity


def test_a_server_without_json_modes_gets_the_schema_in_the_prompt(tmp_path, clean):
    refuse = frozenset({"json_schema", "json_object"})
    with FaultServer(Faults(refuse=refuse)) as server:
        with pytest.warns(ServerFallbackWarning):
            result = run(server, tmp_path, "plain")
        seen = chat(server)
    # schema, then object_schema, then object: each refused once; then plain text.
    assert [s.response_format["type"] for s in seen if s.fault == "refused"] == [
        "json_schema",
        "json_object",
        "json_object",
    ]
    statements = [s for s in seen[3:] if s.kind == "statements"]
    assert len(statements) == 2
    for request in statements:
        assert request.response_format is None
        assert "The JSON object must follow this JSON schema: {" in request.system
    assert values(result) == values(clean)
    assert result.run.models["judge"].settings["json_mode"] == "none"


def test_a_server_refusing_logprobs_is_read_by_the_word(tmp_path, clean):
    with FaultServer(Faults(refuse=frozenset({"logprobs"}))) as server:
        with pytest.warns(ServerFallbackWarning, match="refused logprobs"):
            result = run(server, tmp_path, "words")
        seen = chat(server)
    assert sum(s.fault == "refused" for s in seen) == 1
    assert not any(s.logprobs for s in seen if s.fault is None)
    probabilities = {
        e.probability for s in result.scores for e in s.exchanges if e.probability is not None
    }
    clean_probabilities = {
        e.probability for s in clean.scores for e in s.exchanges if e.probability is not None
    }
    assert probabilities == {0.0, 1.0}
    assert clean_probabilities - {0.0, 1.0}  # the clean run had real probabilities to lose
    assert result.run.counts.unscored == 0
    assert result.run.models["judge"].settings["logprobs"] is False
    assert "logprobs" not in clean.run.models["judge"].settings


def test_a_json_mode_given_explicitly_is_not_negotiated_and_never_re_sent(tmp_path):
    with FaultServer(Faults(refuse=frozenset({"json_schema"}))) as server:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ServerFallbackWarning)
            result = evaluate(
                marked_samples(2),
                [Faithfulness(statements="generate")],
                judge="openai:fault-judge",
                judge_options={"base_url": server.url, "json_mode": "schema", **QUICK},
                cache=None,
            )
        seen = chat(server)
    # One request per item: neither the transport (5 attempts) nor the session (3) re-sends it.
    assert len(seen) == 2 and all(s.fault == "refused" for s in seen)
    assert result.run.counts.unscored == 2
    for score in result.scores:
        assert "HTTP 500" in score.unscored_reason and "(1 attempt in" in score.unscored_reason
        assert len(score.exchanges) == 1


def test_a_rerun_meets_the_refusal_once_and_reuses_the_rest(tmp_path):
    with FaultServer(Faults(refuse=frozenset({"json_schema"}))) as server:
        with pytest.warns(ServerFallbackWarning):
            run(server, tmp_path, "twice")
        server.clear()
        with pytest.warns(ServerFallbackWarning):
            again = run(server, tmp_path, "twice")
        seen = chat(server)
    # The first item's first call learns the way again (refused, then answered); the rest of
    # that item comes from the call cache, and every other item from the store, keyed by it.
    assert [s.fault for s in seen] == ["refused", None]
    assert again.run.counts.resumed == 3 and again.run.counts.judged == 1


@pytest.mark.parametrize(
    ("status", "body", "attempts"),
    [
        (500, "1 validation error:\n  {'loc': ('body', 'response_format')}", 1),
        (500, "{\"detail\": \"Input should be 'text' or 'json_object'\"}", 1),
        (400, '{"error": {"message": "Unrecognized request argument"}}', 1),
        (422, '{"detail": [{"loc": ["body", "x"], "msg": "extra"}]}', 1),
        (500, '{"error": {"message": "CUDA out of memory"}}', 3),
        (429, '{"error": {"message": "slow down"}}', 3),
    ],
    ids=["500-validation", "500-input", "400", "422", "500-transient", "429"],
)
def test_the_transport_retries_only_what_another_attempt_may_fix(status, body, attempts):
    sent = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(status, text=body, headers={"retry-after": "0"})

    client = HttpClient(
        "http://server/v1",
        TransportOptions(max_retries=2, backoff=0),
        transport=httpx.MockTransport(reply),
        sleep=lambda _: None,
    )
    with pytest.raises(Exception) as raised:
        client.post("/chat/completions", {})
    assert len(sent) == attempts
    refused = isinstance(raised.value, RequestRefused)
    assert refused == (attempts == 1)
    if refused:
        assert raised.value.status == status and raised.value.detail == body


def test_more_questions_than_asked_keep_the_first_and_say_so():
    prompt = questions_prompt(3)
    reply = json.dumps({"questions": ["A?", "B?", "C?", "D?"], "noncommittal": False})
    notes: list[str] = []
    parsed = prompt.parse(reply, notes)
    assert parsed.questions == ["A?", "B?", "C?"]
    assert notes == [
        "answer_relevance.questions: the reply had 4 items in questions where at most 3 were "
        "asked for; the first 3 were kept"
    ]
    with pytest.raises(ReplyError, match="questions: List should have at least 3 items"):
        prompt.parse(json.dumps({"questions": ["A?", "B?"], "noncommittal": False}))
    # Too long and wrong otherwise: not forgiven.
    with pytest.raises(ReplyError, match="noncommittal"):
        prompt.parse(json.dumps({"questions": ["A?", "B?", "C?", "D?"]}))


def test_a_forgiven_reply_is_noted_in_the_score_explanation():
    sample = Sample(
        id="s", question="Where is the Eiffel Tower?", contexts=["In Paris."], answer="In Paris."
    )
    judge = FakeJudge(
        [json.dumps({"questions": ["Q1?", "Q2?", "Q3?", "Q4?"], "noncommittal": True})]
    )
    session = JudgeSession(judge)
    prompt = questions_prompt(3)
    score = measured(
        sample.key,
        "answer_relevance",
        session,
        lambda: (1.0, {"questions": session.ask(prompt, {"answer": sample.answer}).questions}),
    )
    assert score.value == 1.0 and len(judge.history) == 1
    assert score.explanation["questions"] == ["Q1?", "Q2?", "Q3?"]
    assert score.explanation["reply_notes"] == [
        "answer_relevance.questions: the reply had 4 items in questions where at most 3 were "
        "asked for; the first 3 were kept"
    ]
