"""The KaLMA pipeline end to end through the CLI, on a scripted judge, with hand-worked values."""

from __future__ import annotations

import json
import math
import re

import pytest
from typer.testing import CliRunner

from ragmeter.attribution.benchmark import BenchmarkItem, build_benchmark, load_benchmark
from ragmeter.attribution.experiments import (
    GENERATIONS_FILE,
    SCORES_FILE,
    ablation_plan,
    experiment_conditions,
    removal_order,
    run_conditions,
)
from ragmeter.attribution.graph import Entity, KnowledgeGraph, Triple
from ragmeter.attribution.records import ScoreRecord
from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse, TokenLogprobs
from ragmeter.judges.fake import FakeJudge
from ragmeter.records import RecordLog, RecordLogWarning

from .conftest import LearningJudge

runner = CliRunner()

# Fictional people, written for these tests.
ADA = Entity(
    id="Q101",
    name="Ada Quill",
    properties={
        "occupation": ["glassblower"],
        "place of birth": ["Brackwater"],
        "employer": ["Lowmere Glassworks"],
        "award received": ["Silver Lens"],
    },
)
BRAM = Entity(
    id="Q102",
    name="Bram Quill",
    properties={"occupation": ["ferryman"], "place of death": ["Tidewell"], "child": ["Ada Quill"]},
)
FULL = {e.id: e for e in (ADA, BRAM)}


def t(entity: str, prop: str, value: str) -> Triple:
    return Triple(entity=entity, property=prop, value=value)


ITEMS = [
    BenchmarkItem(
        id="a",
        question="What did Ada Quill make, and where?",
        gold=["Q101"],
        entities=[ADA],
        minimum=[
            t("Q101", "occupation", "glassblower"),
            t("Q101", "place of birth", "Brackwater"),
            t("Q101", "employer", "Lowmere Glassworks"),
        ],
    ),
    BenchmarkItem(
        id="b",
        question="Who was Bram Quill's child, and what was his trade?",
        gold=["Q102"],
        entities=[BRAM],
        minimum=[t("Q102", "occupation", "ferryman"), t("Q102", "child", "Ada Quill")],
    ),
]


def tagged(request: ChatRequest, tag: str) -> str:
    return request.messages[-1].content.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def first_token(probabilities: dict[str, float]) -> ChatResponse:
    top = {k: math.log(v) for k, v in probabilities.items()}
    best = max(top, key=lambda k: top[k])
    return ChatResponse(
        text=best,
        logprobs=[TokenLogprobs(token=best, logprob=top[best], top=top)],
        prompt_tokens=100,
        completion_tokens=1,
    )


def write_answer(request: ChatRequest) -> str:
    """Cites every given triple; names all values but the last in the sentence; marks [NA] the
    first triple of the full entity that the knowledge lacks."""
    sentences = []
    for line in tagged(request, "knowledge").splitlines():
        pairs = [p.split(": ", 1) for p in line.strip("{}").split(", ")]
        qid, name = pairs[0][1], pairs[1][1]
        facts = pairs[2:]
        cited = ", ".join(f"{p}: {v}" for p, v in facts)
        sentences.append(
            f"{name} is known for {', '.join(v for _, v in facts[:-1])} [{qid}, {cited}]."
        )
        given = {(p, v) for p, v in facts}
        missing = [v for p, vs in FULL[qid].properties.items() for v in vs if (p, v) not in given]
        sentences.append(
            f"It is also said that {missing[0]} [NA]."
            if missing
            else "Little else is recorded [NA]."
        )
    return json.dumps({"answer": " ".join(sentences)})


def respond(request: ChatRequest) -> str | ChatResponse:
    system = request.messages[0].content
    if "Answer the question using your own knowledge" in system:
        return write_answer(request)
    if "Decide whether a sentence supports" in system:
        value = tagged(request, "knowledge").split(": ", 1)[1]
        entailed = value in tagged(request, "sentence")
        return first_token({"yes": 0.9, "no": 0.1} if entailed else {"yes": 0.2, "no": 0.8})
    if "You judge a response against one criterion" in system:
        return first_token({"4": 0.75, "5": 0.25})
    if "Write one natural question" in system:
        return json.dumps({"question": "Who was this?"})
    if "You extend an answer" in system:
        return json.dumps({"sentence": f"It involved {tagged(request, 'value')}."})
    if "You evolve a question" in system:
        value = tagged(request, "new_sentence").removeprefix("It involved ").rstrip(".")
        return json.dumps({"question": f"And {value}?"})
    raise AssertionError(f"unexpected prompt: {system[:60]}")


@pytest.fixture
def judge(monkeypatch):
    fake = FakeJudge(responder=respond)
    monkeypatch.setattr("ragmeter.judges.registry.get_judge", lambda spec, **options: fake)
    return fake


@pytest.fixture
def benchmark(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(item.model_dump_json() + "\n" for item in ITEMS))
    return path


def rows_by_condition(out):
    return {row["condition"]: row for row in json.loads((out / "summary.json").read_text())}


