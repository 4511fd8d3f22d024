"""The module layering of ARCHITECTURE.md, checked by walking every import in the package.

Each module may import only the fastload components its row allows (its own component always).
torch, torchvision and pynvml are never imported at module level (``fastload --help`` must not
load them), and the modules that run inside the child use the stdlib plus ``records`` alone.
"""

from __future__ import annotations

import ast
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
    "reporters",
    "session",
    "examples",
    "fixes",
}
CHILD_SIDE = {
    "records",
    "fixes",
    "runner.child",
    "runner.hooks",
    "runner.modes",
    "runner.channel",
    "runner.batches",
    "runner.transforms",
    "runner.breakdown",
    "runner.stacks",
    "runner.fixing",
    "runner.interleave",
    "runner.points",
    "runner.actuators",
}

# module (or component) -> fastload components it may import
ALLOWED: dict[str, set[str]] = {
    "records": set(),
    "errors": set(),
    "formatting": set(),
    "config": {"records", "errors"},
    "samplers": {"records", "errors"},
    "runner.child": CHILD_SIDE,
    "runner.hooks": CHILD_SIDE,
    "runner.modes": CHILD_SIDE,
    "runner.channel": CHILD_SIDE,
    "runner.batches": CHILD_SIDE,
    "runner.transforms": CHILD_SIDE,
    "runner.breakdown": CHILD_SIDE,
    "runner.stacks": CHILD_SIDE,
    "runner.fixing": CHILD_SIDE,
    "runner.interleave": CHILD_SIDE,
    "runner.points": CHILD_SIDE,
    "runner.actuators": CHILD_SIDE,
    "runner.warm": CHILD_SIDE,  # its starter runs child-side: it imports the child before forking runs
    "runner.collect": {"records"},
    "runner.launch": {"samplers", "records", "config", "errors", "runner"},
    "runner.job": {"samplers", "records", "config", "errors", "runner"},
    "runner.processes": {"records"},
    "analyzer": {"records", "config", "formatting"},
    "reporters": {"records", "formatting"},
    "session": {"runner", "analyzer", "samplers", "records", "config", "errors"},
    "examples": set(),
    "fixes": set(),  # the fixes library: users import it, and the child applies it
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
    if not imported.startswith("fastload_cli"):
        return None
    parts = imported.split(".")[1:]
    for size in range(len(parts), 0, -1):
        candidate = ".".join(parts[:size])
        if candidate in ALLOWED or candidate in EVERYTHING:
            return candidate
    return ""


def allowed(source: str, target: str) -> bool:
    if target == "":
        return True  # the package root holds only the version
    row = component(source)
    rules = ALLOWED[row]
    if target in rules or target.split(".")[0] in rules:
        return True
    same_component = target.split(".")[0] == row.split(".")[0]
    # the child side may use only its listed siblings; the records package is one component
    return same_component and (row not in CHILD_SIDE or row == "records")


@pytest.mark.parametrize(("name", "path"), modules(), ids=[m[0] or "__init__" for m in modules()])
def test_module_imports_follow_the_layering(name: str, path: Path) -> None:
    for imported, top in imports(path):
        target = fastload_target(imported)
        if target is not None:
            assert allowed(name, target), f"{name} may not import fastload_cli.{target}"
        root = imported.split(".")[0]
        if top:
            assert root not in HEAVY, f"{name} imports {root} at module level"
        if component(name) in CHILD_SIDE and target is None:
            stdlib = root in sys.stdlib_module_names
            assert stdlib or root in THIRD_PARTY_ALLOWED_IN_CHILD, f"{name} (runs in the child) imports {root}"


def test_the_table_covers_every_module() -> None:
    for name, _ in modules():
        assert component(name) in ALLOWED


def test_a_violation_is_caught() -> None:
    assert not allowed("analyzer.verdict", "runner")
    assert not allowed("runner.hooks", "samplers")
    assert not allowed("runner.hooks", "runner.launch")
    assert allowed("runner.launch", "runner.child")
    assert allowed("analyzer.verdict", "analyzer")
