"""Read a judge's verdict from the probabilities of its first reply token.

A yes/no entailment check or a 1-5 rating needs one token, not a JSON document: one forward pass
with ``ChatRequest(max_tokens=1, top_logprobs=k)`` gives the distribution over the answers. That is
cheaper than generating, and the distribution carries the judge's uncertainty (G-Eval's
probability-weighted score). Judges that return no log-probabilities are remembered, so each
caller falls back to its parsed-JSON prompt without wasting a call per item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragmeter.judges.base import ChatRequest, JudgeError, Message
from ragmeter.prompts import DATA_NOTICE, Inputs, Out, Prompt, render_inputs
from ragmeter.score import Exchange
from ragmeter.session import JudgeSession


class NextTokenProbe:
    """Asks for first-token log-probabilities and sums their probability per option.

    ``supported`` starts unknown and turns False the first time the judge answers without
    log-probabilities; after that every ``distribution`` call returns None at no cost.
    """

    def __init__(self, top_logprobs: int = 5) -> None:
        self.top_logprobs = top_logprobs
        self.supported: bool | None = None

    def distribution(
        self,
        session: JudgeSession,
        name: str,
        messages: Sequence[Message],
        options: Sequence[str],
    ) -> dict[str, float] | None:
        """Probability of each option as the first reply token, or None when unavailable.

        Tokens are compared stripped and case-folded (``" Yes"`` counts for ``yes``). The
        result is not renormalised: callers see how much mass fell on the options at all.
        """
        if self.supported is False:
            return None
        exchange = Exchange(prompt=name, messages=list(messages))
        session.exchanges.append(exchange)
        request = ChatRequest(
            messages=tuple(messages), max_tokens=1, top_logprobs=self.top_logprobs
        )
        try:
            response = session.judge.complete(request)
        except JudgeError as exc:
            exchange.error = f"judge call failed: {exc}"
            return None
        session.record_usage(response.cached, response.prompt_tokens, response.completion_tokens)
        exchange.reply, exchange.cached = response.text, response.cached
        if not response.logprobs:
            self.supported = False
            exchange.error = "the judge returned no log-probabilities"
            return None
        self.supported = True
        wanted = {o.casefold(): o for o in options}
        found = response.logprobs[0].probabilities(lambda t: wanted.get(t.strip().casefold()))
        return {option: found.get(option, 0.0) for option in options}


def token_messages(
    prompt: Prompt[Out],
    inputs: Inputs,
    reply: str,
    example_reply: Callable[[Out], str],
) -> tuple[Message, ...]:
    """``prompt`` rendered for a one-token answer: the same instruction and examples as its JSON
    form, with each example's reply written as the token (``example_reply``) and ``reply``
    telling the judge what to answer with."""
    system = f"{prompt.instruction}\n\n{DATA_NOTICE}\n{reply}"
    messages = [Message(role="system", content=system)]
    for example_inputs, example_output in prompt.examples:
        messages.append(Message(role="user", content=render_inputs(example_inputs)))
        messages.append(Message(role="assistant", content=example_reply(example_output)))
    messages.append(Message(role="user", content=render_inputs(inputs)))
    return tuple(messages)
