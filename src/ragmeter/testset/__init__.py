"""Test sets from a team's own documents: questions, references and their source chunks,
written by the judge and checked before they are kept (``generate_testset``)."""

from ragmeter.testset.candidates import CandidateRecord
from ragmeter.testset.chunking import Chunk, chunk_document, deduplicate
from ragmeter.testset.documents import Document, read_documents
from ragmeter.testset.quality import QualityOptions
from ragmeter.testset.queries import DECLINE, DEFAULT_MIX, KINDS, STYLES
from ragmeter.testset.runner import Generated, GenerationSummary, generate_testset

__all__ = [
    "DECLINE",
    "DEFAULT_MIX",
    "KINDS",
    "STYLES",
    "CandidateRecord",
    "Chunk",
    "Document",
    "Generated",
    "GenerationSummary",
    "QualityOptions",
    "chunk_document",
    "deduplicate",
    "generate_testset",
    "read_documents",
]
