"""The two-document example of docs/testsets.md with the real offline judge (marked: deselect
with -m "not local_model"): a lighthouse page that never says what the lighthouse is for, and a
ferry timetable whose child fare is "3 euros for children under twelve" (``tests/data/harbour``,
one chunk each). ``--n 3`` must give 3 of 3, reject no child-fare reference as unsupported,
and accept no reference that says what its chunk does not.

The run goes through the user's call cache, as ``bench/bench_testset_example.py`` does with the
same documents and settings: after the benchmark, this test asks the judge nothing new.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragmeter.claims import as_checked, supported
from ragmeter.judges.registry import resolve_models
from ragmeter.session import JudgeSession
from ragmeter.testset import DECLINE, Generated, QualityOptions, generate_testset

pytestmark = pytest.mark.local_model

HARBOUR = Path(__file__).parent / "data" / "harbour"
FERRY = (HARBOUR / "ferry.md").read_text()
CHILD_FARE = re.compile(r"\b(?:3|three) euros\b", re.IGNORECASE)
BAR = QualityOptions()


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Generated:
    pytest.importorskip("llama_cpp", reason="the offline judge needs the 'local' extra")
    out = tmp_path_factory.mktemp("harbour") / "testset.jsonl"
    return generate_testset(HARBOUR, 3, out=out, judge="local")


def test_three_of_three_are_accepted_and_any_substitution_says_why(generated):
    summary = generated.summary
    assert (summary.status, summary.accepted) == ("complete", 3), summary.rejected
    made = sum(sub.count for sub in summary.substitutions)
    asked_kinds_made = sum(min(v["accepted"], v["quota"]) for v in summary.kinds.values())
    assert asked_kinds_made + made >= 3  # every sample of the mix made, or its kind replaced
    assert all(sub.reason for sub in summary.substitutions)


def test_no_accepted_reference_says_what_its_chunks_do_not(generated):
    for sample in generated.samples:
        checks = sample["metadata"]["checks"]
        if sample["metadata"]["kind"] == "unanswerable":
            assert sample["reference"] == DECLINE
            found = checks["not_answered"]
            assert max(found["expected_p"] + found["answer_p"]) < BAR.answered
            continue
        # Every claim of the reference, read with the question, supported by its chunks.
        assert checks["supported"]["all"] is True
        assert min(checks["supported"]["p"]) >= BAR.supported
        assert checks["closed_book"]["recall"] <= BAR.closed_book_max


def test_the_child_fare_is_not_rejected_as_unsupported(generated):
    candidates = [*generated.samples, *generated.rejected]
    fares = [c for c in candidates if CHILD_FARE.search(c.get("reference") or "")]
    unsupported = [c for c in fares if c.get("reason") == "reference not supported by its chunks"]
    assert not unsupported, unsupported


def test_a_bare_fare_is_checked_as_the_answer_to_its_question(generated):
    # The reference of the report that began this check: "3 euros." alone says nothing; read
    # as the answer to its question, the timetable supports it, and not a wrong fare.
    judge, _ = resolve_models("local", needs_embedder=False)
    question = "What is the cost of a single ticket for children under twelve?"
    fares = as_checked(["3 euros.", "5 euros."], question)
    right, wrong = supported(JudgeSession(judge), [(fares, [FERRY])])[0][:, 0]
    assert right >= BAR.supported > wrong
