"""KaLMA: answers attributed to a knowledge graph, and how to measure them (Li et al., 2024).

Knowledge graphs and their loaders (``graph``), retrieval from questions (``retrieval``), the
attributed-generation prompt (``generate``), the citation parser (``citations``), citation
quality, text-citation alignment and [NA] metrics (``metrics``), G-Eval text quality
(``quality``), evolutionary question generation (``evolve``, ``benchmark``) and the paper's
experiments (``experiments``, ``report``). Nothing here needs spaCy until retrieval runs.
"""

from ragmeter.attribution.benchmark import BenchmarkItem, build_benchmark, load_benchmark
from ragmeter.attribution.citations import Citation, CitedSentence, ParsedAnswer, parse_answer
from ragmeter.attribution.generate import GENERATE, generate_answer
from ragmeter.attribution.graph import Entity, KnowledgeGraph, Triple, load_graph, normalize
from ragmeter.attribution.metrics import (
    AlignmentResult,
    CitationCounts,
    EntailmentChecker,
    NAResult,
    alignment,
    count_citations,
    na_scores,
)
from ragmeter.attribution.quality import CRITERIA, text_quality
from ragmeter.attribution.report import ConditionSummary, summarize, summarize_citations
from ragmeter.attribution.retrieval import (
    GazetteerRecognizer,
    Retrieval,
    SpacyRecognizer,
    retrieval_accuracy,
    retrieve,
)

__all__ = [
    "CRITERIA",
    "GENERATE",
    "AlignmentResult",
    "BenchmarkItem",
    "Citation",
    "CitationCounts",
    "CitedSentence",
    "ConditionSummary",
    "EntailmentChecker",
    "Entity",
    "GazetteerRecognizer",
    "KnowledgeGraph",
    "NAResult",
    "ParsedAnswer",
    "Retrieval",
    "SpacyRecognizer",
    "Triple",
    "alignment",
    "build_benchmark",
    "count_citations",
    "generate_answer",
    "load_benchmark",
    "load_graph",
    "na_scores",
    "normalize",
    "parse_answer",
    "retrieval_accuracy",
    "retrieve",
    "summarize",
    "summarize_citations",
    "text_quality",
]
