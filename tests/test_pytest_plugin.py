"""The pytest plugin, run by pytest itself (``pytester``) on the scripted judge of ``fake:FILE``,
and the ``Scorer`` behind its fixture.

Each script lists the judge's replies in the order the metrics ask for them. Without
log-probabilities a Yes/No question is read from the word: "Yes" is 1, "No" is 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter import AnswerRelevance, Faithfulness, Sample
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.testing import Scorer, assert_thresholds

from .conftest import routed

pytest_plugins = ["pytester"]

SAMPLE = """
from ragmeter import Sample

PARIS = Sample(
    id="paris",
    question="What is the capital of France?",
    contexts=["Paris is the capital of France. France is in Europe."],
    answer="Paris is the capital of France. It has ten million people.",
)
"""


def script(pytester: pytest.Pytester, *replies: object) -> str:
    """A ``fake:FILE`` judge spec replaying ``replies`` (objects are sent as JSON text)."""
    lines = [json.dumps(r if isinstance(r, str) else json.dumps(r)) for r in replies]
    path = pytester.path / "replies.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return f"fake:{path}"


def run(pytester: pytest.Pytester, judge: str, *args: str) -> pytest.RunResult:
    cache = pytester.path / "calls.sqlite"
    return pytester.runpytest(
        "--ragmeter-judge", judge, "--ragmeter-embedder", "fake", "--ragmeter-cache", cache, *args
    )


def test_a_sample_above_its_thresholds_passes_and_reruns_from_the_cache(pytester):
    pytester.makepyfile(
        SAMPLE
        + """
def test_grounded(ragmeter_scorer):
    result = ragmeter_scorer.assert_scores(PARIS, faithfulness=0.5)
    usage = result.usage()
    print(f"score {result.scores[0].value} calls {usage.model_calls} cached {usage.cached_calls}")
"""
    )
    # faithfulness: the answer's two sentences, the second unsupported -> 1/2
    judge = script(pytester, "Yes", "No")

    first = run(pytester, judge, "-s")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*score 0.5 calls 2 cached 0*"])
    # The same script again (its replies are unread in a new run) is never asked: every
    # call comes from the cache file.
    again = run(pytester, judge, "-s")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*score 0.5 calls 0 cached 2*"])


def test_a_failure_names_metric_score_threshold_and_explains(pytester):
    pytester.makepyfile(
        SAMPLE
        + """
def test_grounded(ragmeter_scorer):
    ragmeter_scorer.assert_scores(
        PARIS, faithfulness=0.8, answer_relevance=0.5, context_relevance=0.4
    )
"""
    )
    judge = script(
        pytester,
        # faithfulness: the answer's two sentences, the second unsupported -> 1/2
        "Yes",
        "No",
        # answer relevance: committed, but it does not address the question -> 0
        {"noncommittal": False},
        "No",
        # context relevance: the first of the two sentences is needed -> 1/2, above 0.4
        "Yes",
        "No",
    )
    result = run(pytester, judge)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    start = text.index("ragmeter: 2 of 3 checks failed (judge fake:")
    message = text[start : text.index("= short test summary")]
    lines = [line.removeprefix("E").strip() for line in message.splitlines()]
    faithfulness = lines.index("faithfulness = 0.5, below the threshold 0.8, for sample paris")
    assert lines[faithfulness : faithfulness + 7] == [
        "faithfulness = 0.5, below the threshold 0.8, for sample paris",
        "question: What is the capital of France?",
        "answer: Paris is the capital of France. It has ten million people.",
        "unsupported statements (1 of 2):",
        '- "It has ten million people." (p_supported 0)',
        "supported statements (1 of 2):",
        '- "Paris is the capital of France." (p_supported 1)',
    ]
    relevance = lines.index("answer_relevance = 0, below the threshold 0.5, for sample paris")
    # The off-topic gate's cosines by hashed words: 5 of the answer's 11 words are the
    # question's 6, 5 / sqrt(11 x 6); with the passage 8 / sqrt(11 x 14) ("is" and "France"
    # twice in it). Both over 0.05: the judge was asked.
    assert lines[relevance + 3 : relevance + 7] == [
        "question_similarity: 0.6155",
        "context_similarity: 0.6447",
        "noncommittal: false",
        "p_complete: 0",
    ]
    # context relevance passed (0.5 >= 0.4): it is not reported
    assert not any(line.startswith("context_relevance") for line in lines)


def test_context_relevance_lists_the_sentences_not_needed(pytester):
    pytester.makepyfile(
        SAMPLE
        + """
def test_focused(ragmeter_scorer):
    ragmeter_scorer.assert_scores(PARIS, context_relevance=0.9)
