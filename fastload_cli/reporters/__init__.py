"""Report renderers, one module per format, and the registry of formats fastload can write.

Each format is a pure converter from a ``Report`` to the text of a document; ``cli`` does the
writing (to a file, or to stdout for ``-``). Adding a format is one module and one line in
``FORMATS``; ``--output NAME=PATH`` writes it, and ``--json PATH`` is ``--output json=PATH``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastload_cli.records import Report
from fastload_cli.reporters import html, json_report, terminal, trace


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    render: Callable[[Report], str]  # the whole document
    title: str  # what is written, as a note names it: "JSON report written to PATH"
    requires: tuple[str, ...] = ()  # modules it imports when rendering, checked before any run
    install: str = ""  # how to get them


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("json", json_report.document, "JSON report"),
        Format("text", terminal.plain_text, "Text report"),
        Format("trace", trace.document, "Trace (open it in ui.perfetto.dev or chrome://tracing)"),
        Format("html", html.document, "HTML report", requires=html.REQUIRES, install=html.INSTALL),
    )
}
