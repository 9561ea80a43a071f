"""The retriever evaluated from ids: samples that carry them, the readers of qrels, runs,
queries and passages (every error naming the file and line), the IR metrics against values
worked out by hand, and the shared TREC DL 2019 set against trec_eval's values."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from ragmeter import evaluate
from ragmeter.data import DatasetError, load_samples
from ragmeter.metrics import metric_by_name
from ragmeter.retrieval import (
    Passage,
    Qrels,
    RetrievalFileError,
    Run,
    evaluate_runs,
    one_query,
    parse_measures,
    qrels_of,
    read_passages,
    read_qrels,
    read_queries,
    read_run,
    read_samples_qrels,
    read_samples_run,
    run_of,
)
from ragmeter.sample import Sample

SHARED = Path(__file__).parent.parent.parent / "shared" / "data" / "retrieval"

# One query judged on four documents, graded 0-3, and a ranking of four ids, one of them
# unjudged (d7), that the hand-worked values below are of.
GRADES = {"d1": 3, "d2": 0, "d3": 1, "d4": 2}
RANKING = ["d2", "d1", "d7", "d4"]
# nDCG@3: DCG@3 = 0/log2(2) + 3/log2(3) + 0/log2(4) = 1.892789; the ideal ranking's grades
# 3, 2, 1 give 3/1 + 2/log2(3) + 1/log2(4) = 4.761860; 1.892789 / 4.761860 = 0.397490.
NDCG_3 = 0.397490
# With the relevant ids listed, not graded, every gain is 1: DCG@3 = 1/log2(3) = 0.630930,
# the ideal 1 + 1/log2(3) + 1/log2(4) = 2.130930: 0.296082.
NDCG_3_LISTED = 0.296082

QRELS_TREC = """\
q1 0 d1 3
q1 0 d2 0
q1 0 d3 1
q1 0 d4 2
q2 0 d5 1
q3 0 d9 1
"""
# q1 ranked as RANKING; q2: an unjudged id before its relevant one; q3 not returned (0 on
# every measure); q4 not judged (not scored, reported).
RUN_TREC = """\
q1 Q0 d2 1 9.0 A
q1 Q0 d1 2 8.0 A
q1 Q0 d7 3 7.0 A
q1 Q0 d4 4 6.0 A
q2 Q0 d6 1 5.0 A
q2 Q0 d5 2 4.0 A
q4 Q0 d1 1 1.0 A
"""


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def ids_sample(**fields: object) -> Sample:
    return Sample(question="Where is it?", answer="There.", **fields)  # type: ignore[arg-type]


# --- samples that carry ids -------------------------------------------------------------------


def test_a_sample_carries_its_ids_in_rank_order_and_graded_references():
    sample = ids_sample(context_ids=["d2", 1], reference_context_ids={"d2": 2, 1: 0})
    assert sample.context_ids == ["d2", "1"]
    assert sample.relevance == {"d2": 2, "1": 0}
    listed = ids_sample(reference_context_ids=["d2", "d3"])
    assert listed.relevance == {"d2": 1, "d3": 1}
    assert ids_sample().relevance is None


def test_a_sample_without_ids_is_written_and_hashed_as_before():
    plain = ids_sample(contexts=["A passage."])
    assert "context_ids" not in plain.model_dump() and "reference_context_ids" not in (
        plain.model_dump()
    )
    before = json.dumps([plain.question, plain.contexts, plain.answer, plain.reference])
    assert plain.digest == hashlib.sha256(before.encode()).hexdigest()


def test_the_ids_are_part_of_the_samples_digest():
    base = ids_sample(context_ids=["d1", "d2"], reference_context_ids={"d1": 1})
    assert ids_sample(context_ids=["d2", "d1"], reference_context_ids={"d1": 1}).digest != (
        base.digest
    )
    assert ids_sample(context_ids=["d1", "d2"], reference_context_ids={"d1": 2}).digest != (
        base.digest
    )
    # The same relevance, however it is written, is the same sample.
    assert ids_sample(context_ids=["d1", "d2"], reference_context_ids=["d1"]).digest == (
        base.digest
    )


def test_rows_with_bad_ids_name_the_row_and_the_field():
    rows = [
        {"question": "q", "answer": "a", "contexts": ["x", "y"], "context_ids": ["d1", "d2"]},
        {"question": "q", "answer": "a", "contexts": ["x", "y"], "context_ids": ["d1"]},
    ]
    with pytest.raises(DatasetError, match=r"row 2, field 'context_ids': .*1 ids for 2 contexts"):
        load_samples(rows)
    cases = [
        ({"context_ids": ["d1", "d1"]}, "context_ids", "id 2: 'd1' is already id 1"),
        ({"context_ids": [1.5]}, "context_ids", "id 1: expected a string or an integer"),
        ({"reference_context_ids": {"d1": "high"}}, "reference_context_ids", "grade of 'd1'"),
        ({"reference_context_ids": "d1"}, "reference_context_ids", "not JSON"),
    ]
    for extra, field, problem in cases:
        with pytest.raises(DatasetError, match=rf"row 1, field '{field}': .*{problem}"):
            load_samples([{"question": "q", "answer": "a", **extra}])


def test_ids_are_read_from_csv_text_and_ragas_column_names():
    (loaded,) = load_samples(
        [
            {
                "question": "q",
                "answer": "a",
                "retrieved_context_ids": '["d1", 7.0]',
                "reference_context_ids": '{"d1": 2}',
            }
        ]
    ).samples
    assert loaded.context_ids == ["d1", "7"]
    assert loaded.relevance == {"d1": 2}


# --- the metrics of ids -------------------------------------------------------------------


def test_the_metrics_of_ids_against_values_worked_out_by_hand():
    sample = ids_sample(context_ids=RANKING, reference_context_ids=GRADES)
    expected = {
        "ndcg@3": NDCG_3,
        # d1 (grade 3) is the first relevant id, at rank 2.
        "mrr": 0.5,
        # Relevant d1 at rank 2 (precision 1/2) and d4 at rank 4 (2/4); d3 never retrieved:
        # (0.5 + 0.5) / 3.
        "map": 1 / 3,
        # d1 and d4 of d1, d3, d4 in the top 4; at grade 2 or more, d1 and d4 of d1, d4.
        "recall@4": 2 / 3,
        "recall(rel=2)@4": 1.0,
        # Of d2, d1: d1.
        "precision@2": 0.5,
        # d2 (grade 0) alone in the top 1; d1 in the top 2.
        "hit_rate@1": 0.0,
        "hit_rate@2": 1.0,
        # trec_eval's P@k counts k even when fewer were retrieved: 2 relevant / 10.
        "precision@10": 0.2,
    }
    names = {
        "ndcg@3": metric_by_name("ndcg@3"),
        "mrr": metric_by_name("mrr"),
        "map": metric_by_name("map"),
        "recall@4": metric_by_name("recall", k=4),
        "recall(rel=2)@4": metric_by_name("recall@4", relevant=2),
        "precision@2": metric_by_name("precision@2"),
        "hit_rate@1": metric_by_name("hit_rate@1"),
        "hit_rate@2": metric_by_name("hit_rate@2"),
        "precision@10": metric_by_name("precision"),
    }
    for column, metric in names.items():
        assert metric.name == column
        value, explanation = metric.measure(sample, None)  # type: ignore[arg-type]
        assert value == pytest.approx(expected[column], abs=1e-6), column
    _, explanation = names["ndcg@3"].measure(sample, None)  # type: ignore[arg-type]
    assert explanation["relevant_ranks"] == [2] and explanation["unjudged_in_top"] == 1


def test_relevant_ids_listed_count_as_grade_one():
    sample = ids_sample(context_ids=RANKING, reference_context_ids=["d1", "d3", "d4"])
    value, _ = metric_by_name("ndcg@3").measure(sample, None)  # type: ignore[arg-type]
    assert value == pytest.approx(NDCG_3_LISTED, abs=1e-6)


def test_a_sample_without_ids_is_unscored_with_the_reason(tmp_path):
    samples = [
        ids_sample(id="no-ids"),
        ids_sample(id="no-reference", context_ids=["d1"]),
        ids_sample(id="nothing-relevant", context_ids=["d1"], reference_context_ids={"d1": 0}),
        ids_sample(id="nothing-retrieved", context_ids=[], reference_context_ids=["d1"]),
    ]
    result = evaluate(samples, ["ndcg@10", "mrr"], out_dir=tmp_path / "run")
    by_sample = {(s.sample_id, s.metric): s for s in result.scores}
    assert "no context_ids" in by_sample["no-ids", "ndcg@10"].unscored_reason
    assert "no reference_context_ids" in by_sample["no-reference", "mrr"].unscored_reason
    assert "nothing to retrieve" in by_sample["nothing-relevant", "ndcg@10"].unscored_reason
    assert by_sample["nothing-retrieved", "ndcg@10"].value == 0.0
    # No metric asked a judge, so none was started.
    assert result.run.judge.startswith("none") and result.run.counts.model_calls == 0


def test_a_changed_id_list_is_scored_again_not_served_from_the_store(tmp_path):
    out = tmp_path / "run"
    first = ids_sample(id="s1", context_ids=["d1", "d2"], reference_context_ids=["d2"])
    assert evaluate([first], ["mrr"], out_dir=out).scores[0].value == 0.5
    moved = ids_sample(id="s1", context_ids=["d2", "d1"], reference_context_ids=["d2"])
    again = evaluate([moved], ["mrr"], out_dir=out)
    assert again.scores[0].value == 1.0 and again.run.counts.resumed == 0
    assert evaluate([moved], ["mrr"], out_dir=out).run.counts.resumed == 1


def test_a_cutoff_in_the_name_and_as_an_option_is_refused():
    with pytest.raises(ValueError, match="cutoff in its name"):
        metric_by_name("ndcg@5", k=3)
    with pytest.raises(ValueError, match="not a whole number"):
        metric_by_name("ndcg@ten")


# --- readers ----------------------------------------------------------------------------------


def test_trec_and_beir_qrels_read_alike(tmp_path):
    trec = read_qrels(write(tmp_path / "qrels.txt", QRELS_TREC))
    rows = [line.split() for line in QRELS_TREC.splitlines()]
    tsv = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, _, d, g in rows)
    beir = read_qrels(write(tmp_path / "test.tsv", tsv))
    assert trec.grades == beir.grades
    assert trec.grades["q1"] == GRADES and trec.name == "qrels" and trec.judged() == 6


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("qrels.txt", "q1 0 d1 1\nq1 0 d2\n", r"qrels.txt, line 2: expected 4 columns"),
        ("qrels.txt", "q1 0 d1 1\n\nq1 0 d2 high\n", r"line 3: the grade 'high' is not an"),
        (
            "qrels.txt",
            "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n",
            r"line 3: query 'q1', document 'd1' is judged again \(first on line 1\)",
        ),
        ("qrels.txt", "\n\n", r"qrels.txt: holds no judgment"),
        ("qrels.tsv", "q1\td1\t1\n", r"qrels.tsv, line 1: a BEIR qrels file starts with"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n", r"line 2: expected 3 tab-sep"),
        (
            "qrels.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t0\n",
            r"line 3: .* judged again \(first on line 2\)",
        ),
    ],
)
def test_every_malformed_qrels_line_is_named(tmp_path, name, text, problem):
    with pytest.raises(RetrievalFileError, match=problem):
        read_qrels(write(tmp_path / name, text))


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    with pytest.raises(RetrievalFileError, match=r"run.trec, line 2: not UTF-8 text at byte 7"):
        read_run(write(tmp_path / "run.trec", b"q1 Q0 d1 1 2.0 A\nq1 Q0 \xff 2 1.0 A\n"))


def test_a_trec_run_is_read_with_its_name_and_tags(tmp_path):
    run = read_run(write(tmp_path / "bm25.trec", RUN_TREC))
    assert run.name == "bm25" and run.tags == ["A"]
    assert run.scores["q1"] == {"d2": 9.0, "d1": 8.0, "d7": 7.0, "d4": 6.0}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("q1 Q0 d1 1 2.0\n", r"line 1: expected 6 columns \(query-id Q0 document-id rank"),
        ("q1 Q0 d1 1 2.0 A\nq1 Q0 d2 first 1.0 A\n", r"line 2: the rank 'first' is not an"),
        ("q1 Q0 d1 1 high A\n", r"line 1: the score 'high' is not a finite number"),
        ("q1 Q0 d1 1 nan A\n", r"line 1: the score 'nan' is not a finite number"),
        (
            "q1 Q0 d1 1 2.0 A\nq2 Q0 d1 1 2.0 A\nq1 Q0 d1 2 1.0 A\n",
            r"line 3: query 'q1', document 'd1' is ranked again \(first on line 1\)",
        ),
    ],
)
def test_every_malformed_run_line_is_named(tmp_path, text, problem):
    with pytest.raises(RetrievalFileError, match=r"run.trec, " + problem):
        read_run(write(tmp_path / "run.trec", text))


def test_a_missing_file_is_said(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_run(tmp_path / "absent.trec")


def test_queries_and_passages_in_both_shapes(tmp_path):
    ours = write(tmp_path / "queries.jsonl", '{"qid": "q1", "query": "what is rag"}\n')
    beir = write(tmp_path / "beir.jsonl", '{"_id": 7, "text": "what is rag", "metadata": {}}\n')
    assert read_queries(ours) == {"q1": "what is rag"}
    assert read_queries(beir) == {"7": "what is rag"}
    corpus = write(
        tmp_path / "corpus.jsonl",
        '{"docid": "d1", "text": "Retrieval first."}\n'
        '{"_id": "d2", "title": "RAG", "text": "Then generation."}\n',
    )
    assert read_passages(corpus) == {
        "d1": Passage("d1", "Retrieval first."),
        "d2": Passage("d2", "Then generation.", "RAG"),
    }


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"qid": "q1", "query": "a"}\n{"qid": "q2", "query": \n', r"line 2: invalid JSON"),
        ('["q1", "a"]\n', r"line 1: expected a JSON object, got list"),
        ('{"query": "a"}\n', r"line 1: no 'qid' or '_id' or 'query_id' field"),
        ('{"qid": "q1"}\n', r"line 1: no 'query' or 'text' field"),
        ('{"qid": "q1", "query": 3}\n', r"line 1: field 'query': expected a string, got int"),
        (
            '{"qid": "q1", "query": "a"}\n{"qid": "q1", "query": "b"}\n',
            r"line 2: the query id 'q1' is a query id again \(first on line 1\)",
        ),
    ],
)
def test_every_malformed_query_line_is_named(tmp_path, text, problem):
    with pytest.raises(RetrievalFileError, match=r"queries.jsonl, " + problem):
        read_queries(write(tmp_path / "queries.jsonl", text))


def test_a_duplicate_passage_is_named(tmp_path):
    text = (
        '{"docid": "d1", "text": "a"}\n{"docid": "d2", "text": "b"}\n{"_id": "d1", "text": "c"}\n'
    )
    with pytest.raises(RetrievalFileError, match=r"line 3: the document id 'd1' .*first on line 1"):
        read_passages(write(tmp_path / "passages.jsonl", text))


def test_samples_files_as_a_run_and_as_qrels(tmp_path):
    rows = [
        {"id": "q1", "context_ids": RANKING, "reference_context_ids": GRADES},
        {"id": 2, "context_ids": ["d6", "d5"], "reference_context_ids": ["d5"]},
        {"id": "q3", "question": "no ids"},
    ]
    path = write(tmp_path / "samples.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    run, not_run = read_samples_run(path)
    qrels, not_judged = read_samples_qrels(path)
    assert run.name == "samples" and list(run.scores) == ["q1", "2"] and not_run == ["q3"]
    # The order given, as scores that do not tie.
    assert run.scores["q1"] == {"d2": 4.0, "d1": 3.0, "d7": 2.0, "d4": 1.0}
    assert qrels.grades == {"q1": GRADES, "2": {"d5": 1}} and not_judged == ["q3"]
    samples = [
        ids_sample(id=str(r["id"]), **{k: r[k] for k in r if k.endswith("ids")}) for r in rows
    ]
    assert run_of(samples, "samples").scores == run.scores
    assert qrels_of(samples, "samples").grades == qrels.grades


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        (['{"context_ids": ["d1"]}'], r"line 1: no 'id' or 'sample_id' field"),
        (
            ['{"id": "q1", "context_ids": ["d1"]}', '{"id": "q1", "context_ids": ["d2"]}'],
            r"line 2: the id 'q1' is a sample's id again \(first on line 1\)",
        ),
        (
            ['{"id": "q1", "context_ids": ["d1", "d2", "d1"]}'],
            r"line 1: field 'context_ids': id 3: 'd1' is already id 1",
        ),
        (['{"id": "q1", "question": "q"}'], r"samples.jsonl: no row has context_ids"),
    ],
)
def test_every_malformed_samples_row_is_named(tmp_path, rows, problem):
    path = write(tmp_path / "samples.jsonl", "\n".join(rows) + "\n")
    with pytest.raises(RetrievalFileError, match=problem):
        read_samples_run(path)


# --- measures through ir-measures -------------------------------------------------------------


def test_ties_are_ordered_as_trec_eval_orders_them():
    """Equal scores: document ids descending, whatever the rank column said; d2 (grade 0)
    before d1 (grade 3), so the first relevant document is at rank 2."""
    (rr,) = parse_measures("RR")
    qrels = Qrels("q", {"q1": {"d1": 3, "d2": 0}})
    tied = Run("tied", {"q1": {"d1": 1.0, "d2": 1.0}})
    assert evaluate_runs(qrels, [tied], ["RR"]).runs[0].measures["RR"].mean == 0.5
    assert one_query(rr, {"d1": 3, "d2": 0}, ["d1", "d2"]) == 1.0  # an order given is kept


def test_runs_are_scored_over_the_queries_of_the_qrels(tmp_path):
    qrels = read_qrels(write(tmp_path / "qrels.txt", QRELS_TREC))
    run = read_run(write(tmp_path / "A.trec", RUN_TREC))
    found = evaluate_runs(qrels, [run], ["nDCG@3", "RR", "P@2", "R@4", "R(rel=2)@4", "AP"])
    (summary,) = found.runs
    # q1 as worked out above; q2: d6 unjudged, then d5 (grade 1): nDCG@3 = (1/log2(3)) / 1 =
    # 0.630930, RR 1/2, P@2 1/2, R@4 1, AP 1/2; q3, not returned: 0 on every measure.
    per_query = summary.per_query
    assert per_query["nDCG@3"] == pytest.approx({"q1": NDCG_3, "q2": 0.630930, "q3": 0.0}, abs=1e-6)
    assert per_query["RR"] == {"q1": 0.5, "q2": 0.5, "q3": 0.0}
    assert per_query["P@2"] == {"q1": 0.5, "q2": 0.5, "q3": 0.0}
    assert per_query["R@4"] == pytest.approx({"q1": 2 / 3, "q2": 1.0, "q3": 0.0})
    assert per_query["R(rel=2)@4"] == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    assert per_query["AP"] == pytest.approx({"q1": 1 / 3, "q2": 0.5, "q3": 0.0})
    ndcg = summary.measures["nDCG@3"]
    assert ndcg.mean == pytest.approx((NDCG_3 + 0.630930) / 3, abs=1e-6) and ndcg.queries == 3
    assert ndcg.ci_low <= ndcg.mean <= ndcg.ci_high
    assert summary.missing_queries == ["q3"] and summary.unjudged_queries == ["q4"]
    # Judged in the top 2: q1 d2, d1 (both); q2 d6 (no), d5: 3 of 4. Top 3: q1 d2, d1, d7
    # (no): 2 of 3, q2 1 of 2: 3 of 5. Top 4: q1 3 of 4, q2 1 of 2: 4 of 6.
    judged = {j.k: (j.judged, j.retrieved, j.unjudged) for j in summary.judged}
    assert judged == {2: (3, 4, 1), 4: (4, 6, 2), 3: (3, 5, 2)}
    assert found.rankings == []  # one run: nothing to rank


def test_two_runs_are_ranked_on_every_measure(tmp_path):
    qrels = read_qrels(write(tmp_path / "qrels.txt", QRELS_TREC))
    good = Run("good", {"q1": {"d1": 3.0, "d4": 2.0, "d3": 1.0}, "q2": {"d5": 1.0}})
    bad = read_run(write(tmp_path / "bad.trec", RUN_TREC))
    found = evaluate_runs(qrels, [bad, good], ["RR", "nDCG@3"], rounds=200)
    assert [r.metric for r in found.rankings] == ["RR", "nDCG@3"]
    (pair,) = found.rankings[0].pairs
    # good: RR 1, 1, 0 (q3 not returned); bad: 1/2, 1/2, 0. The mean difference is 1/3.
    assert (pair.a, pair.b) == ("bad", "good") and pair.test.difference == pytest.approx(1 / 3)
    assert found.rankings[0].systems[0].system == "good"


def test_two_runs_of_one_name_and_an_unknown_measure_are_refused(tmp_path):
    qrels = Qrels("q", {"q1": {"d1": 1}})
    run = Run("same", {"q1": {"d1": 1.0}})
    with pytest.raises(ValueError, match="two runs are named 'same'"):
        evaluate_runs(qrels, [run, run])
    with pytest.raises(ValueError, match="the measure 'nDGC@10' is not one ir-measures reads"):
        evaluate_runs(qrels, [run], ["nDGC@10"])


# --- the shared TREC DL 2019 set against trec_eval ---------------------------------------------

# trec_eval's values (``trec_eval -c -m ndcg_cut.10``; ``-l 2 -m recall.100``), as the shared
# set's README gives them, and the judged share of each run's top 10 and top 100.
TREC_EVAL = {
    "BM25": (0.5058, 0.4910, 430, 2257),
    "BM25_RM3": (0.5216, 0.5259, 425, 2400),
    "D_BERT_KD_TASB": (0.7210, 0.6097, 388, 2108),
    "OPEN_AI_ADA2": (0.7035, 0.6235, 393, 2185),
    "SPLADE_P_P_ENSEMBLE_DISTIL": (0.7308, 0.6390, 398, 2238),
    "REP_LLAMA": (0.7384, 0.6579, 395, 2286),
}


def test_the_shared_runs_equal_trec_evals_values():
    if not (SHARED / "qrels.txt").is_file():
        pytest.skip(f"the shared retrieval set is not at {SHARED}")
    import pytrec_eval

    qrels = read_qrels(SHARED / "qrels.txt")
    runs = [read_run(SHARED / "runs" / f"{name}.trec") for name in TREC_EVAL]
    found = evaluate_runs(qrels, runs, ["nDCG@10", "R(rel=2)@100"], rounds=100)
    ndcg = pytrec_eval.RelevanceEvaluator(qrels.grades, {"ndcg_cut.10"})
    recall = pytrec_eval.RelevanceEvaluator(qrels.grades, {"recall.100"}, relevance_level=2)
    for summary, run in zip(found.runs, runs, strict=True):
        ndcg_10, recall_100, judged_10, judged_100 = TREC_EVAL[run.name]
        ours = summary.measures["nDCG@10"].mean, summary.measures["R(rel=2)@100"].mean
        assert set(run.scores) == set(qrels.grades)  # every query returned: -c changes nothing
        direct = (
            _mean(ndcg.evaluate(run.scores), "ndcg_cut_10"),
            _mean(recall.evaluate(run.scores), "recall_100"),
        )
        assert round(ours[0], 4) == round(direct[0], 4) == ndcg_10, run.name
        assert round(ours[1], 4) == round(direct[1], 4) == recall_100, run.name
        assert math.isclose(ours[0], direct[0], abs_tol=1e-12)
        assert [(j.k, j.judged, j.retrieved) for j in summary.judged] == [
            (10, judged_10, 430),
            (100, judged_100, 4300),
        ], run.name


def _mean(per_query: dict[str, dict[str, float]], measure: str) -> float:
    return sum(values[measure] for values in per_query.values()) / len(per_query)