"""
    )
    result = run(pytester, script(pytester, "Yes", "No"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*context_relevance = 0.5, below the threshold 0.9, for sample paris",
            "E*needed sentences (1 of 2):",
            'E*- "Paris is the capital of France." (p_needed 1)',
            "E*sentences not needed (1 of 2):",
            'E*- "France is in Europe." (p_needed 0)',
        ]
    )


def test_an_unscored_item_fails_whatever_the_threshold(pytester):
    pytester.makepyfile(
        """
from ragmeter import Sample

def test_empty_answer(ragmeter_scorer):
    sample = Sample(id="bare", question="What is the capital?", contexts=["Paris."], answer="")
    ragmeter_scorer.assert_scores(sample, faithfulness=0.0)
"""
    )
    result = run(pytester, script(pytester))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*ragmeter: 1 of 1 checks failed*",
            "E*faithfulness unscored for sample bare: the answer is empty",
        ]
    )


def test_a_judge_that_fails_leaves_the_item_unscored_and_the_check_failed(pytester):
    pytester.makepyfile(
        SAMPLE
        + """
def test_grounded(ragmeter_scorer):
    ragmeter_scorer.assert_scores([PARIS], faithfulness=0.5)
"""
    )
    result = run(pytester, script(pytester))  # no reply at all
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*faithfulness unscored for sample paris: faithfulness.supported: judge call "
            "failed: fake judge has no scripted reply left (after 3 attempts)"
        ]
    )


def test_settings_come_from_the_ini_file_and_options_are_checked(pytester):
    pytester.makepyfile(
        SAMPLE
        + """
def test_grounded(ragmeter_scorer):
    ragmeter_scorer.assert_scores(PARIS, faithfulness=1.0)
"""
    )
    judge = script(pytester, "Yes", "Yes")  # both sentences of the answer supported
    pytester.makeini(
        f"""
[pytest]
ragmeter_judge = {judge}
ragmeter_embedder = fake
ragmeter_cache = off
ragmeter_judge_options =
    seed=7
"""
    )
    pytester.runpytest().assert_outcomes(passed=1)
    assert not (pytester.path / "off").exists()  # "off" is no cache, not a file named off
    # A provider option is checked by the provider, and the error names it.
    refused = pytester.runpytest("--ragmeter-judge-option", "temperature=0")
    refused.assert_outcomes(errors=0, failed=1)
    refused.stdout.fnmatch_lines(["*temperature*"])


def test_settings_come_from_ragmeter_toml_below_the_ini_file(pytester):
    pytester.makepyfile(
        SAMPLE
        + """
def test_grounded(ragmeter_scorer):
    ragmeter_scorer.assert_scores(PARIS, faithfulness=1.0)
"""
    )
    judge = script(pytester, "Yes", "Yes")
    (pytester.path / "ragmeter.toml").write_text(
        f"""[evaluate]
judge = "{judge}"
embedder = "fake"
cache = false
judge_option = {{ seed = 7 }}
"""
    )
    pytester.runpytest().assert_outcomes(passed=1)
    assert not (pytester.path / "calls.sqlite").exists()
    # The ini file overrides the settings file: a judge with no reply left fails the check.
    empty = pytester.path / "empty.jsonl"
    empty.write_text("")
    pytester.makeini(f"[pytest]\nragmeter_judge = fake:{empty}\n")
    pytester.runpytest().assert_outcomes(failed=1)
    # The file's provider options reach the provider, which checks them.
    (pytester.path / "ragmeter.toml").write_text(
        f'[evaluate]\njudge = "{judge}"\nembedder = "fake"\njudge_option = {{ temperature = 0 }}\n'
    )
    pytester.makeini("[pytest]\n")
    refused = pytester.runpytest()
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*temperature*"])


def test_runs_that_do_not_use_the_fixture_import_nothing_of_ragmeter(pytester):
    pytester.makepyfile(
        """
import sys

def test_plain(request):
    assert request.config.pluginmanager.hasplugin("ragmeter")
    assert [m for m in sys.modules if m.split(".")[0] == "ragmeter"] == []
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_example_runs_as_written(pytester):
    example = Path(__file__).parent.parent / "examples" / "test_rag_quality.py"
    pytester.makepyfile(test_rag_quality=example.read_text())
    judge = script(
        pytester,
        # the refund answer: its one sentence is supported
        "Yes",
        # committed; it addresses the question
        {"noncommittal": False},
        "Yes",
        # each context is one sentence, needed
        "Yes",
        "Yes",
    )
    run(pytester, judge).assert_outcomes(passed=2)


