"""ragmeter meta openqa: answer correctness against people's verdicts on QA systems' answers,
on synthetic NQ301-shaped rows and a scripted judge, against values worked out by hand."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge
from ragmeter.meta.openqa import answer_agreement, load_openqa, run_openqa

from .conftest import yes_no

P_GIVEN = {"near": 0.8, "far": 0.1}
"""P(yes) of a short reading by the answer's first word; exact matches are never asked."""


def row(question: int, system: str, answer: str, human: int, em: int) -> dict:
    gold = f"gold{question}"
    return {
        "id": f"nq-{question}-{system}",
        "group": f"nq-{question}",
        "system": system,
        "question": f"question {question}",
        "answer": answer,
        "reference": gold,
        "references": [gold],
        "human": human,
        "anchors": {"em": em, "f1": float(em), "bem": em, "gpt4": human, "instructgpt": human},
    }


def rows() -> list[dict]:
    """S1 answers every question exactly; S2 near each gold answer (people accept two of
    four); S3 near on the first two (the same answers as S2's) and far on the others."""
    found = []
    for q in range(1, 5):
        found.append(row(q, "S1", f"gold{q}", 1, 1))
        found.append(row(q, "S2", f"near {q}", int(q <= 2), 0))
        found.append(row(q, "S3", f"near {q}" if q <= 2 else f"far {q}", int(q <= 2), 0))
    return found


def write(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records))
    return path


_TEXT = re.compile(r"<text>\n(\w+)")


def judge() -> FakeJudge:
    def respond(request: ChatRequest) -> ChatResponse:
        return yes_no(P_GIVEN[_TEXT.search(request.messages[-1].content).group(1)])

    return FakeJudge(responder=respond)


def test_answer_agreement_by_hand():
    # observed 3/4; chance 1/2 * 1/4 + 1/2 * 3/4 = 1/2; kappa (3/4 - 1/2) / (1 - 1/2) = 1/2
    found = answer_agreement([1.0, 1.0, 0.0, None, 0.0], [1, 0, 0, 1, 0])
    assert (found.rows, found.accuracy, found.kappa, found.said_correct) == (4, 0.75, 0.5, 0.5)


def test_each_distinct_answer_is_judged_once_and_measured_beside_the_anchors(tmp_path):
    loaded = load_openqa(write(tmp_path / "nq.jsonl", rows()))
    scripted = judge()
    report = run_openqa(loaded, judge=scripted, out_dir=tmp_path / "run", cache=False, rounds=100)
    # S1's four exact matches need no call; near 1-4 and far 3-4 one each (S3 shares near 1-2)
    assert (report.distinct_answers, len(scripted.history)) == (10, 6)
    ours = {j.judge: j for j in report.judges}
    mine = ours["ragmeter"]
    # verdicts: S1 1111 (people 1111), S2 1111 (1100), S3 1100 (1100): 10 of 12 agree;
    # said correct 10/12, people 8/12: chance (10*8 + 2*4) / 144 = 88/144, observed 120/144,
    # kappa 32/56
    assert mine.answers.accuracy == pytest.approx(10 / 12)
    assert mine.answers.kappa == pytest.approx(32 / 56)
    assert mine.per_system["S2"].accuracy == 0.5
    # accuracy by system: ragmeter 1, 1, 0.5 and people 1, 0.5, 0.5: one concordant pair,
    # one tie on each side: tau-b 1 / sqrt(2 * 2)
    assert mine.systems.kendall.value == pytest.approx(0.5)
    assert ours["gpt4"].systems.kendall.value == pytest.approx(1.0)
    assert ours["em"].answers.accuracy == pytest.approx(8 / 12)
    assert ours["f1"].answers is None
    assert report.lexical_check == {"rows": 12, "exact_match": 12, "token_f1": 12}
    again = run_openqa(loaded, judge=FakeJudge(), out_dir=tmp_path / "run", cache=False, rounds=100)
    assert again.judges == report.judges  # resumed from the results folder: no call


def test_a_bad_row_names_its_number_and_field(tmp_path):
    broken = rows()[:2]
    del broken[1]["human"]
    with pytest.raises(ValueError, match=r"row 2, field 'human'"):
        load_openqa(write(tmp_path / "nq.jsonl", broken))


def test_the_command_writes_the_agreement_and_each_answer(tmp_path):
    # exact matches and hedges only: the fake judge, which answers nothing, is never asked
    records = [
        row(q, system, f"gold{q}" if good else f"gold{q} or else{q}", int(good), int(good))
        for q in range(1, 4)
        for system, good in (("S1", True), ("S2", q == 1), ("S3", False))
    ]
    path = write(tmp_path / "nq.jsonl", records)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["meta", "openqa", str(path), "--judge", "fake", "--out", str(out), "--no-cache"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "agreement.json").read_text())
    mine = next(j for j in report["judges"] if j["judge"] == "ragmeter")
    assert (mine["answers"]["accuracy"], mine["answers"]["kappa"]) == (1.0, 1.0)
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert [a["ragmeter"] for a in answers] == [a["human"] for a in answers]
