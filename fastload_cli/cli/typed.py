"""The training command as the user types it, after ``--``: understood and mapped onto fastload's
own target and launcher.

    fastload diagnose -- python train.py ARGS
    fastload diagnose -- python -m package.train ARGS
    fastload diagnose -- torchrun --nproc-per-node 2 train.py ARGS
    fastload diagnose -- python -m torch.distributed.run --nproc-per-node 2 train.py ARGS
    fastload diagnose -- accelerate launch --num_processes 2 train.py ARGS

Each is measured as fastload's own form is (``fastload diagnose [--nproc-per-node N] train.py --
ARGS``, or ``-m package.train``): the same runs, the same per-rank report. An option fastload
would not pass on as the launcher does, or a launcher it does not know, is refused with the form
to use instead. Pure: argv in, a ``Typed`` out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fastload_cli.errors import UsageError

# torchrun's options fastload passes on (``LaunchOptions`` field -> the spellings torchrun accepts)
TORCHRUN_OPTIONS: dict[str, tuple[str, ...]] = {
    "nproc_per_node": ("--nproc-per-node", "--nproc_per_node"),
    "nnodes": ("--nnodes",),
    "node_rank": ("--node-rank", "--node_rank"),
    "rdzv_backend": ("--rdzv-backend", "--rdzv_backend"),
    "rdzv_endpoint": ("--rdzv-endpoint", "--rdzv_endpoint"),
    "rdzv_id": ("--rdzv-id", "--rdzv_id"),
    "master_addr": ("--master-addr", "--master_addr"),
    "master_port": ("--master-port", "--master_port"),
    "max_restarts": ("--max-restarts", "--max_restarts"),
}
INTEGERS = ("nproc_per_node", "node_rank", "master_port", "max_restarts")
TORCHRUN_FLAGS = ("--standalone",)  # what fastload does itself for a job on one node
# accelerate launch's options fastload maps: the processes of the job and where its nodes meet
ACCELERATE_OPTIONS: dict[str, tuple[str, ...]] = {
    "num_processes": ("--num_processes", "--num-processes"),
    "num_machines": ("--num_machines", "--num-machines"),
    "machine_rank": ("--machine_rank", "--machine-rank"),
    "main_process_ip": ("--main_process_ip", "--main-process-ip"),
    "main_process_port": ("--main_process_port", "--main-process-port"),
}
ACCELERATE_FLAGS = ("--multi_gpu", "--multi-gpu", "--cpu")  # the backend follows from the machine
PYTHON_FLAGS = ("-u", "-B")  # unbuffered output, no .pyc files: neither changes what training does
DISTRIBUTED_RUN = ("torch.distributed.run", "torch.distributed.launch")
PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
FORMS = (
    "fastload diagnose [--nproc-per-node N] train.py -- ARGS, or fastload diagnose -- python train.py ARGS, "
    "-- python -m package.train ARGS, -- torchrun [--nproc-per-node N] train.py ARGS, "
    "-- accelerate launch [--num_processes N] train.py ARGS"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Typed:
    """What a typed command runs: a script (``target`` its path) or a module (``module``), its
    arguments, and the launcher's options as ``LaunchOptions`` names them."""

    target: str
    module: bool = False
    args: tuple[str, ...] = ()
    launch: dict[str, object] = field(default_factory=dict)
    typed: str = ""  # the launcher as the user typed it: python, torchrun, accelerate launch

    @property
    def shown(self) -> str:
        """What runs, as the report names it: the script as given, or ``-m`` and the module."""
        return f"-m {self.target}" if self.module else self.target


def given(script: str | None, script_args: Sequence[str] | None, module: str | None) -> Typed:
    """What a command runs, from its command line: ``-m module`` (the arguments after ``--``
    its own), a script or notebook, or a launcher's line as typed after ``--`` (``understood``)."""
    args = tuple(script_args or ())
    if module is not None:
        return Typed(target=module, module=True, args=(script, *args) if script is not None else args)
    if script is None:
        raise UsageError("no training script given", FORMS)
    return understood(script, args, os.getcwd()) or Typed(target=script, args=args)


def understood(first: str, rest: Sequence[str], cwd: str) -> Typed | None:
    """The command ``first rest...``, where ``first`` names a launcher rather than a script; None
    where it is a script (a file, a .py or .ipynb, a path). A UsageError for a word that is neither
    a file nor a launcher fastload knows, or for a launcher's option it would not pass on."""
    if first.endswith((".py", ".pyw", ".ipynb")) or os.path.exists(os.path.join(cwd, first)):
        return None
    name = os.path.basename(first)
    if PYTHON.fullmatch(name):
        return _python(list(rest))
    if name == "torchrun":
        return _torchrun(list(rest), "torchrun")
    if name == "accelerate":
        if not rest or rest[0] != "launch":
            raise UsageError(f"accelerate {rest[0] if rest else ''}: fastload runs `accelerate launch` alone", FORMS)
        return _accelerate(list(rest[1:]))
    if os.sep in first:
        return None  # a path: a script, which the script's own check finds missing
    raise UsageError(f"'{first}' is neither a script nor a launcher fastload knows", FORMS)


