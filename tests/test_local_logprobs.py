"""The local judge's per-token log-probabilities, on a stand-in for llama.cpp (no model needed).

Each step's logits are seen before the step's token is chosen; the choice shows up only as the
last input of the next step, and the last step's choice only in the reply's text.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmeter.judges.local import _StepLogprobs

PIECES = [b"{", b'"a', b'":', b" 1", b"}", b"\xc3", b"\xa9", b"<end>"]
"""Token ids 0-7; "é" is split over two tokens (5 and 6)."""


class Vocabulary:
    def detokenize(self, tokens: list[int]) -> bytes:
        return b"".join(PIECES[t] for t in tokens)

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return [PIECES.index(text)] if text in PIECES else [0, 0]  # anything else: 2 tokens


def logits(favoured: int) -> np.ndarray:
    """Probability 0.5 on the favoured token, 0.5 / 7 on each other one."""
    row = np.full(len(PIECES), math.log(0.5 / 7))
    row[favoured] = math.log(0.5)
    return row


def generate(chosen: list[int], processor: _StepLogprobs) -> None:
    """What llama.cpp does: one call per step, with the prompt and the tokens chosen so far."""
    prompt = [7, 7]
    for n, token in enumerate(chosen):
        processor(np.array(prompt + chosen[:n]), logits(token))


def test_each_step_gets_the_token_it_chose_and_the_last_comes_from_the_text():
    steps = _StepLogprobs(Vocabulary(), top=2)
    generate([0, 1, 2, 3, 4], steps)
    tokens = steps.tokens('{"a": 1}')
    assert [t.token for t in tokens] == ["{", '"a', '":', " 1", "}"]
    assert all(t.logprob == pytest.approx(math.log(0.5)) for t in tokens)
    assert tokens[3].top[" 1"] == pytest.approx(math.log(0.5))
    assert len(tokens[3].top) == 2


def test_a_step_that_ended_the_reply_is_left_out():
    steps = _StepLogprobs(Vocabulary(), top=2)
    generate([0, 1, 7], steps)  # the third step chose the end: the reply is '{"a'
    assert [t.token for t in steps.tokens('{"a')] == ["{", '"a']


def test_a_last_token_that_is_not_one_token_of_the_text_is_not_guessed():
    steps = _StepLogprobs(Vocabulary(), top=2)
    generate([0, 1], steps)
    assert [t.token for t in steps.tokens('{"a" and more')] == ["{"]


def test_a_character_split_over_tokens_is_written_once_its_bytes_are_complete():
    steps = _StepLogprobs(Vocabulary(), top=2)
    generate([0, 5, 6, 4], steps)
    tokens = steps.tokens("{é}")
    assert [t.token for t in tokens] == ["{", "", "é", "}"]
    assert "".join(t.token for t in tokens) == "{é}"
