"""Tests for ragmeter.data: every source kind, column matching, and row-level error reporting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.data import (
    RAGAS_COLUMNS,
    DatasetError,
    InvalidRow,
    LoadedDataset,
    load_samples,
    write_jsonl,
)
from ragmeter.sample import Sample

ROWS: list[dict[str, Any]] = [
    {
        "id": "s1",
        "question": "What is RAG?",
        "contexts": ["RAG combines retrieval with generation."],
        "answer": "Retrieval plus generation.",
        "reference": "Retrieval-augmented generation.",
    },
    {"question": "Who wrote it?", "contexts": [], "answer": "Lewis et al."},
]

EXPECTED = [
    Sample(
        id="s1",
        question="What is RAG?",
        contexts=["RAG combines retrieval with generation."],
        answer="Retrieval plus generation.",
        reference="Retrieval-augmented generation.",
    ),
    Sample(question="Who wrote it?", contexts=[], answer="Lewis et al."),
]


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


class FakeHFDataset:
    """The part of datasets.Dataset that matters here: column names and iteration as dicts."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows
        self.column_names = list(rows[0])

    def __iter__(self):
        return (dict(row) for row in self._rows)

    def __len__(self) -> int:
        return len(self._rows)


# --- sources ----------------------------------------------------------------------------------


def test_jsonl_skips_blank_lines(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "data.jsonl", json.dumps(ROWS[0]), "", json.dumps(ROWS[1]))
    loaded = load_samples(path)
    assert loaded.samples == EXPECTED
    assert loaded.invalid == []


def test_ndjson_from_string_path(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "data.ndjson", *(json.dumps(row) for row in ROWS))
    assert load_samples(str(path)).samples == EXPECTED


def test_json_array(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(ROWS), encoding="utf-8")
    assert load_samples(path).samples == EXPECTED


