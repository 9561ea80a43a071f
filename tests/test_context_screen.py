"""Context relevance with a screen: only the sentences near the question reach the judge.

The hashing embedder gives bag-of-words cosines, so every similarity below is worked out by
hand from the words the question and each sentence share (each word counted once).
"""

from __future__ import annotations

import importlib
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmeter import plugins
from ragmeter.evaluate import evaluate
from ragmeter.explain import explain
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.metrics import ContextRelevance
from ragmeter.metrics.context_relevance import kept_by_similarity, screen_query
from ragmeter.options import OptionsError
from ragmeter.sample import Sample, Turn
from ragmeter.session import JudgeSession

from .conftest import prompt_name, yes_no
from .test_metrics import CONTEXT_SAMPLE

SAMPLE = CONTEXT_SAMPLE
# The question's words: what, is, the, capital, of, australia (6).
SIMILARITIES = [
    3 / 6,  # australia, is, the of 6 words
    5 / 6,  # is, the, capital, of, australia of 6
    2 / math.sqrt(6 * 5),  # is, the of 5 (0.3651)
    1 / math.sqrt(6 * 5),  # the of 5 (0.1826)
]


def asked_sentences(judge: FakeJudge) -> list[str]:
    return [
        r.messages[-1].content.split("<sentence>\n")[1].split("\n</sentence>")[0]
        for r in judge.history
    ]


def test_the_hashing_cosines_are_those_worked_out_by_hand():
    session = JudgeSession(FakeJudge(), HashingEmbedder())
    metric = ContextRelevance(screen="embedding")
    found = metric._similarities(SAMPLE, metric._sentences(SAMPLE), session)
    assert list(found) == pytest.approx(SIMILARITIES, abs=1e-6)


def test_sentences_far_from_the_question_are_not_asked_and_count_as_not_needed():
    judge = FakeJudge([yes_no(0.3), yes_no(0.9)])
    metric = ContextRelevance(screen="embedding", keep_similarity=0.4, keep_top=1)
    score = metric.score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    # 0.5 and 0.83 reach 0.4; 0.37 and 0.18 do not, and the one most similar is kept anyway.
    assert asked_sentences(judge) == [
        "Australia is in the Southern Hemisphere.",
        "Canberra is the capital of Australia.",
    ]
    assert score.value == pytest.approx(1 / 4)  # of all four sentences, the skipped counted
    explanation = score.explanation
    assert explanation["extracted_sentences"] == ["Canberra is the capital of Australia."]
    assert explanation["context_sentences"] == 4
    assert explanation["p_needed"] == [0.3, 0.9, None, None]
    assert explanation["skipped"] == [
        {"sentence": "Sydney is the largest city.", "by": "embedding", "similarity": 0.3651},
        {"sentence": "It hosted the 2000 Olympics.", "by": "embedding", "similarity": 0.1826},
    ]
    assert score.usage.embedding_calls == 1


def test_the_most_similar_sentences_are_asked_whatever_their_similarity():
    judge = FakeJudge([yes_no(0.2), yes_no(0.8)])
    metric = ContextRelevance(screen="embedding", keep_similarity=0.9, keep_top=2)
    score = metric.score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    # none reaches 0.9: the two most similar (0.83, 0.5) are asked, in the context's order
    assert asked_sentences(judge) == [
        "Australia is in the Southern Hemisphere.",
        "Canberra is the capital of Australia.",
    ]
    assert score.value == pytest.approx(1 / 4)
    nothing = ContextRelevance(screen="embedding", keep_similarity=0.9, keep_top=0)
    empty = FakeJudge()
    none_kept = nothing.score(SAMPLE, JudgeSession(empty, HashingEmbedder()))
    assert empty.history == [] and none_kept.value == 0.0
    assert none_kept.explanation["insufficient_information"] is True
    assert len(none_kept.explanation["skipped"]) == 4


