"""The llama.cpp runtime under the local judge: one context whose memory holds several token
sequences at once.

Reading tokens is most of what a judge on a CPU costs, so this engine reads each one as few times
as it can:

- **Cached prefixes.** Each of a few *slots* keeps the tokens it last read. A prompt goes to the
  slot that shares the longest prefix with it and reads only what follows; the fixed instruction
  of each kind of question, and a sample's context, therefore stay read across the questions and
  metrics that interleave between them. A slot that would lose most of what it holds gives its
  shared part to the least recently used slot instead (in a unified memory a copied prefix shares
  the cells; nothing is read again).
- **Probes in batches.** Next-token probes that share a prefix are answered together: the prefix
  is read once, then every probe's own tokens are read in one decode, each in a sequence of its
  own that starts from the prefix.
- **Drafted generation.** Replies are greedy. What a judge writes often copies its prompt
  (statements restate the answer), so the continuation of the latest tokens' earlier occurrence
  is proposed as a draft and checked in one decode; only drafted tokens the model would have
  chosen itself are kept, so the reply is the plain greedy one.

A JSON schema is enforced with llama.cpp's grammar sampler, applied only when the most likely
token breaks it (checking one token is far cheaper than masking the whole vocabulary).
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.judges.base import JudgeError

DECODER = "slots, batched probes, drafted greedy replies (1)"
"""How this engine computes replies, in the local judge's identity: batches and drafts change
the arithmetic a little, so replies cached from another way of decoding are not reused."""
BATCH_TOKENS = 512
"""Tokens per decode: llama.cpp's default batch, large enough for matrix kernels to pay off."""
DRAFT_TOKENS = 8
"""Drafted tokens checked per decode; a longer draft costs more when it is wrong early."""
DRAFT_NGRAM = 3
"""The longest run of latest tokens looked up in the prompt to find a draft."""
FINAL_STATE = "result_norm"
"""llama.cpp's name for the final hidden state (after the output norm), the vector the output
matrix turns into logits; a layer's output is ``l_out-N``."""


class _StateTap:
    """Copies named hidden states out of llama.cpp's graph while it computes (its ``cb_eval``
    hook): the rows of one decode's output positions, for verdict heads to read.

    Asked about every tensor of every decode, it wants one only while ``armed`` (a decode of
    probes), so prefix reads and generation run as one graph, as without the tap."""

    def __init__(self, names: Sequence[str]) -> None:
        import llama_cpp as native
        from llama_cpp._ggml import libggml

        self.names = tuple(names)
        self._wanted = {name.encode() for name in names}
        self.armed = False
        self.found: dict[str, np.ndarray] = {}
        libggml.ggml_get_name.restype = ctypes.c_char_p
        libggml.ggml_get_name.argtypes = [ctypes.c_void_p]
        libggml.ggml_nelements.restype = ctypes.c_int64
        libggml.ggml_nelements.argtypes = [ctypes.c_void_p]
        libggml.ggml_get_data_f32.restype = ctypes.POINTER(ctypes.c_float)
        libggml.ggml_get_data_f32.argtypes = [ctypes.c_void_p]
        self._ggml = libggml
        # Kept on the object: llama.cpp holds only the C pointer.
        self.callback = native.ggml_backend_sched_eval_callback(self._on_tensor)

    def _on_tensor(self, tensor: int, ask: bool, _user: int) -> bool:
        if not self.armed:
            return False
        name = self._ggml.ggml_get_name(tensor)
        if name not in self._wanted:
            return False
        if not ask:
            size = self._ggml.ggml_nelements(tensor)
            data = np.ctypeslib.as_array(self._ggml.ggml_get_data_f32(tensor), shape=(size,))
            self.found[name.decode()] = data.copy()
        return True

    def rows(
        self, width: int, tokens: int, batch_rows: Sequence[int]
    ) -> list[dict[str, np.ndarray]]:
        """Each output position's states, from what the last decode of ``tokens`` tokens left:
        a layer's output holds a row per token of the batch, the final state a row per output."""
        found, self.found = self.found, {}
        out: list[dict[str, np.ndarray]] = [{} for _ in batch_rows]
        for name in self.names:
            if name not in found:
                raise JudgeError(f"llama.cpp computed no hidden state named {name!r}")
            table = found[name].reshape(-1, width)
            final = name == FINAL_STATE
            if len(table) != (len(batch_rows) if final else tokens):
                # More than one micro-batch, or a layer trimmed to the output rows: a row read
                # by its place in the batch would be another token's state.
                raise JudgeError(
                    f"{name!r} came in {len(table)} rows for a batch of {tokens} tokens "
                    f"with {len(batch_rows)} outputs"
                )
            for n, row in enumerate(batch_rows):
                out[n][name] = table[n if final else row].copy()
        return out


