"""The HTTP transport under faults: retries, Retry-After, backoff, the per-attempt timeout and
per-call deadline (against a real socket that stalls or trickles), the concurrency limit,
unreadable responses, the provider's say on what is retryable, and the API key kept out of every
error; and the OpenAI provider's typed options and identity."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from ragmeter.judges.base import ChatRequest, JudgeError, Message
from ragmeter.judges.openai import (
    OpenAIEmbedder,
    OpenAIJudge,
    OpenAIJudgeOptions,
    create_embedder,
    create_judge,
)
from ragmeter.judges.transport import (
    HttpClient,
    TransportOptions,
    _retry_after,
    retryable_status,
)
from ragmeter.options import OptionsError

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


def client(
    transport: httpx.BaseTransport, waits: list[float], retryable=retryable_status, **options
) -> HttpClient:
    options = {"backoff": 0.1, "max_backoff": 5.0, "max_retries": 4} | options
    return HttpClient(
        "http://test/v1",
        TransportOptions(**options),
        retryable=retryable,
        transport=transport,
        sleep=waits.append,
    )


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


def real_client(server: FaultServer, **options) -> HttpClient:
    options = {"backoff": 0.001, "max_backoff": 0.01, "timeout": 0.2, "deadline": 5.0} | options
    return HttpClient(server.url, TransportOptions(api_key_env="OPENAI_API_KEY", **options))


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


def test_a_bare_client_sends_no_key_it_was_not_given(monkeypatch):
    """A plugin that reuses the transport for another API must not send the user's OpenAI key
    there: only the variable a provider names is read."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-for-this-endpoint")
    with FaultServer() as server:
        HttpClient(server.url, TransportOptions(timeout=2)).post(
            "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
    assert server.authorizations == {""}  # the request came, with no Authorization header


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


# --- what the provider says is retryable ----------------------------------------------------


def test_the_providers_retryable_hook_decides_which_errors_are_retried():
    def only_rate_limits(response: httpx.Response) -> bool:
        return response.status_code == 429

    transport, calls = scripted(httpx.Response(500, text="boom"))
    waits: list[float] = []
    http = client(transport, waits, retryable=only_rate_limits)
    with pytest.raises(JudgeError, match=r"HTTP 500: boom \(1 attempt in"):
        http.post("/anything", {})
    assert calls[0] == 1 and waits == []

    # A hook may also make retryable what the default is not (here a 400), and the one loop
    # then waits and retries as for any other transient failure.
    transport, calls = scripted(httpx.Response(400, text="later"), httpx.Response(200, json={}))
    http = client(transport, waits, retryable=lambda response: response.status_code == 400)
    assert http.post("/anything", {}) == {}
    assert calls[0] == 2
    assert len(waits) == 1 and 0.05 <= waits[0] < 0.1  # 0.1 * 2**0 times a factor in [0.5, 1)


def test_connection_failures_are_retried_whatever_the_hook_says():
    transport, calls = scripted(
        httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), httpx.Response(200, json={})
    )
    waits: list[float] = []
    http = client(transport, waits, retryable=lambda response: False)
    assert http.post("/anything", {}) == {}
    assert calls[0] == 3 and len(waits) == 2


# --- the OpenAI provider's typed options and identity ---------------------------------------


