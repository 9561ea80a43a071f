"""ragmeter's metrics inside MLflow's and Phoenix's own evaluations: a metric as an MLflow GenAI
scorer, and as a Phoenix evaluator.

``mlflow.genai.evaluate(data=traces, scorers=[mlflow_scorer("faithfulness")])`` scores each
trace with the metric: the trace is read as :func:`ragmeter.traces.mlflow.samples_from_traces`
reads it, judged by ragmeter's judge, and the score comes back as MLflow ``Feedback`` (the
explanation as its rationale, the judge as its ``LLM_JUDGE`` source), which MLflow logs onto the
trace. A trace that cannot become a sample is an error feedback with the reason.

``phoenix.evals.evaluate_dataframe(dataframe=frame,
evaluators=[phoenix_evaluator("faithfulness")])`` scores each row (``input``, ``output``,
``context``: the names Phoenix's own RAG evaluators read) with the metric; the scores come back
as Phoenix ``Score`` objects, with the label ``unscored`` and the reason where there is no value,
ready for ``to_annotation_dataframe``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ragmeter.evaluate import evaluate
from ragmeter.explain import explain
from ragmeter.integrations import importing
from ragmeter.judges import Judge, resolve_models
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.sample import Sample
from ragmeter.traces.mlflow import MLflowWriter, require_mlflow, samples_from_traces
from ragmeter.traces.verdicts import UNSCORED, verdicts_for


def mlflow_scorer(
    metric: str | Metric = "faithfulness",
    *,
    judge: str | Judge = "local",
    judge_options: dict[str, Any] | None = None,
    cache: bool = True,
    name: str | None = None,
) -> Any:
    """``metric`` as an MLflow GenAI scorer that reads the whole trace.

    Args:
        metric: a metric's name or a configured ``Metric`` (one that needs no embedder).
        judge: a judge spec or a ``Judge``; a spec is resolved once, at the first trace.
        judge_options: the provider's options, for a judge given by spec.
        cache: the judge-call cache, as ``ragmeter.evaluate`` takes it.
        name: the scorer's name, which names the feedback; the metric's name by default.
    """
    require_mlflow()
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback
    from mlflow.genai.scorers import scorer

    chosen, the_judge = _metric_and_judge(metric, judge, judge_options, cache)

    def score(trace: Any) -> Any:
        found = samples_from_traces([trace])
        if not found.samples:
            reason = found.skipped[0].reason if found.skipped else "the trace holds no request"
            return Feedback(
                name=name or chosen.name,
                error=AssessmentError(error_code="UNSCORABLE", error_message=reason),
                source=AssessmentSource(
                    source_type="LLM_JUDGE", source_id=str(getattr(judge, "name", judge))
                ),
            )
        result = evaluate(found.samples, [chosen], judge=the_judge(), cache=False)
        feedback = MLflowWriter.feedback(verdicts_for(result)[0])
        feedback.name = name or chosen.name
        return feedback

    return scorer(score, name=name or chosen.name)


def phoenix_evaluator(
    metric: str | Metric = "faithfulness",
    *,
    judge: str | Judge = "local",
    judge_options: dict[str, Any] | None = None,
    cache: bool = True,
    name: str | None = None,
) -> Any:
    """``metric`` as a Phoenix evaluator (``phoenix.evals``) of ``input``, ``output`` and
    ``context`` (the retrieved passages: a list, or one text), with ``reference`` where the
    metric reads one. The arguments are those of :func:`mlflow_scorer`."""
    with importing("Phoenix evaluator", "arize-phoenix-evals", extra="phoenix"):
        from phoenix.evals import create_evaluator

    chosen, the_judge = _metric_and_judge(metric, judge, judge_options, cache)

    def score(input: str, output: str, context: Any, reference: str | None = None) -> Any:
        contexts = [context] if isinstance(context, str) else list(context or [])
        sample = Sample(question=input, contexts=contexts, answer=output, reference=reference)
        result = evaluate([sample], [chosen], judge=the_judge(), cache=False)
        found = result.scores[0]
        if found.value is None:
            return {"label": UNSCORED, "explanation": found.unscored_reason or ""}
        return {"score": found.value, "explanation": "\n".join(explain(found, sample))}

    return create_evaluator(name=name or chosen.name, kind="llm")(score)


def _metric_and_judge(
    metric: str | Metric, judge: str | Judge, options: dict[str, Any] | None, cache: bool
) -> tuple[Metric, Callable[[], Judge]]:
    """The metric, and the judge resolved once, when the first item is scored (the evaluators
    call from their own threads)."""
    chosen = metric_by_name(metric) if isinstance(metric, str) else metric
    if chosen.needs_embedder:
        raise ValueError(f"{chosen.name} needs an embedder: use ragmeter.evaluate for it")
    lock = threading.Lock()
    resolved: list[Judge] = []

    def the_judge() -> Judge:
        with lock:
            if not resolved:
                model, _ = resolve_models(
                    judge, None, cache=cache, needs_embedder=False, judge_options=options
                )
                resolved.append(model)
            return resolved[0]

    return chosen, the_judge