@dataclass
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)
    used: int = 0


@dataclass
class Probe:
    """The next-token logits after one prompt, the hidden states asked for at that position,
    and how many of the prompt's tokens had to be read."""

    logits: np.ndarray
    states: dict[str, np.ndarray]
    read: int


@dataclass
class Generated:
    """A greedy reply: its tokens, each step's log-probabilities (when asked for), why it
    ended, and how many prompt tokens had to be read."""

    tokens: list[int]
    steps: list[np.ndarray]
    """The log-softmax over the vocabulary before each emitted token (only if asked)."""
    finish_reason: str
    read: int


def _check_layers(states: Sequence[str], layers: int) -> None:
    """Refuse a layer the model lacks, or its last: llama.cpp keeps the last layer's output
    only at the output rows, so it cannot be read by a token's place in the batch (its
    normalized form is ``result_norm``)."""
    for name in states:
        if name != FINAL_STATE and not 0 <= int(name.removeprefix("l_out-")) < layers - 1:
            raise JudgeError(
                f"hidden state {name!r}: this model has layers l_out-0 to l_out-{layers - 2} "
                f"to read (and {FINAL_STATE})"
            )


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _by_prefix(prompts: Sequence[Sequence[int]], least: int = 32) -> list[list[int]]:
    """The prompts' indices in groups that share a prefix worth reading once: prompts in token
    order, a new group wherever the prefix shared with the group would fall below ``least``
    tokens or below half of what the group shared so far. Each group lists its indices in the
    order asked."""
    order = sorted(range(len(prompts)), key=lambda i: list(prompts[i]))
    groups: list[list[int]] = []
    shared = 0
    for i in order:
        if groups:
            common = _common_prefix(prompts[groups[-1][0]], prompts[i])
            if common >= least and common * 2 >= shared:
                groups[-1].append(i)
                shared = min(shared, common)
                continue
        groups.append([i])
        shared = len(prompts[i])
    return [sorted(group) for group in groups]  # the first asked reads the prefix


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    peak = logits.max()
    return logits - (peak + np.log(np.exp(logits - peak).sum()))


@lru_cache(maxsize=32)
def _gbnf(schema_json: str) -> str:
    """The schema as a grammar; any JSON object where llama.cpp cannot convert it (as its own
    chat completions do)."""
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    try:
        return json_schema_to_gbnf(schema_json)
    except Exception:
        return JSON_GBNF


class _Grammar:
    """llama.cpp's grammar sampler over one reply: says whether a token fits, narrows a whole
    vocabulary's logits to the tokens that fit, and advances as tokens are chosen."""

    def __init__(self, vocab: Any, schema: dict[str, Any], n_vocab: int) -> None:
        import llama_cpp as native

        self._native = native
        grammar = _gbnf(json.dumps(schema))  # key order is the order written
        self._sampler = native.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        if not self._sampler:
            raise JudgeError("llama.cpp could not compile the reply's JSON schema to a grammar")
        self._one = (native.llama_token_data * 1)()
        self._all = (native.llama_token_data * n_vocab)()
        self._all_view = np.frombuffer(
            self._all, dtype=np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        )
        self._all_view["id"] = np.arange(n_vocab, dtype=np.int32)

    def _apply(self, data: Any, size: int) -> None:
        array = self._native.llama_token_data_array(
            data=ctypes.cast(data, self._native.llama_token_data_p),
            size=size,
            selected=-1,
            sorted=False,
        )
        self._native.llama_sampler_apply(self._sampler, ctypes.byref(array))

    def allows(self, token: int) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 0.0, 0.0
        self._apply(self._one, 1)
        return bool(np.isfinite(self._one[0].logit))

    def best(self, logits: np.ndarray) -> int:
        """The most likely token the grammar allows."""
        self._all_view["logit"] = logits
        self._all_view["p"] = 0.0
        self._apply(self._all, len(self._all_view))
        return int(np.argmax(self._all_view["logit"]))

    def accept(self, token: int) -> None:
        self._native.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._native.llama_sampler_free(self._sampler)
            self._sampler = None


