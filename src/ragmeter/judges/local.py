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
from collections.abc import Iterable, Iterator
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
    TokenLogprobs,
)
from ragmeter.judges.weights import BUNDLED, QWEN_CODER_1_5B, ensure_weights, weights_sha256
from ragmeter.options import Options


class LocalJudgeOptions(Options):
    """Options of the ``local`` judge (``--judge-option NAME=VALUE``)."""

    operational = frozenset({"n_ctx", "n_threads"})

    n_ctx: int = Field(8192, ge=256, description="Context window in tokens.")
    n_threads: int | None = Field(
        None, ge=1, description="CPU threads; RAGMETER_THREADS or all cores when unset."
    )
    seed: int = Field(0, description="Sampling seed (replies are greedy unless asked otherwise).")


def local_identity(
    model_path: Path | str | None, options: LocalJudgeOptions
) -> tuple[Path, ModelIdentity]:
    """The GGUF file to load (a bundled model is assembled first) and the identity of the judge
    it makes: the weights' SHA-256 and the options that change replies.

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
    settings = {"weights_sha256": digest, **options.identity()}
    return path, ModelIdentity(provider="local", model=name, settings=settings)


def default_threads() -> int:
    """The CPU threads a judge runs on: ``RAGMETER_THREADS``, else every core.

    The variable lets a user leave cores to other work: llama.cpp's threads wait for each other
    at every step, so sharing cores with another busy process is very slow."""
    return int(os.environ.get("RAGMETER_THREADS", "0")) or os.cpu_count() or 2


class LocalJudge:
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
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:
            raise JudgeError(
                "the local judge needs llama-cpp-python: pip install 'ragmeter[local]'"
            ) from exc
        self.model_path, self.identity = local_identity(model_path, options)
        self.options = options
        threads = options.n_threads or default_threads()
        with without_amx_buffers():
            self._llm = Llama(
                model_path=str(self.model_path),
                n_ctx=options.n_ctx,
                n_threads=threads,
                seed=options.seed,
                verbose=False,
            )
        self._formatter = Jinja2ChatFormatter(
            template=self._llm.metadata["tokenizer.chat_template"],
            eos_token=self._llm.detokenize([self._llm.token_eos()]).decode(),
            bos_token=self._llm.detokenize([self._llm.token_bos()]).decode(),
        )
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.identity.name

    def complete(self, request: ChatRequest) -> ChatResponse:
        messages = [m.model_dump() for m in request.messages]
        with self._lock:
            try:
                if request.top_logprobs and request.max_tokens == 1:
                    return self._next_token(messages, request.top_logprobs)
                return self._generate(messages, request)
            except ValueError as exc:  # e.g. the prompt does not fit the context window
                raise JudgeError(str(exc)) from exc

    def _generate(self, messages: list[dict[str, Any]], request: ChatRequest) -> ChatResponse:
        options: dict[str, Any] = {}
        if request.json_schema is not None:
            options["response_format"] = {"type": "json_object", "schema": request.json_schema}
        steps = _StepLogprobs(self._llm, request.top_logprobs) if request.top_logprobs else None
        if steps is not None:
            from llama_cpp import LogitsProcessorList

            options["logits_processor"] = LogitsProcessorList([steps])
        reply: Any = self._llm.create_chat_completion(
            messages=messages,  # type: ignore[arg-type]
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            **options,
        )
        choice = reply["choices"][0]
        text = choice["message"]["content"] or ""
        return ChatResponse(
            text=text,
            logprobs=steps.tokens(text) if steps is not None else None,
            prompt_tokens=reply["usage"]["prompt_tokens"],
            completion_tokens=reply["usage"]["completion_tokens"],
            finish_reason=choice.get("finish_reason"),
        )

    def _next_token(self, messages: list[dict[str, Any]], top: int) -> ChatResponse:
        """Log-probabilities of the first reply token, from one forward pass.

        Reading the last position's logits directly avoids ``logits_all`` (which would keep
        n_ctx x vocabulary floats); the KV cache of the longest shared prefix is kept, so
        questions about the same context only pay for their own tokens.
        """
        llm = self._llm
        prompt = self._formatter(messages=messages).prompt
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        if len(tokens) >= llm.n_ctx():
            raise JudgeError(f"prompt of {len(tokens)} tokens exceeds the {llm.n_ctx()} context")
        shared = 0
        for cached, new in zip(llm.input_ids[: llm.n_tokens], tokens[:-1], strict=False):
            if cached != new:
                break
            shared += 1
        llm.n_tokens = shared  # eval() drops the cache past this point
        llm.eval(tokens[shared:])
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
        logprobs = _log_softmax(logits)
        best = np.argsort(logprobs)[::-1][:top]
        alternatives = _alternatives(llm, logprobs, best)
        first = _piece(llm, int(best[0]))
        return ChatResponse(
            text=first,
            logprobs=[
                TokenLogprobs(token=first, logprob=float(logprobs[best[0]]), top=alternatives)
            ],
            prompt_tokens=len(tokens) - shared,
            completion_tokens=1,
            finish_reason="length",
        )


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    peak = logits.max()
    return logits - (peak + np.log(np.exp(logits - peak).sum()))


def _piece(llm: Any, token: int) -> str:
    return llm.detokenize([token]).decode(errors="replace")


def _alternatives(llm: Any, logprobs: np.ndarray, tokens: Iterable[int]) -> dict[str, float]:
    return {_piece(llm, int(i)): float(logprobs[i]) for i in tokens}


class _StepLogprobs:
    """A logits processor that changes nothing and keeps, for each generated token, its
    log-probability and the most likely alternatives.

    llama-cpp-python returns per-token log-probabilities only from a context that keeps the
    logits of every position (``logits_all``: n_ctx x vocabulary floats, gigabytes here); the
    processor sees each step's logits as they are computed, before a grammar masks them.
    """

    def __init__(self, llm: Any, top: int) -> None:
        self._llm = llm
        self._top = top
        self._steps: list[TokenLogprobs] = []
        self._chosen = 0
        """How many of the steps are known to have chosen a token (all but the last, at most)."""
        self._last: np.ndarray | None = None
        """The latest step's log-probabilities, until the next step shows which token it chose."""
        # A character of several bytes may be split over tokens: decoding the chosen tokens
        # as one stream makes their texts add up to the reply's text.
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._last is not None:  # the previous step's choice is now the last input
            self._choose(int(input_ids[-1]))
        self._last = _log_softmax(scores)
        best = np.argpartition(self._last, -self._top)[-self._top :]
        top = _alternatives(self._llm, self._last, best)
        self._steps.append(TokenLogprobs(token="", logprob=0.0, top=top))
        return scores

    def tokens(self, text: str) -> list[TokenLogprobs]:
        """The chosen tokens with their log-probabilities and alternatives.

        Nothing shows the last step's choice but the reply: what remains of ``text`` (nothing
        when the step chose to end it, or the last token when the token limit cut it off). If
        that is not one token, the step is left out rather than guessed.
        """
        if self._last is not None:
            written = "".join(step.token for step in self._steps[: self._chosen])
            rest = text[len(written) :] if text.startswith(written) else ""
            ids = self._llm.tokenize(rest.encode(), add_bos=False, special=True) if rest else []
            if len(ids) == 1:
                self._choose(ids[0])
        return self._steps[: self._chosen]

    def _choose(self, token: int) -> None:
        assert self._last is not None
        step = self._steps[-1]
        step.token = self._text.decode(self._llm.detokenize([token]))
        step.logprob = float(self._last[token])
        self._chosen += 1
        self._last = None


_LOAD_LOCK = threading.Lock()


@contextmanager
def without_amx_buffers() -> Iterator[None]:
    """Load the model without llama.cpp's extra weight buffers when the CPU backend uses AMX.

    On AMX-capable CPUs a build for the local machine moves Q4_K weights into AMX buffers, and
    the AMX matrix kernel then crashes the process on the first prompt of more than one token
    (a segmentation fault, ggml-org/llama.cpp#20824). Without extra buffers the weights stay in
    plain CPU memory and the AVX-512 kernels run instead. ``Llama`` has no argument for this, so
    the default model parameters are adjusted while it loads.
    """
    import llama_cpp.llama_cpp as native

    if b"AMX_INT8 = 1" not in native.llama_print_system_info():
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
