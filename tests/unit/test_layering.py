"""The module layering of ARCHITECTURE.md, checked by walking every import in the package.

Each module may import only the fastload components its row allows (its own component always).
torch, torchvision and pynvml are never imported at module level (``fastload --help`` must not
load them), and the modules that run inside the child (``runner.child``) use the stdlib, torch, ``records``
and ``fixes`` alone.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "fastload_cli"
EVERYTHING = {
    "records",
    "errors",
    "formatting",
    "config",
    "samplers",
    "runner",
    "analyzer",
    "plan",
    "reporters",
    "session",
    "examples",
    "fixes",
    "patching",
}
CHILD = "runner.child"  # runs inside the child process: itself, records and fixes, the stdlib and torch

# module (or component) -> fastload components it may import. A module may always import its own
# row; a top-level row its whole component too; a nested row (``runner.child``, ``analyzer.search``)
# lists everything else it may import. Only ``runner.child`` imports ``runner.child``.
ALLOWED: dict[str, set[str]] = {
    "records": set(),
    "errors": set(),
    "formatting": set(),
    "config": {"records", "errors"},
    "samplers": {"records", "errors"},
    CHILD: {"records", "fixes"},
    "runner.warm": {"records"},  # the parent's client of the warm starter (its server is runner.child.starter)
    "runner.stacks": {"records"},
    "runner.collect": {"records", "runner.kept"},
    "runner.kept": {"records", "config"},  # a run's batch records, bounded: what a run keeps follows its config
    "runner": {"samplers", "records", "config", "errors"},  # the parent's side: start, flight, launch, job
    "runner.processes": {"records"},
    "analyzer": {"records", "config", "formatting"},
    # the num_workers search: of the analyzer, the thresholds, the noise rules, one run's window and
    # figures, the settle rule
    "analyzer.search": {
        "records",
        "config",
        "formatting",
        "analyzer.thresholds",
        "analyzer.noise",
        "analyzer.window",
        "analyzer.metrics",
        "analyzer.settle",
    },
    # the pathologies: of the analyzer, the thresholds, one run's window and figures, the facts, what advice shares
    "analyzer.pathologies": {
        "records",
        "config",
        "formatting",
        "analyzer.thresholds",
        "analyzer.window",
        "analyzer.metrics",
        "analyzer.facts",
        "analyzer.advice.shared",
    },
    # every command as a plan: what runs next, decided from the analysis of what was measured
    "plan": {"analyzer", "records", "config", "formatting", "errors"},
    "reporters": {"records", "formatting"},
    # advice written as a change to the script's code, and its proof judged: pure
    "patching": {"analyzer", "records", "formatting"},
    # executes the plan's steps and decides nothing: no analyzer rule
    "session": {"runner", "plan", "samplers", "records", "config", "errors"},
    "examples": set(),
    "fixes": set(),  # the fixes library: users import it, and the child applies it
    "ipython": set(),  # the %fastload magic: runs fastload as a process of its own
    "cli": EVERYTHING,
    "__main__": {"cli"},
    "": set(),  # the package's __init__
}
HEAVY = {"torch", "torchvision", "pynvml"}
THIRD_PARTY_ALLOWED_IN_CHILD = {"torch", "torchvision"}  # imported lazily, after the script imported them


def modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if parts[:1] == ["examples"] and len(parts) > 1:
            continue  # the example scripts are user code, not fastload
        found.append((".".join(parts), path))
    return found


def component(name: str) -> str:
    """The ALLOWED row for a module: the module itself, else its package."""
    while name not in ALLOWED:
        name = name.rpartition(".")[0]
    return name


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level) for every import in the file."""
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(f"{node.module}.{alias.name}", id(node) in top_level) for alias in node.names]
    return found


def fastload_target(imported: str) -> str | None:
    """The fastload module an import names (``from pkg import name``: ``pkg.name`` where that is a
    module, else ``pkg``); "" for the package root; None outside fastload."""
    if not imported.startswith("fastload_cli"):
        return None
    dotted = imported.removeprefix("fastload_cli").lstrip(".")
    return dotted if dotted in module_names() else dotted.rpartition(".")[0]


@functools.cache
def module_names() -> frozenset[str]:
    return frozenset(name for name, _ in modules())


def within(target: str, row: str) -> bool:
    return target == row or target.startswith(f"{row}.")


def allowed(source: str, target: str) -> bool:
    if target == "":
        return True  # the package root holds only the version
    row = component(source)
    if within(target, CHILD) and not within(row, CHILD):
        return False  # the child's code is loaded by the child alone
    if within(target, row) or any(within(target, rule) for rule in ALLOWED[row]):
        return True
    return "." not in row and target.split(".")[0] == row


@pytest.mark.parametrize(("name", "path"), modules(), ids=[m[0] or "__init__" for m in modules()])
def test_module_imports_follow_the_layering(name: str, path: Path) -> None:
    for imported, top in imports(path):
        target = fastload_target(imported)
        if target is not None:
            assert allowed(name, target), f"{name} may not import fastload_cli.{target}"
        root = imported.split(".")[0]
        if top:
            assert root not in HEAVY, f"{name} imports {root} at module level"
        if within(component(name), CHILD) and target is None:
            stdlib = root in sys.stdlib_module_names
            assert stdlib or root in THIRD_PARTY_ALLOWED_IN_CHILD, f"{name} (runs in the child) imports {root}"


def test_the_table_covers_every_module() -> None:
    for name, _ in modules():
        assert component(name) in ALLOWED


def test_a_violation_is_caught() -> None:
    assert not allowed("analyzer.verdict", "runner")
    assert not allowed("runner.child.hooks", "samplers")
    assert not allowed("runner.child.hooks", "runner.launch")
    assert not allowed("runner.launch", "runner.child")  # the parent never loads the child's code
    assert not allowed("session", "runner.child.hooks")
    assert not allowed("session", "analyzer")  # the session decides nothing: it asks the plan
    assert not allowed("session", "analyzer.thresholds")
    assert not allowed("analyzer.verdict", "plan")  # the analyzer knows nothing of what runs next
    assert not allowed("plan.diagnose", "runner")  # the plan runs nothing
    assert allowed("session", "plan")
    assert allowed("plan.diagnose", "analyzer.search")
    assert allowed("runner.child.hooks", "runner.child")
    assert allowed("runner.child.hooks", "records")
    assert allowed("runner.launch", "runner.collect")
    assert allowed("analyzer.verdict", "analyzer")
    assert allowed("analyzer.verdict", "analyzer.search")
    assert allowed("analyzer.search.step", "analyzer.metrics")
    assert not allowed("analyzer.search.step", "analyzer.verdict")
    assert not allowed("analyzer.search.step", "analyzer")  # the analyzer's entry builds on the search


def module_graph() -> dict[str, set[str]]:
    """fastload's modules and the fastload modules each imports (``fastload_target``), at module
    level or lazily, inside a function or under ``TYPE_CHECKING``: a lazy import hides a cycle, it
    does not break it."""
    graph: dict[str, set[str]] = {}
    for name, path in modules():
        edges = {fastload_target(imported) for imported, _ in imports(path)}
        graph[name] = {e for e in edges if e is not None} & module_names() - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk, each once (as the path that closes it)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    found = cycles(module_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_a_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
