"""A judge is known by everything that determines its replies: an option that changes outputs
re-judges, one that does not reuses the call cache and the score store, and weights swapped under
the same file name are another model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.cli.main import app
from ragmeter.judges import FakeJudge, ModelIdentity, identity_of
from ragmeter.judges.base import ChatRequest, Message
from ragmeter.judges.cache import CachedJudge, CallCache
from ragmeter.judges.local import LocalJudgeOptions, create_judge, local_identity
from ragmeter.judges.weights import weights_sha256
from ragmeter.manifest import RunRecord
from ragmeter.metrics import AnswerRelevance, ContextRelevance, Faithfulness, metric_by_name
from ragmeter.options import Options, OptionsError

from .conftest import routed
from .fault_server import FaultServer, marked_samples

QUICK = {"backoff": 0.001, "timeout": 5, "deadline": 30}


def run_openai(server: FaultServer, tmp_path: Path, **options: object):
    """The faithfulness of two samples through the fault server, with a shared cache and store."""
    return evaluate(
        marked_samples(2),
        ["faithfulness"],
        judge="openai:fault-judge",
        judge_options={"base_url": server.url, **QUICK, **options},
        cache=tmp_path / "calls.sqlite",
        out_dir=tmp_path / "out",
    )


@pytest.mark.parametrize(
    "changed",
    [{"json_mode": "object"}, {"seed": 3}, {"base_url": "localhost"}],
    ids=["json_mode", "seed", "base_url"],
)
def test_an_option_that_changes_replies_re_judges(tmp_path, changed):
    with FaultServer() as server:
        first = run_openai(server, tmp_path)
        if changed == {"base_url": "localhost"}:  # the same server under another address
            changed = {"base_url": server.url.replace("127.0.0.1", "localhost")}
        again = run_openai(server, tmp_path, **changed)
    assert first.run.counts.judged == 2 and first.run.counts.model_calls > 0
    assert again.run.counts.resumed == 0 and again.run.counts.judged == 2
    assert again.run.counts.cached_calls == 0
    assert again.run.counts.model_calls == first.run.counts.model_calls


@pytest.mark.parametrize(
    "changed",
    [
        {"timeout": 9},
        {"deadline": 99},
        {"max_retries": 1},
        {"max_concurrency": 2},
        {"api_key_env": "OTHER_KEY"},
    ],
    ids=lambda options: next(iter(options)),
)
def test_an_option_that_does_not_change_replies_reuses_everything(tmp_path, changed):
    with FaultServer() as server:
        run_openai(server, tmp_path)
        again = run_openai(server, tmp_path, **changed)
        # The store holds the scores; with the store gone the call cache still answers.
        (tmp_path / "out" / "scores.sqlite").unlink()
        cached = run_openai(server, tmp_path, **changed)
    assert again.run.counts.resumed == 2 and again.run.counts.model_calls == 0
    assert cached.run.counts.judged == 2 and cached.run.counts.model_calls == 0
    assert cached.run.counts.cached_calls > 0


def test_weights_swapped_under_the_same_file_name_are_another_judge(tmp_path, no_user_cache):
    gguf = tmp_path / "my-judge.gguf"
    gguf.write_bytes(b"GGUF weights, version A")
    _, before = local_identity(gguf, LocalJudgeOptions())
    kept = gguf.stat()
    gguf.write_bytes(b"GGUF weights, version B")  # same name and size, other contents...
    os.utime(gguf, ns=(kept.st_atime_ns, kept.st_mtime_ns))  # ...and the old modification time
    _, after = local_identity(gguf, LocalJudgeOptions())
    assert before.name == after.name == "local:my-judge"
    assert before.digest != after.digest
    assert after.settings["weights_sha256"] == weights_sha256(gguf)
    # The hash is remembered per size and modification time, so a restart does not rehash.
    memo = json.loads(
        (no_user_cache / "xdg-cache" / "ragmeter" / "models" / "hashes.json").read_text()
    )
    assert len(memo) == 2


def test_a_swapped_judge_misses_the_call_cache(tmp_path):
    """Two judges of one name whose identities differ never share a cached reply."""
    cache = CallCache(tmp_path / "calls.sqlite")
    first = FakeJudge(["first"], model="same")
    second = FakeJudge(["second"], model="same")
    second.settings = {"weights_sha256": "other"}
    asked = ChatRequest(messages=(Message(role="user", content="hello"),))
    assert CachedJudge(first, cache).complete(asked).text == "first"
    assert CachedJudge(second, cache).complete(asked).text == "second"
    # A third judge like the first (it has no reply of its own) is served the first's.
    assert CachedJudge(FakeJudge(model="same"), cache).complete(asked).text == "first"


def test_the_local_judge_options_are_typed_and_some_stay_out_of_the_identity(tmp_path):
    with pytest.raises(
        OptionsError,
        match=r"unknown option 'threads' for the local judge; "
        r"valid options: n_ctx, n_threads, seed",
    ):
        create_judge("", threads=2)
    with pytest.raises(
        OptionsError, match=r"option 'n_ctx' of the local judge: 'big' is not valid"
    ):
        create_judge("", n_ctx="big")
    assert LocalJudgeOptions(n_ctx=4096, n_threads=1).identity() == {"seed": 0}
    assert LocalJudgeOptions(seed=5).identity() == {"seed": 5}


def test_metric_options_are_typed_and_every_one_is_in_the_version():
    with pytest.raises(
        OptionsError,
        match=r"unknown option 'soft_count' for the metric faithfulness; "
        r"valid options: short_claims, soft, statements, threshold, verdicts",
    ):
        metric_by_name("faithfulness", soft_count=True)
    with pytest.raises(
        OptionsError, match=r"option 'threshold' of the metric faithfulness: 2 is not valid"
    ):
        Faithfulness(threshold=2)
    versions = {
        Faithfulness().version,
        Faithfulness(soft=False).version,
        Faithfulness(threshold=0.6).version,
        Faithfulness(verdicts="generate").version,
        Faithfulness(statements="generate").version,
        Faithfulness(short_claims="as_they_stand").version,
    }
    assert len(versions) == 6
    assert Faithfulness().version == Faithfulness(verdicts="logprob", soft=True).version


@pytest.mark.parametrize("metric", [Faithfulness, AnswerRelevance, ContextRelevance])
def test_a_removed_option_stays_in_the_version_at_the_value_read_since(metric):
    """The one-read layout went after commit e3a29d4; every score before it was read in the
    separate layout, so the versions, and with them the stored scores' keys, stay as they were."""
    assert metric.retired == {"layout": "separate"}
    assert "layout" not in metric().config()
    with pytest.raises(OptionsError, match="unknown option 'layout'"):
        metric(layout="separate")

    class Unretired(metric):  # type: ignore[valid-type, misc]
        retired: ClassVar[dict[str, Any]] = {}

    assert Unretired().version != metric().version


