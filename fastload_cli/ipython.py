"""fastload in Jupyter and IPython: ``%load_ext fastload_cli.ipython``, then

    %fastload diagnose train.py -- --epochs 1
    %fastload diagnose notebook.ipynb

runs fastload on a script or a notebook from inside the notebook and shows the report there: the
HTML page where its extra is installed (``pip install 'fastload[html]'``), the terminal report
otherwise. fastload runs as its own process, as from a terminal: the kernel's state is left as it
was, and the script runs in fresh processes, as every fastload run does.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPORTING = ("diagnose", "synthetic-compare", "sweep-workers", "try", "demo")  # the commands that write a report
HTML_NEEDS = ("jinja2", "plotly")


def load_ipython_extension(ipython: Any) -> None:
    """IPython's hook for ``%load_ext fastload_cli.ipython``: the ``%fastload`` line magic."""
    ipython.register_magic_function(fastload, magic_kind="line", magic_name="fastload")


def fastload(line: str) -> None:
    """``%fastload COMMAND ARGS``: the command's report, shown in the notebook."""
    from IPython.display import HTML, display

    args = shlex.split(line)
    with tempfile.TemporaryDirectory(prefix="fastload-") as folder:
        command, page, text = invocation(args, Path(folder))
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if page is not None and page.exists():
            display(HTML(page.read_text(encoding="utf-8")))
        elif text is not None and text.exists():
            print(text.read_text(encoding="utf-8"))
        else:
            print(done.stdout, end="")
    if done.returncode != 0 or (page is None and text is None):
        print(done.stderr, end="", file=sys.stderr)


def invocation(args: list[str], folder: Path) -> tuple[list[str], Path | None, Path | None]:
    """The fastload command a magic's arguments run, and where its report is written: an HTML
    page where its extra is installed, else the text report; nothing for a command without one."""
    base = [sys.executable, "-m", "fastload_cli"]
    if not args or args[0] not in REPORTING:
        return [*base, *args], None, None
    if all(importlib.util.find_spec(name) is not None for name in HTML_NEEDS):
        page = folder / "report.html"
        return [*base, args[0], "--html", str(page), *args[1:]], page, None
    text = folder / "report.txt"
    return [*base, args[0], "--output", f"text={text}", *args[1:]], None, text