def test_the_repeat_checks_are_asked_of_the_kept_sentences_only():
    # Kept: 0 (0.5), 1 (0.83), 2 (0.37); "It hosted the 2000 Olympics." (0.18) is skipped.
    # Sentences 0 and 1 are needed; 1 is asked whether it adds to 0 (P(new) 0.25).
    judge = FakeJudge([yes_no(0.9), yes_no(0.8), yes_no(0.2), yes_no(0.25)])
    metric = ContextRelevance(
        screen="embedding", keep_similarity=0.3, keep_top=0, repeats_by="asking"
    )
    score = metric.score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    assert [prompt_name(r) for r in judge.history] == ["needed"] * 3 + ["new_information"]
    check = judge.history[3].messages[-1].content
    assert (
        "<earlier sentences>\nAustralia is in the Southern Hemisphere.\n</earlier sentences>"
        in check
    )
    assert "<sentence>\nCanberra is the capital of Australia.\n</sentence>" in check
    assert score.explanation["p_new_information"] == {"1": 0.25}
    # 0.9 counts; 0.8 x 0.25 = 0.2 does not; 0.2 does not; the skipped one does not
    assert score.value == pytest.approx(1 / 4)
    soft = ContextRelevance(screen="embedding", keep_similarity=0.3, keep_top=0, soft=True)
    replies = [yes_no(0.9), yes_no(0.8), yes_no(0.2), yes_no(0.25)]
    value = soft.score(SAMPLE, JudgeSession(FakeJudge(replies), HashingEmbedder())).value
    assert value == pytest.approx((0.9 + 0.8 * 0.25 + 0.2 + 0) / 4)


def test_a_kept_sentence_gets_the_same_question_as_without_a_screen():
    full, screened = FakeJudge([yes_no(0.5)] * 4), FakeJudge([yes_no(0.5)] * 2)
    ContextRelevance(repeats=False).score(SAMPLE, JudgeSession(full))
    ContextRelevance(screen="embedding", keep_similarity=0.4, keep_top=0, repeats=False).score(
        SAMPLE, JudgeSession(screened, HashingEmbedder())
    )
    # the same requests, so the call cache answers a screened run from a full one
    assert screened.history == full.history[:2]


def test_the_screen_needs_an_embedder_and_is_part_of_the_version():
    assert ContextRelevance().needs_embedder is False
    assert ContextRelevance(screen="embedding").needs_embedder is True
    versions = {
        ContextRelevance().version,
        ContextRelevance(screen="embedding").version,
        ContextRelevance(screen="embedding", keep_similarity=0.3).version,
        ContextRelevance(screen="embedding", keep_top=5).version,
    }
    assert len(versions) == 4
    score = ContextRelevance(screen="embedding").score(SAMPLE, JudgeSession(FakeJudge()))
    assert score.value is None
    assert score.unscored_reason == "this metric needs an embedder and none was given"


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        ({"screen": "embedding", "mode": "select", "repeats": False}, "mode='sentence'"),
        ({"screen": "bm25"}, "option 'screen'"),
        ({"keep_top": -1}, "option 'keep_top'"),
        ({"keep_similarity": 1.5}, "option 'keep_similarity'"),
    ],
)
def test_a_screen_refuses_what_it_cannot_screen(options, refused):
    with pytest.raises(OptionsError, match=refused):
        ContextRelevance(**options)


def test_kept_by_similarity_takes_the_bound_or_the_top_ranks_in_order():
    assert kept_by_similarity([0.1, 0.5, 0.3, 0.5], above=0.4, top=0) == [1, 3]
    assert kept_by_similarity([0.1, 0.5, 0.3, 0.5], above=0.9, top=1) == [1]  # tie: the first
    assert kept_by_similarity([0.1, 0.5, 0.3, 0.5], above=0.4, top=3) == [1, 2, 3]
    assert kept_by_similarity([], above=0.0, top=3) == []


def test_a_follow_up_is_compared_with_what_was_asked_before_it():
    follow_up = SAMPLE.model_copy(
        update={
            "question": "And its largest city?",
            "history": [
                Turn(role="user", text="What is the capital of Australia?"),
                Turn(role="assistant", text="Canberra."),
            ],
        }
    )
    query = screen_query(follow_up)
    assert query.startswith("And its largest city?")
    assert "What is the capital of Australia?" in query


def test_a_screened_run_through_the_pipeline_embeds_and_explains():
    def respond(request):
        return yes_no(0.9 if "Canberra" in request.messages[-1].content else 0.1)

    judge = FakeJudge(responder=respond)
    result = evaluate(
        [SAMPLE],
        [ContextRelevance(screen="embedding", keep_similarity=0.4, keep_top=0)],
        judge=judge,
        embedder=HashingEmbedder(),
        cache=False,
    )
    (score,) = result.scores
    assert score.value == pytest.approx(1 / 4)
    assert [s["sentence"] for s in score.explanation["skipped"]] == [
        "Sydney is the largest city.",
        "It hosted the 2000 Olympics.",
    ]
    assert len(judge.history) == 2