def test_json_that_is_not_an_array(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(ROWS[0]), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load_samples(path)
    assert str(info.value) == f"{path}: expected a JSON array of objects, got dict"


def test_csv_json_list_and_plain_string_contexts(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "data.csv",
        "id,question,contexts,answer,reference,source",
        '007,What is RAG?,"[""Passage one."", ""Passage two.""]",Retrieval.,,wiki',
        "008,Who wrote it?,Lewis et al. 2020 introduced RAG.,NA,Lewis,paper",
        "009,Which paper?,[1] Lewis et al.,The 2020 one.,,",
    )
    loaded = load_samples(path)
    assert loaded.samples == [
        Sample(
            id="007",
            question="What is RAG?",
            contexts=["Passage one.", "Passage two."],
            answer="Retrieval.",
            metadata={"source": "wiki"},
        ),
        Sample(
            id="008",
            question="Who wrote it?",
            contexts=["Lewis et al. 2020 introduced RAG."],
            answer="NA",
            reference="Lewis",
            metadata={"source": "paper"},
        ),
        Sample(
            id="009",
            question="Which paper?",
            contexts=["[1] Lewis et al."],
            answer="The 2020 one.",
            metadata={"source": None},
        ),
    ]


def test_csv_empty_contexts_cell_is_no_contexts(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "data.csv", "question,contexts,answer", "q,,a")
    assert load_samples(path).samples == [Sample(question="q", contexts=[], answer="a")]


def test_parquet_with_ragas_columns(tmp_path: Path) -> None:
    path = tmp_path / "data.parquet"
    rows = [
        {
            "user_input": "q1",
            "retrieved_contexts": ["c1", "c2"],
            "response": "a1",
            "reference": "r1",
            "latency_ms": 12,
        },
        {
            "user_input": "q2",
            "retrieved_contexts": [],
            "response": "a2",
            "reference": None,
            "latency_ms": 30,
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert load_samples(path).samples == [
        Sample(
            question="q1",
            contexts=["c1", "c2"],
            answer="a1",
            reference="r1",
            metadata={"latency_ms": 12},
        ),
        Sample(question="q2", contexts=[], answer="a2", metadata={"latency_ms": 30}),
    ]


def test_parquet_read_by_pandas_gives_numpy_contexts(tmp_path: Path) -> None:
    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    frame = pd.read_parquet(path)
    assert isinstance(frame["contexts"].iloc[0], np.ndarray)
    assert load_samples(frame).samples == EXPECTED


def test_parquet_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError) as info:
        load_samples(path)
    assert str(info.value) == f"reading {path} needs pyarrow: pip install 'ragmeter[parquet]'"


def test_dataframe_missing_values_and_numpy_types() -> None:
    frame = pd.DataFrame(
        {
            "question": ["q1", "q2"],
            "contexts": [np.array(["c1", "c2"]), None],
            "answer": ["a1", "a2"],
            "reference": ["r1", np.nan],
            "id": [3, np.nan],  # pandas widens this to float64: 3.0, NaN
            "score": [1, 2],
        }
    )
    samples = load_samples(frame).samples
    assert samples == [
        Sample(
            id="3",
            question="q1",
            contexts=["c1", "c2"],
            answer="a1",
            reference="r1",
            metadata={"score": 1},
        ),
        Sample(question="q2", contexts=[], answer="a2", metadata={"score": 2}),
    ]
    assert type(samples[0].metadata["score"]) is int


def test_list_of_dicts() -> None:
    loaded = load_samples(ROWS)
    assert isinstance(loaded, LoadedDataset)
    assert len(loaded) == 2
    assert list(loaded) == EXPECTED


def test_generator_of_dicts() -> None:
    assert load_samples(dict(row) for row in ROWS).samples == EXPECTED


def test_fake_huggingface_dataset() -> None:
    dataset = FakeHFDataset(
        [
            {"user_input": "q", "retrieved_contexts": ["c"], "response": "a", "reference": "r"},
        ]
    )
    assert load_samples(dataset).samples == [
        Sample(question="q", contexts=["c"], answer="a", reference="r")
    ]


def test_unknown_suffix(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("question,answer\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load_samples(path)
    assert str(info.value) == (
        f"cannot read {path}: unknown file type '.txt' "
        "(expected one of .jsonl, .ndjson, .json, .csv, .parquet)"
    )


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.jsonl"
    with pytest.raises(FileNotFoundError) as info:
        load_samples(path)
    assert str(info.value) == f"no such file: {path}"


@pytest.mark.parametrize("source", [42, {"question": "q", "answer": "a"}, b"bytes"])
def test_unsupported_source(source: object) -> None:
    with pytest.raises(TypeError, match="cannot load samples from"):
        load_samples(source)


# --- columns ----------------------------------------------------------------------------------


def test_ragas_columns_detected_without_mapping() -> None:
    row = {"user_input": "q", "retrieved_contexts": ["c"], "response": "a", "reference": "r"}
    expected = [Sample(question="q", contexts=["c"], answer="a", reference="r")]
    assert load_samples([row]).samples == expected
    assert load_samples([row], columns=RAGAS_COLUMNS).samples == expected


def test_other_aliases() -> None:
    row = {
        "query": "q",
        "context": "the only passage",
        "generated_answer": "a",
        "ground_truth": "r",
        "sample_id": 17,
    }
    assert load_samples([row]).samples == [
        Sample(id="17", question="q", contexts=["the only passage"], answer="a", reference="r")
    ]


def test_reference_answer_alias() -> None:
    row = {"question": "q", "answer": "a", "reference_answer": "r"}
    assert load_samples([row]).samples == [Sample(question="q", answer="a", reference="r")]


def test_canonical_name_beats_alias() -> None:
    row = {"question": "q", "query": "other", "answer": "a"}
    assert load_samples([row]).samples == [
        Sample(question="q", answer="a", metadata={"query": "other"})
    ]


def test_explicit_mapping() -> None:
    row = {"prompt": "q", "docs": ["c"], "output": "a", "gold": "r"}
    columns = {"prompt": "question", "docs": "contexts", "output": "answer", "gold": "reference"}
    assert load_samples([row], columns=columns).samples == [
        Sample(question="q", contexts=["c"], answer="a", reference="r")
    ]


def test_explicit_mapping_beats_aliases() -> None:
    row = {"question": "q", "response": "draft", "final": "a", "answer": "gold"}
    columns = {"final": "answer", "answer": "reference"}
    assert load_samples([row], columns=columns).samples == [
        Sample(question="q", answer="a", reference="gold", metadata={"response": "draft"})
    ]


def test_mapping_to_unknown_field_fails_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as info:
        load_samples(tmp_path / "absent.jsonl", columns={"q": "questoin"})
    assert str(info.value) == (
        "column 'q' is mapped to 'questoin', which is not a Sample field "
        "(expected one of: question, contexts, answer, reference, history, context_ids, "
        "reference_context_ids, id, metadata)"
    )


def test_two_columns_mapped_to_one_field() -> None:
    with pytest.raises(ValueError) as info:
        load_samples(ROWS, columns={"a": "answer", "b": "answer"})
    assert str(info.value) == "columns 'a' and 'b' are both mapped to 'answer'"


def test_unknown_columns_go_to_metadata() -> None:
    row = {
        "question": "q",
        "answer": "a",
        "model": "tiny",
        "latency": 0.5,
        "metadata": {"run": 7},
    }
    assert load_samples([row]).samples == [
        Sample(question="q", answer="a", metadata={"model": "tiny", "latency": 0.5, "run": 7})
    ]


def test_metadata_column_wins_over_extra_column_of_same_name() -> None:
    row = {"question": "q", "answer": "a", "run": 1, "metadata": {"run": 2}}
    assert load_samples([row]).samples[0].metadata == {"run": 2}


# --- values -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        (("a", "b"), ["a", "b"]),
        (np.array(["a", "b"]), ["a", "b"]),
        ('["a", "b"]', ["a", "b"]),
        ("just one passage", ["just one passage"]),
        ("[not json", ["[not json"]),
        (None, []),
        (float("nan"), []),
    ],
)
def test_contexts_shapes(raw: object, expected: list[str]) -> None:
    row = {"question": "q", "answer": "a", "contexts": raw}
    assert load_samples([row]).samples[0].contexts == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("x1", "x1"), (12, "12"), (12.0, "12"), (np.int64(5), "5"), (2.5, "2.5"), (None, None)],
)
def test_id_forms(raw: object, expected: str | None) -> None:
    row = {"question": "q", "answer": "a", "id": raw}
    assert load_samples([row]).samples[0].id == expected


