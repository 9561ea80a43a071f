"""The offline default judge: a GGUF model run in-process by llama-cpp-python.

By default it is Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) assembled from PyPI part packages; any other
GGUF file can be named with ``local:/path/to/model.gguf``. Calls are serialised (one model, one
context); consecutive prompts that share a prefix (the same instructions and context) reuse the
evaluated prefix, which is why metrics put long shared text first.
"""

from __future__ import annotations

import codecs
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    JudgeError,
    ModelIdentity,
    Reply,
    TokenLogprobs,
    is_probe,
    pack_state,
)
from ragmeter.judges.llama_engine import DECODER, amx_backend, log_softmax
from ragmeter.judges.weights import BUNDLED, QWEN_CODER_1_5B, ensure_weights, weights_sha256
from ragmeter.options import Options

STATES = ("l_out-16",)
"""The hidden states every Yes/No probe returns with its log-probabilities by default, for
verdict heads: the 16th layer's output (of 28), which the shipped heads and ``tune`` read. Each
adds about 4 KB to a cached probe; ``states=`` keeps others (``FINAL_STATE``, another layer).
They add to a reply without changing it, so they are not part of the judge's identity: the call
cache serves a stored probe only if it holds them all (see ``CachedJudge``)."""


class LocalJudgeOptions(Options):
    """Options of the ``local`` judge (``--judge-option NAME=VALUE``)."""

    # Hidden states add to a reply without changing it: not part of the judge's identity.
    operational = frozenset({"n_ctx", "n_threads", "states"})

    n_ctx: int = Field(8192, ge=256, description="Context window in tokens.")
    n_threads: int | None = Field(
        None, ge=1, description="CPU threads; RAGMETER_THREADS or all cores when unset."
    )
    seed: int = Field(0, description="Sampling seed (replies are greedy unless asked otherwise).")
    states: str = Field(
        ",".join(STATES),
        pattern=r"^((l_out-\d+|result_norm)(,(l_out-\d+|result_norm))*)?$",
        description="Hidden states each Yes/No verdict keeps, for verdict heads and ragmeter "
        "tune: l_out-N (layer N's output) or result_norm (the final state), comma-separated.",
    )

    @property
    def state_names(self) -> tuple[str, ...]:
        return tuple(name for name in self.states.split(",") if name)


def local_identity(
    model_path: Path | str | None, options: LocalJudgeOptions
) -> tuple[Path, ModelIdentity]:
    """The GGUF file to load (a bundled model is assembled first) and the identity of the judge
    it makes: the weights' SHA-256, the way replies are decoded (``DECODER``) and the options
    that change replies.

    A file swapped under the same name is another model: the hash, not the name, says which
    weights answered (a user's file is hashed once, then remembered: see ``weights_sha256``).
    """
    if model_path is None or str(model_path) in BUNDLED:
        weights = BUNDLED.get(str(model_path), QWEN_CODER_1_5B)
        path, name, digest = ensure_weights(weights), weights.name, weights.sha256
    else:
        path = Path(model_path)
        if not path.is_file():
            raise JudgeError(f"no GGUF file at {path}")
        name, digest = path.stem, weights_sha256(path)
    settings = {"weights_sha256": digest, "decoder": DECODER, **options.identity()}
    return path, ModelIdentity(provider="local", model=name, settings=settings)


def default_threads() -> int:
    """The CPU threads a judge runs on: ``RAGMETER_THREADS``, else every core.

    The variable lets a user leave cores to other work: llama.cpp's threads wait for each other
    at every step, so sharing cores with another busy process is very slow."""
    return int(os.environ.get("RAGMETER_THREADS", "0")) or os.cpu_count() or 2


