"""The house style holds: ruff (lint and format) and mypy are clean."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return found


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"])
def test_ruff(args: list[str]) -> None:
    done = subprocess.run([tool("ruff"), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy() -> None:
    tool("mypy")
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


# House style: small modules and small functions (a table of data is not a function).
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 50


def package_modules() -> list[Path]:
    package = ROOT / "fastload_cli"
    return [p for p in sorted(package.rglob("*.py")) if "examples" not in p.relative_to(package).parts]


def test_no_module_is_over_the_size_limit() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in package_modules()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_over_the_size_limit() -> None:
    long = []
    for path in [*package_modules(), *sorted((ROOT / "scripts").rglob("*.py"))]:  # the benchmarks too
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({size} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