def test_nan_reference_is_none() -> None:
    row = {"question": "q", "answer": "a", "reference": float("nan")}
    assert load_samples([row]).samples[0].reference is None


# --- errors -----------------------------------------------------------------------------------


def test_bad_row_raises_with_row_and_field() -> None:
    rows = [*ROWS, {"question": "q3", "answer": "a3", "contexts": 5}]
    with pytest.raises(DatasetError) as info:
        load_samples(rows)
    error = info.value
    assert str(error) == "row 3, field 'contexts': expected a list of strings, got int"
    assert (error.row, error.field, error.reason) == (
        3,
        "contexts",
        "expected a list of strings, got int",
    )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q"}, "row 1, field 'answer': missing"),
        ({"answer": "a"}, "row 1, field 'question': missing"),
        ({"question": 1, "answer": "a"}, "row 1, field 'question': expected a string, got int"),
        ({"question": "q", "answer": None}, "row 1, field 'answer': missing"),
        (
            {"question": "   ", "answer": "a"},
            "row 1, field 'question': Value error, question is blank",
        ),
        (
            {"question": "", "answer": "a"},
            "row 1, field 'question': String should have at least 1 character",
        ),
        (
            {"question": "q", "answer": "a", "reference": 3},
            "row 1, field 'reference': expected a string or a list of answers, got int",
        ),
        (
            {"question": "q", "answer": "a", "id": True},
            "row 1, field 'id': expected a string or number, got bool",
        ),
        (
            {"question": "q", "answer": "a", "contexts": '["ok", 2]'},
            "row 1, field 'contexts': expected a list of strings, got a list containing int",
        ),
        (
            {"question": "q", "answer": "a", "metadata": [1]},
            "row 1, field 'metadata': expected an object, got list",
        ),
    ],
)
def test_error_messages(row: dict[str, Any], message: str) -> None:
    with pytest.raises(DatasetError) as info:
        load_samples([row])
    assert str(info.value) == message


def test_explicit_column_missing_from_row_is_missing_field() -> None:
    with pytest.raises(DatasetError) as info:
        load_samples([{"question": "q", "answer": "a"}], columns={"output": "answer"})
    assert str(info.value) == "row 1, field 'answer': missing"


