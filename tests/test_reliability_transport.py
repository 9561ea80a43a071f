"""The OpenAI-compatible transport under faults: retries, Retry-After, backoff, the per-attempt
timeout and per-call deadline (against a real socket that stalls or trickles), the concurrency
limit, unreadable responses, and the API key kept out of every error."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from ragmeter.judges.base import ChatRequest, JudgeError, Message
from ragmeter.judges.openai import OpenAIClient, OpenAIEmbedder, OpenAIJudge, _retry_after

from .fault_server import Faults, FaultServer

OK = {"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}], "usage": {}}
REQUEST = ChatRequest(messages=(Message(role="user", content="hello"),))


def scripted(*replies: httpx.Response | Exception) -> tuple[httpx.MockTransport, list[int]]:
    """A transport that answers with ``replies`` in turn; also returns the count of calls."""
    queue, calls = list(replies), [0]

    def handle(request: httpx.Request) -> httpx.Response:
        calls[0] += 1
        reply = queue.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    return httpx.MockTransport(handle), calls


def client(transport: httpx.BaseTransport, waits: list[float], **options) -> OpenAIClient:
    options = {"backoff": 0.1, "max_backoff": 5.0, "max_retries": 4} | options
    return OpenAIClient("http://test/v1", transport=transport, sleep=waits.append, **options)


def test_retry_after_is_honoured_then_backoff_doubles_with_jitter():
    transport, calls = scripted(
        httpx.Response(429, headers={"Retry-After": "2"}, json={"error": "slow down"}),
        httpx.Response(503, json={"error": "busy"}),
        httpx.Response(502, json={"error": "gateway"}),
        httpx.Response(200, json=OK),
    )
    waits: list[float] = []
    reply = OpenAIJudge("m", client=client(transport, waits)).complete(REQUEST)
    assert reply.text == "fine" and calls[0] == 4
    # attempt 0: exactly the 2 s asked for; attempts 1 and 2: 0.1 * 2**n times a factor in
    # [0.5, 1), i.e. [0.1, 0.2) then [0.2, 0.4)
    assert waits[0] == 2.0
    assert 0.1 <= waits[1] < 0.2
    assert 0.2 <= waits[2] < 0.4


def test_retry_after_forms():
    assert _retry_after(httpx.Response(429, headers={"retry-after-ms": "250"})) == 0.25
    assert _retry_after(httpx.Response(429, headers={"Retry-After": "7"})) == 7.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 28 <= _retry_after(httpx.Response(429, headers={"Retry-After": later})) <= 30
    assert _retry_after(httpx.Response(429, headers={"Retry-After": "soon"})) is None
    assert _retry_after(httpx.Response(429)) is None


def test_a_client_error_is_not_retried():
    transport, calls = scripted(httpx.Response(401, json={"error": "bad key"}))
    waits: list[float] = []
    with pytest.raises(JudgeError, match=r"HTTP 401: .*bad key.* \(1 attempt in"):
        OpenAIJudge("m", client=client(transport, waits)).complete(REQUEST)
    assert calls[0] == 1 and waits == []


def test_exhausted_retries_name_the_last_error_and_the_attempts():
    transport, calls = scripted(
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
        httpx.Response(500, text="boom"),
    )
    waits: list[float] = []
    with pytest.raises(JudgeError, match=r"HTTP 500: boom \(3 attempts in"):
        OpenAIJudge("m", client=client(transport, waits, max_retries=2)).complete(REQUEST)
    assert calls[0] == 3 and len(waits) == 2


def test_a_retry_after_past_the_deadline_fails_at_once():
    transport, calls = scripted(httpx.Response(429, headers={"Retry-After": "3600"}))
    waits: list[float] = []
    with pytest.raises(JudgeError, match=r"waiting 3.6e\+03s more would pass the 60s deadline"):
        OpenAIJudge("m", client=client(transport, waits, deadline=60)).complete(REQUEST)
    assert calls[0] == 1 and waits == []


@pytest.mark.parametrize(
    "body",
    [
        {"choices": []},
        {"choices": [{"message": {"content": ["not", "text"]}}]},
        {"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{"token": 1}]}}]},
        {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "many"}},
    ],
)
def test_an_unreadable_response_is_a_failed_call(body):
    transport, _ = scripted(httpx.Response(200, json=body))
    with pytest.raises(JudgeError, match="unexpected response shape"):
        OpenAIJudge("m", client=client(transport, [])).complete(REQUEST)


def test_embeddings_with_missing_rows_are_a_failed_call():
    body = {"data": [{"index": 0, "embedding": [1.0, 2.0]}]}
    transport, _ = scripted(httpx.Response(200, json=body))
    with pytest.raises(JudgeError, match="1 finite rows for 2 texts"):
        OpenAIEmbedder("e", client=client(transport, [])).embed(["a", "b"])


def real_client(server: FaultServer, **options) -> OpenAIClient:
    options = {"backoff": 0.001, "max_backoff": 0.01, "timeout": 0.2, "deadline": 5.0} | options
    return OpenAIClient(server.url, **options)


def test_a_stalled_attempt_times_out_and_the_retry_succeeds():
    with FaultServer(Faults(rate=1.0, kinds=("stall",), stall=5.0, max_per_prompt=1)) as server:
        started = time.monotonic()
        reply = OpenAIJudge("m", client=real_client(server)).complete(REQUEST)
        elapsed = time.monotonic() - started
    assert reply.text == "Yes"  # the fault server's reply to an unknown yes/no prompt
    assert [s.fault for s in server.seen] == ["stall", None]
    assert 0.2 <= elapsed < 1.5  # one 0.2 s timeout, not the 5 s stall


@pytest.mark.parametrize("kind", ["stall", "trickle"])
def test_the_deadline_bounds_a_call_whatever_the_server_does(kind):
    # Every attempt stalls or trickles a byte every 0.05 s (so no single read ever times out):
    # only the wall-clock limits can end the call.
    faults = Faults(rate=1.0, kinds=(kind,), stall=30.0, trickle_interval=0.05)
    with FaultServer(faults) as server:
        started = time.monotonic()
        with pytest.raises(JudgeError, match=r"timed out \(ReadTimeout\)"):
            OpenAIJudge("m", client=real_client(server, timeout=0.25, deadline=0.6)).complete(
                REQUEST
            )
        elapsed = time.monotonic() - started
    assert 0.6 <= elapsed < 1.0
    assert len(server.seen) == 3  # 0.25 + 0.25 + the 0.1 left of the deadline


@pytest.mark.parametrize("kind", ["drop", "garbage", "500", "429"])
def test_dropped_unreadable_and_refused_replies_are_retried(kind):
    with FaultServer(Faults(rate=1.0, kinds=(kind,), max_per_prompt=2)) as server:
        reply = OpenAIJudge("m", client=real_client(server)).complete(REQUEST)
    assert reply.text == "Yes"
    assert [s.fault for s in server.seen] == [kind, kind, None]


def test_the_concurrency_limit_holds_whatever_the_number_of_threads():
    faults = Faults(rate=1.0, kinds=("stall",), stall=0.1)  # every reply takes 0.1 s
    with FaultServer(faults) as server:
        judge = OpenAIJudge("m", client=real_client(server, timeout=2.0, max_concurrency=2))
        threads = [threading.Thread(target=judge.complete, args=(REQUEST,)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(server.seen) == 6
    assert server.max_in_flight == 2


def test_the_api_key_is_sent_but_never_shown(monkeypatch):
    secret = "sk-test-4f9a1c7e2b8d6053"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    faults = Faults(permanent=frozenset({"hello"}), echo_headers=True)
    with FaultServer(faults) as server, pytest.raises(JudgeError) as failure:
        OpenAIJudge("m", client=real_client(server, max_retries=1)).complete(REQUEST)
    assert server.authorizations == {f"Bearer {secret}"}
    message = str(failure.value)
    assert secret not in message
    assert "Bearer [redacted]" in message


def test_credentials_in_the_base_url_are_not_shown():
    judge = OpenAIJudge("m", base_url="https://user:hunter2@example.com/v1?token=abc")
    assert judge.describe()["base_url"] == "https://example.com/v1"
