"""Strings that come from elsewhere (a script's path and output, its classes' names, a report read
from a file) are shown as text: never markup, never escape sequences, never HTML."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from fastload_cli.formatting import printable
from fastload_cli.records import Report
from fastload_cli.reporters import comparison, html, terminal
from fastload_cli.reporters.shown import strings_changed
from tests.unit.test_gates import report as gate_report
from tests.unit.test_gates import run as gate_run
from tests.unit.test_report_sections import full_report

MARKUP = "[/x][bold]"  # rich would read markup here, and close a tag never opened: it raises
ESCAPE = "\x1b]0;pwned\x07\x1b[31m"  # a terminal title and a colour
HTML = "</script><img src=x onerror=alert(1)><b>"


def hostile(value: Any, text: str) -> Any:
    """``value`` with ``text`` added to every string it holds, record by record (keys kept: the
    renderers look figures up by them)."""
    return strings_changed(value, lambda s: s + text, keys=False)


def printed(renderable: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=True, markup=False).print(renderable)
    return out.getvalue()


def test_a_script_path_and_mode_names_with_markup_and_escapes_print_as_text() -> None:
    report: Report = hostile(full_report(), MARKUP + ESCAPE)
    shown = printed(terminal.render(report))
    assert MARKUP in shown  # as text, where the report has it
    assert "\x1b]0;" not in shown and "pwned\x07" not in shown and "\x1b[31m" + MARKUP not in shown
    assert MARKUP in terminal.plain_text(report)


def test_two_reports_read_from_files_compare_as_text() -> None:
    from fastload_cli.analyzer.compare import compare, figures

    read = hostile(figures(gate_report(gate_run(), script="train.py"), "before.json"), MARKUP + ESCAPE)
    shown = printed(comparison.render(compare(read, read)))
    assert MARKUP in shown and "\x1b]0;" not in shown


def test_the_page_escapes_every_string_of_the_report() -> None:
    page = html.document(hostile(full_report(), HTML))
    # as HTML text (&lt;img), or inside a chart's JSON (\u003cimg): never as markup
    assert "<img src=x" not in page and "</script><img" not in page and "<b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_printable_strips_control_characters_and_keeps_text() -> None:
    assert printable("a\x1b[31mb\x07c\td\ne\x9bf") == "a[31mbc\td\nef"
