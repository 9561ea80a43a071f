"""The package's modules import each other without loops, so any of them can be imported first."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"


def module_imports() -> dict[str, set[str]]:
    """Each ragmeter module and the ragmeter modules it imports at its top level (``from
    ragmeter.x import y`` counts ``ragmeter.x`` and, if it is a module, ``ragmeter.x.y``)."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        imported: set[str] = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ragmeter"):
                imported.add(str(node.module))
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names if a.name.startswith("ragmeter"))
        found[name] = imported
    return {name: {m for m in imported if m in found} - {name} for name, imported in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import loop met by a depth-first walk, as the modules around it."""
    found: list[list[str]] = []
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        state[module] = "done"
        path.pop()

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_no_module_imports_itself_through_others():
    graph = module_imports()
    assert "ragmeter.evaluate" in graph and "ragmeter.manifest" in graph["ragmeter.evaluate"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_loop():
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(loop) == [["a", "b", "c", "a"]]


def test_every_module_imports_first():
    """Each module imported with no other ragmeter module loaded before it."""
    names = sorted(module_imports())
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n" + (
        "    for loaded in [m for m in sys.modules if m.startswith('ragmeter')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
