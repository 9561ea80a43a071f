"""Append-only record files: resume by key, last line wins, unreadable lines reported."""

from __future__ import annotations

import warnings

import pytest
from pydantic import BaseModel

from ragmeter.records import TORN, RecordLog, RecordLogWarning, SkippedLine


class Item(BaseModel):
    key: str
    value: int


class Named(BaseModel):
    name: str
    note: str = ""


A1 = '{"key":"a","value":1}'
B2 = '{"key":"b","value":2}'
C3 = '{"key":"c","value":3}'


def quiet(path, model=Item, **kwargs) -> RecordLog:
    """Load a log, failing on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return RecordLog(path, model, **kwargs)


def test_a_missing_file_is_an_empty_log_created_by_the_first_append(tmp_path):
    path = tmp_path / "deep" / "er" / "log.jsonl"
    log = quiet(path)
    assert len(log) == 0 and list(log) == [] and log.skipped == []
    assert not path.exists()
    log.append(Item(key="a", value=1))
    assert path.read_text() == A1 + "\n"
    assert log.get("a") == Item(key="a", value=1) and "a" in log and log.get("z") is None


def test_an_invalid_line_in_the_middle_is_reported_and_the_others_kept(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join([A1, '{"key":"b","value":"many"}', "", "   ", C3, "not json"]) + "\n")
    with pytest.warns(RecordLogWarning) as caught:
        log = RecordLog(path, Item)
    assert [r.key for r in log] == ["a", "c"]
    assert [r.value for r in log] == [1, 3]
    # Lines 3 and 4 are blank: ignored, not reported.
    assert log.skipped == [
        SkippedLine(
            2, "value: Input should be a valid integer, unable to parse string as an integer"
        ),
        SkippedLine(6, "Invalid JSON: expected ident at line 1 column 2"),
    ]
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f"{path}: skipped 2 unreadable lines, their records taken as missing (first: line 2: "
        "value: Input should be a valid integer, unable to parse string as an integer)"
    )
    assert caught[0].filename == __file__  # points at the code that opened the log


def test_a_record_of_another_schema_is_reported_with_its_first_error(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(A1 + '\n{"id":"b","value":"x","extra":1}\n[1, 2]\n')
    with pytest.warns(RecordLogWarning, match=r"skipped 2 unreadable lines"):
        log = RecordLog(path, Item)
    assert log.skipped == [
        SkippedLine(2, "key: Field required (and 1 more)"),
        SkippedLine(3, "Input should be an object"),
    ]
    assert [r.key for r in log] == ["a"]


def test_a_torn_last_line_is_reported_and_closed_before_the_next_append(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(A1 + "\n" + '{"key":"b","val')  # killed mid-write: no newline at the end
    with pytest.warns(RecordLogWarning, match="line 2: the last line is incomplete") as caught:
        log = RecordLog(path, Item)
    assert len(caught) == 1
    assert (
        TORN
        == "the last line is incomplete (no newline at its end: the writer was killed mid-write)"
    )
    assert log.skipped == [SkippedLine(2, TORN)]
    assert [r.key for r in log] == ["a"]

    log.append(Item(key="b", value=2))
    assert path.read_text() == A1 + "\n" + '{"key":"b","val' + "\n" + B2 + "\n"
    with pytest.warns(RecordLogWarning, match="skipped 1 unreadable line,"):
        again = RecordLog(path, Item)
    # No longer the last line: now an ordinary unreadable line.
    assert again.skipped == [
        SkippedLine(2, "Invalid JSON: EOF while parsing a string at line 1 column 15")
    ]
    assert [(r.key, r.value) for r in again] == [("a", 1), ("b", 2)]

    again.rewrite()
    assert path.read_text() == A1 + "\n" + B2 + "\n" and again.skipped == []
    assert [r.key for r in quiet(path)] == ["a", "b"]


def test_a_complete_last_line_without_a_newline_is_kept(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(A1 + "\n" + B2)  # written by hand, say: complete, not torn
    log = quiet(path)
    assert [r.key for r in log] == ["a", "b"] and log.skipped == []
    log.append(Item(key="c", value=3))
    assert path.read_text() == f"{A1}\n{B2}\n{C3}\n"


def test_a_later_line_replaces_an_earlier_one_with_the_same_key(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(f'{A1}\n{B2}\n{{"key":"a","value":7}}\n')
    log = quiet(path)
    assert len(log) == 2
    assert [(r.key, r.value) for r in log] == [("a", 7), ("b", 2)]  # a keeps its first place
    log.append(Item(key="b", value=8))
    assert log.get("b") == Item(key="b", value=8)
    assert len(path.read_text().splitlines()) == 4  # appended, never rewritten in place
    assert [(r.key, r.value) for r in quiet(path)] == [("a", 7), ("b", 8)]


def test_rewrite_compacts_to_one_line_per_key_in_the_given_order(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(f'{A1}\n{B2}\n{C3}\n{{"key":"a","value":4}}\nbroken\n')
    with pytest.warns(RecordLogWarning, match="line 5"):
        log = RecordLog(path, Item)
    log.rewrite(["c", "x", "a", "c"])  # unknown and repeated keys are harmless
    # The ordered keys first, then the others in their order.
    assert path.read_text() == f'{C3}\n{{"key":"a","value":4}}\n{B2}\n'
    assert [r.key for r in log] == ["c", "a", "b"] and log.skipped == []
    assert not (tmp_path / "log.jsonl.tmp").exists()
    assert [(r.key, r.value) for r in quiet(path)] == [("c", 3), ("a", 4), ("b", 2)]


def test_any_model_with_a_key_function(tmp_path):
    path = tmp_path / "named.jsonl"
    log = quiet(path, Named, key=lambda r: r.name)
    log.append(Named(name="x", note="first"))
    log.append(Named(name="x", note="second"))
    log.append(Named(name="y"))
    reread = quiet(path, Named, key=lambda r: r.name)
    assert [(r.name, r.note) for r in reread] == [("x", "second"), ("y", "")]
    assert reread.get("x") == Named(name="x", note="second")


def test_lines_split_on_newlines_only(tmp_path):
    # U+2028 and a bare carriage return are line breaks to str.splitlines, not to JSONL.
    path = tmp_path / "log.jsonl"
    log = quiet(path, Named, key=lambda r: r.name)
    log.append(Named(name="n", note="one\u2028two\rthree"))
    assert quiet(path, Named, key=lambda r: r.name).get("n").note == "one\u2028two\rthree"
    path.write_text(A1 + "\r\n" + B2 + "\r\n")  # Windows line ends
    assert [r.key for r in quiet(path)] == ["a", "b"]


def test_bytes_that_are_not_utf8_are_an_unreadable_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(A1.encode() + b"\n\xff\xfe garbage\n" + B2.encode() + b"\n")
    with pytest.warns(RecordLogWarning, match="first: line 2: "):
        log = RecordLog(path, Item)
    assert [s.line for s in log.skipped] == [2]
    assert [r.key for r in log] == ["a", "b"]