def test_the_explanation_says_how_each_skipped_sentence_was_ruled_out():
    judge = FakeJudge([yes_no(0.3), yes_no(0.9)])
    metric = ContextRelevance(screen="embedding", keep_similarity=0.4, keep_top=1)
    score = metric.score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    assert explain(score, SAMPLE) == [
        "needed sentences (1 of 4):",
        '  - "Canberra is the capital of Australia." (p_needed 0.9)',
        "sentences not needed (3 of 4):",
        '  - "Australia is in the Southern Hemisphere." (p_needed 0.3)',
        '  - "Sydney is the largest city." (skipped by embedding, similarity 0.3651)',
        '  - "It hosted the 2000 Olympics." (skipped by embedding, similarity 0.1826)',
        "a needed sentence after the first counts only at p_needed >= 0.72",
        "language: en",  # the context was split into sentences by English rules
    ]


# --- bench/bench_context_screen.py: the full layout's verdicts, then the screens offline --------

BENCH = Path(__file__).resolve().parent.parent / "bench"
SHARED = BENCH.parent.parent / "shared" / "data"


def by_overlap(request: ChatRequest) -> ChatResponse:
    """P(needed) 0.9 for a sentence sharing a word of five letters or more with the question,
    else 0.1; every repeat check P(new) 0.3."""
    text = request.messages[-1].content
    if "<earlier sentences>" in text:
        return yes_no(0.3)
    sentence = text.split("<sentence>\n")[1].split("\n</sentence>")[0].lower()
    question = text.split("<question>\n")[1].split("\n")[0].lower()
    shared = {w for w in question.split() if len(w) > 4} & set(sentence.split())
    return yes_no(0.9 if shared else 0.1)


MADE: list[FakeJudge] = []


def overlap_judge(model: str = "", **_: object) -> FakeJudge:
    """``screenbench``: the judge registered for the bench's test, replying ``by_overlap``."""
    MADE.append(FakeJudge(responder=by_overlap, model="screen-bench"))
    return MADE[-1]


@pytest.fixture
def screen_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("bench_context_screen")


def judged(bench, p_needed, p_new, similarity, pair=None):
    sentences = [f"s{i}" for i in range(len(p_needed))]
    item = bench.Judged(
        id="x",
        source="wikieval",
        pair=pair,
        sample=SAMPLE,
        sentences=sentences,
        p_needed=p_needed,
        p_new=p_new,
        score=0.0,
        seconds=1.0,
        similarity={"metric": np.array(similarity)},
    )
    item.score = bench.screened_score(item, set(range(len(sentences))))[0]
    return item


def test_a_screened_score_replays_the_metrics_count_over_the_kept_sentences(screen_bench):
    # 0 needed (first, no check); 1 needed, new (0.9); 2 needed, a repeat (0.2); 3 not needed;
    # 4 needed, new (0.8) after 0 and 1.
    item = judged(screen_bench, [0.9, 0.8, 0.7, 0.1, 0.6], {1: 0.9, 2: 0.2, 4: 0.8}, [0] * 5)
    assert item.needed == [0, 1]  # 0.6 x 0.8 = 0.48 does not count
    assert item.judged_needed == [0, 1, 2, 4]
    assert screen_bench.screened_score(item, {0, 1, 2, 3, 4}) == (2 / 5, 3, False)
    # Skipping the repeat (2) and the unneeded (3) changes nothing, and is exact.
    assert screen_bench.screened_score(item, {0, 1, 4}) == (2 / 5, 2, False)
    # Skipping sentence 0: 1 becomes the first, counted unchecked; approximate, as 4's check
    # would have seen only sentence 1 before it.
    assert screen_bench.screened_score(item, {1, 2, 4}) == (1 / 5, 2, True)


def test_the_figures_count_recall_saved_questions_and_the_change_of_score(screen_bench):
    item = judged(screen_bench, [0.9, 0.8, 0.7, 0.1, 0.6], {1: 0.9, 2: 0.2, 4: 0.8}, [0] * 5)
    figures = screen_bench.figures([item], lambda _: {0, 2, 3})
    assert (figures.needed, figures.kept_needed) == (2, 1)
    assert (figures.judged_needed, figures.kept_judged) == (4, 2)
    assert figures.recall == 0.5 and figures.judged_recall == 0.5
    assert figures.saved == pytest.approx(2 / 5)
    # the full layout: 5 questions and 3 checks; this screen 3 questions and 1 check (2 after 0)
    assert figures.calls_saved == pytest.approx(1 - 4 / 8)
    assert figures.delta == pytest.approx(2 / 5 - 1 / 5)


