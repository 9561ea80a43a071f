"""ragmeter: measure how good a retrieval-augmented generation system is."""

__version__ = "0.1.0"

from ragmeter.evaluate import evaluate  # noqa: E402
from ragmeter.metrics import AnswerRelevance, ContextRelevance, Faithfulness  # noqa: E402
from ragmeter.result import Result  # noqa: E402
from ragmeter.sample import Sample  # noqa: E402
from ragmeter.score import Score  # noqa: E402

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