def test_skip_mode_returns_good_samples_and_invalid_rows() -> None:
    rows: list[Any] = [
        {"question": "q1", "answer": "a1"},
        {"question": "q2"},
        {"question": "q3", "answer": "a3", "contexts": ["ok", 7]},
        "not a row",
        {"question": "  ", "answer": "a5"},
        {"question": "q6", "answer": "a6", "id": [1]},
        {"question": "q7", "answer": 42},
        {"question": "q8", "answer": "a8"},
    ]
    loaded = load_samples(rows, on_invalid="skip")
    assert loaded.samples == [
        Sample(question="q1", answer="a1"),
        Sample(question="q8", answer="a8"),
    ]
    assert loaded.invalid == [
        InvalidRow(2, "answer", "missing"),
        InvalidRow(3, "contexts", "expected a list of strings, got a list containing int"),
        InvalidRow(4, "<row>", "expected an object, got str"),
        InvalidRow(5, "question", "Value error, question is blank"),
        InvalidRow(6, "id", "expected a string or number, got list"),
        InvalidRow(7, "answer", "expected a string, got int"),
    ]


def test_invalid_json_line_number_counts_blank_lines(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "data.jsonl",
        json.dumps(ROWS[0]),
        "",
        "not json",
        json.dumps(ROWS[1]),
        '{"question": "q5",',
    )
    with pytest.raises(DatasetError) as info:
        load_samples(path)
    assert str(info.value) == "row 3, field '<json>': invalid JSON: Expecting value at column 1"

    loaded = load_samples(path, on_invalid="skip")
    assert loaded.samples == EXPECTED
    assert loaded.invalid == [
        InvalidRow(3, "<json>", "invalid JSON: Expecting value at column 1"),
        InvalidRow(
            5,
            "<json>",
            "invalid JSON: Expecting property name enclosed in double quotes at column 19",
        ),
    ]


def test_jsonl_row_that_is_not_an_object(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "data.jsonl", json.dumps(ROWS[0]), "[1, 2]")
    with pytest.raises(DatasetError) as info:
        load_samples(path)
    assert str(info.value) == "row 2, field '<row>': expected an object, got list"


def test_unknown_on_invalid_value() -> None:
    with pytest.raises(ValueError, match="on_invalid must be 'raise' or 'skip', got 'ignore'"):
        load_samples(ROWS, on_invalid="ignore")  # type: ignore[arg-type]


# --- round trip -------------------------------------------------------------------------------


def test_write_jsonl_round_trip(tmp_path: Path) -> None:
    samples = [
        *EXPECTED,
        Sample(question="é ✓", contexts=["a\nb"], answer="", metadata={"k": [1, None]}),
    ]
    path = tmp_path / "out.jsonl"
    write_jsonl(samples, path)
    assert load_samples(path).samples == samples
    second_line = path.read_text(encoding="utf-8").splitlines()[1]
    assert json.loads(second_line) == {
        "question": "Who wrote it?",
        "contexts": [],
        "answer": "Lewis et al.",
        "metadata": {},
    }


json_scalars = st.none() | st.booleans() | st.integers() | st.text()
samples_strategy = st.builds(
    Sample,
    question=st.text(min_size=1).filter(str.strip),
    contexts=st.lists(st.text(), max_size=3),
    answer=st.text(),
    reference=st.none() | st.text(),
    id=st.none() | st.text(),
    metadata=st.dictionaries(st.text(), json_scalars, max_size=3),
)


@settings(
    max_examples=50,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(samples=st.lists(samples_strategy, max_size=4))
def test_write_jsonl_round_trip_property(tmp_path: Path, samples: list[Sample]) -> None:
    path = tmp_path / "round.jsonl"
    write_jsonl(samples, path)
    assert load_samples(path).samples == samples


def test_import_loads_no_optional_or_heavy_modules() -> None:
    code = (
        "import sys, ragmeter.data; "
        "print(sorted(m for m in ('pandas', 'pyarrow', 'datasets') if m in sys.modules))"
    )
    src = Path(__file__).resolve().parents[1] / "src"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(src)},
    )
    assert result.stdout.strip() == "[]"
