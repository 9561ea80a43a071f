"""ragmeter: measure how good a retrieval-augmented generation system is."""

from ragmeter.config import RunConfig
from ragmeter.evaluate import evaluate
from ragmeter.metrics import AnswerRelevance, ContextRelevance, Faithfulness
from ragmeter.result import Result
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.version import __version__

__all__ = [
    "AnswerRelevance",
    "ContextRelevance",
    "Faithfulness",
    "Result",
    "RunConfig",
    "Sample",
    "Score",
    "__version__",
    "evaluate",
]