class LocalJudge:
    answers_batches = True
    """Probes asked together read their shared prefix once (see ``complete_batch``)."""

    def __init__(
        self,
        model_path: Path | str | None = None,
        options: LocalJudgeOptions | None = None,
        **values: Any,
    ) -> None:
        """Load the weights (the bundled model by default); options as a ``LocalJudgeOptions`` or
        as keywords (``n_ctx=4096``)."""
        if options is not None and values:
            raise TypeError("give the options as LocalJudgeOptions or as keywords, not both")
        options = options or LocalJudgeOptions.parse(values, "the local judge")
        try:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:
            raise JudgeError(
                "the local judge needs llama-cpp-python: pip install 'ragmeter[local]'"
            ) from exc
        from ragmeter.judges.llama_engine import LlamaEngine

        self.model_path, self.identity = local_identity(model_path, options)
        self.options = options
        self._engine = LlamaEngine(
            self.model_path,
            n_ctx=options.n_ctx,
            n_threads=options.n_threads or default_threads(),
            states=options.state_names,
        )
        model = self._engine.model
        self._formatter = Jinja2ChatFormatter(
            template=model.metadata()["tokenizer.chat_template"],
            eos_token=self._engine.piece(model.token_eos()).decode(),
            bos_token=self._engine.piece(model.token_bos()).decode(),
        )
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def states(self) -> tuple[str, ...]:
        """The hidden states each probe's reply carries."""
        return self.options.state_names

    @property
    def window(self) -> int:
        """The context window in tokens: the longest prompt this judge reads."""
        return self.options.n_ctx

    def count_tokens(self, text: str) -> int:
        """The tokens ``text`` takes in this judge's vocabulary."""
        return len(self._engine.tokenize(text))

    def complete(self, request: ChatRequest) -> ChatResponse:
        reply = self.complete_batch([request])[0]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def complete_batch(self, requests: Sequence[ChatRequest], concurrency: int = 1) -> list[Reply]:
        """Answer ``requests`` in order: the next-token probes among them together, over the
        prefixes they share (see ``LlamaEngine``), then the replies to generate one by one.
        ``concurrency`` does not apply to one in-process model."""
        replies: list[Reply | None] = [None] * len(requests)
        with self._lock:
            probes = [i for i, request in enumerate(requests) if is_probe(request)]
            for i, reply in zip(probes, self._probe([requests[i] for i in probes]), strict=True):
                replies[i] = reply
            for i, request in enumerate(requests):
                if replies[i] is None:
                    try:
                        replies[i] = self._generate(request)
                    except JudgeError as exc:
                        replies[i] = exc
        return [reply for reply in replies if reply is not None]

    def _tokens(self, request: ChatRequest) -> list[int]:
        """The request as the model reads it, refused if it does not fit the context window."""
        if request.temperature != 0:
            raise JudgeError("the local judge replies greedily: temperature must be 0")
        messages = [m.model_dump() for m in request.messages]
        tokens = self._engine.tokenize(self._formatter(messages=messages).prompt)
        self._engine.check_length(tokens)
        return tokens

    def _probe(self, requests: Sequence[ChatRequest]) -> list[Reply]:
        """The first reply token's log-probabilities for each request, from one forward pass:
        the prompts that fit are read together, the others answered with their error."""
        replies: dict[int, Reply] = {}
        prompts: dict[int, list[int]] = {}
        for i, request in enumerate(requests):
            try:
                prompts[i] = self._tokens(request)
            except JudgeError as exc:
                replies[i] = exc
        try:
            probes = self._engine.probe(list(prompts.values())) if prompts else []
        except JudgeError as exc:
            return [replies.get(i, exc) for i in range(len(requests))]
        for i, probe in zip(prompts, probes, strict=True):
            logprobs = log_softmax(probe.logits)
            best = np.argsort(logprobs)[::-1][: requests[i].top_logprobs]
            first = self._piece(int(best[0]))
            replies[i] = ChatResponse(
                text=first,
                logprobs=[
                    TokenLogprobs(
                        token=first,
                        logprob=float(logprobs[best[0]]),
                        top=self._alternatives(logprobs, best),
                    )
                ],
                prompt_tokens=probe.read,  # a shared prefix counts with the first that read it
                completion_tokens=1,
                finish_reason="length",
                states={name: pack_state(v) for name, v in probe.states.items()} or None,
            )
        return [replies[i] for i in range(len(requests))]

    def _generate(self, request: ChatRequest) -> ChatResponse:
        prompt = self._tokens(request)
        reply = self._engine.generate(
            prompt,
            max_tokens=request.max_tokens,
            schema=request.json_schema,
            keep_steps=request.top_logprobs > 0,
        )
        text = self._engine.detokenize(reply.tokens)
        return ChatResponse(
            text=text,
            logprobs=self._steps(reply.tokens, reply.steps, request.top_logprobs)
            if request.top_logprobs
            else None,
            prompt_tokens=reply.read,
            completion_tokens=len(reply.tokens),
            finish_reason=reply.finish_reason,
        )

    def _steps(self, tokens: list[int], steps: list[np.ndarray], top: int) -> list[TokenLogprobs]:
        """Each reply token with its log-probability and the ``top`` most likely alternatives,
        before the grammar masked any. A character of several bytes may be split over tokens:
        decoding the tokens as one stream makes their texts add up to the reply's text."""
        text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        found = []
        for token, logprobs in zip(tokens, steps, strict=True):
            best = np.argpartition(logprobs, -top)[-top:]
            found.append(
                TokenLogprobs(
                    token=text.decode(self._engine.piece(token)),
                    logprob=float(logprobs[token]),
                    top=self._alternatives(logprobs, best),
                )
            )
        return found

    def _piece(self, token: int) -> str:
        return self._engine.piece(token).decode(errors="replace")

    def _alternatives(self, logprobs: np.ndarray, tokens: Iterable[int]) -> dict[str, float]:
        return {self._piece(int(i)): float(logprobs[i]) for i in tokens}


_LOAD_LOCK = threading.Lock()


@contextmanager
def without_amx_buffers() -> Iterator[None]:
    """Load models without llama.cpp's extra weight buffers when the CPU backend uses AMX (see
    ``amx_backend``: its kernel crashes), for code that loads through ``llama_cpp.Llama`` (the
    server), which has no argument for this: the default model parameters are adjusted while it
    loads."""
    import llama_cpp.llama_cpp as native

    if not amx_backend():
        yield
        return
    defaults = native.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    with _LOAD_LOCK:
        native.llama_model_default_params = without_extra_buffers
        try:
            yield
        finally:
            native.llama_model_default_params = defaults


def create_judge(model: str = "", **options: Any) -> LocalJudge:
    return LocalJudge(model or None, **options)