def test_a_judge_without_an_identity_is_known_by_its_name():
    class Plugin:
        name = "acme:judge-1"

    assert identity_of(Plugin()) == ModelIdentity(provider="acme", model="judge-1")


def test_a_run_record_of_the_first_version_still_opens(tmp_path):
    old = {
        "schema": 1,
        "status": "complete",
        "ragmeter_version": "0.1.0",
        "python": "3.11.7",
        "platform": "Linux",
        "judge": "local:qwen2.5-coder-1.5b-instruct-q4_k_m",
        "embedder": "minilm:all-MiniLM-L6-v2-int8",
        "models": {
            "judge": {
                "name": "local:qwen2.5-coder-1.5b-instruct-q4_k_m",
                "provider": "local",
                "model": "qwen2.5-coder-1.5b-instruct-q4_k_m",
                "weights_sha256": "cc324af0",
            },
            "embedder": None,
        },
        "metrics": {
            "faithfulness": {"config": {"verdicts": "logprob"}, "version": "abc", "prompts": {}}
        },
        "parameters": {"retries": 2},
        "retries": 2,
        "seed": None,
        "dataset": {"samples": 8, "invalid_rows": 0, "sha256": "0" * 64},
        "samples": 8,
        "invalid_rows": 0,
        "started": "2026-11-01T10:00:00+00:00",
        "budget": None,
        "ended": "2026-11-01T10:05:00+00:00",
        "seconds": 300.0,
        "counts": {"items": 8, "scored": 8, "unscored": 0, "model_calls": 68},
        "a_field_from_elsewhere": True,
    }
    (tmp_path / "run.json").write_text(json.dumps(old))
    record = RunRecord.read(tmp_path)
    assert (record.status, record.counts.items, record.counts.model_calls) == ("complete", 8, 68)
    assert record.models["judge"].identity is None  # made before identities were recorded
    written = json.loads(record.to_json())
    assert written["schema"] == 1 and written["a_field_from_elsewhere"] is True