@pytest.fixture
def no_endpoint_env(monkeypatch):
    for name in ("RAGMETER_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_the_identity_holds_the_endpoint_and_the_options_that_change_replies(no_endpoint_env):
    judge = OpenAIJudge("gpt-4o-mini")
    assert judge.name == "openai:gpt-4o-mini"
    assert judge.identity.name == "openai:gpt-4o-mini"
    assert judge.identity.settings == {
        "base_url": "https://api.openai.com/v1",
        "json_mode": "schema",
        "seed": None,
    }
    embedder = OpenAIEmbedder("text-embedding-3-small", base_url="http://127.0.0.1:8000/v1/")
    assert embedder.identity.settings == {"base_url": "http://127.0.0.1:8000/v1"}


def test_the_endpoint_from_the_environment_is_in_the_identity(no_endpoint_env, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://second:1/v1")
    assert OpenAIJudge("m").identity.settings["base_url"] == "http://second:1/v1"
    monkeypatch.setenv("RAGMETER_BASE_URL", "http://first:2/v1/")
    assert OpenAIJudge("m").identity.settings["base_url"] == "http://first:2/v1"
    assert OpenAIJudge("m", base_url="http://given:3/v1").identity.settings["base_url"] == (
        "http://given:3/v1"
    )


@pytest.mark.parametrize(
    "changed",
    [{"base_url": "http://other.example/v1"}, {"json_mode": "object"}, {"seed": 3}],
    ids=lambda options: next(iter(options)),
)
def test_an_option_that_changes_replies_changes_the_identity(no_endpoint_env, changed):
    same = OpenAIJudge("m").identity
    other = OpenAIJudge("m", **changed).identity
    assert other != same and other.digest != same.digest
    if "base_url" in changed:
        assert OpenAIEmbedder("e", **changed).identity.digest != OpenAIEmbedder("e").identity.digest


@pytest.mark.parametrize(
    "changed",
    [
        {"timeout": 9},
        {"deadline": 99},
        {"max_retries": 0},
        {"backoff": 0},
        {"max_backoff": 1},
        {"max_concurrency": 1},
        {"api_key_env": "OTHER_KEY"},
    ],
    ids=lambda options: next(iter(options)),
)
def test_an_option_that_does_not_change_replies_keeps_the_identity(no_endpoint_env, changed):
    assert OpenAIJudge("m", **changed).identity == OpenAIJudge("m").identity
    assert OpenAIEmbedder("e", **changed).identity == OpenAIEmbedder("e").identity


def test_the_api_key_is_never_in_the_identity(no_endpoint_env, monkeypatch):
    secret = "sk-test-4f9a1c7e2b8d6053"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("OTHER_KEY", secret)
    url = f"https://user:{secret}@example.com/v1?api-key={secret}"
    for model in (
        OpenAIJudge("m", base_url=url, api_key_env="OTHER_KEY"),
        OpenAIEmbedder("e", base_url=url),
    ):
        identity = model.identity
        assert identity.settings["base_url"] == "https://example.com/v1"
        assert secret not in identity.model_dump_json()
        assert secret not in repr(identity) and secret not in str(model.describe())


def test_unknown_and_mistyped_options_are_refused_by_name():
    with pytest.raises(
        OptionsError,
        match=r"unknown option 'temperature' for the openai judge; valid options: api_key_env, "
        r"backoff, base_url, deadline, json_mode, logprobs, max_backoff, max_concurrency, "
        r"max_retries, "
        r"seed, timeout$",
    ):
        create_judge("m", temperature=0.0)
    with pytest.raises(
        OptionsError,
        match=r"unknown option 'json_mode' for the openai embedder; valid options: api_key_env, "
        r"backoff, base_url, deadline, max_backoff, max_concurrency, max_retries, timeout$",
    ):
        create_embedder("e", json_mode="object")
    with pytest.raises(OptionsError, match=r"option 'timeout' of the openai judge: 'soon' is not"):
        create_judge("m", timeout="soon")
    with pytest.raises(OptionsError, match=r"option 'json_mode' of the openai judge: 'xml' is not"):
        create_judge("m", json_mode="xml")
    with pytest.raises(OptionsError, match=r"option 'max_concurrency' of the openai judge: 0 is"):
        OpenAIJudge("m", max_concurrency=0)
    with pytest.raises(OptionsError, match=r"option 'deadline' of the openai embedder: -1 is"):
        create_embedder("e", deadline=-1)


def test_options_given_as_text_are_converted(no_endpoint_env):
    """``--judge-option NAME=VALUE`` gives text; the options model turns it into its type."""
    judge = create_judge("m", timeout="30", seed="7", max_retries="2")
    assert judge.options == OpenAIJudgeOptions(timeout=30.0, seed=7, max_retries=2)
    assert judge.client.options.timeout == 30.0 and judge.identity.settings["seed"] == 7


def test_a_given_client_owns_the_endpoint_and_the_limits(no_endpoint_env):
    transport, _ = scripted()
    http = client(transport, [])
    judge = OpenAIJudge("m", client=http, seed=1)
    assert judge.identity.settings == {
        "base_url": "http://test/v1",
        "json_mode": "schema",
        "seed": 1,
    }
    with pytest.raises(ValueError, match="option 'timeout' belongs to the client given"):
        OpenAIJudge("m", client=http, timeout=5)
    with pytest.raises(ValueError, match="option 'base_url' belongs to the client given"):
        OpenAIEmbedder("e", client=http, base_url="http://elsewhere/v1")
