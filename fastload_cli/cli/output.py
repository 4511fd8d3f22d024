"""Where a command's results go, and how chatty it is: ``Output``."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from fastload_cli.analyzer.gates import Gates

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_GATE = 0, 1, 2, 3
EXIT_HUNG_UP, EXIT_INTERRUPTED, EXIT_TERMINATED = 129, 130, 143
# A signal that ends a command as Ctrl-C does (a clean stop, the partial report), and its exit status
STOP_SIGNALS: dict[int, int] = {signal.SIGHUP: EXIT_HUNG_UP, signal.SIGTERM: EXIT_TERMINATED}

STDOUT = "-"

stderr = Console(stderr=True, highlight=False, markup=False)  # strings are text, never markup


@dataclass(frozen=True, slots=True)
class Output:
    """Where the results go (format name -> path, '-' for stdout), how chatty fastload is, and the
    CI gates the report must pass."""

    paths: dict[str, str] = field(default_factory=dict)
    gates: Gates | None = None
    quiet: bool = False
    debug: bool = False
    show_output: bool = False
    verbose: bool = False  # the terminal report says where the command's time went

    @property
    def to_stdout(self) -> bool:
        """A document goes to stdout, which then holds only that document."""
        return STDOUT in self.paths.values()


def note(out: Output, message: str) -> None:
    if not out.quiet:
        stderr.print(message, markup=False, soft_wrap=True)
