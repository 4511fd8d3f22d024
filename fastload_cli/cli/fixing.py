"""``fastload fix``: the diagnosis, each recommendation fastload can write as a change made in a
copy of the code that builds the training loader, each copy proven against the script as it is
in alternated plain runs (no fastload inside), the winners combined, and the one kept shown as a
unified diff: printed, written to a file, or applied after a confirmation, the original backed up.
What cannot be written as a change is said with the reason."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from fastload_cli.cli.output import EXIT_INTERRUPTED, STOP_SIGNALS, Output, note
from fastload_cli.cli.run import run_measured, terminate_as_interrupt, write_atomically, write_documents
from fastload_cli.config import RunConfig
from fastload_cli.errors import ScriptFailedError, UsageError
from fastload_cli.patching.diff import unified
from fastload_cli.patching.edits import Edit, edits
from fastload_cli.patching.proof import Proven, chosen, order, proven, winners
from fastload_cli.patching.rewrite import Unpatchable, rewrite
from fastload_cli.records import Command, LoaderInfo, NotWritten, PatchResult, ProvenChange, Report
from fastload_cli.runner.plain import PlainSettings, plain_run

INSTALLED = ("site-packages", "dist-packages")  # a loader built in an installed package is not the script's code


@dataclass(frozen=True, slots=True, kw_only=True)
class FixChoices:
    """What ``fix`` does with its winner, and how long it proves each patch."""

    patch: str | None  # write the diff here
    apply: bool  # apply it to the files, after a confirmation
    yes: bool  # the confirmation given on the command line
    rounds: int
    plain: PlainSettings


@dataclass(frozen=True, slots=True)
class Patched:
    """An edit written into the file that builds the loader: the file, its text before and after."""

    edit: Edit
    path: Path
    before: str
    after: str


def run_fix(base: RunConfig, out: Output, choices: FixChoices) -> None:
    from fastload_cli.analyzer.window import primary_loader
    from fastload_cli.config import DEFAULT_MAX_WORKERS, DIAGNOSE_MODES
    from fastload_cli.plan import Diagnose

    planned = Diagnose(DIAGNOSE_MODES, DEFAULT_MAX_WORKERS, follow_ups=True)
    outcome, report = run_measured(Command.DIAGNOSE, base, planned, out, documents=False)
    if report is None:
        return
    real = next((r for r in outcome.runs if r.batches), None)
    loader = primary_loader(real) if real is not None else None
    found, left = edits(report.recommendations, report.sweep, loader, report.fixes)
    patched, refused = _written(found, loader, base)
    proofs: tuple[Proven, ...] = ()
    kept = None
    if patched:
        with _interruptible(out, report):
            proofs, kept = _proven(base, patched, choices, loader, out)
    _Shown(out, choices).summary(proofs, kept, [*left, *refused])
    diff = unified({kept.path: (kept.before, kept.after)}, base.cwd) if kept is not None else None
    write_documents(replace(report, patch=_result(proofs, kept, (*left, *refused), diff, choices)), out)
    if kept is not None and diff is not None:
        _deliver(kept, diff, choices, out)


def _result(
    proofs: Sequence[Proven], kept: Patched | None, left: Sequence[NotWritten], diff: str | None, choices: FixChoices
) -> PatchResult:
    """What ``fix`` found, as the report holds it."""
    changes = tuple(
        ProvenChange(
            name=p.name,
            gain=p.gain if p.ratios else None,
            low=p.low if p.ratios else None,
            high=p.high if p.ratios else None,
            rounds=len(p.ratios),
            wins=p.wins,
            kept=kept is not None and p.name == kept.edit.name,
            failed=p.failed,
        )
        for p in proofs
    )
    plain = choices.plain
    return PatchResult(
        changes=changes,
        not_written=tuple(left),
        diff=diff,
        rounds=choices.rounds,
        epochs=plain.epochs,
        epoch_batches=plain.epoch_batches,
    )


def _written(
    found: Sequence[Edit], loader: LoaderInfo | None, base: RunConfig
) -> tuple[list[Patched], list[NotWritten]]:
    """Each edit written into the file that builds the loader, or why it cannot be."""
    where = _site(loader, base)
    if isinstance(where, str):
        return [], [NotWritten(name=e.name, reason=where) for e in found]
    path, line, class_name = where
    before = path.read_text(encoding="utf-8")
    patched, refused = [], []
    for edit in found:
        try:
            patched.append(Patched(edit, path, before, rewrite(before, line, class_name, edit)))
        except Unpatchable as exc:
            refused.append(NotWritten(name=edit.name, reason=f"{path.name}:{line}: {exc}"))
    return patched, refused


def _site(loader: LoaderInfo | None, base: RunConfig) -> tuple[Path, int, str] | str:
    """The script's line that builds the training loader, or why there is none to change."""
    if loader is None:
        return "no DataLoader batch was measured"
    if base.script.suffix == ".ipynb":
        return "the loader is built in a notebook: fastload writes changes to .py files only"
    if loader.call_file is None or loader.call_line is None or loader.call_class is None:
        return "where the script builds its loader was not seen"
    path = Path(loader.call_file)
    installed = next((path.parts[i + 1] for i, part in enumerate(path.parts[:-1]) if part in INSTALLED), None)
    if installed is not None or not path.is_file():
        owner = loader.framework or installed or str(path)
        return (
            f"the loader is built inside {owner}, not in the script's code: set it where {owner} takes it "
            "(the advice says where)"
        )
    return path.resolve(), loader.call_line, loader.call_class


