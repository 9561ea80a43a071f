"""One run described once: ``RunConfig``, the settings file (``ragmeter.toml`` or
``[tool.ragmeter]``) and ``ragmeter init``, run as a user runs them, on the scripted judge."""

from __future__ import annotations

import json
import tomllib

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.cli.main import app
from ragmeter.config import RunConfig
from ragmeter.manifest import config_differences

runner = CliRunner()

SAMPLE = {"id": "q1", "question": "Q?", "contexts": ["A b. C d."], "answer": "A b."}
REPLIES = [{"statements": ["A b."]}, "Yes", "Yes", "No"]
"""faithfulness: the answer's one statement, supported; context_relevance: of the context's two
sentences, the first needed."""

SETTINGS = """\
# the nightly evaluation
[evaluate]
data = "data.jsonl"
metrics = ["faithfulness", "context_relevance"]
judge = "fake:replies.jsonl"
out = "runs/nightly"

[evaluate.option.faithfulness]
soft = false
"""
SAME_ON_THE_COMMAND_LINE = [
    "evaluate",
    "data.jsonl",
    "--metrics",
    "faithfulness,context_relevance",
    "--judge",
    "fake:replies.jsonl",
    "--out",
    "runs/nightly",
    "--option",
    "faithfulness.soft=false",
]


@pytest.fixture
def folder(tmp_path, monkeypatch, no_user_cache):
    """A project folder with one sample and the judge's scripted replies, as the working folder."""
    (tmp_path / "data.jsonl").write_text(json.dumps(SAMPLE) + "\n")
    lines = [json.dumps(r if isinstance(r, str) else json.dumps(r)) for r in REPLIES]
    (tmp_path / "replies.jsonl").write_text("".join(line + "\n" for line in lines))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def recorded_config(run_folder):
    return json.loads((run_folder / "run.json").read_text())["config"]


def test_a_run_from_the_file_and_from_the_options_record_one_configuration(folder):
    (folder / "ragmeter.toml").write_text(SETTINGS)
    from_file = runner.invoke(app, ["evaluate"])
    assert from_file.exit_code == 0, from_file.output
    assert (
        "settings from " + str(folder / "ragmeter.toml") + ": data, metrics, judge, out, option; "
        "from the command line: none" in from_file.output
    )
    assert "model calls 4, cached 0" in from_file.output
    config = recorded_config(folder / "runs" / "nightly")
    assert config["data"] == "data.jsonl"
    assert config["metrics"] == ["faithfulness", "context_relevance"]
    assert config["option"] == {"faithfulness": {"soft": False}}
    assert config["judge"] == "fake:replies.jsonl"

    (folder / "ragmeter.toml").unlink()
    (folder / "runs" / "nightly" / "scores.sqlite").unlink()  # judge again, from the call cache
    from_options = runner.invoke(app, SAME_ON_THE_COMMAND_LINE)
    assert from_options.exit_code == 0, from_options.output
    assert "model calls 0, cached 4" in from_options.output
    assert "differs" not in from_options.output
    assert "settings from" not in from_options.output
    assert recorded_config(folder / "runs" / "nightly") == config


def test_options_on_the_command_line_override_the_file_and_a_rerun_says_what_changed(folder):
    (folder / "ragmeter.toml").write_text(SETTINGS)
    assert runner.invoke(app, ["evaluate"]).exit_code == 0
    rerun = runner.invoke(app, ["evaluate", "--metrics", "faithfulness", "--no-show-samples"])
    assert rerun.exit_code == 0, rerun.output
    assert "from the command line: metrics, show_samples" in rerun.output
    assert (
        "this run's configuration differs from the last one in runs/nightly/: "
        'metrics: ["faithfulness", "context_relevance"] -> ["faithfulness"]; '
        "show_samples: true -> false"
    ) in " ".join(rerun.output.split())
    assert recorded_config(folder / "runs" / "nightly")["metrics"] == ["faithfulness"]


def test_a_file_with_an_error_on_line_7_is_refused_there_and_nothing_is_judged(folder):
    lines = SETTINGS.splitlines()
    lines.insert(6, 'workers = "two"')  # line 7
    (folder / "ragmeter.toml").write_text("\n".join(lines) + "\n")
    refused = runner.invoke(app, ["evaluate"])
    assert refused.exit_code == 2
    assert f"{folder / 'ragmeter.toml'}, line 7: workers: Input should be a valid integer" in (
        " ".join(refused.output.split())
    )
    assert not (folder / "runs").exists()


