"""How much reading traces and writing verdicts back adds to judging them.

    python bench/bench_traces.py [--traces 1000] [--phoenix URL]

Makes ``--traces`` traced requests (a root chain span with the question and the answer, a
retriever span with two documents, a chat-model span, as OpenInference's LangChain
instrumentation records them), reads them, scores them with the scripted judge on the three
reference-free metrics (no model: the cheapest judging there is, so the largest share the trace
handling can take), and writes the verdicts back. Prints the seconds of each step and the
overhead: (read + write) / judging (target: under 10 %).

Without ``--phoenix`` the traces are an OTLP JSON file and the verdicts are made into Phoenix's
annotation requests and serialised, with no server: ragmeter's own share. With ``--phoenix URL``
(a running ``phoenix serve``) the spans are first sent to that server over OTLP, read back
through Phoenix's client and the verdicts written there as annotations: the whole round trip.
"""

from __future__ import annotations

import argparse
import json
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

from ragmeter import evaluate
from ragmeter.judges.base import ChatRequest
from ragmeter.judges.fake import FakeJudge
from ragmeter.traces import read_otlp, read_phoenix, verdicts_for, write_verdicts
from ragmeter.traces.phoenix import annotation

METRICS = ["faithfulness", "answer_relevance", "context_relevance"]
PROJECT = "bench-traces"


def attribute(key: str, value: Any) -> dict[str, Any]:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def request_spans(number: int, start_ns: int) -> list[dict[str, Any]]:
    """The spans of one traced request, in OTLP JSON."""
    trace, root, retriever, llm = (secrets.token_hex(16), *(secrets.token_hex(8) for _ in "abc"))
    question = f"What is the capital of country {number}?"
    documents = [f"City {number} is the capital of country {number}.", "Rivers flow to seas."]
    answer = f"City {number}."

    def span(span_id: str, parent: str, name: str, kind: str, offset: int, attrs: list) -> dict:
        return {
            "traceId": trace,
            "spanId": span_id,
            "parentSpanId": parent,
            "name": name,
            "startTimeUnixNano": str(start_ns + offset),
            "endTimeUnixNano": str(start_ns + offset + 1000),
            "status": {"code": 1},
            "attributes": [attribute("openinference.span.kind", kind), *attrs],
        }

    return [
        span(root, "", "RunnableSequence", "CHAIN", 0,
             [attribute("input.value", question), attribute("output.value", answer)]),
        span(retriever, root, "Retriever", "RETRIEVER", 10,
             [attribute("input.value", question)]
             + [attribute(f"retrieval.documents.{i}.document.content", text)
                for i, text in enumerate(documents)]),
        span(llm, root, "ChatModel", "LLM", 20,
             [attribute("input.value", question), attribute("output.value", answer)]),
    ]  # fmt: skip


def write_file(path: Path, count: int) -> dict[str, Any]:
    start = time.time_ns() - count * 10**6
    spans = [s for n in range(count) for s in request_spans(n, start + n * 10**6)]
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": [attribute("openinference.project.name", PROJECT)]},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
            }
        ]
    }
    path.write_text(json.dumps(request) + "\n")
    return request


def send_to_phoenix(request: dict[str, Any], url: str) -> None:
    """Post the spans to Phoenix as OTLP protobuf, as an OpenTelemetry exporter does."""
    import base64

    import httpx
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    body = ParseDict(request, ExportTraceServiceRequest()).SerializeToString()
    reply = httpx.post(
        f"{url}/v1/traces",
        content=body,
        headers={"content-type": "application/x-protobuf"},
        timeout=120,
    )
    reply.raise_for_status()


def respond(request: ChatRequest) -> str:
    """Every verdict Yes (read from the word: no log-probabilities), nothing noncommittal."""
    system = request.messages[0].content
    if "noncommittal" in system:
        return json.dumps({"noncommittal": False})
    return "Yes"


class Serialised:
    """A writer with no server: the verdicts become Phoenix's annotation requests, serialised."""

    def __init__(self) -> None:
        self.bytes = 0

    def describe(self) -> dict[str, Any]:
        return {"server": None}

    def existing(self, verdicts: Any) -> dict:
        return {}

    def write(self, verdicts: Any, replacing: Any) -> None:
        self.bytes += len(json.dumps({"data": [annotation(v) for v in verdicts]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--phoenix", help="a running Phoenix server's address")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "spans.jsonl"
        request = write_file(file, args.traces)
        clock = time.perf_counter()
        if args.phoenix:
            send_to_phoenix(request, args.phoenix)
            sent = time.perf_counter() - clock
            print(f"sent {args.traces} traces to {args.phoenix} in {sent:.2f} s (not counted)")
            deadline = time.monotonic() + 300
            while True:
                clock = time.perf_counter()
                traces = read_phoenix(PROJECT, server=args.phoenix)
                if traces.traces >= args.traces or time.monotonic() > deadline:
                    break
                time.sleep(1)
            writer = traces.writer
        else:
            traces = read_otlp(file)
            writer = Serialised()
        read = time.perf_counter() - clock
        assert len(traces.samples) == args.traces, traces.skipped[:3]

        clock = time.perf_counter()
        result = evaluate(
            traces.samples,
            METRICS,
            judge=FakeJudge(responder=respond),
            cache=False,
            out_dir=Path(folder) / "run",
        )
        judging = time.perf_counter() - clock

        clock = time.perf_counter()
        report = write_verdicts(verdicts_for(result), writer)
        write = time.perf_counter() - clock
        assert report.written == args.traces * len(METRICS) and not report.failed, report.record()

    where = args.phoenix or "an OTLP file, no server"
    print(f"{args.traces} traces ({where}), {len(METRICS)} metrics, scripted judge")
    print(f"read   {read:8.2f} s")
    print(f"judge  {judging:8.2f} s")
    print(f"write  {write:8.2f} s  ({report.written} verdicts)")
    print(f"overhead (read + write) / judge = {(read + write) / judging:.1%}")


if __name__ == "__main__":
    main()
