"""Option groups (``cli/groups.py``): options declared once as a record's fields, added to any
command, handed back as the record."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Annotated

import typer
from typer.testing import CliRunner

from fastload_cli.cli import app
from fastload_cli.cli.groups import group, grouped
from fastload_cli.cli.options import Chatter, GateOptions, Measure, Outputs, Transforms
from fastload_cli.reporters import FORMATS


@group
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Colour:
    hue: Annotated[str, typer.Option("--hue")] = "red"
    depth: Annotated[int, typer.Option("--depth")] = 1


PALE = Colour(hue="white")


def test_a_group_becomes_its_options_and_comes_back_as_one_record() -> None:
    seen: list[Colour] = []

    @grouped
    def paint(name: str, *, colour: Colour = PALE) -> None:
        seen.append(colour)

    parameters = inspect.signature(paint).parameters
    assert list(parameters) == ["name", "hue", "depth"]
    assert parameters["hue"].default == "white" and parameters["depth"].default == 1  # the preset's, then the field's
    paint("wall", hue="blue", depth=3)
    assert seen == [Colour(hue="blue", depth=3)]


def test_a_group_runs_through_typer() -> None:
    seen: list[Colour] = []
    cli = typer.Typer()

    @cli.command()
    @grouped
    def paint(name: str, *, colour: Colour) -> None:
        seen.append(colour)

    result = CliRunner().invoke(cli, ["wall", "--hue", "green"])
    assert result.exit_code == 0, result.output
    assert seen == [Colour(hue="green", depth=1)]


def test_every_output_option_names_a_registered_format() -> None:
    # an output option is one field of Outputs: its name is the format it writes
    for name in Outputs().named():
        assert name in FORMATS


def test_every_command_that_runs_a_script_takes_every_option_of_its_groups() -> None:
    runner = CliRunner()
    for command in ("diagnose", "synthetic-compare", "sweep-workers", "try"):
        shown = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        for kind in (Measure, Outputs, GateOptions, Chatter):
            for field in dataclasses.fields(kind):
                flag = "--" + ("output" if field.name == "output" else field.name.replace("_", "-"))
                assert flag in shown, f"{command} lacks {flag}"
    diagnose = runner.invoke(app, ["diagnose", "--help"], env={"COLUMNS": "200"}).output
    assert all("--" + f.name.replace("_", "-") in diagnose for f in dataclasses.fields(Transforms))