def test_a_value_out_of_range_is_named_with_its_line(folder):
    (folder / "ragmeter.toml").write_text(SETTINGS.replace('out = "runs/nightly"', "retries = -1"))
    refused = runner.invoke(app, ["evaluate"])
    assert refused.exit_code == 2
    assert (
        f"{folder / 'ragmeter.toml'}, line 6: retries: Input should be greater than or equal to 0"
        in " ".join(refused.output.split())
    )
    assert not (folder / "runs").exists()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[evaluate]\njudges = "local"\n',
            "line 2: judges: not an option of ragmeter evaluate (did you mean 'judge'?)",
        ),
        ('[evalute]\njudge = "local"\n', "line 1: no command 'evalute' (did you mean 'evaluate'?)"),
        (
            "[meta.openq]\nthreshold = 0.5\n",
            "line 1: no command 'meta.openq' (did you mean 'openqa'?)",
        ),
        (
            "[evaluate]\nmetrics = { a = 1 }\n",
            "line 2: metrics: a table is not a value for this option",
        ),
        (
            "[evaluate]\nworkers = [1, 2]\n",
            "line 2: workers: a list is not a value for this option",
        ),
        ("[evaluate\n", "not valid TOML"),
    ],
)
def test_unknown_tables_and_keys_are_refused_with_the_nearest_name(folder, text, said):
    (folder / "ragmeter.toml").write_text(text)
    refused = runner.invoke(app, ["evaluate"])
    assert refused.exit_code == 2
    assert said in " ".join(refused.output.split())
    assert not (folder / "runs").exists()


def test_pyproject_holds_the_settings_and_the_criteria(folder):
    (folder / "pyproject.toml").write_text(
        """[project]
name = "shop-assistant"

[tool.ragmeter.evaluate]
data = "data.jsonl"
metrics = ["declines"]
judge = "fake:replies.jsonl"

[tool.ragmeter.criteria.declines]
question = "Does the answer decline when the context does not hold the answer?"
reads = ["contexts", "question", "answer"]
"""
    )
    planned = runner.invoke(app, ["evaluate", "--dry-run"])
    assert planned.exit_code == 0, planned.output
    assert "declines" in planned.output
    assert "No model was called." in planned.output
    # An error there is named with the pyproject's own line.
    text = (folder / "pyproject.toml").read_text().replace("judge =", "judge_model =")
    (folder / "pyproject.toml").write_text(text)
    refused = runner.invoke(app, ["evaluate", "--dry-run"])
    assert refused.exit_code == 2
    assert f"{folder / 'pyproject.toml'}, line 7: judge_model: not an option" in (
        " ".join(refused.output.split())
    )


def test_a_file_named_elsewhere_reads_its_paths_from_its_own_folder(
    folder, tmp_path_factory, monkeypatch
):
    (folder / "ragmeter.toml").write_text(SETTINGS)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    settings = str(folder / "ragmeter.toml")
    planned = runner.invoke(app, ["--config", settings, "evaluate", "--dry-run"])
    assert planned.exit_code == 0, planned.output
    assert "No model was called." in planned.output


def test_init_writes_a_starter_that_runs_and_never_overwrites(folder):
    with_reference = dict(SAMPLE, reference="A b.")
    (folder / "data.jsonl").write_text(json.dumps(with_reference) + "\n")
    written = runner.invoke(app, ["init", "data.jsonl"])
    assert written.exit_code == 0, written.output
    text = (folder / "ragmeter.toml").read_text()
    assert 'data = "data.jsonl"' in text
    assert (
        'metrics = ["faithfulness", "answer_relevance", "context_relevance", '
        '"answer_correctness", "context_recall"]' in text
    )
    planned = runner.invoke(app, ["evaluate", "--dry-run"])
    assert planned.exit_code == 0, planned.output
    assert ": data, metrics, judge; from the command line: dry_run" in planned.output
    again = runner.invoke(app, ["init", "data.jsonl"])
    assert again.exit_code == 2
    assert "--force replaces it" in again.output
    (folder / "data.jsonl").write_text(json.dumps(SAMPLE) + "\n")  # no reference now
    (folder / "ragmeter.toml").write_text("[evaluate\n")  # broken: init still replaces it
    assert runner.invoke(app, ["init", "data.jsonl", "--force"]).exit_code == 0
    settings = tomllib.loads((folder / "ragmeter.toml").read_text())
    assert settings["evaluate"]["metrics"] == [
        "faithfulness",
        "answer_relevance",
        "context_relevance",
    ]


def test_evaluate_takes_a_configuration_and_records_it_whole(folder):
    config = RunConfig(
        data="data.jsonl",
        metrics=["faithfulness", "context_relevance"],
        judge="fake:replies.jsonl",
        judge_option={"api_key": "sk-secret"},
        out=folder / "runs" / "python",
    )
    with pytest.raises(Exception, match="api_key"):  # the fake takes no option: said, not kept
        evaluate(config=config)
    config = config.model_copy(update={"judge_option": {}})
    result = evaluate(config=config)
    assert [s.value for s in result.scores] == [1.0, 0.5]
    assert recorded_config(folder / "runs" / "python") == config.recorded()
    assert result.run.config == config.recorded()


