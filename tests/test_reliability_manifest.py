"""The run record (``run.json`` / ``Result.run``) names everything a score depends on, and no
secret reaches a file, a log or the terminal."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from ragmeter import AnswerRelevance, ContextRelevance, Faithfulness, __version__, evaluate
from ragmeter.data import write_jsonl
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge
from ragmeter.judges.weights import QWEN_CODER_1_5B
from ragmeter.manifest import model_record, redact_options, scrub
from ragmeter.metrics.commitment import NONCOMMITTAL
from ragmeter.metrics.faithfulness import SUPPORTED

from .fault_server import Faults, FaultServer, marked_samples


def test_the_run_record_names_versions_models_prompts_and_counts(tmp_path):
    samples = marked_samples(2)
    # Answer relevance as the paper asks it, the form that embeds: the embedder is recorded too.
    metrics = [Faithfulness(), ContextRelevance(), AnswerRelevance(score="similarity")]
    with FaultServer() as server:
        result = evaluate(
            samples,
            metrics,
            judge=OpenAIJudge("fault-judge", base_url=server.url),
            embedder=OpenAIEmbedder("fault-embed", base_url=server.url),
            cache=False,
            out_dir=tmp_path,
            seed=7,
            retries=1,
        )
        chat_calls = sum(1 for s in server.seen if s.path == "/v1/chat/completions")
    record = json.loads((tmp_path / "run.json").read_text())
    assert record == json.loads(result.run.to_json())
    assert record["schema"] == 1 and record["status"] == "complete"
    assert record["ragmeter_version"] == __version__
    judge = record["models"]["judge"]
    assert judge["name"] == "openai:fault-judge"
    assert (judge["provider"], judge["model"], judge["weights_sha256"]) == (
        "openai",
        "fault-judge",
        None,
    )
    assert judge["base_url"] == server.url
    assert judge["served_models"] == ["fault-judge-2025-01-01"]  # the snapshot behind the alias
    assert judge["system_fingerprints"] == ["fp_fault"]
    assert record["models"]["embedder"]["name"] == "openai:fault-embed"
    assert record["metrics"]["faithfulness"]["prompts"] == {
        "faithfulness.supported": SUPPORTED.version,
        "commitment.noncommittal": NONCOMMITTAL.version,
    }
    assert (record["parameters"]["retries"], record["parameters"]["repairs"]) == (1, 1)
    assert record["seed"] == 7
    assert len(record["dataset"]["sha256"]) == 64
    assert record["started"] < record["ended"]
    counts = record["counts"]
    assert (counts["items"], counts["scored"], counts["unscored"], counts["judged"]) == (6, 6, 0, 6)
    assert counts["model_calls"] == chat_calls == 12
    # per sample, one for the off-topic gate and one for the generated questions
    assert counts["embedding_calls"] == 2 * 2


def test_a_bundled_local_judge_is_recorded_with_its_pinned_weights_hash():
    judge = SimpleNamespace(name=f"local:{QWEN_CODER_1_5B.name}")
    assert model_record(judge).weights_sha256 == QWEN_CODER_1_5B.sha256


def test_credential_options_and_environment_values_are_redacted():
    options = {"api_key": "s3cr3t", "api_key_env": "MY_KEY", "timeout": 3}
    assert redact_options(options) == {
        "api_key": "[redacted]",
        "api_key_env": "MY_KEY",
        "timeout": 3,
    }
    assert scrub("token sk-abcdef123456 here", {"MY_API_KEY": "sk-abcdef123456"}) == (
        "token [redacted] here"
    )


def files_under(*folders: Path) -> list[Path]:
    return [path for folder in folders for path in folder.rglob("*") if path.is_file()]


def test_the_api_key_is_in_no_file_log_or_output(tmp_path):
    secret = "sk-" + secrets.token_hex(20)
    data = tmp_path / "data.jsonl"
    write_jsonl(marked_samples(4), data)
    out, cache = tmp_path / "out", tmp_path / "cache"
    # One item fails for good, with the server echoing the request headers (key included) in
    # its error, which becomes the item's unscored reason; other calls meet random faults.
    faults = Faults(
        rate=0.3, max_per_prompt=1, seed=5, permanent=frozenset({"item-0002"}), echo_headers=True
    )
    with FaultServer(faults) as server:
        env = os.environ | {
            "OPENAI_API_KEY": secret,
            "RAGMETER_BASE_URL": server.url,
            "XDG_CACHE_HOME": str(cache),
        }
        options = ["max_retries=2", "backoff=0.001", "timeout=0.3", "deadline=10"]
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                "from ragmeter.cli.main import app; app()",
                "evaluate",
                str(data),
                "--judge",
                "openai:fault-judge",
                "--embedder",
                "openai:fault-embed",
                "--out",
                str(out),
                *[arg for option in options for arg in ("--judge-option", option)],
                *[arg for option in options for arg in ("--embedder-option", option)],
            ],
            env=env,
            capture_output=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stdout.decode() + run.stderr.decode()
    assert server.authorizations == {f"Bearer {secret}"}  # the key was used...
    assert secret.encode() not in run.stdout + run.stderr  # ...but never shown
    written = files_under(out, cache)
    names = {path.name for path in written}
    assert names >= {"scores.sqlite", "scores.jsonl", "run.json", "runs.jsonl", "calls.sqlite"}
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    # The echoed header reached the unscored reason, redacted.
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    reasons = [s["unscored_reason"] for s in scores if s["value"] is None]
    assert len(reasons) == 3 and all("Bearer [redacted]" in r for r in reasons)
