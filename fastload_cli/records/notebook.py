"""A Jupyter notebook run as one script: its code cells in order, in one namespace, top to bottom,
as a kernel runs them with "Run All". What the parent checks before any run and the child runs.

IPython's own syntax is handled as IPython would where it changes nothing that training does:
``%matplotlib``, ``%config``, ``%load_ext``/``%autoreload`` and help lines (``obj?``) are left
out, ``%env NAME=value`` sets the variable, ``%time``/``%timeit`` and ``%%time``/``%%capture``
run their code once. Anything else, shell lines (``!pip install``) and other magics, is refused
with the cell that holds it: install and prepare before running fastload. Each cell is compiled
as ``NOTEBOOK [cell N]``, so a traceback names the cell and its line. Pure; stdlib only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

LEFT_OUT = ("matplotlib", "config", "load_ext", "reload_ext", "autoreload", "aimport", "pylab", "who", "whos")
RUN_ONCE = ("time", "timeit", "capture", "prun")  # run the code that follows them, once
MAGIC = re.compile(r"^(\s*)(%{1,2})(\w+)\s?(.*)$")
HELP = re.compile(r"\?{1,2}[\w.]+|[\w.]+\?{1,2}")  # obj? obj?? ?obj: IPython shows help, runs nothing


class NotebookError(ValueError):
    """A notebook fastload cannot run as a script; ``cell`` is 1-based, 0 for the notebook itself."""

    def __init__(self, cell: int, why: str) -> None:
        super().__init__(f"cell {cell}: {why}" if cell else why)
        self.cell, self.why = cell, why


@dataclass(frozen=True, slots=True)
class Cell:
    number: int  # 1-based, among all the notebook's cells, as Jupyter shows their order
    source: str  # Python, IPython's syntax handled

    def filename(self, notebook: str) -> str:
        return f"{notebook} [cell {self.number}]"


def cells(path: Path) -> tuple[Cell, ...]:
    """The notebook's code cells as Python, in order; NotebookError for one fastload cannot run."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(0, f"not a notebook that can be read ({exc})") from None
    found = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(found, list):
        raise NotebookError(0, "not a Jupyter notebook (no cells)")
    code = []
    for number, cell in enumerate(found, start=1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            code.append(Cell(number, python(number, text)))
    return tuple(code)


def python(number: int, text: str) -> str:
    """A cell's source with IPython's syntax handled; NotebookError where it cannot be."""
    lines = text.splitlines()
    first = MAGIC.match(lines[0]) if lines else None
    if first is not None and first.group(2) == "%%":
        name = first.group(3)
        if name not in RUN_ONCE:
            raise NotebookError(number, f"the cell magic %%{name} runs something other than Python")
        lines = lines[1:]
    return "\n".join(_line(number, line) for line in lines) + "\n"


def _line(number: int, line: str) -> str:
    stripped = line.strip()
    if stripped.startswith("!"):
        raise NotebookError(number, f"the shell line `{stripped}`: run it before fastload, which runs the Python")
    if HELP.fullmatch(stripped):
        return ""
    found = MAGIC.match(line)
    if found is None or found.group(2) != "%":
        return line
    indent, name, rest = found.group(1), found.group(3), found.group(4)
    if name in LEFT_OUT:
        return f"{indent}pass  # %{name}"
    if name in RUN_ONCE:
        return f"{indent}{rest}"
    if name == "env":  # %env NAME=value sets it; %env alone shows the environment
        key, _, value = rest.partition("=")
        if not value:
            return f"{indent}pass  # %env"
        return f"{indent}__import__('os').environ[{key.strip()!r}] = {value.strip()!r}"
    raise NotebookError(number, f"the magic %{name}: fastload runs the notebook's Python, and this is not")


def check(path: Path, shown: str) -> None:
    """Every code cell compiles; NotebookError naming the cell and its line otherwise."""
    for cell in cells(path):
        try:
            compile(cell.source, cell.filename(shown), "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise NotebookError(cell.number, f"line {exc.lineno}: {exc.msg}") from None
