"""docs/how-it-works.md's module map names every module of the package, and names none that is
gone: a module is named by its path (`analyzer/verdict.py`), or by its file name in the row of its
package (`analyzer/search/` ... `step.py`)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

PACKAGE = ROOT / "fastload_cli"


def map_rows() -> list[str]:
    text = (ROOT / "docs" / "how-it-works.md").read_text()
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def named(row: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", row))


def modules() -> list[str]:
    """Every module of the package, as a path under it; the bundled examples are one row."""
    return sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" and "examples" not in p.relative_to(PACKAGE).parts
    )


def covered(module: str, rows: list[str]) -> bool:
    folder, _, name = module.rpartition("/")
    for row in rows:
        names = named(row)
        if module in names or (folder and f"{folder}/" in names and name in names):
            return True
    return False


def test_every_module_is_in_the_map() -> None:
    rows = map_rows()
    missing = [m for m in modules() if not covered(m, rows)]
    assert not missing, f"modules the map in docs/how-it-works.md does not name: {missing}"


def test_every_module_and_package_the_map_names_exists() -> None:
    paths = {n for row in map_rows() for n in named(row) if re.fullmatch(r"[\w/]+(\.py|/)", n) and "/" in n}
    gone = sorted(n for n in paths if not (PACKAGE / n).exists())
    assert not gone, f"the map in docs/how-it-works.md names what the package no longer has: {gone}"
