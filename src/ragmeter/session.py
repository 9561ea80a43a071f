"""The judge as a metric sees it: ask a typed prompt, get a validated object back.

Transport failures are retried as they are; an unreadable reply is retried with a repair message
that shows the judge its mistake. When the retries run out the metric gets ``Unscorable`` with the
reason, and every exchange (rendered prompt, raw reply, error) is kept for the score's record.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragmeter.judges.base import ChatRequest, Embedder, Judge, JudgeError, Message
from ragmeter.prompts import Inputs, Out, Prompt, ReplyError
from ragmeter.score import Exchange, Unscorable, Usage

Check = Callable[[Out], str | None]


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