def test_all_experiments_match_the_hand_worked_tables(tmp_path, benchmark, judge):
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "attribution",
            "experiment",
            str(benchmark),
            "--kind",
            "all",
            "--judge",
            "fake",
            "--out",
            str(out),
            "--no-cache",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = rows_by_condition(out)
    assert list(rows) == [
        "main",
        "removed 1",
        "removed 2",
        "removed 3",
        "accuracy 80",
        "accuracy 60",
        "accuracy 40",
        "accuracy 20",
    ]

    main = rows["main"]
    c = main["citation"]
    # A cites 4 triples, 3 in its minimum set of 3; B cites 3, 2 in its set of 2.
    assert c["correctness"] == 1.0
    assert c["micro_precision"] == pytest.approx(5 / 7) and c["micro_recall"] == 1.0
    assert c["macro_precision"] == pytest.approx((3 / 4 + 2 / 3) / 2)
    assert c["macro_recall"] == 1.0
    # Each sentence names all its values but the last: 3 of 4 and 2 of 3 pairs entailed.
    assert main["alignment"] == pytest.approx(5 / 7) and main["alignment_pairs"] == 7
    assert main["quality"] == {
        "coherence": 4.25,
        "consistency": 4.25,
        "fluency": 4.25,
        "relevance": 4.25,
    }
    assert main["na_precision"] is None  # nothing removed: no [NA] ground truth

    one = rows["removed 1"]
    # A: 3 cited, 2 precise, 2 of 3 recalled; B: 2 cited, 1 precise, 1 of 2.
    assert one["citation"]["micro_precision"] == pytest.approx(3 / 5)
    assert one["citation"]["micro_recall"] == pytest.approx(3 / 5)
    assert one["citation"]["macro_recall"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert (one["na_precision"], one["na_recall"]) == (1.0, 1.0)
    assert one["alignment"] is None and one["quality"]["coherence"] is None

    two = rows["removed 2"]
    # A: 2 cited, 1 precise, 1 of 3; B: 1 cited, 0 precise, 0 of 2.
    assert two["citation"]["micro_precision"] == pytest.approx(1 / 3)
    assert two["citation"]["micro_recall"] == pytest.approx(1 / 5)
    # One [NA] sentence per answer, each entailing one of its 2 absent triples.
    assert (two["na_precision"], two["na_recall"]) == (1.0, 0.5)

    three = rows["removed 3"]
    assert three["answered"] == 1
    assert three["skipped"] == {"minimum set of 2 < 3 triples to remove": 1}
    assert three["citation"]["micro_precision"] == 0.0
    assert three["citation"]["micro_recall"] == 0.0
    assert three["na_recall"] == pytest.approx(1 / 3)

    assert rows["accuracy 80"]["citation"] == c  # 20% of 2 graphs rounds to none replaced
    twenty = rows["accuracy 20"]["citation"]
    assert (twenty["correctness"], twenty["micro_precision"], twenty["micro_recall"]) == (
        1.0,
        0.0,
        0.0,
    )

    # 9 generations (identical conditions share answers) and 24 judge calls: 7 alignment +
    # 8 quality probes for the main condition, 2 + 4 + 3 [NA] checks.
    assert len(judge.history) == 9 + 24
    assert "citation quality" in result.output and "Align." in result.output

    again = runner.invoke(
        app,
        [
            "attribution",
            "experiment",
            str(benchmark),
            "--kind",
            "all",
            "--judge",
            "fake",
            "--out",
            str(out),
            "--no-cache",
        ],
    )
    assert again.exit_code == 0, again.output
    assert len(judge.history) == 33  # everything resumed from the records
    assert rows_by_condition(out) == rows


def test_generate_then_score(tmp_path, benchmark, judge):
    out = tmp_path / "run"
    generated = runner.invoke(
        app,
        [
            "attribution",
            "generate",
            str(benchmark),
            "--removed",
            "1",
            "--judge",
            "fake",
            "--out",
            str(out),
            "--no-cache",
            "--limit",
            "1",
        ],
    )
    assert generated.exit_code == 0, generated.output
    records = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["item_id"] == "a"
    absent = [Triple(**x) for x in records[0]["absent"]]
    assert absent == removal_order(ITEMS[0])[:1]
    assert all(x not in KnowledgeGraph(Entity(**e) for e in records[0]["graph"]) for x in absent)
    rows = rows_by_condition(out)
    assert rows["gold, removed 1"]["citation"]["micro_precision"] == pytest.approx(2 / 3)

    scored = runner.invoke(
        app, ["attribution", "score", str(out), "--judge", "fake", "--no-cache", "--no-quality"]
    )
    assert scored.exit_code == 0, scored.output
    row = rows_by_condition(out)["gold, removed 1"]
    assert row["alignment"] == pytest.approx(2 / 3)  # 3 pairs, the last value unnamed
    assert (row["na_precision"], row["na_recall"]) == (1.0, 1.0)
    score = json.loads((out / "scores.jsonl").read_text().splitlines()[0])
    assert score["alignment"]["pairs"][0]["method"] == "logprobs"
    assert score["exchanges"][0]["prompt"] == "kalma.entailment.token"


def test_evolve_writes_a_benchmark_with_minimum_sets_and_resumes(tmp_path, judge):
    data = tmp_path / "rows.jsonl"
    data.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {
                    "id": 1,
                    "question_complex": "Who was Ada Quill?",
                    "question_simple": "?",
                    "knowledge": [ADA.to_record()],
                },
                {
                    "id": 2,
                    "question_complex": "Who was Bram Quill?",
                    "question_simple": "?",
                    "knowledge": [BRAM.to_record()],
                },
                {"id": 3, "question_complex": "Nobody?", "question_simple": "?", "knowledge": []},
            ]
        )
    )
    out = tmp_path / "evolved"
    result = runner.invoke(
        app,
        [
            "attribution",
            "evolve",
            str(data),
            "--n",
            "5",
            "--rounds",
            "3",
            "--judge",
            "fake",
            "--out",
            str(out),
            "--no-cache",
        ],
    )
    assert result.exit_code == 0, result.output
    items = load_benchmark(out / "benchmark.jsonl")
    assert sorted(i.id for i in items) == ["biokalma-1", "biokalma-2"]  # the empty row is out
    for item in items:
        assert len(item.minimum) == 2  # 3 rounds: the seed round plus two injections
        assert [len(r.minimum) for r in item.evolution.rounds] == [0, 1, 2]
        assert item.question == f"And {item.minimum[-1].value}?"
        assert all(m in item.graph() for m in item.minimum)
    # Seed paragraph states occupation; the injections are new knowledge.
    ada = next(i for i in items if i.id == "biokalma-1")
    assert ada.paragraph == "Ada Quill was a glassblower."
    assert t("Q101", "occupation", "glassblower") not in ada.minimum
    calls = len(judge.history)
    assert calls == 2 * (
        1 + 2 * 2
    )  # per question: the seed, then a sentence and a question per injection
    again = runner.invoke(
        app,
        [
            "attribution",
            "evolve",
            str(data),
            "--n",
            "5",
            "--rounds",
            "3",
            "--judge",
            "fake",
            "--out",
            str(out),
            "--no-cache",
        ],
    )
    assert again.exit_code == 0 and len(judge.history) == calls
    # Evolved another way (2 rounds), nothing is reused: a seed and one injection per question.
    args = ["attribution", "evolve", str(data), "--n", "5", "--judge", "fake", "--no-cache"]
    other = runner.invoke(app, [*args, "--rounds", "2", "--out", str(out)])
    assert other.exit_code == 0 and len(judge.history) == calls + 2 * (1 + 2)
    assert len((out / "benchmark.jsonl").read_text().splitlines()) == 2  # one line per question


