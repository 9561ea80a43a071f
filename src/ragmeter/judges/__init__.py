"""Model providers behind two small protocols: ``Judge`` (chat) and ``Embedder``."""

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    Embedder,
    Judge,
    JudgeError,
    Message,
    ModelIdentity,
    RequestRefused,
    TokenLogprobs,
    identity_of,
)
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.judges.registry import get_embedder, get_judge, resolve_models

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "Embedder",
    "FakeJudge",
    "HashingEmbedder",
    "Judge",
    "JudgeError",
    "Message",
    "ModelIdentity",
    "RequestRefused",
    "TokenLogprobs",
    "get_embedder",
    "get_judge",
    "identity_of",
    "resolve_models",
]
