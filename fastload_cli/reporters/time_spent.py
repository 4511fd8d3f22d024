"""Where the command's time went, as the terminal shows it with ``--verbose``."""

from __future__ import annotations

from rich.console import RenderableType
from rich.padding import Padding
from rich.text import Text

from fastload_cli.formatting import counted
from fastload_cli.records import TimeSpent


def time_lines(spent: TimeSpent | None) -> list[RenderableType]:
    """The command's time against its measuring limit, and its parts."""
    if spent is None or spent.total_s is None:
        return []
    limit = f" against a measuring limit of {spent.limit_s:.1f} s ({spent.over_limit:.1f}x)" if spent.over_limit else ""
    parts = [
        f"{counted(spent.runs, 'start')} of the script {spent.starts_s:.1f} s",
        f"warm-ups {spent.warmups_s:.1f} s",
        f"measured windows {spent.measured_s:.1f} s",
        f"after the windows (stops, stalls, epoch ends, shutdowns) {spent.ends_s:.1f} s",
    ]
    lines = [f"{'; '.join(parts)}."]
    if spent.again_s:
        lines.append(f"Of these, runs that measured again what another run measured: {spent.again_s:.1f} s.")
    if spent.breakdown_s:
        lines.append(f"The breakdown: {spent.breakdown_s:.1f} s.")
    if spent.fastload_s is not None:
        lines.append(f"fastload between the runs: {spent.fastload_s:.1f} s.")
    heading = Text(f"Time to verdict: {spent.total_s:.1f} s{limit}", style="bold underline")
    return [Text(""), heading, *(Padding(Text(line), (0, 0, 0, 2)) for line in lines)]