def test_wikievals_pairs_are_scored_from_the_replayed_scores(screen_bench):
    focused = judged(screen_bench, [0.9, 0.1], {}, [0.9, 0.1], pair="q1/focused")
    padded = judged(screen_bench, [0.1, 0.9, 0.1], {}, [0.9, 0.1, 0.1], pair="q1/padded")
    assert screen_bench.pair_agreement([focused, padded], None) == (1.0, 1)
    # keeping only the most similar sentence loses the padded context's needed one: still won
    top = screen_bench.by_similarity(2.0, 1)
    assert screen_bench.pair_agreement([focused, padded], top) == (1.0, 1)
    # keeping none ties them at 0: half a pair
    assert screen_bench.pair_agreement([focused, padded], lambda _: set()) == (0.5, 1)


def test_the_sources_come_in_turn_by_sentences_so_far(screen_bench):
    def item(source, n, words=1):
        sample = Sample(question="q", contexts=[" ".join(["Word."] * words)] * n, answer="")
        return screen_bench.Item(f"{source}/{n}", source, sample)

    order = screen_bench.in_turn(
        {
            "wikieval": [item("wikieval", 1), item("wikieval", 2), item("wikieval", 3)],
            "mtrag": [item("mtrag", 4), item("mtrag", 5)],
            "lfrqa": [item("lfrqa", 6)],
        },
        None,
    )
    # lfrqa and mtrag at 0 sentences go first (by name), then wikieval's first question (both
    # contexts: 3 sentences), then the source with fewest so far
    assert [i.id for i in order] == [
        "lfrqa/6",
        "mtrag/4",
        "wikieval/1",
        "wikieval/2",
        "wikieval/3",
        "mtrag/5",
    ]


def test_a_wrong_hit_is_the_other_passage_sharing_most_words(screen_bench):
    passages = ["tower paris iron", "paris iron lattice tower", "river seine"]
    assert screen_bench._wrong_hit("Which iron tower stands in Paris?", 0, passages) == 1
    assert screen_bench._wrong_hit("Which iron tower stands in Paris?", 1, passages) == 0


def test_the_bench_judges_resumes_and_measures_the_screens(
    screen_bench, monkeypatch, capsys, tmp_path, no_user_cache
):
    if not SHARED.exists():
        pytest.skip(f"needs {SHARED} (the shared development data)")

    monkeypatch.setitem(plugins.BUILTINS["judge"], "screenbench", f"{__name__}:overlap_judge")
    MADE.clear()
    out = tmp_path / "out"
    common = ["--out", str(out), "--cache", str(tmp_path / "calls.sqlite")]
    small = ["--limit", "2", "--lfrqa-per-domain", "1"]

    def run(*args: str) -> str:
        monkeypatch.setattr(sys, "argv", ["bench_context_screen.py", *args])
        capsys.readouterr()
        screen_bench.main()
        return capsys.readouterr().out

    first = run("teacher", "--judge", "screenbench", *common, *small)
    records = [json.loads(line) for line in (out / "teacher.jsonl").read_text().splitlines()]
    assert {r["source"] for r in records} == {"wikieval", "mtrag", "ragchecker", "lfrqa"}
    assert len(records) == 8 and "8 to go" in first
    for record in records:
        assert len(record["p_needed"]) == len(record["sentences"])
        assert record["score"] is not None and record["model_calls"] > 0
    asked = len(MADE[0].history)
    again = run("teacher", "--judge", "screenbench", *common, *small)
    assert "8 contexts already judged, 0 to go" in again and len(MADE[1].history) == 0
    assert asked > 0
    report = run("screens", *common, "--embedder", "fake", "--keep-similarity", "-1")
    # the replay reproduces every stored score, and a bound of -1 keeps every sentence
    assert "the replay misses" not in report
    rows = re.findall(r"^embedding >= -1.0 or top 4 +(\w+) .*$", report, re.MULTILINE)
    assert rows == ["wikieval", "mtrag", "ragchecker", "lfrqa", "pooled"]
    pooled = report.split("embedding >= -1.0 or top 4")[-1].split("\n")[0].split()
    assert pooled[4] == "1.000" and pooled[7] == "0.000" and pooled[9] == "0.0000"
    assert "WikiEval dev pairs of context relevance (1 pairs)" in report
