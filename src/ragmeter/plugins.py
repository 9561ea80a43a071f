"""Judges, embedders and metrics by name, found through entry points.

The built-ins are registered in ``pyproject.toml`` under the same groups a plugin package uses
(``ragmeter.judges``, ``ragmeter.embedders``, ``ragmeter.metrics``), so a plugin is added exactly
as a built-in is. The table below is the fallback for a source tree that was never installed.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Literal

Kind = Literal["judge", "embedder", "metric"]

GROUPS: dict[Kind, str] = {
    "judge": "ragmeter.judges",
    "embedder": "ragmeter.embedders",
    "metric": "ragmeter.metrics",
}

BUILTINS: dict[Kind, dict[str, str]] = {
    "judge": {
        "local": "ragmeter.judges.local:create_judge",
        "openai": "ragmeter.judges.openai:create_judge",
        "fake": "ragmeter.judges.fake:create_judge",
    },
    "embedder": {
        "minilm": "ragmeter.judges.minilm:create_embedder",
        "openai": "ragmeter.judges.openai:create_embedder",
        "fake": "ragmeter.judges.fake:create_embedder",
    },
    "metric": {
        "faithfulness": "ragmeter.metrics.faithfulness:Faithfulness",
        "answer_relevance": "ragmeter.metrics.answer_relevance:AnswerRelevance",
        "context_relevance": "ragmeter.metrics.context_relevance:ContextRelevance",
        "answer_correctness": "ragmeter.metrics.answer_correctness:AnswerCorrectness",
        "context_recall": "ragmeter.metrics.retrieval:ContextRecall",
        "context_precision": "ragmeter.metrics.retrieval:ContextPrecision",
        "context_utilization": "ragmeter.metrics.diagnosis:ContextUtilization",
        "noise_sensitivity_relevant": "ragmeter.metrics.diagnosis:NoiseSensitivityRelevant",
        "noise_sensitivity_irrelevant": "ragmeter.metrics.diagnosis:NoiseSensitivityIrrelevant",
        "hallucination": "ragmeter.metrics.diagnosis:Hallucination",
        "self_knowledge": "ragmeter.metrics.diagnosis:SelfKnowledge",
        # short answers against their gold answers, without a judge (ragmeter.metrics.lexical)
        "exact_match": "ragmeter.metrics.lexical:ExactMatch",
        "token_f1": "ragmeter.metrics.lexical:TokenF1",
        # the retriever's ranking, from ids (ragmeter.metrics.ir)
        "hit_rate": "ragmeter.metrics.ir:HitRate",
        "recall": "ragmeter.metrics.ir:Recall",
        "precision": "ragmeter.metrics.ir:Precision",
        "mrr": "ragmeter.metrics.ir:MRR",
        "map": "ragmeter.metrics.ir:MAP",
        "ndcg": "ragmeter.metrics.ir:NDCG",
        # a passage's relevance to a query, graded 0-3 by the judge (ragmeter retrieval --grade)
        "passage_relevance": "ragmeter.metrics.passage_relevance:PassageRelevance",
        # the ready criteria (ragmeter.criteria.library)
        "appropriate_refusal": "ragmeter.criteria.library:appropriate_refusal",
        "naturalness": "ragmeter.criteria.library:naturalness",
        "maintains_context": "ragmeter.criteria.library:maintains_context",
        "engagingness": "ragmeter.criteria.library:engagingness",
        "groundedness": "ragmeter.criteria.library:groundedness",
        "completeness": "ragmeter.criteria.library:completeness",
        "coherence": "ragmeter.criteria.library:coherence",
        "consistency": "ragmeter.criteria.library:consistency",
        "fluency": "ragmeter.criteria.library:fluency",
        "relevance": "ragmeter.criteria.library:relevance",
    },
}


def available(kind: Kind) -> dict[str, str]:
    """Every registered name of ``kind`` and the ``module:attribute`` it loads."""
    found = dict(BUILTINS[kind])
    found.update({ep.name: ep.value for ep in entry_points(group=GROUPS[kind])})
    return found


def load(kind: Kind, name: str) -> Any:
    """The factory or class registered as ``name``; ValueError listing the known names."""
    targets = available(kind)
    if name not in targets:
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(sorted(targets))}")
    module_name, _, attribute = targets[name].partition(":")
    return getattr(importlib.import_module(module_name), attribute)
