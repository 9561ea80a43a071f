"""Check a RAG system's answers in a test suite: copy this file next to your tests and make
``ask`` call your system.

    pip install 'ragmeter[local]'
    pytest test_rag_quality.py                      # the offline judge, the default
    pytest test_rag_quality.py --ragmeter-judge openai:gpt-4o-mini-2024-07-18 \\
        --ragmeter-embedder openai:text-embedding-3-small

A check fails when a score is below its threshold or could not be computed, and the message says
why: the unsupported statements, the questions the answer seems to answer, the context sentences
that were not needed. Judge calls are cached, so an unchanged check reruns without a model call.
The judge, embedder, provider options and cache can also be set in ``[tool.pytest.ini_options]``
(``ragmeter_judge = "openai:gpt-4o-mini-2024-07-18"``); see ``pytest --help``.
"""

from ragmeter import Sample

# A stand-in for a RAG system: what it retrieves and answers for each question.
ANSWERS = {
    "How long do refunds take?": (
        ["Refunds are paid within 14 days of receiving the returned item."],
        "Refunds are paid within 14 days of receiving the returned item.",
    ),
    "Can I return an item bought on sale?": (
        ["Items bought on sale can be returned within 30 days, like any other item."],
        "Yes, items bought on sale can be returned within 30 days.",
    ),
}


def ask(question: str) -> Sample:
    """Put ``question`` to the RAG system; replace the body with a call to yours."""
    contexts, answer = ANSWERS[question]
    return Sample(question=question, contexts=contexts, answer=answer)


def test_the_refund_answer_is_grounded_and_answers_the_question(ragmeter_scorer):
    sample = ask("How long do refunds take?")
    ragmeter_scorer.assert_scores(sample, faithfulness=0.8, answer_relevance=0.7)


def test_retrieval_finds_what_each_question_needs(ragmeter_scorer):
    samples = [ask(question) for question in ANSWERS]
    ragmeter_scorer.assert_scores(samples, context_relevance=0.5)
