"""Run folders for the report and comparison tests, made by the real pipeline on the scripted
judge: one sentence per answer, supported with a probability chosen per sample, so every
faithfulness score is that probability; and the diagnosis of one sample whose every claim check
is scripted (``test_reference_metrics.SUPPORT``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragmeter import evaluate
from ragmeter.judges.base import JudgeError
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.metrics import metric_by_name
from ragmeter.report import write_outputs
from ragmeter.result import Result
from ragmeter.sample import Sample

from .conftest import yes_no
from .test_reference_metrics import SAMPLE, support

FAILURE = JudgeError("connection reset")

QUESTIONS = {
    "a": ("When was the tower finished?", "It was finished in 1889."),
    "b": ("Who designed it?", "Gustave Eiffel's company designed it."),
    "c": ("How tall is it?", "It is 330 metres tall."),
    "d": ("Where is it?", "On the Champ de Mars in Paris."),
}


def samples(ids: Sequence[str] = tuple(QUESTIONS)) -> list[Sample]:
    return [
        Sample(
            id=key,
            question=QUESTIONS.get(key, (f"Question {key}: when was the tower finished?",))[0],
            contexts=["The tower stands in Paris. It was finished in 1889."],
            answer=QUESTIONS.get(key, ("", "It was finished in 1889."))[1],
        )
        for key in ids
    ]


def faithfulness_run(
    out: Path,
    p_supported: dict[str, float | None],
    *,
    model: str = "scripted",
    soft: bool = True,
    of: Sequence[Sample] | None = None,
) -> Result:
    """An evaluate run of faithfulness whose score for sample ``k`` is ``p_supported[k]``; a
    None makes the judge fail on that sample, so it is unscored. The samples are ``of``, in
    the order of ``p_supported``, or made from their ids."""
    judge = FakeJudge(model=model)
    for key in p_supported:
        probability = p_supported[key]
        judge.enqueue(yes_no(probability) if probability is not None else FAILURE)
    result = evaluate(
        samples(list(p_supported)) if of is None else of,
        [metric_by_name("faithfulness", soft=soft)],
        judge=judge,
        embedder=HashingEmbedder(),
        out_dir=out,
        cache=False,
        retries=0,
    )
    write_outputs(result, out)
    return result


def diagnosis_run(out: Path) -> Result:
    """An evaluate run of the diagnosis group (eight metrics read off one claim table) on
    ``test_reference_metrics.SAMPLE``, with its exports."""
    result = evaluate(
        [SAMPLE],
        ["diagnosis"],
        judge=FakeJudge(responder=support, model="claim-script"),
        out_dir=out,
        cache=False,
    )
    write_outputs(result, out)
    return result
