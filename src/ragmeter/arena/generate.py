"""Answer generation for a system under test: BM25 top-k passages, then the paper's answer prompt.

The prompt is the paper's (Table 11): answer from the passages only, say "I couldn't find an
answer." when nothing helps, and optionally think first in fewer than 50 words. The thinking is a
separate JSON field, so removing it from the final answer is exact rather than a regex over
``<thinking>`` tags; it is kept in the answers file for inspection (the paper found GPT-4o putting
the answer in its thinking and then declining to answer).

Answers are appended to the output file as they complete (a :class:`~ragmeter.records.RecordLog`
keyed by question id); rerunning with the same file skips the questions already answered, so an
interrupted run resumes. A line that cannot be read is reported and its question answered again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ragmeter.arena.data import NO_ANSWER, Document, Question, is_no_answer
from ragmeter.arena.judge import open_judge
from ragmeter.arena.passages import MAX_WORDS, build_passages
from ragmeter.arena.retrieval import DEFAULT_K, BM25Retriever
from ragmeter.judges.base import Judge, identity_of
from ragmeter.prompts import Prompt
from ragmeter.records import RecordLog, digest
from ragmeter.score import Unscorable, Usage
from ragmeter.session import JudgeSession

_INSTRUCTION = (
    "Based on the passages, provide a helpful answer to the query. Your answer must be faithful "
    "to the content in the passages. Do not use your own knowledge to answer the query. If you "
    f'couldn\'t find any helpful information in the passages, respond "{NO_ANSWER}"\n'
    "Passages are inside <passage N></passage N> tags. Query is in the <query></query> tags."
)


class ReasonedAnswer(BaseModel):
    thinking: str = Field(description="Step-by-step thinking, shorter than 50 words.")
    answer: str


class DirectAnswer(BaseModel):
    answer: str


ANSWER_COT = Prompt(
    name="arena.answer_cot",
    instruction=_INSTRUCTION
    + '\nFirst, think step by step, and put your thinking in "thinking". Your thinking must be '
    'shorter than 50 words. Then, provide your answer in "answer".',
    output=ReasonedAnswer,
)

ANSWER_DIRECT = Prompt(
    name="arena.answer",
    instruction=_INSTRUCTION + '\nProvide your answer in "answer".',
    output=DirectAnswer,
)


class GeneratedAnswer(BaseModel):
    """One line of an answers file: the input of ``arena judge``."""

    id: str
    question: str
    system: str
    answer: str | None
    """None when the generator gave no usable reply (see ``unscored_reason``)."""
    thinking: str | None = None
    passages: list[str] = Field(default_factory=list)
    """Ids of the passages shown to the generator, best first."""
    domain: str | None = None
    no_answer: bool = False
    unscored_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    made_with: str | None = None
    """A hash of everything that made the answer (the generator's identity, the prompt, the
    passages' settings); an answer made otherwise is not reused."""


def answer_inputs(question: str, passages: Sequence[str]) -> dict[str, str]:
    """The prompt's tagged inputs: each passage in its own numbered tag, then the query."""
    inputs = {f"passage {n}": text for n, text in enumerate(passages, 1)}
    inputs["query"] = question
    return inputs


def answer_question(
    question: Question,
    retriever: BM25Retriever,
    session: JudgeSession,
    *,
    system: str,
    k: int = DEFAULT_K,
    cot: bool = True,
    max_tokens: int = 512,
) -> GeneratedAnswer:
    """Retrieve, ask, and strip the thinking; an unusable reply is recorded, not invented."""
    hits = retriever.search(question.question, k)
    inputs = answer_inputs(question.question, [hit.passage.text for hit in hits])
    record = GeneratedAnswer(
        id=question.id,
        question=question.question,
        system=system,
        answer=None,
        passages=[hit.passage.id for hit in hits],
        domain=question.domain,
    )
    try:
        if cot:
            reply = session.ask(ANSWER_COT, inputs, max_tokens=max_tokens)
            record.answer, record.thinking = reply.answer.strip(), reply.thinking.strip()
        else:
            record.answer = session.ask(ANSWER_DIRECT, inputs, max_tokens=max_tokens).answer.strip()
    except Unscorable as exc:
        record.unscored_reason = exc.reason
    record.no_answer = is_no_answer(record.answer)
    record.usage = session.usage
    return record


def generate_answers(
    questions: Sequence[Question],
    documents: Sequence[Document],
    *,
    generator: str | Judge = "local",
    system: str | None = None,
    out_path: str | Path,
    k: int = DEFAULT_K,
    cot: bool = True,
    max_words: int = MAX_WORDS,
    max_tokens: int = 512,
    retries: int = 2,
    cache: bool | str | Path = True,
    on_answer: Callable[[GeneratedAnswer], None] | None = None,
    generator_options: Mapping[str, Any] | None = None,
) -> list[GeneratedAnswer]:
    """Answer every question with ``generator`` over BM25 top-``k`` passages of ``documents``.

    Args:
        questions: what to answer; their references are not shown to the generator.
        documents: the corpus, cut into passages of at most ``max_words`` words.
        generator: any judge model (a ``Judge`` or a spec such as ``"openai:gpt-4o-mini"``).
        system: the name the answers are filed under; by default the model and ``k``.
        out_path: the answers file (JSONL); rerunning with it resumes.
        k: passages shown per question (the paper uses 5, and 10 as a variant).
        cot: ask for the short thinking step first (the paper's CoT prompt).
        max_tokens: the generation budget per answer.
        retries: further attempts after a failed call or an unreadable reply.
        cache: the call cache: True for the user cache folder, a path, or False.
        on_answer: called with each answer as it completes.
        generator_options: the provider's options when ``generator`` is a spec.
    """
    model = open_judge(generator, cache, generator_options)
    name = system or f"{model.name}@k{k}"
    log = answers_log(out_path)
    others = {a.system for a in log} - {name}
    if others:
        raise ValueError(
            f"{log.path} holds answers of {sorted(others)}, not {name!r}: one file per "
            "system, so that a system's answers are never mixed with another's"
        )
    retriever = BM25Retriever(build_passages(documents, max_words))
    results: list[GeneratedAnswer] = []
    prompt = ANSWER_COT if cot else ANSWER_DIRECT

    def made_with() -> str:
        # The model's identity is read at each call: an answer is stamped once it was made, by
        # the model it was made with (a judge may learn meanwhile to ask its server another way).
        return digest(identity_of(model).digest, prompt.version, k, max_words, max_tokens)

    for question in questions:
        answer = log.get(question.id)
        # A failure is retried, and an answer made by another model or setting made again.
        if answer is None or answer.answer is None or answer.made_with != made_with():
            session = JudgeSession(model, retries=retries)
            answer = answer_question(
                question,
                retriever,
                session,
                system=name,
                k=k,
                cot=cot,
                max_tokens=max_tokens,
            )
            answer.made_with = made_with()
            log.append(answer)
        results.append(answer)
        if on_answer:
            on_answer(answer)
    # One line per id (retries replace failures), in question order; answers to questions
    # outside this run are kept, after them.
    log.rewrite(q.id for q in questions)
    return results


def answers_log(path: str | Path) -> RecordLog[GeneratedAnswer]:
    """An answers file as a record log keyed by question id (the file need not exist)."""
    return RecordLog(path, GeneratedAnswer, key=attrgetter("id"))