def _python(argv: list[str]) -> Typed:
    """``python [-u] (script | -m module) ARGS``; ``-m torch.distributed.run`` is torchrun."""
    while argv and argv[0] in PYTHON_FLAGS:
        argv = argv[1:]
    if not argv:
        raise UsageError("python: no script or -m module to run", FORMS)
    if argv[0] == "-m":
        if len(argv) < 2:
            raise UsageError("python -m: no module named", FORMS)
        if argv[1] in DISTRIBUTED_RUN:
            return _torchrun(argv[2:], f"python -m {argv[1]}")
        return Typed(target=argv[1], module=True, args=tuple(argv[2:]), typed="python")
    if argv[0].startswith("-"):
        raise UsageError(f"python {argv[0]}: fastload runs the interpreter without that option", FORMS)
    return Typed(target=argv[0], args=tuple(argv[1:]), typed="python")


def _torchrun(argv: list[str], typed: str) -> Typed:
    """torchrun's options up to the script (or ``-m``/``--module`` and a module), then its args."""
    launch, argv = _options(argv, TORCHRUN_OPTIONS, TORCHRUN_FLAGS, typed)
    target, module, args = _target(argv, typed)
    for name in INTEGERS:
        launch[name] = _integer(launch, name, typed)
    return Typed(target=target, module=module, args=args, launch=launch, typed=typed)


def _accelerate(argv: list[str]) -> Typed:
    """``accelerate launch``'s process counts and rendezvous, as torchrun's; one process is a plain run."""
    typed = "accelerate launch"
    given, argv = _options(argv, ACCELERATE_OPTIONS, ACCELERATE_FLAGS, typed)
    target, module, args = _target(argv, typed)
    machines = _integer(given, "num_machines", typed) or 1
    processes = _integer(given, "num_processes", typed) or 1
    launch: dict[str, object] = {}
    if processes > 1 or machines > 1:  # accelerate's num_processes counts every machine's
        launch = {"nproc_per_node": max(1, processes // machines), "nnodes": str(machines)}
        mapped = {"machine_rank": "node_rank", "main_process_ip": "master_addr", "main_process_port": "master_port"}
        launch |= {mapped[k]: v for k, v in given.items() if k in mapped and v is not None}
        for name in ("node_rank", "master_port"):
            launch[name] = _integer(launch, name, typed)
    return Typed(target=target, module=module, args=args, launch=launch, typed=typed)


def _target(argv: list[str], typed: str) -> tuple[str, bool, tuple[str, ...]]:
    """What a launcher's line runs after its options: a script, or ``-m``/``--module`` and a
    module; then its arguments."""
    module = bool(argv) and argv[0] in ("-m", "--module")
    rest = argv[1:] if module else argv
    if not rest:
        raise UsageError(f"{typed}: no training script named", FORMS)
    return rest[0], module, tuple(rest[1:])


def _options(
    argv: list[str], known: dict[str, tuple[str, ...]], flags: tuple[str, ...], typed: str
) -> tuple[dict[str, object], list[str]]:
    """The launcher's options before its script, by field name, and what follows them; a
    UsageError for an option fastload would not pass on."""
    spelled = {spelling: name for name, spellings in known.items() for spelling in spellings}
    found: dict[str, object] = {}
    while argv and argv[0].startswith("-") and argv[0] not in ("-m", "--module"):
        option, has_value, value = argv[0].partition("=")
        argv = argv[1:]
        if option in flags and not has_value:
            continue
        if option not in spelled:
            raise UsageError(f"{typed} {option}: not an option fastload passes on", _hint(typed, known))
        if not has_value:
            if not argv:
                raise UsageError(f"{typed} {option}: needs a value", FORMS)
            value, argv = argv[0], argv[1:]
        found[spelled[option]] = value
    return found, argv


def _integer(found: dict[str, object], name: str, typed: str) -> int | None:
    value = found.get(name)
    if value is None or isinstance(value, int):
        return value
    if not str(value).isdigit():
        raise UsageError(f"{typed}: {name} '{value}' is not a whole number", FORMS)
    return int(str(value))


def _hint(typed: str, known: dict[str, tuple[str, ...]]) -> str:
    names = ", ".join(spellings[0] for spellings in known.values())
    return f"fastload passes on {typed}'s {names}; for anything else run the script itself: {FORMS}"
