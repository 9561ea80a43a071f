"""Two retrievers' top passages for one query read side by side: the runs' passages as samples,
what the judge is shown, and ``ragmeter retrieval --side-by-side`` deciding the runs beside the
qrels' verdicts."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse, TokenLogprobs
from ragmeter.judges.fake import FakeJudge
from ragmeter.retrieval.texts import Passage
from ragmeter.retrieval.top_passages import Retrieved, query_of, read_retrieved, retrieved_samples
from ragmeter.side_by_side import BUILT_IN, PASSAGES_SYSTEM, shown, side_by_side_prompt
from ragmeter.viewer import open_run

RETRIEVED = BUILT_IN["retrieved_passages"]

QUALITY = {"good": 0.3, "fair": 0.0, "poor": -0.3}
"""How much a passage's first word moves P(A) when it is shown first."""


def letters(p_a: float) -> ChatResponse:
    top = {"A": math.log(p_a), "B": math.log(1 - p_a)}
    best = "A" if p_a >= 0.5 else "B"
    return ChatResponse(text=best, logprobs=[TokenLogprobs(token=best, logprob=top[best], top=top)])


def passages_judge() -> FakeJudge:
    """Total order bias (context A always gets the larger probability, 0.9 around it), moved by
    0.05 times the difference in quality of the two passages shown."""

    def respond(request: ChatRequest) -> ChatResponse:
        text = request.messages[-1].content
        first = re.search(r"<context A>\n\[\d+\] (\w+)", text).group(1)  # type: ignore[union-attr]
        second = re.search(r"<context B>\n\[\d+\] (\w+)", text).group(1)  # type: ignore[union-attr]
        return letters(0.9 + 0.05 * (QUALITY[first] - QUALITY[second]))

    return FakeJudge(responder=respond, model="passages-order-biased")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


QUERIES = [f"q{n}" for n in range(1, 7)]


def trec(name: str, tops: dict[str, list[str]]) -> str:
    return "".join(
        f"{qid} Q0 {docid} {rank} {10 - rank} {name}\n"
        for qid, docids in tops.items()
        for rank, docid in enumerate(docids, 1)
    )


def files(tmp_path: Path) -> dict[str, Path]:
    """Six queries. ``lexical`` ranks a poor passage first on each, ``dense`` a good one; both
    return the same fair passage second. The qrels grade the good passages 3, the rest 0."""
    passages = [{"docid": f"good{q}", "text": f"good answer to {q}"} for q in QUERIES]
    passages += [{"docid": f"poor{q}", "text": f"poor match for {q}"} for q in QUERIES]
    passages += [{"docid": "fair", "text": "fair background"}]
    return {
        "qrels": write(tmp_path, "qrels.txt", "".join(f"{q} 0 good{q} 3\n" for q in QUERIES)),
        "lexical": write(
            tmp_path, "lexical.trec", trec("lexical", {q: [f"poor{q}", "fair"] for q in QUERIES})
        ),
        "dense": write(
            tmp_path, "dense.trec", trec("dense", {q: [f"good{q}", "fair"] for q in QUERIES})
        ),
        "queries": write(
            tmp_path,
            "queries.jsonl",
            "".join(json.dumps({"qid": q, "query": f"what is {q}?"}) + "\n" for q in QUERIES),
        ),
        "passages": write(
            tmp_path, "passages.jsonl", "".join(json.dumps(p) + "\n" for p in passages)
        ),
    }


@pytest.fixture
def judged_by(monkeypatch, no_user_cache):
    judge = passages_judge()
    monkeypatch.setattr("ragmeter.judges.registry.get_judge", lambda spec, **options: judge)
    return judge


