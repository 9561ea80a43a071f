"""The package's modules import each other without loops, so any of them can be imported first."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"


def module_imports() -> dict[str, set[str]]:
    """Each ragmeter module and the ragmeter modules it imports (``from ragmeter.x import y``
    counts ``ragmeter.x`` and, if it is a module, ``ragmeter.x.y``).

    Every import statement counts, wherever it stands: at the top level, under ``if
    TYPE_CHECKING:`` or ``try:``, or inside a function. An import moved into a function or
    behind ``TYPE_CHECKING`` still ties the two modules together; it only puts the loop off
    until the first call or the type checker, so it is no way out of one. A package's
    ``__init__`` counts when it is named (``from ragmeter.judges import Judge``), not because
    one of its modules is imported.
    """
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found[name] = imported_names(path.read_text())
    return {name: {m for m in imported if m in found} - {name} for name, imported in found.items()}


def imported_names(source: str) -> set[str]:
    """The ragmeter names a module's source imports, anywhere in it."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ragmeter"):
            imported.add(str(node.module))
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names if a.name.startswith("ragmeter"))
    return imported


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


def test_judging_reads_heads_without_importing_their_fitting():
    """The judges and the session read verdict heads (``judges.heads``); fitting them on people's
    labels (``heads``) stands above both, so neither imports it."""
    graph = module_imports()
    judging = [m for m in graph if m.startswith("ragmeter.judges")] + ["ragmeter.session"]
    assert "ragmeter.judges.heads" in graph["ragmeter.judges.registry"]
    upward = {
        module: sorted(t for t in graph[module] if t.split(".")[:2] == ["ragmeter", "heads"])
        for module in judging
    }
    assert {module: found for module, found in upward.items() if found} == {}


def test_imports_inside_functions_and_type_checking_blocks_count():
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ragmeter.a import Record\n"
        "def later():\n"
        "    import ragmeter.b\n"
    )
    assert imported_names(source) == {"ragmeter.a", "ragmeter.a.Record", "ragmeter.b"}


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
