"""Every command's help, rendered as an 80-column terminal shows it: its text intact."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from fastload_cli.cli import app

WIDTH = 80
COMMANDS = [c.name or getattr(c.callback, "__name__", "").replace("_", "-") for c in app.registered_commands]


def rendered(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(WIDTH)}, terminal_width=WIDTH)
    assert result.exit_code == 0, result.output
    return result.output


def description(text: str) -> list[list[str]]:
    """The paragraphs of the help's description (after the usage line, before the first panel)."""
    block = text.split("Usage:", 1)[1].split("╭", 1)[0].splitlines()[1:]
    paragraphs, current = [], []
    for line in block:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            paragraphs, current = [*paragraphs, current], []
    return [*paragraphs, current] if current else paragraphs


@pytest.mark.parametrize("command", COMMANDS)
def test_a_commands_help_wraps_its_sentences_where_the_terminal_ends(command: str) -> None:
    for paragraph in description(rendered(command)):
        for line in paragraph[:-1]:  # a line cut short inside a paragraph: the source's line break shows
            assert len(line) >= WIDTH - 20, f"{command}: {line!r} ends early in {paragraph}"


def test_brackets_in_help_survive_the_terminals_markup() -> None:
    text = re.sub(r"[│\s]+", " ", rendered("diagnose"))
    assert "pip install 'fastload[html]'" in text
    assert "python [-m module]" in text


def test_diagnose_help_lists_the_ways_to_start_what_runs() -> None:
    text = re.sub(r"[│\s]+", " ", rendered("diagnose"))
    for form in ("notebook.ipynb", "-m package.train", "torchrun --nproc-per-node N", "accelerate launch"):
        assert form in text