def test_a_runs_top_k_becomes_a_sample_a_rank_of_each_query(tmp_path) -> None:
    # Scores 3, 3, 1: the tie is broken by document id, descending (trec_eval's order).
    run = write(tmp_path, "r.trec", "q1 Q0 d1 1 3 r\nq1 Q0 d2 2 3 r\nq1 Q0 d3 3 1 r\n")
    found = read_retrieved(run, depth=2)
    assert (found.name, found.ranked, found.texts) == ("r", {"q1": ["d2", "d1"]}, False)
    passages = {d: Passage(d, f"text {d}", "Title" if d == "d2" else "") for d in ("d1", "d2")}
    first, second = retrieved_samples([found], {"q1": "who?"}, passages)["r"]
    assert (first.key, first.question, first.contexts) == ("q1#1", "who?", ["[1] Title\ntext d2"])
    assert (second.key, second.contexts) == ("q1#2", ["[2] text d1"])
    assert query_of(second.key) == "q1"
    with pytest.raises(ValueError, match=r"r: document 'd2' \(query q1\) is not in the passages"):
        retrieved_samples([found], {"q1": "who?"}, {"d1": passages["d1"]})
    with pytest.raises(ValueError, match="r names its passages by id: give --passages"):
        retrieved_samples([found], {"q1": "who?"})
    with pytest.raises(ValueError, match="r: no text for query 'q1'"):
        retrieved_samples([found], {}, passages)