# --- the Scorer itself, given model objects -------------------------------------------------

REPLIES = {
    "statements": {"statements": ["Paris is the capital of France."]},
    "verdicts": {
        "verdicts": [
            {"statement": "Paris is the capital of France.", "reason": "r", "verdict": "no"}
        ]
    },
    "supported": 0.75,
    "questions": {"questions": ["q1", "q2", "q3"], "noncommittal": False},
    "complete": 0.6,
    "noncommittal": {"noncommittal": False},
    "needed": 0.25,
}
PARIS = Sample(
    id="paris",
    question="What is the capital of France?",
    contexts=["Paris is the capital of France."],
    answer="Paris is the capital of France.",
)


def scorer(tmp_path) -> Scorer:
    return Scorer(
        FakeJudge(responder=routed(REPLIES)), HashingEmbedder(), cache=tmp_path / "calls.sqlite"
    )


def test_score_uses_the_three_ragas_metrics_by_default(tmp_path):
    result = scorer(tmp_path).score(PARIS)
    # the answer's one sentence at 0.75; P(complete); the context's one sentence at 0.25 does
    # not reach 0.5
    assert {s.metric: s.value for s in result.scores} == {
        "faithfulness": 0.75,
        "answer_relevance": 0.6,
        "context_relevance": 0.0,
    }
    # Answer relevance's off-topic gate embeds: it gets the scorer's embedder, not evaluate's
    # default.
    assert result.run.embedder == "fake:hashing-4096"


def test_a_configured_metric_takes_its_threshold_from_a_mapping(tmp_path):
    check = scorer(tmp_path)
    # with logprob verdicts (the default) the sentence scores 0.75 and passes 0.7 ...
    check.assert_scores(PARIS, faithfulness=0.7)
    # ... with a generated verdict of "no" it scores 0, and the reason is shown
    with pytest.raises(AssertionError) as failed:
        check.assert_scores(PARIS, {Faithfulness(verdicts="generate"): 0.7})
    assert "faithfulness = 0, below the threshold 0.7, for sample paris" in str(failed.value)
    assert '- "Paris is the capital of France." (reason r)' in str(failed.value)


def test_the_papers_answer_relevance_shows_the_questions_it_generated(tmp_path):
    generated = [
        "What is the capital of France?",
        "How many people live in Paris?",
        "Which city is the French capital?",
    ]
    replies = {**REPLIES, "questions": {"questions": generated, "noncommittal": False}}
    check = Scorer(
        FakeJudge(responder=routed(replies)), HashingEmbedder(), cache=tmp_path / "calls.sqlite"
    )
    with pytest.raises(AssertionError) as failed:
        check.assert_scores(PARIS, {AnswerRelevance(score="similarity"): 0.9})
    lines = [line.strip() for line in str(failed.value).splitlines()]
    relevance = lines.index("answer_relevance = 0.5, below the threshold 0.9, for sample paris")
    # Similarities by hashed words: the same question 1; no word shared 0; "is", "the" and
    # "capital" shared out of six words each: 3 / 6 = 0.5. Their mean: 1.5 / 3.
    assert lines[relevance + 3 : relevance + 7] == [
        "questions generated from the answer (mean similarity to the question 0.5):",
        '- "What is the capital of France?" (similarity 1)',
        '- "How many people live in Paris?" (similarity 0)',
        '- "Which city is the French capital?" (similarity 0.5)',
    ]
    assert "noncommittal: false" in lines[relevance + 7 :]


def test_a_check_needs_a_threshold(tmp_path):
    with pytest.raises(ValueError, match="give at least one threshold"):
        scorer(tmp_path).assert_scores(PARIS)


def test_a_threshold_for_a_metric_the_result_lacks_is_refused(tmp_path):
    # A misspelt metric name would otherwise check nothing and pass.
    result = scorer(tmp_path).score(PARIS, ["faithfulness"])
    with pytest.raises(ValueError, match=r"no scores of 'faithfullness' in this result"):
        assert_thresholds(result, {"faithfullness": 0.5})


def test_a_sample_without_a_score_fails_the_check(tmp_path):
    result = scorer(tmp_path).score(PARIS, ["faithfulness"])  # 0.75
    assert_thresholds(result, {"faithfulness": 0.75})  # reaches the threshold: passes
    result.scores.clear()  # as from a run that never judged it
    with pytest.raises(AssertionError) as failed:
        assert_thresholds(result, {"faithfulness": 0.5})
    assert "ragmeter: 1 of 1 checks failed" in str(failed.value)
    assert "faithfulness unscored for sample paris: not judged" in str(failed.value)
