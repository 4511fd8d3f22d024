"""How the parent and the child speak: the bootstrap commands, the signals and the environment
names both sides read. Events themselves are ``modes.EventKind``."""

from __future__ import annotations

import signal

# ``python -c`` puts the working directory first on sys.path (as ""), ahead of the standard library:
# it is replaced by fastload's package directory before anything is imported, so nothing there
# shadows a module fastload or a preload imports (plain ``python train.py`` never looks there; the
# child puts the script's directory first, as it does). Where python left it out (-P,
# PYTHONSAFEPATH), the package directory goes first.
_ON_PATH = "import sys; sys.path[: sys.path[:1] == [''] ] = [sys.argv.pop(1)]; "
# The child's entry, started as ``python -c BOOTSTRAP <package parent> <ChildSpec JSON> script args...``.
BOOTSTRAP = _ON_PATH + "from fastload_cli.runner.child.main import main; main()"
# A plain run (``fastload fix``'s proof): ``python -c PLAIN <package parent> <settings JSON> script args...``.
PLAIN = _ON_PATH + "from fastload_cli.runner.child.plain import main; main()"
# The warm starter's entry: ``python -c STARTER <package parent>``; it imports the preloads, then forks runs.
STARTER = _ON_PATH + "from fastload_cli.runner.child.starter import serve; serve()"
# A data-parallel job's launcher: ``python -c AGENT <fastload's pid> <torch.distributed.run's arguments>``.
# It dies with fastload (``PR_SET_PDEATHSIG``; the ranks die with it in turn), leaves at once where
# fastload is already gone, and runs torch's launcher without the working directory on sys.path
# (``python -m`` would put it first, where a torch.py would shadow torch).
AGENT = (
    "import sys; del sys.path[: sys.path[:1] == ['']]; import ctypes, os, runpy, signal; "
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0); "
    "os.getppid() == int(sys.argv.pop(1)) or os._exit(1); "
    "runpy.run_module('torch.distributed.run', run_name='__main__', alter_sys=True)"
)
CHANNEL_OPEN_S = 10.0  # a rank waits this long for fastload to read its events, then leaves
PARENT_GONE = 71  # a rank's exit status when fastload was gone before it could report

STOP_SIGNAL = signal.SIGRTMIN + 1  # stop the run; unlikely to be used by training scripts (SIGUSR1 often is)
STACK_SIGNAL = signal.SIGRTMIN + 2  # dump every thread's stack (faulthandler), next to the stop signal
NEXT_SIGNAL = signal.SIGRTMIN + 3  # an in-process sweep: the setting in force has its answer
# The breakdown timed at a real+synthetic run's switch stops taking samples after this long, once
# it has ``breakdown.MIN_ITEMS``: a run whose verdict does not ask for it pays at most this. The
# parent waits that much longer for the first replay.
RIDE_BUDGET_S = 2.0

# Environment variable carrying the event channel's file descriptor to the child.
CHANNEL_FD_ENV = "FASTLOAD_EVENT_FD"
# A data-parallel job's ranks cannot inherit a descriptor through the launcher: each opens the FIFO
# named ``events.<LOCAL_RANK>`` in the folder this variable names.
CHANNEL_DIR_ENV = "FASTLOAD_EVENT_DIR"
# Environment variable every process of a run inherits; lets tests and cleanup find strays.
RUN_ID_ENV = "FASTLOAD_RUN_ID"
# The file the child's stack dump goes to (``STACK_SIGNAL``).
STACK_FILE_ENV = "FASTLOAD_STACK_FILE"
WARM_FD_ENV = "FASTLOAD_WARM_FD"  # the starter's end of its socket with the parent
WARM_START_ENV = "FASTLOAD_WARM_START"  # "0": every run starts cold
PRELOADS_ENV = "FASTLOAD_PRELOADS"  # the libraries the starter imports, comma-separated
PRELOAD_DIR_ENV = "FASTLOAD_PRELOAD_DIR"  # ...with the script's directory first, as python would

# A DataLoader worker's result queue could not send a batch: Python prints its feeder thread's
# traceback, through this frame, and drops the batch (``runner/lost.py``).
FEEDER_FAILED = r'multiprocessing[/\\]queues\.py", line \d+, in _feed'