def test_a_samples_file_gives_its_passages_texts_or_ids(tmp_path) -> None:
    rows = [
        {"id": "q1", "question": "who?", "contexts": ["a", "b", "c"]},
        {"id": "q2", "question": "when?"},  # nothing returned: left out of this run
    ]
    path = write(tmp_path, "s.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    found = read_retrieved(path, depth=2)
    assert (found.ranked, found.texts, found.questions) == (
        {"q1": ["a", "b"]},
        True,
        {"q1": "who?", "q2": "when?"},
    )
    assert [s.contexts for s in retrieved_samples([found])["s"]] == [["[1] a"], ["[2] b"]]
    bad = write(tmp_path, "bad.jsonl", json.dumps({"id": "q1", "contexts": "a"}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl, line 1: field 'contexts': expected a list"):
        read_retrieved(bad, depth=2)


def test_the_judge_is_shown_the_query_once_then_each_runs_passage_at_a_rank() -> None:
    a, b = (
        retrieved_samples([read], {"q1": "who?"}, None)[read.name]
        for read in (_texts("a", ["x", "same"]), _texts("b", ["y", "same"]))
    )
    inputs = shown(RETRIEVED, a[0], b[0])
    assert inputs == {"question": "who?", "context A": ["[1] x"], "context B": ["[1] y"]}
    # The same passage at the same rank: both orders show one prompt, a tie without a read.
    assert shown(RETRIEVED, a[1], b[1]) == shown(RETRIEVED, b[1], a[1])
    prompt = side_by_side_prompt(RETRIEVED)
    assert prompt.instruction.startswith(PASSAGES_SYSTEM)
    assert "Which context answers the query better" in prompt.question


def _texts(name: str, texts: list[str]) -> Retrieved:
    return Retrieved(name, {"q1": texts}, texts=True)


def test_retrieval_side_by_side_decides_the_runs_beside_the_qrels(tmp_path, judged_by) -> None:
    given = files(tmp_path)
    out = tmp_path / "out"
    args = [
        "retrieval",
        str(given["qrels"]),
        str(given["lexical"]),
        str(given["dense"]),
        "--side-by-side",
        "--queries",
        str(given["queries"]),
        "--passages",
        str(given["passages"]),
        "--out",
        str(out),
        "--metrics",
        "nDCG@10",
        "--depth",
        "2",
        "--rounds",
        "200",
    ]
    dry = CliRunner().invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "up to 24 reads (2 systems, 12 query ranks every system" in dry.output
    assert judged_by.history == []

    found = CliRunner().invoke(app, args)
    assert found.exit_code == 0, found.output
    written = json.loads((out / "side_by_side.json").read_text())
    (pair,) = written["pairs"]
    # Rank 1, lexical's poor passage first (order ab): P(A) = 0.9 + 0.05 * (-0.3 - 0.3) = 0.87,
    # so P(dense better) = 0.13; dense first: 0.93. Averaged 0.53: +0.03, although A won all
    # 12 reads. Rank 2 is the same fair passage: a tie, unread. A query's preference is the
    # mean over its ranks, +0.015, on every query. Six equal signs: p = 2 / 2^6.
    assert (pair["a"], pair["b"], pair["verdict"]) == ("lexical", "dense", "better")
    assert pair["preference"] == pytest.approx(0.015)
    assert pair["p_value"] == pytest.approx(2 / 64)
    assert pair["win_rate"] == 1.0
    # The qrels: dense's nDCG@10 is 1 on each query, lexical's 1/log2(3) on each: better too.
    assert pair["qrels"] == {"nDCG@10": "better"}
    assert written["depth"] == 2
    # The report reads the folder as any side-by-side comparison.
    assert open_run(out).kind == "side-by-side"
    assert written["side_by_side"]["metrics"][0]["order_bias"]["share"] == 1.0
    assert len(judged_by.history) == 12
    assert "the qrels separate 1 of the 1 pairs on nDCG@10; side by side decided 1 of them the" in (
        " ".join(found.output.split())
    )

    again = CliRunner().invoke(app, args)  # every read is in the call cache
    assert again.exit_code == 0, again.output
    assert len(judged_by.history) == 12 and "12 reads (0 made now" in again.output


def test_where_nobody_graded_the_qrels_are_a_dash(tmp_path, judged_by) -> None:
    rows = {
        "x": [{"id": q, "question": f"{q}?", "contexts": ["poor one", "fair"]} for q in QUERIES],
        "y": [{"id": q, "question": f"{q}?", "contexts": ["poor one", "fair"]} for q in QUERIES],
    }
    rows["y"][0]["contexts"] = ["good one", "fair"]  # differs on q1 only
    del rows["y"][5]  # q6: not answered by y
    paths = [
        write(tmp_path, f"{name}.jsonl", "".join(json.dumps(r) + "\n" for r in found))
        for name, found in rows.items()
    ]
    out = tmp_path / "out"
    args = ["retrieval", "-", *map(str, paths), "--side-by-side", "--out", str(out)]
    found = CliRunner().invoke(app, [*args, "--rounds", "100"])
    assert found.exit_code == 0, found.output
    (pair,) = json.loads((out / "side_by_side.json").read_text())["pairs"]
    # Five shared queries: four shown alike (ties, unread), q1 read in both orders: +0.03.
    assert pair["preference"] == pytest.approx(0.03 / 5)
    assert pair["win_rate"] == pytest.approx((1 + 4 * 0.5) / 5)
    assert (pair["verdict"], pair["qrels"]) == ("cannot tell", {})
    assert len(judged_by.history) == 2
    assert "y: no answer to 1 input, left out" in found.output


def test_bad_input_is_named_before_any_judging(tmp_path, judged_by) -> None:
    given = files(tmp_path)
    args = ["retrieval", str(given["qrels"]), str(given["lexical"]), str(given["dense"])]
    side = [*args, "--side-by-side", "--out", str(tmp_path / "o")]
    no_queries = CliRunner().invoke(app, side)
    assert no_queries.exit_code == 2
    assert "lexical: no text for query 'q1': give --queries" in " ".join(no_queries.output.split())
    no_texts = CliRunner().invoke(app, [*side, "--queries", str(given["queries"])])
    assert no_texts.exit_code == 2
    assert "lexical names its passages by id: give --passages" in " ".join(no_texts.output.split())
    both = CliRunner().invoke(app, [*args, "--side-by-side", "--grade", "--out", str(tmp_path)])
    assert both.exit_code == 2 and "give one" in both.output
    assert judged_by.history == []


def test_a_querys_ranks_are_one_unit_of_the_test() -> None:
    from ragmeter.side_by_side import InputPreference, table_of

    def read(key: str, preference: float | None) -> InputPreference:
        return InputPreference(
            input=key, a="x", b="y", preference=preference, reads=[], length_a=1, length_b=1
        )

    found = [read("q1#1", 0.02), read("q1#2", 0.0), read("q2#1", 0.01), read("q2#2", None)]
    # q1: the mean of its two ranks; q2: a rank unscored leaves the query unscored.
    assert table_of(found, query_of) == {("x", "y"): {"q1": 0.01, "q2": None}}
    assert table_of(found)[("x", "y")]["q1#2"] == 0.0
