"""The documentation site builds in strict mode, and the commands of its getting-started page run.

The site is built as CI builds it: ``mkdocs build --strict``, where a broken link or anchor, a
page missing from the navigation or a docstring the API reference cannot read fails the build.

The getting-started page's ``ragmeter`` commands (every line of its ``bash`` blocks that starts
with ``ragmeter``; the install lines set up what this test suite already runs in) and its Python
blocks run in a scratch folder as written, with the scripted judge and the hashing embedder
registered under the names the page's commands use by default, ``local`` and ``minilm``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import plugins
from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge

from .conftest import prompt_name, yes_no

ROOT = Path(__file__).parent.parent
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
FENCED = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)

# The scripted judge's replies, by prompt: every sentence supported and needed, every answer
# committed and complete.
REPLIES: dict[str, object] = {
    "statements": {"statements": ["The answer states a fact."]},
    "questions": {"questions": ["What does the answer say?"] * 3, "noncommittal": False},
    "noncommittal": {"noncommittal": False},
    "extract": {"sentences": [1]},
    "supported": 0.9,
    "complete": 0.8,
    "needed": 0.7,
    "new_information": 0.9,
}


def respond(request: ChatRequest) -> str | ChatResponse:
    reply = REPLIES[prompt_name(request)]
    return yes_no(reply) if isinstance(reply, float) else json.dumps(reply)


def create_judge(model: str = "", **_: object) -> FakeJudge:
    return FakeJudge(responder=respond, model="getting-started")


def test_the_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("the site's build needs the 'docs' extra: pip install -e '.[docs]'")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stderr[-4000:]
    assert (tmp_path / "getting-started" / "index.html").is_file()
    # The tables of options are read from the options models, not left as markers.
    metrics = (tmp_path / "metrics" / "index.html").read_text()
    assert "<!-- options" not in metrics and "<code>threshold</code>" in metrics


def test_the_readme_links_to_pages_that_exist():
    """The README is read on the code host, outside the site: its links are checked here."""
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert "docs/getting-started.md" in targets
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert missing == []


def page_code(page: Path) -> tuple[list[list[str]], list[str]]:
    """The ``ragmeter`` commands of a page's ``bash`` blocks (continued lines joined, comments
    dropped), as argument lists, and its ``python`` blocks."""
    commands, programs = [], []
    for language, body in FENCED.findall(page.read_text()):
        if language == "python":
            programs.append(body)
        elif language == "bash":
            for line in body.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words[:1] == ["ragmeter"]:
                    commands.append(words[1:])
    return commands, programs


def test_the_page_reader_finds_commands_and_programs(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\npip install x\nragmeter evaluate a.jsonl \\\n    --out b  # a comment\n```\n\n"
        "```python\nprint(1)\n```\n\n```json\n{}\n```\n"
    )
    assert page_code(page) == ([["evaluate", "a.jsonl", "--out", "b"]], ["print(1)\n"])


def test_the_getting_started_commands_run(tmp_path, monkeypatch, no_user_cache):
    registered = plugins.available

    def with_scripted_models(kind: plugins.Kind) -> dict[str, str]:
        scripted = {
            "judge": {"local": f"{__name__}:create_judge"},
            "embedder": {"minilm": "ragmeter.judges.fake:create_embedder"},
        }
        return {**registered(kind), **scripted.get(kind, {})}

    monkeypatch.setattr(plugins, "available", with_scripted_models)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    commands, programs = page_code(GETTING_STARTED)
    assert [c[0] for c in commands] == ["evaluate", "evaluate", "init", "evaluate", "report"]
    outputs = []
    for command in commands:
        run = CliRunner().invoke(app, command)
        assert run.exit_code == 0, f"ragmeter {shlex.join(command)}\n{run.output}"
        outputs.append(run.output)
    first, again, _, from_file, _ = (" ".join(output.split()) for output in outputs)
    assert "0 items resumed" in first and "24 judged now" in first  # 8 samples x 3 metrics
    # Run again, the page says, and nothing is judged: every score is in the folder.
    for rerun in (again, from_file):
        assert "model calls 0" in rerun and "24 items resumed" in rerun
        assert re.search(r"\b0 judged now", rerun)
        assert "differs" not in rerun
    # The file's run is the command line's (nothing differs from the last run's configuration).
    assert "ragmeter.toml: data, metrics, judge; from the command line: none" in from_file
    assert (tmp_path / "report.html").stat().st_size > 0
    for program in programs:
        exec(compile(program, str(GETTING_STARTED), "exec"), {})
    assert (tmp_path / "runs" / "example" / "scores.sqlite").is_file()
