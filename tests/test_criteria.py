"""Criteria in words: definitions, files, the readings' arithmetic, and a criterion as a metric."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate, plugins
from ragmeter.cli.main import app
from ragmeter.criteria import (
    LIBRARY,
    CriteriaError,
    Criterion,
    CriterionMetric,
    Example,
    Level,
    Requirement,
    load_criteria,
    parse_criterion_flag,
)
from ragmeter.judges.base import ChatResponse, TokenLogprobs
from ragmeter.judges.fake import FakeJudge
from ragmeter.judges.heads import Heads
from ragmeter.metrics import metric_by_name
from ragmeter.sample import Sample, Turn
from ragmeter.session import JudgeSession
from ragmeter.testing import Scorer
from tests.conftest import yes_no

SAMPLE = Sample(
    id="s1",
    question="When was the bridge opened?",
    contexts=["The bridge opened in 1932. It is 1,149 metres long."],
    answer="It opened in 1932. It is very long.",
)
DECLINES = Criterion(name="declines", question="Does the answer decline to answer?")
THREE_LEVELS = Criterion(
    name="natural",
    question="Does it read naturally?",
    kind="levels",
    levels=(
        Level(score=1, meaning="No."),
        Level(score=2, meaning="Somewhat."),
        Level(score=3, meaning="Yes."),
    ),
)


def digits(probabilities: dict[str, float]) -> ChatResponse:
    top = {token: math.log(p) for token, p in probabilities.items()}
    best = max(top, key=lambda k: top[k])
    return ChatResponse(text=best, logprobs=[TokenLogprobs(token=best, logprob=top[best], top=top)])


def test_a_yes_no_criterion_is_the_probability_of_yes_asked_after_the_sample():
    judge = FakeJudge([yes_no(0.8)])
    score = CriterionMetric(DECLINES).score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx(0.8)
    assert score.explanation["p_yes"] == pytest.approx(0.8)
    (request,) = judge.history
    user = request.messages[-1].content
    # the data first, the criterion after it
    assert user.index("<response>") < user.index("Criterion: Does the answer decline")


def test_the_criteria_of_a_sample_share_the_sample_as_a_prefix():
    judge = FakeJudge([yes_no(0.5), digits({"1": 0.2, "2": 0.3, "3": 0.5})])
    natural = THREE_LEVELS.model_copy(update={"reads": ("question", "contexts", "answer")})
    session = JudgeSession(judge)
    CriterionMetric(DECLINES).score(SAMPLE, session)
    CriterionMetric(natural, reading="direct").score(SAMPLE, session)
    first, second = (r.messages for r in judge.history)
    assert first[0] == second[0]  # one system message for every criterion
    data = first[1].content.split("Criterion:")[0]
    assert second[1].content.startswith(data)


def test_levels_read_directly_score_the_expected_level_on_0_1():
    judge = FakeJudge([digits({"1": 0.2, "2": 0.3, "3": 0.5})])
    score = CriterionMetric(THREE_LEVELS, reading="direct").score(SAMPLE, JudgeSession(judge))
    # 1 x 0.2 + 2 x 0.3 + 3 x 0.5 = 2.3, on 1-3: (2.3 - 1) / 2 = 0.65
    assert score.value == pytest.approx(0.65)
    assert score.explanation["expected_level"] == pytest.approx(2.3)
    assert score.explanation["distribution"] == {"1": 0.2, "2": 0.3, "3": 0.5}
    assert score.explanation["method"] == "logprobs"


def test_reasoned_reads_the_verdict_after_the_judges_own_feedback():
    feedback = "It reads naturally but repeats itself."
    judge = FakeJudge([feedback, digits({"1": 0.1, "2": 0.5, "3": 0.4})])
    metric = CriterionMetric(THREE_LEVELS, reading="reasoned")
    score = metric.score(SAMPLE, JudgeSession(judge))
    # 1 x 0.1 + 2 x 0.5 + 3 x 0.4 = 2.3 on 1-3: 0.65
    assert score.value == pytest.approx(0.65)
    assert score.explanation["feedback"] == feedback
    assert score.explanation["distribution"] == {"1": 0.1, "2": 0.5, "3": 0.4}
    written, verdict = judge.history
    assert written.max_tokens == 80 and written.top_logprobs == 0
    assert "Do not give your verdict yet." in written.messages[-1].content
    # the verdict is asked after the whole exchange: the request, the feedback, the question
    assert verdict.messages[: len(written.messages)] == written.messages
    assert [m.role for m in verdict.messages[len(written.messages) :]] == ["assistant", "user"]
    assert verdict.messages[-2].content == feedback
    assert verdict.messages[-1].content.startswith("Which level fits the response?")
    assert verdict.max_tokens == 1
    # in the sample's language: the feedback is asked for in it
    french = SAMPLE.model_copy(update={"metadata": {"language": "fr"}})
    judge = FakeJudge([feedback, digits({"1": 0.1, "2": 0.5, "3": 0.4})])
    metric.score(french, JudgeSession(judge))
    asked = judge.history[0].messages[-1].content
    assert asked.endswith("Write everything you write in French, the language of the data.")
    # a yes/no criterion ends in P(Yes); an empty feedback is retried, then unscored
    judge = FakeJudge(["Fine.", yes_no(0.7)])
    yes = CriterionMetric(DECLINES, reading="reasoned").score(SAMPLE, JudgeSession(judge))
    assert yes.value == pytest.approx(0.7)
    assert judge.history[-1].messages[-1].content == "Answer with one word, Yes or No."
    empty = FakeJudge(["  ", "", ""])
    failed = CriterionMetric(DECLINES, reading="reasoned").score(
        SAMPLE, JudgeSession(empty, retries=2)
    )
    assert failed.value is None
    assert "no text in the reply '' (after 3 attempts)" in failed.unscored_reason
    # the cost plan: the feedback written, then one token read after it
    (write, read) = metric.planned_calls(SAMPLE)
    assert write[1] == 80 and read[1] == 1 and read[0] > write[0] + 80
    with pytest.raises(ValueError, match="not 'reasoned'"):
        Criterion(
            name="c",
            question="?",
            kind="checklist",
            requirements=(Requirement(text="a"),),
            reading="reasoned",
        )


def test_a_judge_without_log_probabilities_is_read_from_replies_drawn_at_temperature_1():
    def reply(request):
        # greedy: 3; the draws at temperature 1: 2, 3, 3, and one with no level
        if request.temperature == 0:
            return "3"
        return {1: "2", 2: "3", 3: "3", 4: "Hmm"}[request.draw]

    judge = FakeJudge(responder=reply)
    score = CriterionMetric(THREE_LEVELS, reading="direct").score(SAMPLE, JudgeSession(judge))
    # 4 usable replies: 2 once, 3 three times -> expected 2.75 -> 0.875 on 0-1
    assert score.explanation["method"] == "sampled 4 replies (1 unusable)"
    assert score.explanation["distribution"] == {"1": 0.0, "2": 0.25, "3": 0.75}
    assert score.value == pytest.approx(0.875)
    assert [(r.temperature, r.draw) for r in judge.history] == [
        (0, 0),
        *((1.0, d) for d in range(1, 5)),
    ]
    # a draw is a request of its own for the call cache; no draw keys as it always did
    first, second = judge.history[:2]
    assert first.key() == first.model_dump_json(exclude={"draw"}) != second.key()
    unreadable = FakeJudge(responder=lambda request: "maybe")
    failed = CriterionMetric(THREE_LEVELS, reading="direct").score(
        SAMPLE, JudgeSession(unreadable, retries=1)
    )
    assert failed.value is None
    assert "none of 1, 2, 3 in the reply 'maybe'" in failed.unscored_reason


def test_the_run_record_counts_what_was_read_without_log_probabilities(tmp_path: Path):
    def reply(request):
        if "Yes or No" in request.messages[-1].content:
            return "Yes"  # a written word, no log-probabilities
        return "3" if request.temperature == 0 else "2"

    metrics = [CriterionMetric(THREE_LEVELS, reading="direct"), CriterionMetric(DECLINES)]
    result = evaluate(
        [SAMPLE], metrics, judge=FakeJudge(responder=reply), out_dir=tmp_path, cache=False
    )
    assert [s.value for s in result.scores] == [pytest.approx((2.2 - 1) / 2), 1.0]
    counts = json.loads((tmp_path / "run.json").read_text())["counts"]
    # one choice among levels read from 5 sampled replies, one Yes/No read from its word
    assert (counts["sampled_reads"], counts["word_reads"]) == (1, 1)


def test_a_checklist_counts_expected_points_and_takes_them_away_for_what_must_not_happen():
    checklist = Criterion(
        name="format",
        question="The answer follows the product's format.",
        kind="checklist",
        requirements=(
            Requirement(text="Opens with the year.", weight=2),
            Requirement(text="Gives the length.", weight=1),
            Requirement(text="Invents a policy number.", weight=-3),
        ),
    )
    judge = FakeJudge([yes_no(0.9), yes_no(0.5), yes_no(0.1)])
    score = CriterionMetric(checklist).score(SAMPLE, JudgeSession(judge))
    # (2 x 0.9 + 1 x 0.5 - 3 x 0.1) / (2 + 1) = 2.0 / 3
    assert score.value == pytest.approx(2.0 / 3)
    assert [r["p_met"] for r in score.explanation["requirements"]] == [0.9, 0.5, 0.1]
    # every P(met) of a harmful requirement at 1 and the rest at 0: floored at 0
    floor = CriterionMetric(checklist).score(
        SAMPLE, JudgeSession(FakeJudge([yes_no(0.0), yes_no(0.0), yes_no(1.0)]))
    )
    assert floor.value == 0.0


def test_a_checklist_carried_by_each_sample():
    per_sample = Criterion(
        name="covers",
        question="The answer covers the points.",
        kind="checklist",
        requirements="sample",
    )
    sample = SAMPLE.model_copy(
        update={
            "metadata": {"rubric": [{"criterion": "Gives 1932", "points": 3}, "Gives a length"]}
        }
    )
    judge = FakeJudge([yes_no(1.0), yes_no(0.0)])
    score = CriterionMetric(per_sample).score(sample, JudgeSession(judge))
    assert score.value == pytest.approx(3 / 4)
    assert "<requirement>\nGives a length\n</requirement>" in judge.history[1].messages[-1].content
    # a sample without its rubric is refused before any judging, naming the criterion and field
    with pytest.raises(ValueError, match=r"row 2 .*criterion 'covers' reads 'rubric'"):
        evaluate(
            [sample, SAMPLE.model_copy(update={"id": "s2"})],
            [CriterionMetric(per_sample)],
            judge=FakeJudge([]),
            cache=False,
        )


def test_an_edited_rubric_is_judged_afresh_and_an_unchanged_one_never(tmp_path: Path):
    per_sample = CriterionMetric(
        Criterion(name="covers", question="Covers?", kind="checklist", requirements="sample")
    )
    sample = SAMPLE.model_copy(update={"metadata": {"rubric": ["Gives 1932", "Gives a length"]}})
    # how a checklist's points and a sample's rubric are read is part of the metric's version
    assert [rule.split(":")[0] for rule in per_sample.rules] == ["checklist", "a sample's rubric"]
    # the cost estimate asks one question a requirement of the sample's own checklist
    assert len(per_sample.planned_calls(sample) or []) == 2
    judge = FakeJudge([yes_no(1.0), yes_no(0.0), yes_no(1.0), yes_no(1.0), yes_no(1.0)])
    first = evaluate([sample], [per_sample], judge=judge, out_dir=tmp_path / "run", cache=False)
    assert first.scores[0].value == 0.5 and len(judge.history) == 2
    evaluate([sample], [per_sample], judge=judge, out_dir=tmp_path / "run", cache=False)
    assert len(judge.history) == 2  # the same rubric: read from the run's store
    edited = sample.model_copy(
        update={"metadata": {"rubric": ["Gives 1932", "Gives a date", "Is short"]}}
    )
    again = evaluate([edited], [per_sample], judge=judge, out_dir=tmp_path / "run", cache=False)
    assert again.scores[0].value == 1.0 and len(judge.history) == 5


def test_a_level_example_is_shown_as_yes_or_no_when_the_level_is_asked_as_yes_or_no():
    tone = THREE_LEVELS.model_copy(
        update={
            "reads": ("answer",),
            "examples": (
                Example(fields={"answer": "Thanks for asking!"}, label=3),
                Example(fields={"answer": "Whatever."}, label=1),
                Example(fields={"answer": "It is 1932."}, label=2),
            ),
        }
    )
    (asked,) = CriterionMetric(tone).prompts  # levels are asked as Yes or No by default
    assert "Thanks for asking!\n</response>\nReply: Yes" in asked.question
    assert "Whatever.\n</response>\nReply: No" in asked.question
    assert "It is 1932." not in asked.question  # the middle level is an example of neither
    (direct,) = CriterionMetric(tone, reading="direct").prompts
    assert "It is 1932.\n</response>\nReply: 2" in direct.question


def test_a_checklist_example_answers_its_first_requirement_alone():
    example = {"fields": {"answer": "It opened in 1932."}, "label": "yes"}
    shared = Criterion(
        name="dates",
        question="Dates are right.",
        kind="checklist",
        requirements=[{"text": "Gives the year"}, {"text": "Gives the month"}],
        reads=("answer",),
        examples=[example],
    )
    first, second = CriterionMetric(shared).prompts
    assert "Reply: Yes" in first.question and "Reply:" not in second.question
    with pytest.raises(ValueError, match="no example can say which requirement"):
        Criterion(name="own", question="Q?", kind="checklist", requirements="sample",
                  reads=("answer",), examples=[example])  # fmt: skip


def test_a_criterion_reading_a_field_the_sample_lacks_is_refused_before_judging():
    needs_reference = Criterion(
        name="matches",
        question="Does it match the reference?",
        reads=("question", "reference", "answer"),
    )
    judge = FakeJudge([])
    with pytest.raises(
        ValueError, match="row 1 \\(s1\\): the criterion 'matches' reads 'reference'"
    ):
        evaluate([SAMPLE], [CriterionMetric(needs_reference)], judge=judge, cache=False)
    assert judge.history == []


def test_per_sentence_asks_each_sentence_of_the_answer_and_averages():
    judge = FakeJudge([yes_no(0.9), yes_no(0.3)])
    score = CriterionMetric(DECLINES, reading="per_sentence").score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx(0.6)
    assert "<sentence>\nIt is very long.\n</sentence>" in judge.history[1].messages[-1].content
    assert [s["sentence"] for s in score.explanation["sentences"]] == [
        "It opened in 1932.",
        "It is very long.",
    ]


def test_a_changed_word_judges_again_and_an_unchanged_criterion_never(tmp_path: Path):
    reworded = DECLINES.model_copy(update={"question": "Does the answer refuse to answer?"})
    assert CriterionMetric(reworded).version != CriterionMetric(DECLINES).version
    assert (
        CriterionMetric(DECLINES).version
        == CriterionMetric(Criterion.model_validate(DECLINES.described())).version
    )
    judge = FakeJudge(responder=lambda request: yes_no(0.7), model="criteria-resume")
    out = tmp_path / "run"
    evaluate([SAMPLE], [CriterionMetric(DECLINES)], judge=judge, out_dir=out, cache=False)
    evaluate([SAMPLE], [CriterionMetric(DECLINES)], judge=judge, out_dir=out, cache=False)
    assert len(judge.history) == 1  # served from the run's store
    evaluate([SAMPLE], [CriterionMetric(reworded)], judge=judge, out_dir=out, cache=False)
    assert len(judge.history) == 2


def test_a_criteria_file_and_its_errors_name_the_line(tmp_path: Path):
    good = tmp_path / "criteria.toml"
    good.write_text(
        '[declines]\nquestion = "Does the answer decline?"\n\n'
        '[tone]\nkind = "levels"\nquestion = "Is the tone friendly?"\n'
        'levels = [{score = 1, meaning = "Cold."}, {score = 2, meaning = "Friendly."}]\n'
    )
    declines, tone = load_criteria(good)
    assert (declines.name, declines.kind, tone.kind, tone.scale) == (
        "declines",
        "yes_no",
        "levels",
        (1, 2),
    )
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[declines]\nquestion = "Fine."\n\n[tone]\nkind = "levels"\nquestion = "Tone?"\n'
        "levels = []\n"
    )
    with pytest.raises(CriteriaError, match=r"bad.toml, line 7: criterion 'tone', field 'levels'"):
        load_criteria(bad)
    # a field missing from one table is not looked for in the next one: the table's line
    missing = tmp_path / "missing.toml"
    missing.write_text('[terse]\nkind = "yes_no"\n\n[other]\nquestion = "Fine?"\n')
    with pytest.raises(
        CriteriaError, match=r"missing.toml, line 1: criterion 'terse', field 'question'"
    ):
        load_criteria(missing)
    broken = tmp_path / "broken.toml"
    broken.write_text('[declines]\nquestion = "unclosed\n')
    with pytest.raises(CriteriaError, match="line 2"):
        load_criteria(broken)
    with pytest.raises(CriteriaError, match="use NAME=QUESTION"):
        parse_criterion_flag("no question here")
    with pytest.raises(CriteriaError, match="not a usable name"):
        parse_criterion_flag("Bad Name=Is it?")


def test_ready_criteria_are_metrics_by_name():
    assert plugins.available("metric")["naturalness"] == "ragmeter.criteria.library:naturalness"
    metric = metric_by_name("naturalness")
    assert isinstance(metric, CriterionMetric)
    assert metric.criterion == LIBRARY["naturalness"]
    assert metric_by_name("naturalness", reading="direct").reading == "direct"
    with pytest.raises(ValueError, match=r"unknown metric 'no_such_metric'; known: .*naturalness"):
        metric_by_name("no_such_metric")


def test_the_command_line_scores_a_criterion_given_in_words(tmp_path: Path):
    data = tmp_path / "answers.jsonl"
    data.write_text(json.dumps(SAMPLE.model_dump(exclude_none=True)) + "\n")
    script = tmp_path / "replies.jsonl"
    script.write_text('"Yes"\n')
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(data),
            "--criterion",
            "declines=Does the answer decline?",
            "--metrics",
            "declines",
            "--judge",
            f"fake:{script}",
            "--out",
            str(out),
            "--no-cache",
        ],
    )
    assert result.exit_code == 0, result.output
    header = (out / "samples.csv").read_text().splitlines()[0]
    assert "declines" in header.split(",")
    (row,) = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert (row["metric"], row["value"]) == ("declines", 1.0)
    levels = tmp_path / "criteria.toml"
    levels.write_text(
        '[tone]\nkind = "checklist"\nquestion = "Friendly?"\n'
        'requirements = [{text = "Greets."}, {text = "Thanks."}]\n'
    )
    estimate = CliRunner().invoke(
        app, ["evaluate", str(data), "--criteria", str(levels), "--metrics", "tone", "--dry-run"]
    )
    assert estimate.exit_code == 0, estimate.output
    # one Yes/No question a requirement, for the one sample
    assert re.search(r"tone\s*│\s*1\s*│\s*2\s*│", estimate.output), estimate.output
    clash = CliRunner().invoke(
        app, ["evaluate", str(data), "--criterion", "faithfulness=Is it?", "--judge", "fake"]
    )
    assert clash.exit_code == 2
    assert "has the name of a metric" in clash.output


class DecliningJudge(FakeJudge):
    """Its zero-shot P(Yes) knows nothing (fixed by the answer's hash); its hidden state knows
    whether the answer declines (dimension 0)."""

    states = ("l_out-16",)

    def __init__(self) -> None:
        super().__init__(responder=self._reply, model="declining")

    def _reply(self, request):
        answer = request.messages[-1].content.split("<response>\n")[1].split("\n</response>")[0]
        noise = int(hashlib.sha256(answer.encode()).hexdigest()[:8], 16) / 2**32
        signal = 1.0 if answer.startswith("Sorry") else 0.0
        return yes_no(0.2 + 0.6 * noise, {"l_out-16": [signal + 0.1 * noise, noise]})


def test_ratings_of_a_criterion_teach_its_head_through_tune(tmp_path: Path):
    samples = [
        {
            "id": f"s{i}",
            "question": f"What is item {i}?",
            "contexts": ["Nothing about items."],
            "answer": f"Sorry, I cannot tell item {i}." if i % 2 else f"Item {i} is blue.",
        }
        for i in range(30)
    ]
    out = tmp_path / "run"
    evaluate(samples, [CriterionMetric(DECLINES)], judge=DecliningJudge(), cache=False, out_dir=out)
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(
        "".join(
            json.dumps({"id": s["id"], "declines": i % 2}) + "\n" for i, s in enumerate(samples)
        )
    )
    result = CliRunner().invoke(app, ["tune", str(out), str(ratings), "--scale", "declines=0-1"])
    assert result.exit_code == 0, result.output
    heads = Heads.load(out / "heads.json")
    assert set(heads.heads) == {"criterion.declines"}
    read = evaluate(
        samples[:2],
        [CriterionMetric(DECLINES)],
        judge=DecliningJudge(),
        cache=False,
        judge_options={"heads": str(out / "heads.json")},
    )
    kept, declined = (s.value for s in read.scores)
    assert declined - kept > 0.5
    # a choice among levels is no mean of verdicts: tune says so; levels asked as Yes or No
    # (their default) are one verdict
    assert CriterionMetric(THREE_LEVELS, reading="direct").verdicts_prompt() is None
    assert CriterionMetric(THREE_LEVELS).verdicts_prompt().name == "criterion.natural"


def _declines_judge(model: str) -> FakeJudge:
    def reply(request):
        return yes_no(0.9 if "<response>\nSorry" in request.messages[-1].content else 0.1)

    return FakeJudge(responder=reply, model=model)


def test_a_criterion_gates_in_tests_and_scores_traces_as_an_evaluator():
    declining = SAMPLE.model_copy(update={"answer": "Sorry, I cannot say."})
    scorer = Scorer(judge=_declines_judge("gate"), cache=False)
    assert scorer.assert_scores(declining, {CriterionMetric(DECLINES): 0.8}).scores[0].value == 0.9
    with pytest.raises(AssertionError, match="declines"):
        scorer.assert_scores(SAMPLE, {CriterionMetric(DECLINES): 0.8})
    pytest.importorskip("phoenix.evals")
    import pandas as pd
    from phoenix.evals import evaluate_dataframe

    from ragmeter.traces.scorers import phoenix_evaluator

    frame = pd.DataFrame(
        {
            "input": [SAMPLE.question] * 2,
            "output": [declining.answer, SAMPLE.answer],
            "context": [SAMPLE.contexts] * 2,
        }
    )
    evaluator = phoenix_evaluator(
        CriterionMetric(DECLINES), judge=_declines_judge("evaluator"), cache=False
    )
    scored = evaluate_dataframe(dataframe=frame, evaluators=[evaluator], hide_tqdm_bar=True)
    cells = [json.loads(c) if isinstance(c, str) else c for c in scored["declines_score"]]
    assert [c["score"] for c in cells] == pytest.approx([0.9, 0.1])
    assert "p_yes: 0.9" in cells[0]["explanation"]


def test_levels_asked_as_yes_or_no_put_p_yes_on_the_scale():
    judge = FakeJudge([yes_no(0.75)])
    score = CriterionMetric(THREE_LEVELS, reading="yes_no").score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx(0.75)
    assert score.explanation["level"] == pytest.approx(2.5)  # 1 + 0.75 x (3 - 1)
    assert "Criterion: Does it read naturally?\nAnswer with one word, Yes or No." in (
        judge.history[0].messages[-1].content
    )


def test_examples_are_shown_with_their_labels_and_checked_against_the_kind():
    with_example = Criterion(
        name="natural",
        question="Does it read naturally?",
        kind="levels",
        levels=THREE_LEVELS.levels,
        reads=("question", "answer"),
        examples=[{"fields": {"answer": "Affirmative, human."}, "label": 1}],
    )
    judge = FakeJudge([digits({"1": 0.5, "3": 0.5})])
    CriterionMetric(with_example, reading="direct").score(SAMPLE, JudgeSession(judge))
    shown = judge.history[0].messages[-1].content
    assert "<example>\n<response>\nAffirmative, human.\n</response>\nReply: 1\n</example>" in shown
    with pytest.raises(ValueError, match="not one of the levels' scores"):
        Criterion.model_validate(
            {**with_example.described(), "examples": [{"fields": {"answer": "Hi."}, "label": 7}]}
        )
    with pytest.raises(ValueError, match="the label is Yes or No"):
        Criterion(name="d", question="Q?", examples=[{"fields": {"answer": "A."}, "label": 2}])
    # a first turn has no conversation: a criterion that shows it still reads the sample
    assert CriterionMetric(LIBRARY["naturalness"]).unreadable(SAMPLE) is None


def _bench():
    import importlib.util

    path = Path(__file__).parent.parent / "bench" / "bench_criteria.py"
    spec = importlib.util.spec_from_file_location("bench_criteria", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


QUALITY = {"bad": 0.2, "fine": 0.5, "good": 0.8}


class RatingJudge(FakeJudge):
    """P(Yes) and the levels follow the word the response ends with; its state knows it too."""

    states = ("l_out-16",)

    def __init__(self) -> None:
        super().__init__(responder=self._reply, model="rating")

    def _reply(self, request):
        content = request.messages[-1].content
        answer = content.split("<response>\n")[1].split("\n</response>")[0]
        p = QUALITY[answer.split()[-2]]
        if "one digit from 1 to 3" in content:
            return digits({"1": 1 - p, "3": p})
        return yes_no(p, {"l_out-16": [p, 0.0]})


def test_the_criteria_bench_correlates_each_reading_by_the_sources_protocol(tmp_path: Path):
    bench = _bench()
    lines = []
    for group in ("g1", "g2"):
        for word, rating in (("bad", 1), ("fine", 2), ("good", 3)):
            lines.append(
                json.dumps(
                    {
                        "id": f"{group}-{word}",
                        "group": group,
                        "question": f"hello\nhow was the film in {group} ?",
                        "contexts": ["the film opened in may ."],
                        "answer": f"it was {word} .",
                        "ratings": {"naturalness": rating},
                        "scale": {"naturalness": [1, 3]},
                    }
                )
            )
    data = tmp_path / "rated.jsonl"
    data.write_text("\n".join(lines) + "\n")
    rows = bench.criteria_rows(data)
    assert [t.role for t in rows[0].sample.history] == ["assistant"]  # the turn before the user's
    judge = RatingJudge()
    wanted = {"naturalness": "naturalness"}
    table, _, written, _ = bench.measure(
        "topicalchat", rows, wanted, ["direct", "yes_no"], judge, tmp_path / "run"
    )
    # the scores rank the responses as the people do, within and across groups
    assert [(r[2], r[3].split()[0], r[4], r[5]) for r in table] == [
        ("direct", "1.000", 6, 0),
        ("yes_no", "1.000", 6, 0),
    ]
    assert [w["score"] for w in written if w["reading"] == "yes_no"] == [0.2, 0.5, 0.8] * 2
    calls = len(judge.history)
    bench.measure("summeval", rows, wanted, ["direct", "yes_no"], judge, tmp_path / "run")
    assert len(judge.history) == calls  # an unchanged rerun is read from the run
    assert bench.summary_level([1, 2, 3, 3, 2, 1], [1, 2, 3, 1, 2, 3], ["a"] * 3 + ["b"] * 3) == 0


class ReversedJudge(RatingJudge):
    """Says Yes the more, the worse the response; its state still knows the quality."""

    def _reply(self, request):
        content = request.messages[-1].content
        answer = content.split("<response>\n")[1].split("\n</response>")[0]
        p = QUALITY[answer.split()[-2]]
        return yes_no(1 - p, {"l_out-16": [p, 0.0]})


def test_what_ratings_bought_is_measured_as_tune_decides_and_tune_says_it(tmp_path: Path):
    from ragmeter.heads.curve import RATINGS_FORMAT, load_curve, ratings_bought

    bench = _bench()
    lines, ratings = [], ["id,naturalness_yes_no"]
    for g in range(12):
        for word, rating in (("bad", 1), ("fine", 2), ("good", 3)):
            ratings.append(f"g{g}-{word},{rating}")
            record = {
                "id": f"g{g}-{word}",
                "group": f"g{g}",
                "question": f"hello\nhow was film {g} ?",
                "contexts": ["the film opened in may ."],
                "answer": f"it was {word} .",
                "ratings": {"naturalness": rating},
                "scale": {"naturalness": [1, 3]},
            }
            lines.append(json.dumps(record))
    data = tmp_path / "rated.jsonl"
    data.write_text("\n".join(lines) + "\n")
    rows = bench.criteria_rows(data)
    run = tmp_path / "run"
    table, learning, _, curve = bench.measure(
        "topicalchat",
        rows,
        {"naturalness": "naturalness"},
        ["yes_no"],
        ReversedJudge(),
        run,
        learn=[15, 24],
        draws=2,
    )
    assert table[0][3].split()[0] == "-1.000"  # zero-shot, it ranks the responses backwards
    # Fitted on 15 rated rows (5 dialogues), the head reads the state and ranks the other 21
    # as the people do: Spearman +1 against the zero-shot -1, a gain of 2 in both draws, and
    # tune would write it (its out-of-fold gain is +2 in every resample).
    assert [line.split(" | ")[3:] for line in learning] == [
        ["15", "-1.000", "1.000", "+2.000 [+2.000, +2.000]", "2 of 2", "+2.000 [+2.000, +2.000] |"],
        ["24", "-1.000", "1.000", "+2.000 [+2.000, +2.000]", "2 of 2", "+2.000 [+2.000, +2.000] |"],
    ]
    entry = curve["naturalness"]
    assert (entry["metric"], entry["reading"], entry["rows"]) == ("naturalness", "yes_no", 36)
    assert entry["sizes"]["15"]["gain_tuned"] == {"mean": 2.0, "low": 2.0, "high": 2.0}
    path = tmp_path / "ratings_curve.json"
    bench.write_curve(path, "topicalchat", curve)
    bench.write_curve(path, "other", {})  # a second source merges beside the first
    # A run of another rating of the same source adds it; measured again, a rating is replaced.
    bench.write_curve(path, "topicalchat", {"engagingness": {"rows": 1}})
    read = load_curve(path, RATINGS_FORMAT)
    assert read is not None and sorted(read[0]["sets"]) == ["other", "topicalchat"]
    assert read[0]["sets"]["topicalchat"] == {**curve, "engagingness": {"rows": 1}}
    bench.write_curve(path, "topicalchat", curve)
    read = load_curve(path, RATINGS_FORMAT)
    assert load_curve(path) is None  # not a claims curve
    said = ratings_bought(read[0], 20, "f")
    assert said == (
        "what 20 ratings bought elsewhere (f): with 15 rated samples of their own, the 1 rated "
        "criteria measured gained +2.000 Spearman on average on the rest of their samples as "
        "tune decides (+2.000 had every head been kept); by criterion from +2.000 (topicalchat "
        "naturalness) to +2.000 (topicalchat naturalness)"
    )
    # a built-in metric is learned through the prompt whose verdicts' mean is its value
    from ragmeter.claims import SUPPORTED

    assert bench.verdicts_prompt(metric_by_name("faithfulness")) is SUPPORTED
    assert bench.verdicts_prompt(metric_by_name("faithfulness", soft=False)) is None
    # tune on the run's 36 ratings says what as many bought: the largest size measured, 24
    labels = tmp_path / "ratings.csv"
    labels.write_text("\n".join(ratings) + "\n")
    tune = [
        "tune",
        str(run),
        str(labels),
        "--scale",
        "naturalness_yes_no=1-3",
        "--curve",
        str(path),
    ]
    told = CliRunner().invoke(app, [*tune, "--out", str(tmp_path / "heads.json")])
    assert told.exit_code == 0, told.output
    assert "naturalness_yes_no: what 36 ratings bought elsewhere" in told.output
    assert "with 24 rated samples of their own" in " ".join(told.output.split())


def test_people_label_a_criterion_on_its_own_scale(tmp_path: Path):
    from ragmeter.labels.session import LabelSession

    def reply(request):
        if "Yes or No" in request.messages[-1].content:
            return yes_no(0.5)
        return digits({"1": 0.5, "3": 0.5})

    judge = FakeJudge(responder=reply, model="labels")
    out = tmp_path / "run"
    evaluate(
        [SAMPLE],
        [CriterionMetric(THREE_LEVELS, reading="direct"), CriterionMetric(DECLINES)],
        judge=judge,
        out_dir=out,
        cache=False,
    )
    assert LabelSession.open(out, metric="natural", annotator="ann").scale.text == "1-3"
    assert LabelSession.open(out, metric="declines", annotator="ann").scale.text == "0-1"


RUBRIC_PEER = """\
import json, sys
asked = [json.loads(line) for line in open(sys.argv[1])]
with open(sys.argv[1] + ".calls", "a") as calls:
    calls.write(f"{len(asked)}\\n")
for row in asked:
    failed = "fails" in row["answer"]
    print(json.dumps({"id": row["id"], "metric": row["metric"], "seconds": 1.0,
                      "value": None if failed else float(len(row["answer"])),
                      "error": "ValidationError: no score" if failed else None,
                      "calls": 1, "prompt_tokens": 10, "completion_tokens": 5}))
"""


def test_the_ragas_rubric_peer_is_asked_each_criterion_in_its_own_words_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import contextlib
    import sys

    bench = _bench()
    peer = tmp_path / "peer.py"
    peer.write_text(RUBRIC_PEER)
    monkeypatch.setattr(bench, "PEER", peer)
    monkeypatch.setattr(
        bench, "served", lambda **_: contextlib.nullcontext("http://127.0.0.1:9/v1")
    )
    history = (Turn(role="user", text="Hi."), Turn(role="assistant", text="Hello."))
    rows = [
        bench.Row(
            Sample(
                id=f"r{n}",
                question="Seen it?",
                history=history,
                contexts=["A film."],
                answer=answer,
            ),
            "g",
            {"naturalness": rating},
            {"naturalness": (1.0, 3.0)},
        )
        for n, (answer, rating) in enumerate([("Yes.", 1), ("Yes, I have.", 3), ("fails", 2)])
    ]
    wanted = {"naturalness": "naturalness"}
    found = bench.ragas_rubric_scores(rows, wanted, sys.executable, tmp_path / "out")
    assert [found[(r.sample.key, "naturalness")]["value"] for r in rows] == [4.0, 12.0, None]
    (asked, *_) = [json.loads(line) for line in (tmp_path / "out" / "ragas-asked.jsonl").open()]
    assert asked["question"] == "user: Hi.\nassistant: Hello.\nuser: Seen it?"
    assert asked["contexts"] is None  # naturalness does not read the passages
    assert asked["criterion"] == LIBRARY["naturalness"].question
    assert list(asked["rubrics"]) == [f"score{n}_description" for n in (1, 2, 3)]
    # Every score is kept as it comes: a second run asks the peer nothing.
    again = bench.ragas_rubric_scores(rows, wanted, sys.executable, tmp_path / "out")
    assert again == found
    assert (tmp_path / "out" / "ragas-asked.jsonl.calls").read_text() == "3\n"


def test_a_reply_that_states_nothing_draws_on_no_fact():
    # "Do you like it?" is a question: no statement to check against the context. Groundedness
    # asks whether the reply uses the knowledge: plainly no, 0, said so; no judge call made.
    asking = Sample(
        id="q", question="I love jazz.", contexts=["Jazz began in New Orleans."],
        answer="Do you like it?",
    )  # fmt: skip
    judge = FakeJudge([])
    (score,) = evaluate([asking], ["groundedness"], judge=judge, cache=False).scores
    assert score.value == 0.0
    assert score.explanation["nothing_to_check"] == "the answer yields no statements to verify"
    assert judge.history == []
    # consistency reads claims too, but an answer with nothing in it is neither consistent nor
    # not: left unscored, with the reason.
    (score,) = evaluate(
        [asking], [CriterionMetric(LIBRARY["consistency"])], judge=FakeJudge([]), cache=False
    ).scores
    assert score.value is None
    assert "no statements to verify" in score.unscored_reason