def test_secrets_are_never_recorded():
    recorded = RunConfig(judge_option={"api_key": "sk-secret", "timeout": 30}).recorded()
    assert "sk-secret" not in json.dumps(recorded)
    assert recorded["judge_option"]["timeout"] == 30


def test_differences_name_each_field_that_changed():
    before = {"judge": "local", "metrics": ["faithfulness"], "seed": None, "out": "runs/a"}
    after = {"judge": "openai:gpt-4o-mini", "metrics": ["faithfulness"], "seed": 3, "out": "b"}
    assert config_differences(before, after, ignore={"out"}) == [
        'judge: "local" -> "openai:gpt-4o-mini"',
        "seed: (not set) -> 3",
    ]
    assert config_differences(before, before) == []


def test_the_command_line_forms_and_the_file_forms_build_one_configuration():
    typed = RunConfig(
        metrics="faithfulness, context_relevance",
        option=["faithfulness.soft=false", "diagnosis.claims=sentences"],
        judge_option=["timeout=30", "json_mode=object"],
        columns="user_input=question,response=answer",
    )
    written = RunConfig(
        metrics=["faithfulness", "context_relevance"],
        option={"faithfulness": {"soft": False}, "diagnosis": {"claims": "sentences"}},
        judge_option={"timeout": 30, "json_mode": "object"},
        columns={"user_input": "question", "response": "answer"},
    )
    assert typed == written
    with pytest.raises(ValueError, match="workers"):
        RunConfig(workers=0)
    with pytest.raises(ValueError, match="judges"):
        RunConfig(judges="local")


def test_compare_says_when_two_runs_were_configured_otherwise(folder):
    (folder / "ragmeter.toml").write_text(SETTINGS)
    assert runner.invoke(app, ["evaluate"]).exit_code == 0
    (folder / "ragmeter.toml").unlink()
    other = [*SAME_ON_THE_COMMAND_LINE[:-2], "--seed", "3", "--workers", "2"]
    other[other.index("runs/nightly")] = "runs/seeded"
    assert runner.invoke(app, other).exit_code == 0
    compared = runner.invoke(app, ["compare", "runs/nightly", "runs/seeded"])
    assert compared.exit_code == 4  # faithfulness read otherwise: not comparable
    said = " ".join(compared.output.split())
    # Where the files are and how many workers judged are not how the runs judged.
    assert (
        'seeded was configured otherwise: option: {"faithfulness": {"soft": false}} -> {}; '
        "seed: (not set) -> 3"
    ) in said
    # compare's gate reads the same file: force, from [compare], lets them be compared.
    (folder / "ragmeter.toml").write_text("[compare]\nforce = true\nrounds = 200\n")
    forced = runner.invoke(app, ["compare", "runs/nightly", "runs/seeded", "--json"])
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.output)["comparison"]["rounds"] == 200


def test_a_metric_or_metric_option_from_the_file_is_refused_with_its_line(folder):
    (folder / "ragmeter.toml").write_text(
        SETTINGS.replace('"context_relevance"', '"context_relevanse"')
    )
    refused = runner.invoke(app, ["evaluate"])
    assert refused.exit_code == 2
    said = " ".join(refused.output.split())
    assert f"{folder / 'ragmeter.toml'}, line 4: unknown metric 'context_relevanse'" in said
    (folder / "ragmeter.toml").write_text(SETTINGS.replace("soft = false", 'soft = "maybe"'))
    refused = runner.invoke(app, ["evaluate"])
    assert refused.exit_code == 2
    said = " ".join(refused.output.split())
    assert f"{folder / 'ragmeter.toml'}, line 8: option 'soft' of the metric faithfulness" in said
    assert not (folder / "runs").exists()


def test_tables_give_column_pairs_and_criteria_as_the_command_line_writes_them(folder):
    renamed = {"user_input": "Q?", "retrieved_contexts": ["A b. C d."], "response": "A b."}
    (folder / "traced.jsonl").write_text(json.dumps(renamed) + "\n")
    (folder / "yes.jsonl").write_text('"Yes"\n')
    (folder / "ragmeter.toml").write_text(
        """[evaluate]
data = "traced.jsonl"
judge = "fake:yes.jsonl"
columns = { user_input = "question", retrieved_contexts = "contexts", response = "answer" }
criterion = ["declines=Does the answer decline: yes or no?"]
metrics = ["declines"]
"""
    )
    result = runner.invoke(app, ["evaluate"])
    assert result.exit_code == 0, result.output
    config = recorded_config(folder / "runs" / "traced")
    assert config["columns"] == {
        "user_input": "question",
        "retrieved_contexts": "contexts",
        "response": "answer",
    }
    assert config["criterion"] == ["declines=Does the answer decline: yes or no?"]