def test_retrieve_reports_accuracy(tmp_path, benchmark):
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["attribution", "retrieve", str(benchmark), "--recognizer", "names", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "retrieval.jsonl").read_text().splitlines()]
    # The names recogniser finds "Ada Quill" in a and "Bram Quill('s)" in b: both gold.
    assert [r["selected"] for r in rows] == [["Q101"], ["Q102"]]
    assert re.search(r"100\.0\s*│\s*100\.0\s*│\s*100\.0", result.output)


def test_ablation_plan_replaces_nested_shares_of_graphs():
    people = [Entity(id=f"P{i}", name=f"Person {i}") for i in range(10)]
    items = [
        BenchmarkItem(id=f"i{i}", question="?", gold=[p.id], entities=[p])
        for i, p in enumerate(people)
    ]
    plan = ablation_plan(items, [1.0, 0.8, 0.4, 0.2], KnowledgeGraph(people), seed=1)

    def replaced(accuracy):
        return {i.id for i in items if plan[accuracy][i.id][0].id != i.gold[0]}

    assert [len(replaced(a)) for a in (1.0, 0.8, 0.4, 0.2)] == [0, 2, 6, 8]
    assert replaced(0.8) < replaced(0.4) < replaced(0.2)
    assert plan == ablation_plan(items, [1.0, 0.8, 0.4, 0.2], KnowledgeGraph(people), seed=1)


