"""The bundled judge in-process and behind llama-cpp-python's OpenAI-compatible server, side by
side on the same samples: seconds, calls, tokens, unscored items and the largest score difference.

    python bench/bench_server.py [--data examples/basic.jsonl] [--server-option=--n_threads=2]

Both runs start from an empty call cache and use the judges' default options (the server's
``json_schema`` refusal and the fallback are part of the time measured). The server is started
by ``ragmeter.judges.serve`` on 127.0.0.1 and timed from its first request, not its loading.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

from ragmeter import evaluate
from ragmeter.data import load_samples
from ragmeter.judges.serve import served
from ragmeter.result import Result


def timed(label: str, run) -> tuple[Result, float]:
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    counts = result.run.counts
    print(
        f"{label:<12} {seconds:7.1f} s  calls {counts.model_calls:3d} (+{counts.cached_calls} "
        f"cached)  tokens {counts.prompt_tokens} in / {counts.completion_tokens} out  "
        f"unscored {counts.unscored}"
    )
    return result, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--data", default=str(Path(__file__).parent.parent / "examples/basic.jsonl")
    )
    parser.add_argument(
        "--server-option",
        action="append",
        default=[],
        help="an option for llama_cpp.server, e.g. --server-option=--n_threads=2 (repeat)",
    )
    args = parser.parse_args()
    samples = load_samples(args.data).samples
    server_arguments = [part for option in args.server_option for part in option.split("=", 1)]
    print(f"{len(samples)} samples from {args.data}; {os.cpu_count()} cores")

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        local, local_seconds = timed(
            "in-process", lambda: evaluate(samples, cache=folder / "local.sqlite")
        )
        with served(*server_arguments, log=folder / "server.log") as url:
            os.environ["RAGMETER_BASE_URL"] = url
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                remote, remote_seconds = timed(
                    "server",
                    lambda: evaluate(samples, judge="openai:qwen", cache=folder / "remote.sqlite"),
                )
    for warning in caught:
        print(f"  warned: {warning.message}")
    local_values = {(s.sample_id, s.metric): s.value for s in local.scores}
    differences = [
        abs(s.value - local_values[s.sample_id, s.metric])
        for s in remote.scores
        if s.value is not None and local_values[s.sample_id, s.metric] is not None
    ]
    judge = remote.run.models["judge"]
    print(f"server judge asked with json_mode={judge.settings['json_mode']}")
    print(
        f"largest per-sample difference {max(differences):.3f} over {len(differences)} scores; "
        f"time ratio server / in-process {remote_seconds / local_seconds:.2f}; "
        f"calls ratio {remote.run.counts.model_calls / local.run.counts.model_calls:.2f}"
    )


if __name__ == "__main__":
    main()
