"""``ragmeter arena`` end to end on the example arena, with a scripted judge registered through
the real judge registry."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import plugins
from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest
from ragmeter.judges.fake import FakeJudge

EXAMPLE = Path(__file__).parent.parent / "examples" / "arena"
SYSTEMS = ("careful", "brief", "sloppy")
runner = CliRunner()


def _quality() -> dict[str, int]:
    """Answer text -> how good the example says it is: the reference and 'careful' are equally
    good, then 'brief', then 'sloppy'."""
    scores = {}
    for line in (EXAMPLE / "questions.jsonl").read_text().splitlines():
        scores[json.loads(line)["reference"]] = 3
    for system, score in zip(SYSTEMS, (3, 2, 1), strict=True):
        for line in (EXAMPLE / "answers" / f"{system}.jsonl").read_text().splitlines():
            scores[json.loads(line)["answer"]] = score
    return scores


def respond(request: ChatRequest) -> str:
    text = request.messages[-1].content
    if "Based on the passages" in request.messages[0].content:
        first = re.search(r"<passage 1>\n(.*?)\n</passage 1>", text, re.S)
        answer = first[1] if first else "I couldn't find an answer."
        return json.dumps({"thinking": "Passage 1.", "answer": answer})
    quality = _quality()
    one, two = (
        quality.get(m[1], 0) for m in re.finditer(r"<answer \d>\n(.*?)\n</answer", text, re.S)
    )
    return json.dumps(
        {"reasoning": "scripted", "rating": 0 if one == two else 1 if one > two else 2}
    )


def create_judge(model: str = "", **_: object) -> FakeJudge:
    return FakeJudge(responder=respond, model="example-quality")


def create_broken_judge(model: str = "", **_: object) -> FakeJudge:
    """The same judge by name, but every call fails: only stored judgements can be used."""
    return FakeJudge(model="example-quality")


@pytest.fixture
def quality_judge(monkeypatch, no_user_cache):
    """Register the scripted judge as ``quality`` (and its failing twin), as plugins would be."""
    monkeypatch.setitem(plugins.BUILTINS["judge"], "quality", f"{__name__}:create_judge")
    monkeypatch.setitem(plugins.BUILTINS["judge"], "broken", f"{__name__}:create_broken_judge")


def answers_args() -> list[str]:
    return [arg for s in SYSTEMS for arg in ("--answers", str(EXAMPLE / "answers" / f"{s}.jsonl"))]


def test_judge_then_leaderboard_on_the_example(tmp_path, quality_judge):
    out = tmp_path / "arena"
    args = [
        "arena",
        "judge",
        str(EXAMPLE / "questions.jsonl"),
        *answers_args(),
        "--design",
        "both",
        "--per-domain",
        "2",
        "--judge",
        "quality",
        "--out",
        str(out),
        "--rounds",
        "200",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    battles = [json.loads(line) for line in (out / "battles.jsonl").read_text().splitlines()]
    # 3 systems x 6 questions against the reference, + 2 domains x 2 questions x 3 system pairs.
    assert len(battles) == 18 + 12
    assert all(b["flipped"] is False for b in battles)  # a consistent judge never flips
    rows = {r["system"]: r for r in csv.DictReader((out / "leaderboard.csv").open())}
    order = list(rows)
    assert set(order[:2]) == {"reference", "careful"} and order[2:] == ["brief", "sloppy"]
    # careful: 6 ties with the reference, and 8 wins over brief and sloppy on 4 sampled questions.
    assert (rows["careful"]["wins"], rows["careful"]["ties"], rows["careful"]["losses"]) == (
        "8.0",
        "6.0",
        "0.0",
    )
    # brief: loses 6 to the reference and 4 to careful, beats sloppy 4 times.
    assert (rows["brief"]["wins"], rows["brief"]["losses"], rows["brief"]["battles"]) == (
        "4.0",
        "10.0",
        "14",
    )
    assert float(rows["careful"]["win"]) == 0.0 and float(rows["careful"]["win_tie"]) == 1.0
    assert float(rows["sloppy"]["no_answer"]) == pytest.approx(2 / 6)
    assert float(rows["reference"]["no_answer"]) == 0.0
    # each answer counted once, though brief's four sampled answers are in three battles each
    brief = [json.loads(line)["answer"] for line in (EXAMPLE / "answers/brief.jsonl").open()]
    words = sum(len(answer.split()) for answer in brief) / len(brief)
    assert float(rows["brief"]["mean_words"]) == pytest.approx(words)
    assert "RAG-QA arena" in result.output and "by domain" in result.output

    # Rerun with a judge that fails on every call: the run resumes from the folder.
    again = runner.invoke(
        app, [*args[:-6], "--judge", "broken", "--out", str(out), "--rounds", "200", "--no-cache"]
    )
    assert again.exit_code == 0, again.output
    assert "unscored" not in again.output
    assert [
        json.loads(line)["verdict"] for line in (out / "battles.jsonl").read_text().splitlines()
    ] == [b["verdict"] for b in battles]

    board = runner.invoke(
        app, ["arena", "leaderboard", str(out), "--anchor", "reference", "--rounds", "100"]
    )
    assert board.exit_code == 0, board.output
    saved = json.loads((out / "leaderboard.json").read_text())
    ratings = {r["system"]: r["rating"] for r in saved["systems"]}
    assert ratings["reference"] == pytest.approx(1000.0)
    assert ratings["careful"] > ratings["brief"] > ratings["sloppy"]
    assert saved["anchor"] == "reference" and saved["rounds"] == 100
    # The length-controlled figures, beside the raw ones and anchored alike.
    assert "length-controlled" in board.output
    controlled = {r["system"]: r for r in saved["systems"]}
    assert controlled["reference"]["lc_rating"] == pytest.approx(1000.0)
    assert controlled["careful"]["win_half"] == 0.5  # six ties with the reference
    lc = [controlled[s]["lc_rating"] for s in ("careful", "brief", "sloppy")]
    assert lc == sorted(lc, reverse=True)
    assert saved["length_control"]["questions"] == 6


def generate_args(answers: Path, *more: str) -> list[str]:
    """``arena generate`` of the example questions by the scripted judge into ``answers``."""
    questions, corpus = str(EXAMPLE / "questions.jsonl"), str(EXAMPLE / "corpus.jsonl")
    judged = ["--judge", "quality", "--out", str(answers), *more]
    return ["arena", "generate", questions, "--corpus", corpus, *judged]


def test_generate_writes_an_answers_file_the_judge_reads(tmp_path, quality_judge):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    answers = tmp_path / "bm25.jsonl"
    result = runner.invoke(
        app, generate_args(answers, "--system", "bm25-first-passage", "--limit", "3")
    )
    assert result.exit_code == 0, result.output
    assert "3 answers by bm25-first-passage" in result.output
    lines = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [a["system"] for a in lines] == ["bm25-first-passage"] * 3
    assert all(a["passages"] and a["answer"] for a in lines)

    judged = runner.invoke(
        app,
        [
            "arena",
            "judge",
            str(EXAMPLE / "questions.jsonl"),
            "--answers",
            f"first={answers}",
            "--judge",
            "quality",
            "--out",
            str(tmp_path / "run"),
            "--rounds",
            "50",
            "--orders",
            "random",
        ],
    )
    assert judged.exit_code == 0, judged.output
    battles = [
        json.loads(line) for line in (tmp_path / "run/battles.jsonl").read_text().splitlines()
    ]
    assert len(battles) == 3 and {b["system_a"] for b in battles} == {"first"}
    assert all(len(b["orders"]) == 1 for b in battles)


def test_agreement_command_prints_kappa_pearson_accuracy_and_flips(tmp_path, quality_judge):
    reference = json.loads((EXAMPLE / "questions.jsonl").read_text().splitlines()[0])
    careful = json.loads((EXAMPLE / "answers/careful.jsonl").read_text().splitlines()[0])
    sloppy = json.loads((EXAMPLE / "answers/sloppy.jsonl").read_text().splitlines()[0])
    rows = [
        {
            "question": reference["question"],
            "answer_a": careful["answer"],
            "answer_b": sloppy["answer"],
            "label": -1,
        },
        {
            "question": reference["question"],
            "answer_a": sloppy["answer"],
            "answer_b": careful["answer"],
            "label": 1,
        },
        {
            "question": reference["question"],
            "answer_a": sloppy["answer"],
            "answer_b": careful["answer"],
            "label": -1,
        },  # a human who disagrees
    ]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = runner.invoke(
        app,
        ["arena", "agreement", str(pairs), "--judge", "quality", "--out", str(tmp_path / "agree")],
    )
    assert result.exit_code == 0, result.output
    assert "Cohen" in result.output and "flip rate 0.000" in result.output
    report = json.loads((tmp_path / "agree/agreement.json").read_text())
    assert report["verdict"]["accuracy"] == pytest.approx(2 / 3)
    assert report["verdict"]["pairs"] == 3 and report["flips"] == 0
    # a consistent judge: every way of combining the orders, and a random order, agree
    # (no "confidence" row: this judge gives no log-probabilities, so it would be the sum)
    assert set(report["by_combination"]) == {"agree", "sum", "random order"}
    assert all(r["accuracy"] == pytest.approx(2 / 3) for r in report["by_combination"].values())
    assert "summed" in result.output and "random" in result.output
    # the careful answer (40 words) is the longer one (23): the judge always picked it, the
    # humans in two rows of three, and the longer-answer baseline scores as the judge does
    assert "the longer answer won 1.000 of the judge's picks, 0.667 of the humans'" in result.output
    assert report["longer_answer"]["accuracy"] == pytest.approx(2 / 3)
    assert "baseline" in result.output  # the table row (wrapped to the terminal width)


def unsure_when_the_good_answer_is_first(request: ChatRequest) -> str:
    """ "not sure" when the good answer is shown first, right when it is shown second."""
    first = request.messages[-1].content.split("<answer 1>")[1]
    return json.dumps({"reasoning": "r", "rating": 0 if first.startswith("\nGood") else 2})


def create_unsure_judge(model: str = "", **_: object) -> FakeJudge:
    return FakeJudge(responder=unsure_when_the_good_answer_is_first, model="unsure")


def test_agreement_combine_option_sets_the_verdict_rule(tmp_path, monkeypatch, no_user_cache):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "unsure", f"{__name__}:create_unsure_judge")
    pairs = tmp_path / "pairs.jsonl"
    row = {"question": "q?", "answer_a": "Good answer.", "answer_b": "Bad answer.", "label": -1}
    pairs.write_text(json.dumps(row) + "\n")
    verdicts = {}
    for rule in ("agree", "sum"):
        out = tmp_path / rule
        result = runner.invoke(
            app,
            [
                "arena",
                "agreement",
                str(pairs),
                "--judge",
                "unsure",
                "--combine",
                rule,
                "--out",
                str(out),
                "--no-cache",
            ],
        )
        assert result.exit_code == 0, result.output
        battle = json.loads((out / "battles.jsonl").read_text())
        verdicts[rule] = battle["verdict"]
    # order ab: not sure; order ba: answer 2 = A. Agreement ties; the sum picks A.
    assert verdicts == {"agree": 0, "sum": -1}
    bad = runner.invoke(app, ["arena", "agreement", str(pairs), "--combine", "average"])
    assert bad.exit_code != 0


def test_judge_without_input_is_a_clear_error(tmp_path, quality_judge):
    result = runner.invoke(app, ["arena", "judge", "--judge", "quality", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "give QUESTIONS with --answers, or --pairs" in result.output
    bad = runner.invoke(app, ["arena", "judge", "--pairs", str(tmp_path / "missing.jsonl")])
    assert bad.exit_code == 2 and "no such file" in bad.output


def test_judge_reads_a_pairs_file_with_system_names(tmp_path, quality_judge):
    careful = [
        json.loads(line)["answer"]
        for line in (EXAMPLE / "answers/careful.jsonl").read_text().splitlines()
    ]
    sloppy = [
        json.loads(line)["answer"]
        for line in (EXAMPLE / "answers/sloppy.jsonl").read_text().splitlines()
    ]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps(
                {
                    "question": f"q{i}",
                    "answer_a": s,
                    "answer_b": c,
                    "system_a": "sloppy",
                    "system_b": "careful",
                }
            )
            + "\n"
            for i, (c, s) in enumerate(zip(careful, sloppy, strict=True))
        )
    )
    result = runner.invoke(
        app,
        [
            "arena",
            "judge",
            "--pairs",
            str(pairs),
            "--judge",
            "quality",
            "--out",
            str(tmp_path / "run"),
            "--rounds",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((tmp_path / "run/leaderboard.csv").open()))
    assert [(r["system"], r["wins"]) for r in rows] == [("careful", "6.0"), ("sloppy", "0.0")]
    assert rows[1]["no_answer"] == str(2 / 6)


def test_generate_names_an_unreadable_answer_line_and_answers_that_question_again(
    tmp_path, quality_judge
):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    answers = tmp_path / "bm25.jsonl"
    args = generate_args(answers, "--limit", "2")
    assert runner.invoke(app, args).exit_code == 0
    first, second = answers.read_text().splitlines()
    answers.write_text(first + "\n" + second[: len(second) // 2] + "\n")  # the 2nd line broken
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "warning:" in again.output and "skipped 1 unreadable line" in again.output
    assert "first: line 2:" in again.output.replace("\n", "")
    assert [json.loads(line)["id"] for line in answers.read_text().splitlines()] == [
        json.loads(first)["id"],
        json.loads(second)["id"],
    ]
