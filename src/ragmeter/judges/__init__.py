"""Model providers behind two small protocols: ``Judge`` (chat) and ``Embedder``."""

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    Embedder,
    Judge,
    JudgeError,
    Message,
    TokenLogprobs,
)
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.judges.registry import get_embedder, get_judge

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "Embedder",
    "FakeJudge",
    "HashingEmbedder",
    "Judge",
    "JudgeError",
    "Message",
    "TokenLogprobs",
    "get_embedder",
    "get_judge",
]
