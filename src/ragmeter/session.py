"""The judge as a metric sees it: ask a typed prompt, get a validated object back.

Transport failures are retried as they are (``retries``), except a request the server refused
(``RequestRefused``), which no attempt can fix; an unreadable reply is retried with a repair
message that shows the judge its mistake (``repairs``). When either runs out the metric
gets ``Unscorable`` with the reason, and every exchange (rendered prompt, raw reply, error) is kept
for the score's record.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    Embedder,
    Judge,
    JudgeError,
    Message,
    Reply,
    RequestRefused,
    TokenLogprobs,
    answers_batches,
    complete_each,
    heads_of,
)
from ragmeter.judges.heads import HeadsError
from ragmeter.prompts import Inputs, Out, Prompt, ReplyError, YesNoPrompt
from ragmeter.score import Exchange, Score, Unscorable, Usage

Check = Callable[[Out], str | None]
DRAWS = 5
"""Replies drawn to read a choice among levels from a judge that gives no log-probabilities."""
Value = TypeVar("Value")
Question = tuple[YesNoPrompt, Inputs, dict[str, str]]
"""A Yes/No question as ``ask_yes_no`` takes it: the prompt, its inputs and its fields."""

_YES = re.compile(r"^\W*(yes|true|supported)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|false|unsupported|not)\b", re.IGNORECASE)


def yes_probability(response: ChatResponse) -> float | None:
    """P(yes) / (P(yes) + P(no)) from the first token's alternatives, summing the spellings
    ("Yes", " yes", "YES"...); None if the reply carries no usable log-probabilities."""
    if not response.logprobs:
        return None
    mass = response.logprobs[0].probabilities(_yes_or_no)
    yes, no = mass.get("yes", 0.0), mass.get("no", 0.0)
    return yes / (yes + no) if yes + no > 0 else None


def _yes_or_no(token: str) -> str | None:
    return "yes" if _YES.match(token) else "no" if _NO.match(token) else None


def yes_from_text(text: str) -> float | None:
    """1.0 / 0.0 from a generated Yes/No reply, for judges without log-probabilities."""
    if _YES.match(text):
        return 1.0
    if _NO.match(text):
        return 0.0
    return None


def _yes_no_request(prompt: YesNoPrompt, inputs: Inputs, fields: dict[str, str]) -> ChatRequest:
    """A Yes/No question as one forward pass: the first reply token's ten likeliest
    alternatives."""
    return ChatRequest(messages=prompt.render(inputs, **fields), max_tokens=1, top_logprobs=10)


def _levels_request(prompt: YesNoPrompt, inputs: Inputs, fields: dict[str, str]) -> ChatRequest:
    """A choice among labels as one forward pass: the first reply token's twenty likeliest
    alternatives."""
    return ChatRequest(messages=prompt.render(inputs, **fields), max_tokens=1, top_logprobs=20)


def _read_levels(
    response: ChatResponse, wanted: Mapping[str, str]
) -> tuple[dict[str, float], str] | None:
    """Each label's probability as the first reply token, renormalised over the labels
    (``wanted`` maps a case-folded spelling to its label), and how it was read: from the
    log-probabilities, or the label written (probability 1). None when neither names one."""
    if response.logprobs:
        mass = response.logprobs[0].probabilities(lambda t: wanted.get(t.strip().casefold()))
        total = sum(mass.values())
        if total <= 0:
            return None
        return {label: p / total for label, p in mass.items()}, "logprobs"
    written = wanted.get(response.text.strip()[:1].casefold())
    return None if written is None else ({written: 1.0}, "reply")


def _read_yes(response: ChatResponse) -> tuple[float, bool] | None:
    """The probability of yes from the log-probabilities where there are any, else the word;
    and whether it was the word."""
    probability = yes_probability(response)
    if probability is not None:
        return probability, False
    written = yes_from_text(response.text)
    return None if written is None else (written, True)


class _Attempts:
    """What one question may still spend: further calls after failed ones, and repairs after
    unreadable replies. Without a separate repair count the two share one budget."""

    def __init__(self, retries: int, repairs: int | None) -> None:
        self.made = 0
        self._retries = retries
        self._repairs = repairs
        self._failed = 0
        self._unreadable = 0

    def another(self, *, unreadable: bool = False, refused: bool = False) -> bool:
        """Count a failed attempt; True if one more is allowed. A request the server refused
        is never sent again: the transport has said that no attempt can succeed."""
        if refused:
            return False
        if unreadable:
            self._unreadable += 1
        else:
            self._failed += 1
        if self._repairs is None:
            return self._failed + self._unreadable <= self._retries
        return self._failed <= self._retries and self._unreadable <= self._repairs


class JudgeSession:
    def __init__(
        self,
        judge: Judge,
        embedder: Embedder | None = None,
        retries: int = 2,
        repairs: int | None = None,
        fan_out: int = 1,
    ) -> None:
        """Hold the models and the attempt limits for the questions of one score.

        Args:
            judge: the model asked.
            embedder: for metrics that compare texts by embedding.
            retries: further attempts after a failed judge call.
            repairs: further attempts after an unreadable reply. None shares ``retries``
                between both kinds of failure, as before the two were separated.
            fan_out: how many independent questions (``ask_yes_no_all``) may be in flight at
                once; the judge's own limit (``InFlightLimit``) still holds.
        """
        self.judge = judge
        self.heads = heads_of(judge)
        self.embedder = embedder
        self.retries = retries
        self.repairs = repairs
        self.fan_out = fan_out
        self.exchanges: list[Exchange] = []
        self.usage = Usage()
        self.notes: list[str] = []
        """What was forgiven in the judge's replies (see ``Prompt.parse``), for the score's
        explanation."""

    def ask(
        self,
        prompt: Prompt[Out],
        inputs: Inputs,
        *,
        max_tokens: int = 512,
        check: Check[Out] | None = None,
    ) -> Out:
        """Return the judge's reply parsed as ``prompt.output``; ``check`` may reject a reply
        that parses but is unusable (e.g. the wrong number of verdicts)."""
        return self.ask_with_logprobs(
            prompt, inputs, max_tokens=max_tokens, top_logprobs=0, check=check
        )[0]

    def ask_with_logprobs(
        self,
        prompt: Prompt[Out],
        inputs: Inputs,
        *,
        max_tokens: int = 512,
        top_logprobs: int,
        check: Check[Out] | None = None,
    ) -> tuple[Out, list[TokenLogprobs] | None]:
        """As ``ask``, with the log-probabilities of the reply's tokens and their ``top_logprobs``
        most likely alternatives, or None from a judge that gives none."""
        messages = prompt.render(inputs)
        attempts = _Attempts(self.retries, self.repairs)
        while True:
            attempts.made += 1
            request = ChatRequest(
                messages=messages,
                json_schema=prompt.schema,
                max_tokens=max_tokens,
                top_logprobs=top_logprobs,
            )
            exchange = Exchange(prompt=prompt.name, messages=list(messages))
            self.exchanges.append(exchange)
            try:
                response = self.judge.complete(request)
            except JudgeError as exc:
                problem = exchange.error = f"judge call failed: {exc}"
                if attempts.another(refused=isinstance(exc, RequestRefused)):
                    continue
                break
            self.record_usage(response.cached, response.prompt_tokens, response.completion_tokens)
            exchange.reply, exchange.cached = response.text, response.cached
            try:
                forgiven: list[str] = []
                parsed = prompt.parse(response.text, forgiven)
                rejection = check(parsed) if check else None
                if rejection:
                    raise ReplyError(rejection)
                self.notes.extend(forgiven)  # only about the reply used
                return parsed, response.logprobs
            except ReplyError as exc:
                cut = (
                    " (the reply was cut off at the token limit)"
                    if (response.finish_reason == "length")
                    else ""
                )
                problem = exchange.error = f"unreadable reply: {exc}{cut}"
                if not attempts.another(unreadable=True):
                    break
                messages = (
                    *prompt.render(inputs),
                    Message(role="assistant", content=response.text),
                    Message(
                        role="user",
                        content=f"That reply was not usable: {exc}{cut}. Reply again with one "
                        "complete JSON object in the required shape, and keep it short.",
                    ),
                )
        raise Unscorable(f"{prompt.name}: {problem} (after {attempts.made} attempts)")

    def ask_text(self, name: str, messages: Sequence[Message], *, max_tokens: int) -> str:
        """A written reply to ``messages`` (feedback a later question reads, say), stripped;
        retried as its failures allow. A reply cut at ``max_tokens`` is used as it is; an empty
        one is unreadable."""
        request = ChatRequest(messages=tuple(messages), max_tokens=max_tokens)
        text, _, _ = self._replied(
            request, name, lambda reply: reply.text.strip() or None, "no text", finish=False
        )
        return text

    def ask_yes_no(self, prompt: YesNoPrompt, inputs: Inputs, **fields: str) -> float:
        """The judge's probability that the answer is Yes.

        One forward pass with log-probabilities where the judge gives them; otherwise the
        generated word, read as 1 or 0.
        """
        return self._yes_no(_yes_no_request(prompt, inputs, fields), prompt, None)

    def ask_yes_no_all(self, questions: Sequence[Question]) -> list[float]:
        """``ask_yes_no`` for each of ``questions``, which do not depend on one another: the
        probabilities in order.

        The questions go to the judge as one batch (``complete_each``): the local judge reads
        their shared prefix once and their own tokens together, a remote one gets up to
        ``fan_out`` requests at once (with ``fan_out`` 1 they are asked one by one, and the
        first that cannot be answered stops the rest). A question whose first reply failed or
        was unreadable is asked again on its own. Exchanges, usage and notes are recorded in
        the questions' order, and the first question (in order) that cannot be answered
        raises, after every question has been recorded."""
        if self.fan_out <= 1 and not answers_batches(self.judge):
            # One at a time: a question that cannot be answered spares the rest their calls.
            return [
                self.ask_yes_no(prompt, inputs, **fields) for prompt, inputs, fields in questions
            ]
        requests = [_yes_no_request(prompt, inputs, fields) for prompt, inputs, fields in questions]
        first = complete_each(self.judge, requests, self.fan_out)
        answers: list[float | Unscorable] = []
        for request, (prompt, _, _), reply in zip(requests, questions, first, strict=True):
            try:
                answers.append(self._yes_no(request, prompt, reply))
            except Unscorable as exc:
                answers.append(exc)
        for answer in answers:
            if isinstance(answer, Unscorable):
                raise answer
        return [answer for answer in answers if not isinstance(answer, Unscorable)]

    def ask_levels(
        self, prompt: YesNoPrompt, inputs: Inputs, labels: Sequence[str], **fields: str
    ) -> tuple[dict[str, float], str]:
        """The judge's probability of each of ``labels`` (single tokens, "1".."5") as its
        reply, renormalised over them, and how it was read: ``"logprobs"`` from one forward
        pass; where the judge gives no log-probabilities, the share of ``DRAWS`` replies drawn
        at temperature 1 that name each label (``"sampled N replies"``, G-Eval's way with a
        model that shows none). A reply that names no label is asked again, then unscored.
        ``fields`` are the prompt's own, as ``ask_yes_no`` takes them."""
        return self._levels(_levels_request(prompt, inputs, fields), prompt.name, labels, None)

    def ask_levels_all(
        self, questions: Sequence[Question], labels: Sequence[str]
    ) -> list[tuple[dict[str, float], str] | Unscorable]:
        """``ask_levels`` for each of ``questions``, sent to the judge as one batch
        (``complete_each``: the local judge reads their shared prefix once): for each, its
        labels' probabilities and how they were read, or why it could not be answered. A
        question whose first reply failed or was unreadable is asked again on its own."""
        requests = [_levels_request(prompt, inputs, fields) for prompt, inputs, fields in questions]
        first = complete_each(self.judge, requests, self.fan_out)
        answers: list[tuple[dict[str, float], str] | Unscorable] = []
        for request, (prompt, _, _), reply in zip(requests, questions, first, strict=True):
            try:
                answers.append(self._levels(request, prompt.name, labels, reply))
            except Unscorable as exc:
                answers.append(exc)
        return answers

    def _levels(
        self, request: ChatRequest, name: str, labels: Sequence[str], first: Reply | None
    ) -> tuple[dict[str, float], str]:
        wanted = {label.casefold(): label for label in labels}
        (mass, method), _, _ = self._replied(
            request,
            name,
            lambda reply: _read_levels(reply, wanted),
            f"none of {', '.join(labels)}",
            first,
        )
        if method == "reply":
            mass, method = self._drawn_levels(request, name, wanted, mass)
        return {label: mass.get(label, 0.0) for label in labels}, method

    def _drawn_levels(
        self, request: ChatRequest, name: str, wanted: Mapping[str, str], first: dict[str, float]
    ) -> tuple[dict[str, float], str]:
        """The greedy reply's label and ``DRAWS - 1`` more drawn at temperature 1, as shares;
        a draw that fails or names no label is left out and counted in the method."""
        counts = dict(first)
        drawn, lost = 1, 0
        for draw in range(1, DRAWS):
            again = request.model_copy(update={"temperature": 1.0, "draw": draw, "max_tokens": 3})
            exchange = Exchange(prompt=name, messages=list(again.messages))
            self.exchanges.append(exchange)
            try:
                reply = self.judge.complete(again)
            except JudgeError as exc:
                exchange.error, lost = f"judge call failed: {exc}", lost + 1
                continue
            self.record_usage(reply.cached, reply.prompt_tokens, reply.completion_tokens)
            exchange.reply, exchange.cached = reply.text, reply.cached
            read = _read_levels(reply.model_copy(update={"logprobs": None}), wanted)
            if read is None:
                exchange.error, lost = f"no label in the reply {reply.text!r}", lost + 1
                continue
            drawn += 1
            for label, share in read[0].items():
                counts[label] = counts.get(label, 0.0) + share
        method = f"sampled {drawn} replies" + (f" ({lost} unusable)" if lost else "")
        self.usage.sampled_reads += 1
        return {label: count / drawn for label, count in counts.items()}, method

    def _yes_no(self, request: ChatRequest, prompt: YesNoPrompt, first: Reply | None) -> float:
        """P(yes) for ``request``, retried as its failures allow; ``first`` is the reply to the
        first attempt when it was already asked (in a batch). Read by the judge's verdict head
        for ``prompt`` where it has one (``ragmeter.judges.heads``), else zero-shot."""
        (probability, by_word), exchange, reply = self._replied(
            request, prompt.name, _read_yes, "neither yes nor no", first
        )
        self.usage.word_reads += by_word
        return self._read(exchange, prompt, probability, reply)

    def _replied(
        self,
        request: ChatRequest,
        name: str,
        read: Callable[[ChatResponse], Value | None],
        unreadable: str,
        first: Reply | None = None,
        *,
        finish: bool = True,
    ) -> tuple[Value, Exchange, ChatResponse]:
        """The reply to ``request`` as ``read`` reads it, with its exchange and reply; retried
        as its failures allow. With ``finish`` a one-token reply ``read`` cannot use is let
        finish (three tokens) and read again before it counts as unreadable (``unreadable`` says
        what it lacked)."""
        attempts = _Attempts(self.retries, self.repairs)
        while True:
            attempts.made += 1
            exchange = Exchange(prompt=name, messages=list(request.messages))
            self.exchanges.append(exchange)
            try:
                reply, first = (first if first is not None else self.judge.complete(request)), None
                if isinstance(reply, Exception):
                    raise reply
                self.record_usage(reply.cached, reply.prompt_tokens, reply.completion_tokens)
                value = read(reply)
                if value is None and finish:  # not even a word: let the judge finish it
                    reply = self.judge.complete(request.model_copy(update={"max_tokens": 3}))
                    self.record_usage(reply.cached, reply.prompt_tokens, reply.completion_tokens)
                    value = read(reply)
            except JudgeError as exc:
                problem = exchange.error = f"judge call failed: {exc}"
                if attempts.another(refused=isinstance(exc, RequestRefused)):
                    continue
                break
            exchange.reply, exchange.cached = reply.text, reply.cached
            if value is not None:
                exchange.states = reply.states
                return value, exchange, reply
            problem = exchange.error = f"{unreadable} in the reply {reply.text!r}"
            if not attempts.another(unreadable=True):
                break
        raise Unscorable(f"{name}: {problem} (after {attempts.made} attempts)")

    def _read(
        self, exchange: Exchange, prompt: YesNoPrompt, zero_shot: float, reply: ChatResponse
    ) -> float:
        """The verdict as the judge's heads read it, recorded with the zero-shot read beside."""
        if self.heads is None:
            exchange.probability = zero_shot
            return zero_shot
        try:
            read = self.heads.read(prompt.name, prompt.version, zero_shot, reply)
        except HeadsError as exc:
            exchange.error = str(exc)
            raise Unscorable(f"{prompt.name}: {exc}") from None
        exchange.probability, exchange.head = read.probability, read.head
        exchange.zero_shot = zero_shot if read.head else None
        return read.probability

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.embedder is None:
            raise Unscorable("this metric needs an embedder and none was given")
        try:
            vectors = self.embedder.embed(texts)
        except JudgeError as exc:
            raise Unscorable(f"embedding failed: {exc}") from exc
        self.usage.embedding_calls += 1
        return vectors

    def record_usage(self, cached: bool, prompt_tokens: int, completion_tokens: int) -> None:
        if cached:
            self.usage.cached_calls += 1
            return
        self.usage.model_calls += 1
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens


def measured(
    sample_id: str,
    metric: str,
    session: JudgeSession,
    measure: Callable[[], tuple[float, dict[str, Any]]],
) -> Score:
    """Run ``measure`` (which asks ``session``) and record it as a ``Score``: its value and
    explanation, or the reason it was unscorable, with the session's exchanges, usage and time."""
    started = time.perf_counter()
    try:
        value, explanation = measure()
        reason = None
    except Unscorable as exc:
        value, explanation, reason = None, exc.explanation, exc.reason
    if session.notes:
        explanation = {**explanation, "reply_notes": session.notes}
    return Score(
        sample_id=sample_id,
        metric=metric,
        value=value,
        unscored_reason=reason,
        explanation=explanation,
        exchanges=session.exchanges,
        usage=session.usage,
        seconds=time.perf_counter() - started,
    )