def test_unknown_experiment_is_a_clear_error(tmp_path, benchmark, judge):
    result = runner.invoke(
        app,
        [
            "attribution",
            "experiment",
            str(benchmark),
            "--kind",
            "x",
            "--judge",
            "fake",
            "--no-cache",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2
    assert "unknown experiment 'x'" in result.output


def test_unreadable_records_are_reported_and_redone(tmp_path):
    out = tmp_path / "run"
    conditions = experiment_conditions("main")
    judge = FakeJudge(responder=respond)
    first = run_conditions(ITEMS, conditions, generator=judge, judge=judge, out_dir=out)
    # 2 answers, 4 + 3 alignment pairs and 4 quality criteria per item.
    assert len(judge.history) == 2 + 7 + 8
    generations, scores = out / GENERATIONS_FILE, out / SCORES_FILE
    # Item a's answer from a version whose records lack the question; item b's score torn.
    lines = generations.read_text().splitlines()
    old = json.loads(lines[0])
    assert old["item_id"] == "a"
    del old["question"]
    generations.write_text("\n".join([json.dumps(old), lines[1]]) + "\n")
    text = scores.read_text()
    assert [json.loads(line)["item_id"] for line in text.splitlines()] == ["a", "b"]
    scores.write_text(text[:-20])

    again = FakeJudge(responder=respond)
    with pytest.warns(RecordLogWarning) as caught:
        second = run_conditions(ITEMS, conditions, generator=again, judge=again, out_dir=out)
    assert [str(w.message) for w in caught] == [
        f"{generations}: skipped 1 unreadable line, their records taken as missing "
        "(first: line 1: question: Field required)",
        f"{scores}: skipped 1 unreadable line, their records taken as missing "
        "(first: line 2: the last line is incomplete (no newline at its end: the writer was "
        "killed mid-write))",
    ]
    # a's answer again (the same answer, so its score is reused), then b's 3 pairs and 4 criteria.
    assert len(again.history) == 1 + 3 + 4
    assert [g.answer for g in second[0].generations] == [g.answer for g in first[0].generations]
    assert [s.key for s in second[0].scores] == [s.key for s in first[0].scores]
    assert [s.alignment for s in second[0].scores] == [s.alignment for s in first[0].scores]
    assert [{c: q.value for c, q in s.quality.items()} for s in second[0].scores] == [
        dict.fromkeys(("coherence", "consistency", "fluency", "relevance"), 4.25)
    ] * 2

    # Nothing more to do; the unreadable lines stay in the append-only files and are reported.
    third = FakeJudge(responder=respond)
    with pytest.warns(RecordLogWarning):
        run_conditions(ITEMS, conditions, generator=third, judge=third, out_dir=out)
    assert third.history == []
    with pytest.warns(RecordLogWarning, match="line 2: Invalid JSON"):
        assert [r.item_id for r in RecordLog(scores, ScoreRecord)] == ["a", "b"]


def test_an_answer_written_again_differently_is_scored_again(tmp_path):
    out = tmp_path / "run"
    conditions = experiment_conditions("main")
    judge = FakeJudge(responder=respond)
    run_conditions(ITEMS, conditions, generator=judge, judge=judge, out_dir=out)
    (out / GENERATIONS_FILE).unlink()  # the answers are written again, by the same generator

    def respond_tersely(request: ChatRequest) -> str | ChatResponse:
        if "Answer the question using your own knowledge" in request.messages[0].content:
            return json.dumps({"answer": "Nobody knows [NA]."})
        return respond(request)

    again = FakeJudge(responder=respond_tersely)
    [rerun] = run_conditions(ITEMS, conditions, generator=again, judge=again, out_dir=out)
    # 2 answers, then per item the 4 quality criteria (the answer cites nothing to align): the
    # scores of the earlier answers are not reused.
    assert len(again.history) == 2 + 2 * 4
    assert {g.answer for g in rerun.generations} == {"Nobody knows [NA]."}


def test_records_are_filed_under_the_identity_they_were_judged_with(tmp_path):
    """A generator and a judge that learn during their first call to ask their server another
    way made every record as that other model: a rerun that asks that way from the start finds
    them all and calls nothing."""
    out = tmp_path / "run"
    conditions = experiment_conditions("main")
    first = LearningJudge(respond), LearningJudge(respond)
    run_conditions(ITEMS, conditions, generator=first[0], judge=first[1], out_dir=out)
    assert first[0].history and first[1].history
    again = LearningJudge(respond, learned=True), LearningJudge(respond, learned=True)
    [rerun] = run_conditions(ITEMS, conditions, generator=again[0], judge=again[1], out_dir=out)
    assert (len(again[0].history), len(again[1].history)) == (0, 0)
    assert len(rerun.generations) == len(rerun.scores) == 2
    # One record per item: none was filed under the identity the judges started with.
    assert len((out / GENERATIONS_FILE).read_text().splitlines()) == 2
    assert len((out / SCORES_FILE).read_text().splitlines()) == 2


def test_evolved_items_are_stamped_with_the_identity_they_were_evolved_with(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": n, "question_complex": f"Who was {e.name}?", "knowledge": [r]}) + "\n"
            for n, (e, r) in enumerate(((ADA, ADA.to_record()), (BRAM, BRAM.to_record())), 1)
        )
    )
    out = tmp_path / "benchmark.jsonl"
    first = LearningJudge(respond)
    build_benchmark(data, out, first, n=2, rounds=2)
    assert len(first.history) == 2 * (1 + 2)  # per question: the seed, a sentence, a question
    again = LearningJudge(respond, learned=True)
    items = build_benchmark(data, out, again, n=2, rounds=2)
    assert len(again.history) == 0 and len(items) == 2