def _proven(
    base: RunConfig, patched: Sequence[Patched], choices: FixChoices, loader: LoaderInfo | None, out: Output
) -> tuple[tuple[Proven, ...], Patched | None]:
    """Each patch alone against the script as it is, then the winners together; every proof, and
    the patch to keep."""
    alone = _rounds(base, patched, choices, out)
    best = {w.name for w in winners(alone)}
    combined = None
    if len(best) > 1:
        together = reduce(lambda a, b: a.joined(b), (p.edit for p in patched if p.edit.name in best))
        written, _ = _written([together], loader, base)
        if written:
            combined = next(iter(_rounds(base, written, choices, out)), None)
            patched = [*patched, *written]
    kept = chosen(alone, combined)
    proofs = (*alone, *((combined,) if combined is not None else ()))
    return proofs, next((p for p in patched if kept is not None and p.edit.name == kept.name), None)


class _Shown:
    """What ``fix`` found, as the report's last section: on stdout, or stderr where stdout holds JSON."""

    def __init__(self, out: Output, choices: FixChoices) -> None:
        self.console = Console(highlight=False, markup=False, soft_wrap=True, stderr=out.to_stdout)
        self.choices = choices

    def summary(self, proofs: Sequence[Proven], kept: Patched | None, left: Sequence[NotWritten]) -> None:
        plain = self.choices.plain
        lines = [""]
        if proofs:
            lines.append(
                f"Proven in plain runs (no fastload inside), against the script as it is: {self.choices.rounds} "
                f"rounds, each run {plain.epochs} epochs of at most {plain.epoch_batches} batches"
            )
            width = max(len(p.name) for p in proofs)
            for p in proofs:
                lines.append(f"  {p.name:<{width}}  {p.said:<32}  {_mark(p, kept)}".rstrip())
        if left:
            lines.append("Not written as a change:")
            reasons = {item.reason: [u.name for u in left if u.reason == item.reason] for item in left}
            lines += [f"  {', '.join(names)}: {reason}" for reason, names in reasons.items()]
        if kept is None:
            lines.append("No patch: " + ("no change was faster in every round." if proofs else "nothing to prove."))
        self.console.print(Text("\n".join(lines)))


def _mark(proof: Proven, kept: Patched | None) -> str:
    if proof.failed is not None:
        return ""
    if kept is not None and proof.name == kept.edit.name:
        return "kept"
    return "faster in every round" if proof.wins else "not faster in every round"


def _rounds(base: RunConfig, patched: Sequence[Patched], choices: FixChoices, out: Output) -> tuple[Proven, ...]:
    """``choices.rounds`` rounds of plain runs: the script as it is and each patched copy."""
    named = {p.edit.name: p for p in patched}
    rates: dict[str, list[float]] = {}
    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="fastload-fix-") as folder:
        copies = {name: _copy(p, Path(folder), i) for i, (name, p) in enumerate(named.items())}
        for r in range(choices.rounds):
            for name in order([n for n in named if n not in failed], r):
                what = "the script as it is" if name not in named else f"the script with {name}"
                note(out, f"Plain run, round {r + 1} of {choices.rounds}: {what}")
                try:
                    rate = plain_run(base, copies.get(name, {}), choices.plain, what).batches_per_s
                except ScriptFailedError as exc:
                    if name not in named:
                        raise  # the script as it is must run: nothing can be proven against it
                    failed[name] = _last_line(exc.output_tail) or exc.message
                    continue
                rates.setdefault(name, []).append(rate or 0.0)
    return proven(rates, failed)


def _last_line(output: str) -> str:
    return next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")


def _copy(patch: Patched, folder: Path, index: int) -> dict[Path, Path]:
    copy = folder / str(index) / patch.path.name
    copy.parent.mkdir(parents=True)
    copy.write_text(patch.after, encoding="utf-8")
    return {patch.path: copy}


@contextlib.contextmanager
def _interruptible(out: Output, report: Report) -> Iterator[None]:
    """Ctrl-C, SIGTERM or a hang-up during the plain runs: the run in flight stopped with its
    tree (``runner/plain.py``), the diagnosis's report written, no patch, the exit code as for a
    measured run."""
    with terminate_as_interrupt() as seen:
        try:
            yield
        except KeyboardInterrupt:
            write_documents(report, out)
            note(out, "Interrupted: no patch written.")
            raise typer.Exit(STOP_SIGNALS.get(seen.get("signal", 0), EXIT_INTERRUPTED)) from None


def _deliver(kept: Patched, diff: str, choices: FixChoices, out: Output) -> None:
    """The kept patch's diff: printed, written to ``--patch``'s file, or applied (``--apply``)."""
    if choices.patch is not None:
        write_atomically(Path(choices.patch), diff)
        note(out, f"Patch written to {choices.patch} (apply it with: patch -p1 < {choices.patch})")
    elif not out.to_stdout:
        Console(highlight=False, markup=False, soft_wrap=True).print(Text(diff), end="")
    if choices.apply:
        _apply(kept, choices, out)


def _apply(kept: Patched, choices: FixChoices, out: Output) -> None:
    """The kept patch written over the file, after a confirmation, the original kept beside it."""
    if not choices.yes:  # where no one can answer, the command refused --apply before its first run
        typer.confirm(f"Apply {kept.edit.name} to {kept.path}?", abort=True, err=True)
    if kept.path.read_text(encoding="utf-8") != kept.before:
        raise UsageError(f"{kept.path} changed while fastload measured it: not applied", "run fastload fix again")
    backup = next(p for i in range(1000) if not (p := kept.path.with_name(f"{kept.path.name}.orig{_nth(i)}")).exists())
    shutil.copy2(kept.path, backup)
    write_atomically(kept.path, kept.after)
    note(out, f"Applied {kept.edit.name} to {kept.path}; the original is kept as {backup}")


def _nth(i: int) -> str:
    return f".{i}" if i else ""
