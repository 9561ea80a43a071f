"""The judge as a metric sees it: ask a typed prompt, get a validated object back.

Transport failures are retried as they are; an unreadable reply is retried with a repair message
that shows the judge its mistake. When the retries run out the metric gets ``Unscorable`` with the
reason, and every exchange (rendered prompt, raw reply, error) is kept for the score's record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

from ragmeter.judges.base import ChatRequest, ChatResponse, Embedder, Judge, JudgeError, Message
from ragmeter.prompts import Inputs, Out, Prompt, ReplyError, YesNoPrompt
from ragmeter.score import Exchange, Unscorable, Usage

Check = Callable[[Out], str | None]

_YES = re.compile(r"^\W*(yes|true|supported)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|false|unsupported|not)\b", re.IGNORECASE)


def yes_probability(response: ChatResponse) -> float | None:
    """P(yes) / (P(yes) + P(no)) from the first token's alternatives, summing the spellings
    ("Yes", " yes", "YES"...); None if the reply carries no usable log-probabilities."""
    if not response.logprobs:
        return None
    yes = no = 0.0
    for token, logprob in response.logprobs[0].top.items():
        if _YES.match(token):
            yes += math.exp(logprob)
        elif _NO.match(token):
            no += math.exp(logprob)
    return yes / (yes + no) if yes + no > 0 else None


def yes_from_text(text: str) -> float | None:
    """1.0 / 0.0 from a generated Yes/No reply, for judges without log-probabilities."""
    if _YES.match(text):
        return 1.0
    if _NO.match(text):
        return 0.0
    return None


class JudgeSession:
    def __init__(self, judge: Judge, embedder: Embedder | None = None, retries: int = 2) -> None:
        self.judge = judge
        self.embedder = embedder
        self.retries = retries
        self.exchanges: list[Exchange] = []
        self.usage = Usage()

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
        messages = prompt.render(inputs)
        problem = ""
        for _ in range(self.retries + 1):
            request = ChatRequest(
                messages=messages, json_schema=prompt.schema, max_tokens=max_tokens
            )
            exchange = Exchange(prompt=prompt.name, messages=list(messages))
            self.exchanges.append(exchange)
            try:
                response = self.judge.complete(request)
            except JudgeError as exc:
                problem = f"judge call failed: {exc}"
                exchange.error = problem
                continue
            self._count(response.cached, response.prompt_tokens, response.completion_tokens)
            exchange.reply, exchange.cached = response.text, response.cached
            try:
                parsed = prompt.parse(response.text)
                rejection = check(parsed) if check else None
                if rejection:
                    raise ReplyError(rejection)
                return parsed
            except ReplyError as exc:
                cut = (
                    " (the reply was cut off at the token limit)"
                    if (response.finish_reason == "length")
                    else ""
                )
                problem = f"unreadable reply: {exc}{cut}"
                exchange.error = problem
                messages = (
                    *prompt.render(inputs),
                    Message(role="assistant", content=response.text),
                    Message(
                        role="user",
                        content=f"That reply was not usable: {exc}{cut}. Reply again with one "
                        "complete JSON object in the required shape, and keep it short.",
                    ),
                )
        raise Unscorable(f"{prompt.name}: {problem} (after {self.retries + 1} attempts)")

    def ask_yes_no(self, prompt: YesNoPrompt, inputs: Inputs, **fields: str) -> float:
        """The judge's probability that the answer is Yes.

        One forward pass with log-probabilities where the judge gives them; otherwise the
        generated word, read as 1 or 0.
        """
        messages = prompt.render(inputs, **fields)
        problem = ""
        for _ in range(self.retries + 1):
            request = ChatRequest(messages=messages, max_tokens=1, top_logprobs=10)
            exchange = Exchange(prompt=prompt.name, messages=list(messages))
            self.exchanges.append(exchange)
            try:
                response = self.judge.complete(request)
                self._count(response.cached, response.prompt_tokens, response.completion_tokens)
                probability = yes_probability(response)
                if probability is None:  # no log-probabilities: read the word it said
                    probability = yes_from_text(response.text)
                if probability is None:  # not even a word: let the judge finish it
                    response = self.judge.complete(request.model_copy(update={"max_tokens": 3}))
                    self._count(
                        response.cached, response.prompt_tokens, response.completion_tokens
                    )
                    probability = yes_from_text(response.text)
            except JudgeError as exc:
                problem = exchange.error = f"judge call failed: {exc}"
                continue
            exchange.reply, exchange.cached = response.text, response.cached
            if probability is not None:
                exchange.probability = probability
                return probability
            problem = exchange.error = f"neither yes nor no in the reply {response.text!r}"
        raise Unscorable(f"{prompt.name}: {problem} (after {self.retries + 1} attempts)")

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.embedder is None:
            raise Unscorable("this metric needs an embedder and none was given")
        try:
            vectors = self.embedder.embed(texts)
        except JudgeError as exc:
            raise Unscorable(f"embedding failed: {exc}") from exc
        self.usage.embedding_calls += 1
        return vectors

    def _count(self, cached: bool, prompt_tokens: int, completion_tokens: int) -> None:
        if cached:
            self.usage.cached_calls += 1
            return
        self.usage.model_calls += 1
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens
