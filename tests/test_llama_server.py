"""The OpenAI-compatible path against a real server: llama-cpp-python's, serving the bundled
judge, with the judge's default options (marked: deselect with -m "not local_model").

The server refuses ``json_schema``; the judge must find that out from one refused request and
score every sample as the in-process judge does, with its log-probabilities.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ragmeter import evaluate
from ragmeter.data import load_samples
from ragmeter.judges.openai import ServerFallbackWarning
from ragmeter.judges.serve import served

pytestmark = pytest.mark.local_model

EXAMPLE = Path(__file__).parent.parent / "examples" / "basic.jsonl"


@pytest.fixture(scope="module")
def samples():
    return load_samples(EXAMPLE).samples


def test_the_server_scores_every_sample_as_the_in_process_judge_does(
    samples, tmp_path, monkeypatch
):
    # The server returns no hidden states, so the remote judge reads Yes/No zero-shot; the
    # in-process judge is read the same way here rather than through its bundled heads.
    in_process = evaluate(samples, cache=tmp_path / "local.sqlite", judge_options={"heads": "none"})
    with served(log=tmp_path / "server.log") as url:
        monkeypatch.setenv("RAGMETER_BASE_URL", url)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            remote = evaluate(samples, judge="openai:qwen", cache=tmp_path / "remote.sqlite")
    assert remote.run.counts.unscored == 0 and in_process.run.counts.unscored == 0
    # What the two generate can differ: llama-cpp-python's server applies a repeat penalty
    # (1.1) that the OpenAI API cannot switch off, and near-ties between two tokens flip
    # between llama.cpp's batch layouts. A different reply changes what is asked next, so
    # scores are compared where every generated reply was the same (and no sentence that
    # context relevance counts at P >= 0.5 lay within 0.05 of it, where a difference the
    # probabilities are allowed flips the count), and Yes/No probabilities wherever the same
    # question was asked.
    local = {(s.sample_id, s.metric): s for s in in_process.scores}
    same_scores = same_questions = 0
    for score in remote.scores:
        where = (score.sample_id, score.metric)
        mine = local[where]
        if _generated(score) == _generated(mine) and not _near_the_threshold(mine):
            same_scores += 1
            assert score.value == pytest.approx(mine.value, abs=0.05), where
        asked = {
            _text(e.messages): e.probability for e in mine.exchanges if e.probability is not None
        }
        for exchange in score.exchanges:
            if exchange.probability is not None and _text(exchange.messages) in asked:
                same_questions += 1
                expected = asked[_text(exchange.messages)]
                assert exchange.probability == pytest.approx(expected, abs=0.05), where
    assert same_scores >= len(samples) + 2 and same_questions >= 3 * len(samples)
    assert remote.run.counts.model_calls < 2 * in_process.run.counts.model_calls
    fallbacks = [str(w.message) for w in caught if w.category is ServerFallbackWarning]
    assert len(fallbacks) == 1 and "refused response_format 'schema'" in fallbacks[0]
    judge = remote.run.models["judge"]
    assert judge.settings["json_mode"] == "object_schema" and "logprobs" not in judge.settings
    # Yes/No questions were read from the server's log-probabilities, not from the word.
    probabilities = [
        e.probability
        for s in remote.scores
        if s.metric == "context_relevance"
        for e in s.exchanges
        if e.probability is not None
    ]
    assert probabilities and any(0.01 < p < 0.99 for p in probabilities)


def _near_the_threshold(score) -> bool:
    """Whether a sentence of context relevance had P(needed), or P(needed) x P(new), within
    0.05 of what decides whether it is counted: the threshold 0.5, or the repeat bar."""
    if score.metric != "context_relevance":
        return False
    p_needed = score.explanation["p_needed"]
    p_new = score.explanation.get("p_new_information", {})
    edges = [0.5, score.explanation.get("repeat_bar", 0.5)]
    counted = [p * p_new.get(str(i), 1.0) for i, p in enumerate(p_needed)]
    return any(abs(p - edge) < 0.05 for p in [*p_needed, *counted] for edge in edges)


def _generated(score) -> list[tuple[str, str | None]]:
    return [(_text(e.messages), e.reply) for e in score.exchanges if e.probability is None]


def _text(messages) -> str:
    return "\n".join(f"{m.role}: {m.content}" for m in messages)
