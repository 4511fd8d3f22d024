"""A patch as ``patch -p1`` and ``git apply`` read it: a unified diff per changed file, its paths
relative to the folder fastload ran in, behind ``a/`` and ``b/``. Pure."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path

NO_NEWLINE = "\\ No newline at end of file\n"


def unified(changed: Mapping[Path, tuple[str, str]], root: Path) -> str:
    """Each file of ``changed`` (path -> its text before, after) as a unified diff, in path order."""
    return "".join(_file(path, before, after, root) for path, (before, after) in sorted(changed.items()))


def _file(path: Path, before: str, after: str, root: Path) -> str:
    shown = Path(os.path.relpath(path, root)).as_posix()
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in lines)