def test_a_folder_without_a_run_record_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read the run record"):
        RunRecord.read(tmp_path)
    (tmp_path / "run.json").write_text('{"status": "complete"}')
    with pytest.raises(ValueError, match="not a run record"):
        RunRecord.read(tmp_path)


def test_cache_info_clear_and_prune(tmp_path):
    path = tmp_path / "calls.sqlite"
    for model in ("a", "b"):
        judge = FakeJudge(responder=routed({"needed": 0.9, "new_information": 0.2}), model=model)
        evaluate(marked_samples(1), ["context_relevance"], judge=judge, cache=path)
    with CallCache(path) as cache:
        a, b = cache.entries()
        # Entries of model a made 40 days ago.
        cache._db.execute(
            "UPDATE replies SET created = created - 40 * 86400 WHERE model = 'fake:a'"
        )
    assert (a.kind, a.model, b.model) == ("replies", "fake:a", "fake:b")
    assert a.entries == b.entries > 0

    def ragmeter(*args: str) -> str:
        run = CliRunner().invoke(app, ["cache", *args, "--path", str(path)])
        assert run.exit_code == 0, run.output
        return run.output.replace("\n", "")

    shown = ragmeter("info")
    assert "fake:a" in shown and "fake:b" in shown and str(path) in shown
    assert "removed 0 entries older than 41 days" in ragmeter("prune", "--older-than", "41")
    assert f"removed {a.entries} entries older than 30 days" in ragmeter(
        "prune", "--older-than", "30"
    )
    assert "removed 0 entries" in ragmeter("clear", "--model", "fake:a")
    assert f"removed {b.entries} entries" in ragmeter("clear")
    with CallCache(path) as cache:
        assert cache.entries() == []


def test_a_yes_no_is_not_taken_for_a_number_and_a_rule_between_options_is_named():
    with pytest.raises(OptionsError, match=r"option 'threshold' of the metric faithfulness: True"):
        Faithfulness(threshold=True)
    with pytest.raises(
        OptionsError,
        match=r"options of the metric context_relevance: repeats applies to mode=.sentence.",
    ):
        metric_by_name("context_relevance", mode="select", repeats=True)


def test_an_option_that_looks_like_a_credential_stays_out_of_the_identity():
    class KeyedOptions(Options):
        api_key: str = ""
        temperature: float = 0.0

    options = KeyedOptions(api_key="sk-secret-123456", temperature=0.5)
    assert options.identity() == {"temperature": 0.5}


def test_the_minilm_embedder_is_known_by_its_files_not_its_batching():
    pytest.importorskip("onnxruntime", reason="MiniLM needs the 'local' extra")
    from ragmeter.judges.minilm import MiniLMEmbedder

    default, tuned = MiniLMEmbedder(), MiniLMEmbedder(batch_size=4, threads=1)
    assert identity_of(default) == identity_of(tuned)
    assert set(identity_of(default).settings) == {
        "weights_sha256",
        "tokenizer_sha256",
        "max_tokens",
    }
