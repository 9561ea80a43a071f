"""Which part of the RAG system lost or invented a claim: RAGChecker's generator metrics.

Read off the same claim table as answer correctness and the retrieval metrics (``ragmeter.claims``),
with RAGChecker's definitions (its ``computation.py``). With ``soft`` (the default) each Yes/No is
a probability, "and" a product, "not" one minus it and "some chunk" the largest; with
``soft=False`` every check is a Yes or a No at the threshold and the figures are RAGChecker's own.

A reference claim is *recalled* when some chunk supports it; a chunk is *relevant* when it
supports some reference claim. An answer claim is *correct* when the reference supports it and
*grounded* when some chunk does.

- ``context_utilization``: of the recalled reference claims, the share the answer states;
- ``noise_sensitivity_relevant`` / ``_irrelevant``: the share of the answer's claims that are
  wrong yet grounded in a relevant / only in an irrelevant chunk (the generator was misled);
- ``hallucination``: wrong and grounded in no chunk (invented);
- ``self_knowledge``: correct and grounded in no chunk (known without the retriever).

``DIAGNOSIS`` names them all, with answer correctness and the retrieval metrics: the metrics
``--metrics diagnosis`` asks for, shown together as one table.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from ragmeter.claims import ClaimTable, Part
from ragmeter.metrics.claim_metric import ClaimMetric, best_in_chunks, rounded
from ragmeter.score import Unscorable

_NO_CHUNKS = "nothing was retrieved: the diagnosis needs the chunks the answer was written from"


class ContextUtilization(ClaimMetric):
    name = "context_utilization"
    parts: ClassVar[tuple[Part, ...]] = ("reference_in_chunks", "reference_in_answer")

    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        assert table.reference_in_chunks is not None and table.reference_in_answer is not None
        recalled = best_in_chunks(self.verdicts(table.reference_in_chunks))
        if not (recalled >= self.options.threshold).any():
            raise Unscorable(
                "no reference claim is in the retrieved chunks: there was nothing to use"
            )
        given = self.verdicts(table.reference_in_answer)
        used = recalled * given
        return float(used.sum() / recalled.sum()), {
            "recalled": rounded(recalled),
            "used": rounded(used),
        }


class _AnswerClaimMetric(ClaimMetric):
    """A share of the answer's claims by whether each is correct and where it is grounded: a
    share of faults, so lower is better (RAGChecker marks self-knowledge so too, since a RAG
    system is meant to answer from what it retrieved)."""

    higher_is_better = False

    parts: ClassVar[tuple[Part, ...]] = ("answer_in_reference", "answer_in_chunks")

    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        assert table.answer_in_reference is not None and table.answer_in_chunks is not None
        if not table.chunks:
            raise Unscorable(_NO_CHUNKS)
        correct = self.verdicts(table.answer_in_reference)
        counted = self.counted(table, correct, self.verdicts(table.answer_in_chunks))
        return float(counted.mean()), {"correct": rounded(correct), "counted": rounded(counted)}

    @abstractmethod
    def counted(self, table: ClaimTable, correct: np.ndarray, in_chunks: np.ndarray) -> np.ndarray:
        """How much each answer claim counts towards the metric, 0 to 1."""


class Hallucination(_AnswerClaimMetric):
    name = "hallucination"

    def counted(self, table: ClaimTable, correct: np.ndarray, in_chunks: np.ndarray) -> np.ndarray:
        return (1 - best_in_chunks(in_chunks)) * (1 - correct)


class SelfKnowledge(_AnswerClaimMetric):
    name = "self_knowledge"

    def counted(self, table: ClaimTable, correct: np.ndarray, in_chunks: np.ndarray) -> np.ndarray:
        return (1 - best_in_chunks(in_chunks)) * correct


class _NoiseSensitivity(_AnswerClaimMetric):
    parts: ClassVar[tuple[Part, ...]] = (
        "answer_in_reference",
        "answer_in_chunks",
        "reference_in_chunks",
    )

    def grounded(self, table: ClaimTable, in_chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per answer claim: grounded in a relevant chunk, and only in irrelevant ones."""
        assert table.reference_in_chunks is not None
        relevant = self.verdicts(table.reference_in_chunks).max(axis=0)
        in_relevant = (in_chunks * relevant).max(axis=1)
        in_irrelevant = (in_chunks * (1 - relevant)).max(axis=1) * (1 - in_relevant)
        return in_relevant, in_irrelevant


class NoiseSensitivityRelevant(_NoiseSensitivity):
    name = "noise_sensitivity_relevant"

    def counted(self, table: ClaimTable, correct: np.ndarray, in_chunks: np.ndarray) -> np.ndarray:
        return self.grounded(table, in_chunks)[0] * (1 - correct)


class NoiseSensitivityIrrelevant(_NoiseSensitivity):
    name = "noise_sensitivity_irrelevant"

    def counted(self, table: ClaimTable, correct: np.ndarray, in_chunks: np.ndarray) -> np.ndarray:
        return self.grounded(table, in_chunks)[1] * (1 - correct)


DIAGNOSIS_PARTS = {
    "answer_correctness": "answer",
    "context_recall": "retriever",
    "context_precision": "retriever",
    "context_utilization": "generator",
    "noise_sensitivity_relevant": "generator",
    "noise_sensitivity_irrelevant": "generator",
    "hallucination": "generator",
    "self_knowledge": "generator",
}
"""The metrics ``diagnosis`` stands for, with the part of the system each judges, in the order
the table shows them."""
DIAGNOSIS = tuple(DIAGNOSIS_PARTS)
