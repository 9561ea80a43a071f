"""ragmeter: measure how good a retrieval-augmented generation system is."""

__version__ = "0.1.0"

from ragmeter.evaluate import evaluate
from ragmeter.metrics import AnswerRelevance, ContextRelevance, Faithfulness
from ragmeter.result import Result
from ragmeter.sample import Sample
from ragmeter.score import Score

__all__ = [
    "AnswerRelevance",
    "ContextRelevance",
    "Faithfulness",
    "Result",
    "Sample",
    "Score",
    "__version__",
    "evaluate",
]
