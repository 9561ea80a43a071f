"""A plugin adds a metric, a judge and an embedder the way the built-ins are added: the examples
of docs/architecture.md, installed as a package with real entry points, work by name."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ragmeter import evaluate, plugins
from ragmeter.judges import get_embedder, get_judge, identity_of
from ragmeter.metrics import metric_by_name
from ragmeter.options import OptionsError

DOC = Path(__file__).parent.parent / "docs" / "architecture.md"
ENTRY_POINTS = """\
[ragmeter.metrics]
conciseness = acme_metrics:Conciseness

[ragmeter.judges]
echo = acme_judge:create_judge

[ragmeter.embedders]
length = acme_embedder:create_embedder
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The page's three files as an installed package (a dist-info with entry_points.txt)."""
    blocks = re.findall(r"```python\n# (acme_\w+\.py)\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert [name for name, _ in blocks] == ["acme_metrics.py", "acme_judge.py", "acme_embedder.py"]
    for name, code in blocks:
        (tmp_path / name).write_text(code)
    info = tmp_path / "acme_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name, _ in blocks:  # the next test imports them afresh
        sys.modules.pop(name.removesuffix(".py"), None)


def test_a_plugin_metric_and_judge_run_by_name(plugin, tmp_path):
    samples = [
        {"id": "a", "question": "Capital of France?", "contexts": ["Paris."], "answer": "Paris."},
        {"id": "b", "question": "Capital of Spain?", "contexts": ["Madrid."], "answer": ""},
    ]
    result = evaluate(
        samples,
        ["conciseness"],
        judge="echo:v1",
        judge_options={"answer": "Yes"},
        cache=False,
        out_dir=tmp_path / "out",
    )
    assert [s.value for s in result.scores] == [1.0, None]
    assert result.scores[0].explanation == {"p_concise": 1.0}
    assert result.scores[1].unscored_reason == "the answer is empty"
    assert result.run.models["judge"].settings == {"answer": "Yes"}
    no = evaluate(
        samples[:1], ["conciseness"], judge="echo:v1", judge_options={"answer": "No"}, cache=False
    )
    assert no.scores[0].value == 0.0


def test_plugin_options_are_checked_and_operational_ones_stay_out_of_the_identity(plugin):
    quiet, verbose = get_judge("echo:v1"), get_judge("echo:v1", verbose=True)
    assert identity_of(quiet) == identity_of(verbose)
    assert identity_of(get_judge("echo:v1", answer="No")) != identity_of(quiet)
    with pytest.raises(OptionsError, match="unknown option 'answr' for the echo judge"):
        get_judge("echo:v1", answr="No")
    with pytest.raises(OptionsError, match="option 'threshold' of the metric conciseness"):
        metric_by_name("conciseness", threshold=1.5)
    assert (
        metric_by_name("conciseness").version
        != metric_by_name("conciseness", threshold=0.7).version
    )


def test_a_plugin_embedder_by_name(plugin):
    vectors = get_embedder("length", scale=10).embed(["abc", ""])
    assert np.array_equal(vectors, np.array([[1.0, 0.3], [1.0, 0.0]], dtype=np.float32))
    with pytest.raises(ValueError, match=r"unknown embedder 'lenght'; known: .*length"):
        get_embedder("lenght")


def test_the_fallback_table_is_the_registered_entry_points():
    """The built-ins are found without installation through a table that must say exactly
    what pyproject.toml registers."""
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    registered = project["project"]["entry-points"]
    assert {kind: registered[group] for kind, group in plugins.GROUPS.items()} == plugins.BUILTINS
