"""pytest plugin: the ``ragmeter_scorer`` fixture checks RAG answers with a judge.

.. code-block:: python

    def test_refund_answer(ragmeter_scorer):
        sample = Sample(question=..., contexts=[...], answer=...)
        ragmeter_scorer.assert_scores(sample, faithfulness=0.8, answer_relevance=0.7)

It is registered through the ``pytest11`` entry point, so pytest loads it in every run where
ragmeter is installed. That is why it lives outside the ``ragmeter`` package (whose import loads
numpy and pydantic) and imports nothing but pytest here: ragmeter and its models are imported
when a test first asks for the fixture, and a run that never does is left as it was.

Settings, each a command-line option, an ini setting (``[tool.pytest.ini_options]``) or a key of
``[evaluate]`` in the project's ``ragmeter.toml`` (or ``[tool.ragmeter.evaluate]``), in that
order of precedence, so that tests judge as ``ragmeter evaluate`` does; the defaults are its own:

- ``--ragmeter-judge`` / ``ragmeter_judge``: ``local`` (default), ``openai:MODEL``, ``fake:FILE``;
- ``--ragmeter-embedder`` / ``ragmeter_embedder``: ``minilm`` (default), ``openai:MODEL``, ...;
- ``--ragmeter-judge-option NAME=VALUE`` (repeat) / ``ragmeter_judge_options`` (one per line),
  and the same for the embedder;
- ``--ragmeter-cache`` / ``ragmeter_cache``: the call cache's SQLite file, or ``off``; the user
  cache folder by default, shared with ``ragmeter evaluate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragmeter.testing import Scorer

SETTINGS = {
    "judge": ("The judge: 'local', 'openai:MODEL', 'fake:FILE' or a plugin's provider.", "local"),
    "embedder": ("The embedder for answer relevance: 'minilm', 'openai:MODEL', ...", "minilm"),
    "cache": ("The judge-call cache: a SQLite file, or 'off'. Default: the user cache.", ""),
}
"""Each setting's help and its default, which applies where no option, ini line or settings
file gives one."""
OPTION_LISTS = {
    "judge": "A judge provider option NAME=VALUE, e.g. timeout=30.",
    "embedder": "An embedder provider option NAME=VALUE.",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter", "ragmeter: scoring RAG answers (ragmeter_scorer)")
    for name, (help_text, _default) in SETTINGS.items():
        group.addoption(f"--ragmeter-{name}", dest=f"ragmeter_{name}", help=help_text)
        parser.addini(f"ragmeter_{name}", help_text, default="")
    for model, help_text in OPTION_LISTS.items():
        group.addoption(
            f"--ragmeter-{model}-option",
            dest=f"ragmeter_{model}_options",
            action="append",
            metavar="NAME=VALUE",
            help=help_text + " Repeat for more.",
        )
        parser.addini(f"ragmeter_{model}_options", help_text + " One per line.", type="linelist")


@pytest.fixture(scope="session")
def ragmeter_scorer(pytestconfig: pytest.Config) -> Scorer:
    """Scores samples with the configured judge; ``assert_scores`` fails with its reasons."""
    from ragmeter.config import parse_options
    from ragmeter.config_file import find_config_file
    from ragmeter.testing import Scorer

    try:
        found = find_config_file(pytestconfig.rootpath)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    evaluate = (found.table("evaluate") if found else None) or {}

    def setting(name: str) -> Any:
        key = f"ragmeter_{name}"  # the option's dest and the ini setting's name alike
        given = pytestconfig.getoption(key) or pytestconfig.getini(key)
        if given:
            return given
        if name == "cache":  # a file says cache = false; on, it is the user cache
            return "off" if evaluate.get("cache") is False else ""
        return evaluate.get(name) or SETTINGS[name][1]

    def options(model: str) -> dict[str, Any]:
        # The file's first, then the ini lines, then the command line: a later one overrides
        # the same name.
        values = dict(evaluate.get(f"{model}_option") or {})
        ini = pytestconfig.getini(f"ragmeter_{model}_options")
        given = pytestconfig.getoption(f"ragmeter_{model}_options") or []
        try:
            return values | parse_options([*ini, *given], f"--ragmeter-{model}-option")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None

    cache = setting("cache")
    return Scorer(
        setting("judge"),
        setting("embedder"),
        cache=False if cache == "off" else (cache or True),
        judge_options=options("judge"),
        embedder_options=options("embedder"),
    )
