"""What to run and how: validated settings for one child run and for a whole command."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from fastload_cli.errors import FastloadError, ScriptNotFoundError, UsageError
from fastload_cli.records import ChildSpec, FixSpec, Mode, ModeSpec, Streamed, notebook

DEFAULT_WARMUP = 5
DEFAULT_MAX_BATCHES = 50
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MAX_REGRESSION = 10.0  # percent: --max-regression, the compare gate's default
# A sweep measures many settings, each a run of its own: fewer batches per setting by default.
DEFAULT_SWEEP_BATCHES = 30
# The highest num_workers a sweep tries unless told otherwise (--max-workers).
DEFAULT_MAX_WORKERS = 32
# Samples the breakdown times step by step: enough for stable per-step means, a few seconds at most.
DEFAULT_BREAKDOWN_ITEMS = 64
# Seconds py-spy samples the loading processes for (--py-spy).
DEFAULT_PY_SPY_S = 3.0
# 20 Hz: a run of a few seconds still gets dozens of CPU readings per process.
DEFAULT_SAMPLE_INTERVAL_S = 0.05
# diagnose starts its follow-up runs (the cached run, runs that verify fixes) only while each would
# end within this many seconds of the command's start: the verdict comes first, and fast (a run
# that ends later than its estimate still leaves the command under 30 s).
DEFAULT_FOLLOW_UP_BUDGET_S = 25.0
# diagnose measures a ceiling near the compute-bound line again only while real and synthetic, run
# once more, would end within this many seconds of the command's start: on a step of a second,
# two more runs would triple the time to the verdict.
AGAIN_BUDGET_S = 40.0
# A pathology's fix (in_order=False, one thread per worker) is worth a longer diagnose: its run may
# end this many seconds past that budget.
PATHOLOGY_FOLLOW_UP_EXTRA_S = 60.0
# How long a child may take to leave after it was asked to stop, before it is terminated.
DEFAULT_STOP_GRACE_S = 3.0

# Whether what a run has streamed so far measures its throughput as well as needed (the analyzer's).
SettleRule = Callable[[Streamed], bool]

DIAGNOSE_MODES = (
    ModeSpec(mode=Mode.REAL),
    ModeSpec(mode=Mode.SYNTHETIC),
    ModeSpec(mode=Mode.SYNTHETIC_DEVICE),  # only where the script trains on CUDA
    ModeSpec(mode=Mode.NO_AUG),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Launcher:
    """A data-parallel job: started with ``torch.distributed.run`` (torchrun's launcher), with these
    of its options, named as on a torchrun line."""

    nproc_per_node: int
    max_restarts: int = 0
    nnodes: str = "1"  # "2", or "1:4" for an elastic range
    node_rank: int | None = None
    rdzv_backend: str | None = None
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None
    master_addr: str | None = None
    master_port: int | None = None

    @property
    def multi_node(self) -> bool:
        return self.nnodes not in ("1", "1:1")

    def arguments(self) -> list[str]:
        """The launcher's options: as given, and ``--standalone`` (a free local port) for a job on
        one node that names no rendezvous."""
        named = {f"--{f.name.replace('_', '-')}": getattr(self, f.name) for f in fields(self)}
        args = [f"{flag}={value}" for flag, value in named.items() if value is not None]
        rendezvous = (self.rdzv_backend, self.rdzv_endpoint, self.master_addr, self.master_port)
        if not self.multi_node and all(value is None for value in rendezvous):
            args.append("--standalone")
        return args


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """One run of the script: what the child is told (``child``) and how the parent runs it."""

    script: Path  # absolute path of the script (of a module's source, run as ``python -m``)
    script_arg0: str  # the script path as the user wrote it (becomes sys.argv[0]); "-m NAME" for a module
    module: str | None = None  # run as ``python -m module``: the child runs it with runpy's semantics
    script_args: tuple[str, ...] = ()
    child: ChildSpec = field(default_factory=lambda: ChildSpec(warmup=DEFAULT_WARMUP))
    max_batches: int = DEFAULT_MAX_BATCHES
    timeout_s: float = DEFAULT_TIMEOUT_S
    python: str = sys.executable
    warm_start: bool = True  # fork runs from a process that imported torch once (runner/warm.py)
    cwd: Path = field(default_factory=Path.cwd)
    sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S
    stop_grace_s: float = DEFAULT_STOP_GRACE_S
    py_spy_s: float = 0.0  # >0: sample the loading processes with py-spy this long (real mode)
    launcher: Launcher | None = None  # a data-parallel job: run through torch.distributed.run
    fixed_batches: bool = False  # measure exactly max_batches: no stop once the estimate is stable
    settle: SettleRule | None = None  # stop before max_batches once this says the estimate is stable
    reach: SettleRule | None = None  # ... but not while this says the training loader's next epoch is near

    @property
    def spec(self) -> ModeSpec:
        return self.child.mode

    @property
    def warmup(self) -> int:
        return self.child.warmup

    @property
    def requested_batches(self) -> int:
        return self.warmup + self.max_batches

    def with_mode(self, spec: ModeSpec) -> RunConfig:
        return self.with_child(mode=spec)

    def with_child(self, **changes: Any) -> RunConfig:
        """This run with some of the child's settings changed (``warmup=``, ``mode=``, ...)."""
        return replace(self, child=replace(self.child, **changes))


def check_counts(*, warmup: int, max_batches: int, timeout_s: float) -> None:
    if max_batches < 1:
        raise FastloadError(f"--max-batches must be at least 1 (got {max_batches})")
    if warmup < 0:
        raise FastloadError(f"--warmup cannot be negative (got {warmup})")
    if not timeout_s > 0:
        raise FastloadError(f"--timeout must be a positive number of seconds (got {timeout_s})")


def check_script(arg: str, cwd: Path) -> Path:
    """The absolute path of a runnable Python script, or a ScriptNotFoundError that says why."""
    path = Path(arg) if os.path.isabs(arg) else cwd / arg
    if not path.exists():
        raise ScriptNotFoundError(arg, "no such file", "check the path; it is relative to the current directory")
    if path.is_dir():
        raise ScriptNotFoundError(arg, "is a directory, not a script", "give the training script itself, e.g. train.py")
    if not os.access(path, os.R_OK):
        raise ScriptNotFoundError(arg, "cannot be read (permission denied)")
    if path.suffix == ".ipynb":
        return _check_notebook(path, arg)
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise ScriptNotFoundError(arg, f"cannot be read ({exc.strerror})") from exc
    if not _looks_like_python(path, source):
        raise ScriptNotFoundError(
            arg, "does not look like a Python script", "fastload runs Python training scripts (*.py)"
        )
    _check_syntax(source, path, arg)
    return path


def _check_notebook(path: Path, arg: str) -> Path:
    """A notebook whose code cells run as one script (``records.notebook``); a UsageError that
    names the cell that cannot."""
    try:
        notebook.check(path, arg)
    except notebook.NotebookError as exc:
        raise UsageError(f"{arg}: {exc}", "fastload runs the notebook's code cells in order, as one script") from None
    return path


def check_module(name: str, cwd: Path) -> Path:
    """The source file ``python -m name`` would run from ``cwd`` (a module's file, or a package's
    ``__main__.py``), found without importing anything; a ScriptNotFoundError that says why not."""
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        raise ScriptNotFoundError(f"-m {name}", "is not a module name", "for example: -m package.train")
    for root in [cwd, *(Path(p) for p in sys.path[1:] if p)]:
        base = root.joinpath(*parts)
        for found in (base.with_suffix(".py"), base / "__main__.py"):
            if found.is_file():
                _check_syntax(found.read_bytes(), found, f"-m {name}")
                return found
    raise ScriptNotFoundError(
        f"-m {name}",
        "no such module in the working directory or on the Python path",
        "run fastload from the directory you would run `python -m` from",
    )


def _looks_like_python(path: Path, source: bytes) -> bool:
    if path.suffix in (".py", ".pyw"):
        return True
    first = source[:200].split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"python" in first


def _check_syntax(source: bytes, path: Path, arg: str) -> None:
    if b"\0" in source:
        raise ScriptNotFoundError(arg, "is a binary file, not a Python script")
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"{arg}, line {exc.lineno}" if exc.lineno else arg
        raise FastloadError(
            f"syntax error in {where}: {exc.msg}",
            "the script must run under plain `python` before fastload can measure it",
        ) from exc
    except ValueError as exc:
        raise ScriptNotFoundError(arg, f"cannot be compiled ({exc})") from exc


def parse_modes(text: str) -> tuple[ModeSpec, ...]:
    """``"real,synthetic"`` -> specs; FastloadError on an unknown mode or an empty list."""
    specs = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            specs.append(ModeSpec.parse(part))
        except ValueError as exc:
            raise FastloadError(f"--modes: {exc}") from exc
    if not specs:
        raise FastloadError("--modes needs at least one mode", "for example --modes real,synthetic")
    if specs[0].mode is not Mode.REAL:
        specs.insert(0, ModeSpec(mode=Mode.REAL))
    return tuple(dict.fromkeys(specs))


def parse_counts(option: str, text: str, *, minimum: int) -> tuple[int, ...]:
    """``"0,2,4"`` -> (0, 2, 4), in the order given, without repeats; FastloadError otherwise."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < minimum:
            raise FastloadError(f"{option}: '{part}' is not a whole number >= {minimum}", f"for example {option} 2,4")
        values.append(int(part))
    if not values:
        raise FastloadError(f"{option} needs at least one value", f"for example {option} 2,4")
    return tuple(dict.fromkeys(values))


def parse_fixes(texts: list[str]) -> tuple[FixSpec, ...]:
    """``["persistent-workers", "prefetch-factor=4"]`` -> specs, without repeats; a UsageError
    that lists the known fixes otherwise."""
    if not texts:
        raise UsageError("try needs at least one --fix", "for example: fastload try train.py --fix persistent-workers")
    specs = []
    for text in texts:
        try:
            specs.append(FixSpec.parse(text))
        except ValueError as exc:
            raise UsageError(f"--fix {exc}") from exc
    if len({s.fix for s in specs}) < len(specs):
        raise UsageError("--fix: each fix may be given once", "give one value per fix, e.g. --fix prefetch-factor=4")
    return tuple(dict.fromkeys(specs))