def amx_backend() -> bool:
    """Whether llama.cpp's CPU backend would move weights into AMX buffers.

    On AMX-capable CPUs a build for the local machine moves Q4_K weights into AMX buffers, and
    the AMX matrix kernel then crashes the process on the first prompt of more than one token
    (a segmentation fault, ggml-org/llama.cpp#20824). Loaded without extra buffers, the weights
    stay in plain CPU memory and the AVX-512 kernels run instead.
    """
    import llama_cpp.llama_cpp as native

    return b"AMX_INT8 = 1" in native.llama_print_system_info()


class LlamaEngine:
    """A GGUF model with one llama.cpp context that keeps ``slots`` token sequences cached and
    answers batches of probes in up to ``scratch`` sequences at once. Not thread-safe: the
    local judge holds a lock around it."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int,
        n_threads: int,
        slots: int = 6,
        scratch: int = 32,
        states: Sequence[str] = (),
    ) -> None:
        """``states``: the hidden states (llama.cpp's tensor names: ``FINAL_STATE``,
        ``l_out-N``) each probe also returns at its output position."""
        import llama_cpp as native
        from llama_cpp._internals import LlamaModel
        from llama_cpp._logger import set_verbose

        self._native = native
        set_verbose(False)  # llama.cpp's load and graph reports, on every load
        native.llama_backend_init()
        params = native.llama_model_default_params()
        params.use_extra_bufts = not amx_backend()
        self.model = LlamaModel(path_model=str(model_path), params=params, verbose=False)
        self.vocab = self.model.vocab
        self.n_vocab = self.model.n_vocab()
        self.n_ctx = n_ctx
        context = native.llama_context_default_params()
        # The cells are shared by every sequence (a unified memory): a prompt may use all of
        # ``n_ctx``, and the slots keep what fits beside it.
        context.n_ctx = 2 * n_ctx
        context.n_batch = context.n_ubatch = BATCH_TOKENS
        context.n_seq_max = slots + scratch
        context.n_threads = context.n_threads_batch = n_threads
        context.kv_unified = True
        context.no_perf = True
        _check_layers(states, native.llama_model_n_layer(self.model.model))
        self._tap = _StateTap(states) if states else None
        if self._tap is not None:
            context.cb_eval = self._tap.callback
        self.width = self.model.n_embd()
        self._ctx = native.llama_init_from_model(self.model.model, context)
        if not self._ctx:
            raise JudgeError("llama.cpp could not create a context for the local judge")
        self._memory = native.llama_get_memory(self._ctx)
        self._batch = native.llama_batch_init(BATCH_TOKENS, 0, 1)
        self._slots = [_Slot(seq) for seq in range(slots)]
        self._scratch = list(range(slots, slots + scratch))
        self._clock = 0

    # --- text ------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        return list(self.model.tokenize(text.encode(), add_bos=False, special=True))

    def piece(self, token: int) -> bytes:
        return bytes(self.model.detokenize([token]))

    def detokenize(self, tokens: Sequence[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode(errors="replace")

    def is_end(self, token: int) -> bool:
        return bool(self._native.llama_vocab_is_eog(self.vocab, token))

    # --- probes ----------------------------------------------------------------------------

    def probe(self, prompts: Sequence[Sequence[int]]) -> list[Probe]:
        """The next-token logits (and asked-for hidden states) after each prompt, and how many
        tokens were read for each (a shared prefix is counted with the first prompt that read
        it).

        Prompts are grouped by the prefix they share (the instruction and a context, say); each
        group's prefix is read once into a slot, then its prompts' own tokens are read in
        sequences that start from it, as many per decode as fit."""
        for prompt in prompts:
            self.check_length(prompt)
        found: list[Probe | None] = [None] * len(prompts)
        for group in _by_prefix(prompts):
            for i, probe in zip(group, self._probe_group([prompts[i] for i in group]), strict=True):
                found[i] = probe
        return [probe for probe in found if probe is not None]

    def _probe_group(self, prompts: list[Sequence[int]]) -> list[Probe]:
        shared = min(len(p) for p in prompts) - 1
        for prompt in prompts[1:]:
            shared = min(shared, _common_prefix(prompts[0], prompt))
        slot, prefix_read = self._slot_for(prompts[0][:shared])
        own = [len(p) - shared for p in prompts]
        read = [*own]
        read[0] += prefix_read
        probes: list[Probe] = []
        waiting = list(range(len(prompts)))
        while waiting:
            group = self._fill(waiting, own)
            seqs = dict(zip(group, self._scratch, strict=False))
            for seq in seqs.values():
                self._native.llama_memory_seq_cp(self._memory, slot.seq, seq, 0, shared)
            states: list[dict[str, np.ndarray]] = []
            try:
                rows = self._decode_many(
                    [(seqs[i], shared, list(prompts[i][shared:])) for i in group],
                    protect=slot,
                    states=states,
                )
            finally:
                for seq in seqs.values():
                    self._native.llama_memory_seq_rm(self._memory, seq, -1, -1)
            states = states or [{} for _ in rows]
            probes += [
                Probe(row, state, read[i])
                for i, row, state in zip(group, rows, states, strict=True)
            ]
            waiting = waiting[len(group) :]
        return probes

    def _fill(self, waiting: list[int], own: list[int]) -> list[int]:
        """The next probes to decode together: as many as there are scratch sequences and
        tokens in a batch (at least one, which a long one fills alone, over several decodes)."""
        group, tokens = [], 0
        for index in waiting:
            if group and (len(group) == len(self._scratch) or tokens + own[index] > BATCH_TOKENS):
                break
            group.append(index)
            tokens += own[index]
        return group

    # --- generation ------------------------------------------------------------------------

    def generate(
        self,
        prompt: Sequence[int],
        *,
        max_tokens: int,
        schema: dict[str, Any] | None = None,
        keep_steps: bool = False,
    ) -> Generated:
        """The greedy reply to ``prompt`` (constrained to ``schema`` when given), with drafts
        from the prompt checked several tokens per decode."""
        self.check_length(prompt)
        slot, read = self._slot_for(prompt[:-1])
        grammar = _Grammar(self.vocab, schema, self.n_vocab) if schema is not None else None
        out: list[int] = []
        steps: list[np.ndarray] = []
        feed = [prompt[-1]]
        read += 1
        try:
            while True:
                rows = self._decode_many(
                    [(slot.seq, len(slot.tokens), feed)], protect=slot, all_rows=True
                )
                slot.tokens += feed
                draft = feed[1:]
                for position, row in enumerate(rows):
                    # What the slot holds that this choice stands on: the reply so far and the
                    # drafted tokens before this position, all chosen; what follows may not be.
                    valid = len(slot.tokens) - len(draft) + position
                    token = self._choose(row, grammar)
                    chose_draft = position < len(draft) and token == draft[position]
                    if grammar is not None:
                        grammar.accept(token)
                    if self.is_end(token):
                        self._truncate(slot, valid)
                        return Generated(out, steps, "stop", read)
                    if keep_steps:
                        steps.append(log_softmax(row))
                    out.append(token)
                    if len(out) >= max_tokens:
                        self._truncate(slot, valid)
                        return Generated(out, steps, "length", read)
                    if not chose_draft:
                        self._truncate(slot, valid)  # the rest of the draft was read in vain
                        break
                feed = [out[-1], *self._draft(list(prompt) + out)]
        finally:
            if grammar is not None:
                grammar.close()

    def _choose(self, row: np.ndarray, grammar: _Grammar | None) -> int:
        token = int(np.argmax(row))
        if grammar is None or grammar.allows(token):
            return token
        return grammar.best(row)

    @staticmethod
    def _draft(tokens: list[int]) -> list[int]:
        """What followed the latest occurrence of the last few tokens, up to ``DRAFT_TOKENS``."""
        for n in range(min(DRAFT_NGRAM, len(tokens) - 1), 0, -1):
            tail = tokens[-n:]
            for start in range(len(tokens) - n - 1, -1, -1):
                if tokens[start : start + n] == tail:
                    follow = tokens[start + n : start + n + DRAFT_TOKENS]
                    if follow:
                        return follow
        return []

    # --- slots and decoding ----------------------------------------------------------------

    def check_length(self, prompt: Sequence[int]) -> None:
        if not prompt:
            raise JudgeError("empty prompt")
        if len(prompt) >= self.n_ctx:
            raise JudgeError(f"prompt of {len(prompt)} tokens exceeds the {self.n_ctx} context")

    def _slot_for(self, tokens: Sequence[int]) -> tuple[_Slot, int]:
        """A slot that holds exactly ``tokens``, and how many of them had to be read."""
        self._clock += 1
        best = max(self._slots, key=lambda s: (_common_prefix(s.tokens, tokens), s.used))
        shared = _common_prefix(best.tokens, tokens)
        slot = best
        if shared < len(best.tokens) and shared * 2 < len(best.tokens):
            # Reading on here would throw away most of what ``best`` holds: another slot
            # takes the shared part and ``best`` keeps its text for the prompts that need it.
            slot = min((s for s in self._slots if s is not best), key=lambda s: s.used)
            self._truncate(slot, 0)
            if shared:
                self._native.llama_memory_seq_cp(self._memory, best.seq, slot.seq, 0, shared)
                slot.tokens = list(tokens[:shared])
        else:
            self._truncate(slot, shared)
        slot.used = self._clock
        rest = list(tokens[shared:])
        if rest:
            self._decode_many([(slot.seq, shared, rest)], protect=slot, logits=False)
            slot.tokens += rest
        return slot, len(rest)

    def _truncate(self, slot: _Slot, length: int) -> None:
        if length < len(slot.tokens):
            self._native.llama_memory_seq_rm(self._memory, slot.seq, length, -1)
            del slot.tokens[length:]

    def _decode_many(
        self,
        runs: Sequence[tuple[int, int, list[int]]],
        *,
        protect: _Slot,
        logits: bool = True,
        all_rows: bool = False,
        states: list[dict[str, np.ndarray]] | None = None,
    ) -> list[np.ndarray]:
        """Read each run (a sequence, the position it starts at, its tokens), ``BATCH_TOKENS`` at
        a time; the logits after each run's last token (or after each of its tokens with
        ``all_rows``). With ``states`` (a list to fill) and a tap, the hidden states at the same
        positions are appended to it. Memory that runs out is freed by evicting the least
        recently used slots other than ``protect``."""
        tap = self._tap if states is not None and logits else None
        native, batch = self._native, self._batch
        queue = [
            (seq, start + i, token, i == len(tokens) - 1)
            for seq, start, tokens in runs
            for i, token in enumerate(tokens)
        ]
        rows: list[np.ndarray] = []
        for begin in range(0, len(queue), BATCH_TOKENS):
            chunk = queue[begin : begin + BATCH_TOKENS]
            batch.n_tokens = len(chunk)
            wanted = []
            for i, (seq, position, token, last) in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = position
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq
                want = logits and (last or all_rows)
                batch.logits[i] = want
                if want:
                    wanted.append(i)
            if tap is not None:
                tap.armed = True
            try:
                while (status := native.llama_decode(self._ctx, batch)) == 1:
                    if not self._evict(protect):
                        raise JudgeError("the local judge's memory is full; raise n_ctx")
            finally:
                if tap is not None:
                    tap.armed = False
            if status != 0:
                raise JudgeError(f"llama_decode failed with status {status}")
            for i in wanted:
                pointer = native.llama_get_logits_ith(self._ctx, i)
                rows.append(np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy())
            if tap is not None and states is not None:
                states += tap.rows(self.width, len(chunk), wanted)
        return rows

    def _evict(self, protect: _Slot) -> bool:
        held = [s for s in self._slots if s is not protect and s.tokens]
        if not held:
            return False
        self._truncate(min(held, key=lambda s: s.used), 0)
        return True

    def close(self) -> None:
        native = self._native
        if getattr(self, "_batch", None) is not None:
            native.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "_ctx", None):
            native.llama_free(self._ctx)
            self._ctx = None
        self.model.close()
