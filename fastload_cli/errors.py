"""fastload's known failures: each carries a message for the user and a hint at what to do.

``cli.py`` is the only place that turns these into output and exit codes; anything that is not a
``FastloadError`` is a bug and keeps its traceback.
"""

from __future__ import annotations


class FastloadError(Exception):
    """A failure the user can act on (bad input, a script that cannot be measured)."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(FastloadError):
    """An option's value that does not parse: exit code 2, as for the command line's own errors."""

    exit_code = 2


class ScriptNotFoundError(FastloadError):
    def __init__(self, path: str, problem: str, hint: str | None = None) -> None:
        super().__init__(f"{path}: {problem}", hint)
        self.path = path


class ScriptFailedError(FastloadError):
    """The script failed before fastload could measure a single batch."""

    def __init__(self, message: str, hint: str | None, output_tail: str) -> None:
        super().__init__(message, hint)
        self.output_tail = output_tail


class NoLoaderObservedError(FastloadError):
    """The script ran, but never iterated a ``torch.utils.data.DataLoader``."""


class OutputPathError(FastloadError):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(
            f"cannot write the report to {path}: {problem}",
            "choose a path in a writable directory, or '-' for stdout",
        )
        self.path = path


class UnknownExampleError(FastloadError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no bundled example called '{name}'", f"choose one of: {', '.join(known)}")
        self.name = name


class MissingDependencyError(FastloadError):
    def __init__(self, what: str, package: str, install: str) -> None:
        super().__init__(f"{what} needs {package}, which is not installed", f"install it: {install}")
        self.package = package
