"""Multi-turn samples: loading the earlier turns, showing them to the judge, leaving single-turn
samples exactly as they were; and the MTRAG correlations, worked out by hand."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from ragmeter import evaluate, plugins
from ragmeter.cli.main import app
from ragmeter.data import DatasetError, load_samples
from ragmeter.judges.base import ChatRequest
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.meta.mtrag import MtragRow, agreement, correlation, load_mtrag
from ragmeter.sample import Sample, Turn
from ragmeter.score import Score

from .conftest import prompt_name, routed, yes_no

EARLIER = [
    {"role": "user", "content": "Which rivers cross the city?"},
    {"role": "assistant", "content": "The Rhine and the Elbe."},
]
FOLLOW_UP = "And how long is the second one?"
ANSWER = "The Elbe is 1,094 km long."
CONTEXTS = ["The Elbe is 1,094 km long. The Rhine is 1,233 km long."]


def test_a_single_turn_sample_hashes_and_serialises_as_before():
    sample = Sample(question="q?", contexts=["c."], answer="a.")
    content = json.dumps(["q?", ["c."], "a.", None], ensure_ascii=False)
    assert sample.digest == hashlib.sha256(content.encode()).hexdigest()
    assert "history" not in sample.model_dump_json()
    assert sample.asked() == {"question": "q?"}
    turned = Sample(
        question="q?", contexts=["c."], answer="a.", history=[Turn(role="user", text="hi")]
    )
    assert turned.digest != sample.digest
    assert Sample.model_validate_json(turned.model_dump_json()) == turned


def test_history_loads_from_jsonl_csv_and_ragas_multi_turn(tmp_path):
    rows = tmp_path / "chat.jsonl"
    rows.write_text(
        json.dumps(
            {"question": FOLLOW_UP, "history": EARLIER, "contexts": CONTEXTS, "answer": ANSWER}
        )
        + "\n"
    )
    expected = [
        Turn(role="user", text=EARLIER[0]["content"]),
        Turn(role="assistant", text=EARLIER[1]["content"]),
    ]
    (loaded,) = load_samples(rows).samples
    assert (loaded.question, loaded.history) == (FOLLOW_UP, expected)

    frame = pd.DataFrame(
        [
            {
                "question": FOLLOW_UP,
                "history": json.dumps(EARLIER),
                "contexts": json.dumps(CONTEXTS),
                "answer": ANSWER,
            }
        ]
    )
    frame.to_csv(tmp_path / "chat.csv", index=False)
    assert load_samples(tmp_path / "chat.csv").samples[0].history == expected

    ragas = {
        "user_input": [
            {"content": EARLIER[0]["content"], "type": "human"},
            {"content": EARLIER[1]["content"], "type": "ai"},
            {"content": FOLLOW_UP, "type": "human"},
            {"content": ANSWER, "type": "ai"},
        ],
        "retrieved_contexts": CONTEXTS,
    }
    (multi,) = load_samples([ragas]).samples
    assert (multi.question, multi.history, multi.answer) == (FOLLOW_UP, expected, ANSWER)
    # A response column wins over the conversation's last reply.
    (answered,) = load_samples([ragas | {"response": "Another answer."}]).samples
    assert answered.answer == "Another answer."


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"question": "q", "answer": "a", "history": [{"role": "tool", "content": "x"}]},
            "row 1, field 'history': turn 1: the role 'tool' is not one of user, human, "
            "assistant, ai, agent",
        ),
        (
            {"question": "q", "answer": "a", "history": [{"role": "user", "content": 3}]},
            "row 1, field 'history': turn 1: expected its text as a string, got int",
        ),
        (
            {"user_input": [{"type": "ai", "content": "hello"}], "response": "a"},
            "row 1, field 'question': the conversation has no user turn",
        ),
    ],
)
def test_a_bad_turn_is_named_by_row_and_field(row, message):
    with pytest.raises(DatasetError) as error:
        load_samples([row])
    assert str(error.value) == message


def test_the_constructor_reads_history_in_every_form_the_files_may_hold():
    expected = [
        Turn(role="user", text="Which rivers cross the city?"),
        Turn(role="assistant", text="The Rhine and the Elbe."),
    ]
    forms = [
        EARLIER,  # OpenAI messages
        [  # ragas / LangChain messages, roles in any case
            {"type": "Human", "content": "Which rivers cross the city?"},
            {"type": "AI", "content": "The Rhine and the Elbe."},
        ],
        [
            {"speaker": "human", "text": "Which rivers cross the city?"},
            {"speaker": "agent", "text": "The Rhine and the Elbe."},
        ],
        [("user", "Which rivers cross the city?"), ["assistant", "The Rhine and the Elbe."]],
        expected,
        [expected[0], {"role": "assistant", "text": "The Rhine and the Elbe."}],
    ]
    built = [
        Sample(question=FOLLOW_UP, contexts=CONTEXTS, answer=ANSWER, history=form) for form in forms
    ]
    assert all(sample.history == expected for sample in built)
    # Every form is the same content: same digest as the file loader's sample of EARLIER.
    (loaded,) = load_samples(
        [{"question": FOLLOW_UP, "contexts": CONTEXTS, "answer": ANSWER, "history": EARLIER}]
    ).samples
    assert {sample.digest for sample in built} == {loaded.digest}
    read = [["user", "Which rivers cross the city?"], ["assistant", "The Rhine and the Elbe."]]
    content = json.dumps([FOLLOW_UP, CONTEXTS, ANSWER, None, read], ensure_ascii=False)
    assert loaded.digest == hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ([("user", "hi"), {"role": "tool", "content": "x"}], "turn 2: the role 'tool' is not one"),
        (
            [{"role": "user", "content": None}],
            "turn 1: expected its text as a string, got NoneType",
        ),
        ([("user", "hi", "extra")], "turn 1: expected an object with a role and a text"),
        ("hello", "expected a list of turns, got str"),
    ],
)
def test_a_bad_turn_given_to_the_constructor_is_named_with_its_field(history, message):
    with pytest.raises(ValidationError) as error:
        Sample(question="q", answer="a", history=history)
    (first,) = error.value.errors()
    assert first["loc"] == ("history",)
    assert message in first["msg"]


def test_the_judge_sees_the_conversation_before_the_question_but_not_as_evidence():
    replies = {
        "statements": {"statements": [ANSWER]},
        "supported": 0.9,
        "needed": 0.8,
        "new_information": 0.9,
        "complete": 0.7,
        "noncommittal": {"noncommittal": False},
    }
    judge = FakeJudge(responder=routed(replies))
    sample = Sample(
        question=FOLLOW_UP,
        history=[
            Turn(role="user", text="Which rivers cross the city?"),
            Turn(role="assistant", text="The Rhine and the Elbe."),
        ],
        contexts=CONTEXTS,
        answer=ANSWER,
    )
    result = evaluate([sample], judge=judge, embedder=HashingEmbedder(), cache=False)
    assert all(s.scored for s in result.scores)
    shown = (
        "<conversation so far>\nUser: Which rivers cross the city?\n"
        "Assistant: The Rhine and the Elbe.\n</conversation so far>\n"
        f"<question>\n{FOLLOW_UP}\n</question>"
    )
    by_prompt: dict[str, list[str]] = {}
    for request in judge.history:
        by_prompt.setdefault(prompt_name(request), []).append(request.messages[-1].content)
    for name in ("statements", "complete", "needed", "new_information"):
        assert all(text.startswith(shown) for text in by_prompt.get(name, [])), name
    assert by_prompt["complete"] and by_prompt["needed"]
    # Claims are checked against the retrieved contexts only, never against earlier turns.
    assert all("conversation so far" not in text for text in by_prompt["supported"])

    single = FakeJudge(responder=routed(replies))
    evaluate(
        [sample.model_copy(update={"history": []})],
        judge=single,
        embedder=HashingEmbedder(),
        cache=False,
    )
    assert all("conversation so far" not in r.messages[-1].content for r in single.history)


# --- MTRAG ---------------------------------------------------------------------------------------


def mtrag_row(
    task: str, responder: str, answer: str, faithful: float, complete: float, rl_f: float
):
    return {
        "task_id": task,
        "model_id": responder,
        "conversation": [
            {"speaker": "user", "text": "Which rivers cross the city?"},
            {"speaker": "agent", "text": "The Rhine and the Elbe."},
            {"speaker": "user", "text": FOLLOW_UP},
        ],
        "contexts": [{"document_id": "d1", "title": None, "text": CONTEXTS[0]}],
        "model_response": answer,
        "human_mean": {
            "faithfulness": faithful,
            "appropriateness": complete,
            "completeness": complete,
        },
        "auto": {"rl_f": rl_f},
        "meta": {"Answerability": ["ANSWERABLE"]},
    }


def test_mtrag_rows_load_with_their_conversation(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(mtrag_row("t1", "gpt-4o", ANSWER, 4.0, 3.5, 1.0)) + "\n")
    (row,) = load_mtrag(path)
    assert row.sample.key == "t1/gpt-4o" and row.conversation == "t1"
    assert row.sample.question == FOLLOW_UP and [t.role for t in row.sample.history] == [
        "user",
        "assistant",
    ]
    assert (row.responder, row.answerability, row.baseline) == ("gpt-4o", "answerable", 1.0)
    broken = mtrag_row("t1", "gpt-4o", ANSWER, 4.0, 3.5, 1.0)
    broken["conversation"][-1]["speaker"] = "agent"
    path.write_text(json.dumps(broken) + "\n")
    with pytest.raises(ValueError, match=r"row 1, field 'conversation'.*last turn is not the user"):
        load_mtrag(path)


def test_spearman_and_pearson_by_hand():
    # Ranks 1..5 against 2,1,4,3,5: d^2 sums to 4, so rho = 1 - 6*4/(5*24) = 0.8.
    rho = correlation([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], "spearman")
    assert rho is not None and rho.value == pytest.approx(0.8)
    assert rho.low <= 0.8 <= rho.high
    # Ties take their mean rank: [1, 1, 2] ranks as [1.5, 1.5, 3].
    tied = correlation([1, 1, 2], [1, 2, 3], "spearman")
    assert tied is not None and tied.value == pytest.approx(0.8660254)
    # Pearson of x and 2x + 1 is 1; a constant side has none.
    line = correlation([1, 2, 4], [3, 5, 9], "pearson")
    assert line is not None and line.value == pytest.approx(1.0)
    assert correlation([2, 2, 2], [1, 2, 3], "pearson") is None
    assert correlation([1, 2], [1, 2], "pearson") is None


def test_agreement_per_group_with_the_baseline_on_the_same_rows():
    rows, scores = [], {}
    values = {
        "a": (0.9, 4.0, 0.8),
        "b": (0.5, 3.0, 0.9),
        "c": (0.1, 1.0, 0.1),
        "d": (None, 2.0, 0.5),
    }
    for name, (ours, human, rl_f) in values.items():
        sample = Sample(id=name, question="q", answer="x")
        rows.append(
            MtragRow(
                sample=sample,
                conversation=name,
                responder="gpt-4o" if name in "ab" else "reference",
                answerability="answerable",
                human={"faithfulness": human, "appropriateness": human, "completeness": human},
                baseline=rl_f,
            )
        )
        for metric in ("faithfulness", "answer_relevance"):
            scores[name, metric] = Score(
                sample_id=name,
                metric=metric,
                value=ours,
                unscored_reason=None if ours is not None else "no claims",
            )
    found = {(c.group, c.metric, c.human): c for c in agreement(rows, scores)}
    whole = found["all", "faithfulness", "faithfulness"]
    # d is unscored: a, b, c remain, ranked alike by both sides; the baseline ranks b above a.
    assert (whole.rows, whole.unscored) == (3, 1)
    assert whole.spearman.value == pytest.approx(1.0)
    assert whole.baseline_spearman.value == pytest.approx(0.5)
    assert found["gpt-4o", "faithfulness", "faithfulness"].spearman is None  # two rows
    assert {g for g, _, _ in found} == {"all", "gpt-4o", "reference", "answerable"}


def scripted_judge(model: str = "", **_: object) -> FakeJudge:
    """Faithfulness follows the answer: a statement with "1,094" is supported. "Nobody knows."
    is the one non-committal answer; the others address the question with P = 0.6. Against the
    context, it holds the answer with P = 0.75, and an answer with "2,000" gives it with 0.4."""

    def respond(request: ChatRequest):
        name = prompt_name(request)
        text = request.messages[-1].content
        if name == "statements":
            answer = text.split("<answer>\n")[1].split("\n</answer>")[0]
            return json.dumps({"statements": [answer]})
        if name == "noncommittal":
            return json.dumps({"noncommittal": "Nobody knows" in text})
        if name == "supported":
            return yes_no(0.9 if "1,094" in text.split("<statement>")[1] else 0.2)
        if name == "against_context":  # the context holds it (0.75); "2,000" misses it (0.4)
            if "<answer>" not in text:
                return yes_no(0.75)
            return yes_no(0.4 if "2,000" in text.split("<answer>")[1] else 0.8)
        return yes_no(0.6)

    return FakeJudge(responder=respond, model="mtrag-script")


def four_rated_answers(tmp_path: Path) -> Path:
    """Two conversations, each answered by a reference and GPT-4o, one of them a decline."""
    path = tmp_path / "m.jsonl"
    rows = [
        mtrag_row("t1", "reference", ANSWER, 4.0, 4.0, 0.9),
        mtrag_row("t1", "gpt-4o", "The Elbe is 2,000 km long.", 1.5, 2.0, 0.3),
        mtrag_row("t2", "reference", "It is 1,094 km long.", 3.5, 3.0, 0.7),
        mtrag_row("t2", "gpt-4o", "Nobody knows.", 1.0, 1.0, 0.8),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_meta_mtrag_command(tmp_path, monkeypatch, no_user_cache):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "mtrag", f"{__name__}:scripted_judge")
    path = four_rated_answers(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["meta", "mtrag", str(path), "--judge", "mtrag", "--embedder", "fake", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "agreement.json").read_text())
    whole = next(
        c
        for c in report["correlations"]
        if (c["group"], c["metric"], c["human"]) == ("all", "faithfulness", "faithfulness")
    )
    # Faithfulness 0.9, 0.2, 0.9, 0.2 against people's 4, 1.5, 3.5, 1: ranks (3.5, 1.5, 3.5, 1.5)
    # and (4, 2, 3, 1): rho = 0.894. RAGAS rl_f 0.9, 0.3, 0.7, 0.8: ranks (4, 1, 2, 3): rho = 0.4.
    assert whole["rows"] == 4
    assert whole["spearman"]["value"] == pytest.approx(0.8944272)
    assert whole["baseline_spearman"]["value"] == pytest.approx(0.4)
    relevance = next(
        c
        for c in report["correlations"]
        if (c["group"], c["metric"], c["human"]) == ("all", "answer_relevance", "completeness")
    )
    # Answer relevance 0.6, 0.6, 0.6, 0 against people's 4, 2, 3, 1: ranks (3, 3, 3, 1) and
    # (4, 2, 3, 1): rho = 3 / sqrt(3 x 5) = 0.775.
    assert (relevance["rows"], relevance["unscored"]) == (4, 0)
    assert relevance["spearman"]["value"] == pytest.approx(3 / 15**0.5)
    assert "MTRAG" in result.output and "0.89" in result.output
    assert Path(out / "scores.sqlite").exists()


def test_meta_mtrag_answer_relevance_alone_against_the_context(
    tmp_path, monkeypatch, no_user_cache
):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "mtrag", f"{__name__}:scripted_judge")
    path = four_rated_answers(tmp_path)
    out = tmp_path / "out"
    command = ["meta", "mtrag", str(path), "--judge", "mtrag", "--out", str(out)]
    chosen = ["--metrics", "answer_relevance", "--option", "answer_relevance.against=context"]
    result = CliRunner().invoke(app, [*command, *chosen])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "agreement.json").read_text())
    assert {c["metric"] for c in report["correlations"]} == {"answer_relevance"}
    relevance = next(
        c
        for c in report["correlations"]
        if (c["group"], c["metric"], c["human"]) == ("all", "answer_relevance", "completeness")
    )
    # 0.75 x 0.8, 0.75 x 0.4, 0.75 x 0.8 and, for the decline, 1 - 0.75: 0.6, 0.3, 0.6, 0.25,
    # ranked (3.5, 2, 3.5, 1) against people's (4, 2, 3, 1): centred (1, -0.5, 1, -1.5) and
    # (1.5, -0.5, 0.5, -1.5), rho = 4.5 / sqrt(4.5 x 5) = 0.949.
    assert relevance["rows"] == 4
    assert relevance["spearman"]["value"] == pytest.approx(4.5 / 22.5**0.5)
    refused = CliRunner().invoke(app, [*command, "--metrics", "context_relevance"])
    assert refused.exit_code != 0 and "not 'context_relevance'" in refused.output
