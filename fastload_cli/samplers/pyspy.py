"""Where the loading processes spend their CPU: py-spy, sampling without stopping them.

``PySpy.start(pids)`` launches one ``py-spy record --nonblocking --format raw`` per process (the
DataLoader workers, or the main process when it loads itself), for a fixed duration;
``PySpy.stop()`` collects the collapsed stacks and returns the functions that were on top of
the stack most often. Without py-spy, or without permission to attach (ptrace), it says why.
Non-blocking sampling never pauses a worker: its numbers can be slightly inconsistent, never
its timing.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from fastload_cli.records import Profile, ProfileEntry

RATE_HZ = 50  # samples per second per process: a few hundred per worker over a few seconds
MAX_PROCESSES = 4  # processes profiled at once (each py-spy costs a little CPU)
TOP = 10


class PySpy:
    def __init__(self, duration_s: float, executable: str | None = "py-spy") -> None:
        """``executable``: the py-spy command, found on PATH; None: there is none."""
        self.duration_s = duration_s
        self.executable = shutil.which(executable) if executable else None
        self.role = ""
        self._procs: list[tuple[int, subprocess.Popen[bytes], Path]] = []
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def started(self) -> bool:
        return self._dir is not None

    def running(self) -> bool:
        """Some py-spy is still sampling."""
        return any(proc.poll() is None for _, proc, _ in self._procs)

    def start(self, pids: list[int], role: str) -> None:
        if self.executable is None or self.started or not pids:
            return
        self.role = role
        self._dir = tempfile.TemporaryDirectory(prefix="fastload-pyspy-")
        for pid in pids[:MAX_PROCESSES]:
            out = Path(self._dir.name) / f"{pid}.txt"
            command = [
                self.executable, "record", "--nonblocking", "--format", "raw", "--rate", str(RATE_HZ),
                "--duration", str(max(1, round(self.duration_s))), "--output", str(out), "--pid", str(pid),
            ]  # fmt: skip
            with contextlib.suppress(OSError):
                proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                self._procs.append((pid, proc, out))

    def stop(self) -> Profile:
        """Wait for the samplers (they end by themselves), and read what they recorded."""
        if self.executable is None:
            return _unavailable("py-spy is not installed (pip install py-spy)")
        if not self.started:
            return _unavailable("the run ended before the loading processes could be profiled")
        leaves: Counter[str] = Counter()
        errors = []
        for pid, proc, out in self._procs:
            try:
                _, err = proc.communicate(timeout=self.duration_s + 10)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            if out.exists():
                leaves.update(read_raw(out.read_text(errors="replace")))
            elif err:
                errors.append(f"pid {pid}: {_first_line(err.decode(errors='replace'))}")
        if self._dir is not None:
            self._dir.cleanup()
        total = sum(leaves.values())
        if not total:
            why = "; ".join(errors) or "no samples were recorded"
            return _unavailable(f"py-spy could not sample the processes ({why})")
        return Profile(
            role=self.role,
            pids=tuple(pid for pid, _, _ in self._procs),
            samples=total,
            top=tuple(ProfileEntry(function=name, share=count / total) for name, count in leaves.most_common(TOP)),
        )

    def kill(self) -> None:
        for _, proc, _ in self._procs:
            with contextlib.suppress(OSError):
                proc.kill()


def read_raw(text: str) -> Counter[str]:
    """Collapsed stacks (``frame;frame;... COUNT`` per line) -> samples per innermost frame."""
    found: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        found[stack.rsplit(";", 1)[-1].strip()] += int(count)
    return found


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _unavailable(why: str) -> Profile:
    return Profile(role="", pids=(), samples=0, top=(), unavailable=why)
