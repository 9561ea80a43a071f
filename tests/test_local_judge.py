"""The real offline judge on one sample (marked: deselect with -m "not local_model")."""

from __future__ import annotations

import json

import pytest

from ragmeter import evaluate
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.minilm import MiniLMEmbedder
from ragmeter.sample import Sample

pytestmark = pytest.mark.local_model

CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It was "
    "designed and built by the company of engineer Gustave Eiffel. Construction began in 1887 "
    "and the tower was completed in March 1889, in time for the World's Fair."
)
UNFAITHFUL = Sample(
    id="eiffel-unfaithful",
    question="When was the Eiffel Tower completed and who designed it?",
    contexts=[CONTEXT],
    answer="The Eiffel Tower was completed in 1901. It was designed by the architect Le "
    "Corbusier as a radio mast for the French army.",
)


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return LocalJudge()


def test_local_judge_scores_a_sample_end_to_end(judge, tmp_path):
    result = evaluate(
        [UNFAITHFUL], judge=judge, embedder=MiniLMEmbedder(), cache=tmp_path / "c.sqlite"
    )
    scores = {s.metric: s for s in result.scores}
    assert all(s.scored for s in scores.values()), [s.unscored_reason for s in scores.values()]
    # Both claims contradict the context (1901 vs 1889; Le Corbusier vs Eiffel's company).
    assert scores["faithfulness"].value is not None and scores["faithfulness"].value < 0.5
    # The answer is on topic and answers both parts of the question, wrongly.
    assert scores["answer_relevance"].value is not None and scores["answer_relevance"].value > 0.5
    # 3 context sentences: the two that say who built it and when are more needed than the one
    # that says where it stands. (Whether the third crosses 0.5 is not asserted: its P(needed)
    # x P(new) is near it, 0.53 on one CPU and 0.48 on another, as llama.cpp's arithmetic
    # differs between instruction sets.)
    p_needed = scores["context_relevance"].explanation["p_needed"]
    assert min(p_needed[1:]) > p_needed[0] + 0.1
    # faithfulness: one Yes/No per answer sentence (2); answer relevance: the commitment check
    # + completeness; context relevance: one Yes/No per sentence, and by default no check for
    # repeated facts (a needed sentence after the first clears the repeat bar instead).
    assert len(scores["faithfulness"].explanation["statements"]) == 2
    assert scores["context_relevance"].explanation["repeat_bar"] == 0.72
    assert result.usage().model_calls == 2 + 2 + 3

    rerun = evaluate(
        [UNFAITHFUL], judge=judge, embedder=MiniLMEmbedder(), cache=tmp_path / "c.sqlite"
    )
    assert rerun.usage().model_calls == 0
    assert [s.value for s in rerun.scores] == [s.value for s in result.scores]


def test_next_token_logprobs_reuse_the_shared_prefix(judge):
    from ragmeter.judges.base import ChatRequest, Message

    def ask(statement: str) -> dict[str, float]:
        request = ChatRequest(
            messages=(
                Message(role="system", content="Answer yes or no."),
                Message(
                    role="user",
                    content=f"Context: {CONTEXT}\nIs this supported by the context? {statement}",
                ),
            ),
            max_tokens=1,
            top_logprobs=5,
        )
        response = judge.complete(request)
        assert response.logprobs is not None
        return response.logprobs[0].top

    supported = ask("The tower was completed in 1889.")
    contradicted = ask("The tower was completed in 1950.")
    assert max(supported, key=supported.get).lower().strip() == "yes"
    assert max(contradicted, key=contradicted.get).lower().strip() == "no"


def test_generated_tokens_carry_their_log_probabilities(judge):
    from ragmeter.judges.base import ChatRequest, Message

    schema = {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["reasoning", "year"],
    }
    request = ChatRequest(
        messages=(
            Message(
                role="user",
                content=f"{CONTEXT}\nIn which year was the tower completed? Reply in JSON.",
            ),
        ),
        json_schema=schema,
        max_tokens=80,
        top_logprobs=5,
    )
    response = judge.complete(request)
    assert response.logprobs is not None
    assert "".join(t.token for t in response.logprobs) == response.text
    # up to 5 alternatives: byte pieces that print alike share one entry
    assert all(1 <= len(t.top) <= 5 and t.logprob <= 0 for t in response.logprobs)
    # each chosen token's log-probability is its own, also where it heads the alternatives
    assert all(t.top[t.token] == t.logprob for t in response.logprobs if t.token in t.top)
    assert json.loads(response.text)["year"] == 1889
