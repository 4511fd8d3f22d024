"""Numbers as fastload writes them, in evidence sentences and in every report format.

What was not measured is a dash, never a 0. Pure functions of numbers; no fastload imports.
"""

from __future__ import annotations

DASH = "—"
# C0 and C1 control characters, DEL among them, but not the line breaks and tabs text keeps
_CONTROLS = dict.fromkeys(c for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t")


def printable(text: str) -> str:
    """``text`` without control characters: a string from a report or the user's environment can
    move the cursor, recolour or retitle a terminal with them (escape sequences)."""
    return text.translate(_CONTROLS)


def pct(fraction: float | None) -> str:
    """A fraction (0..1) as a whole percentage: ``0.153`` -> ``15%``."""
    return DASH if fraction is None else f"{100 * fraction:.0f}%"


def percent(value: float | None) -> str:
    """A percentage already scaled (CPU %, device busy %): ``153.2`` -> ``153%``."""
    return DASH if value is None else f"{value:.0f}%"


def num(value: float | None, unit: str = "") -> str:
    """Thousands separated from 100 on, one decimal below: ``1234.5`` -> ``1,234``, ``12.34`` -> ``12.3``."""
    if value is None:
        return DASH
    return (f"{value:,.0f}" if value >= 100 else f"{value:.1f}") + unit


def samples_rate(value: float | None) -> str:
    """Throughput: ``162 samples/s``."""
    return num(value, " samples/s")


def whole(value: int | None) -> str:
    return DASH if value is None else str(value)


def ms(value: float | None) -> str:
    """Milliseconds: whole from 10 on, one decimal below."""
    if value is None:
        return DASH
    return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def ms_fine(value: float) -> str:
    """Milliseconds, in microseconds below a tenth of one."""
    return f"{1000 * value:.0f} µs" if value < 0.1 else ms(value)


def secs(value: float | None) -> str:
    """Seconds from one second on, milliseconds below."""
    if value is None:
        return DASH
    return f"{value:.2f} s" if value >= 1 else ms(value * 1000)


def ms_pair(p50: float | None, p90: float | None) -> str:
    """A median and a 90th percentile in milliseconds: ``180/306 ms``."""
    if p50 is None or p90 is None:
        return DASH
    return f"{p50:.0f}/{p90:.0f} ms" if p50 >= 10 else f"{p50:.1f}/{p90:.1f} ms"


def size(value: float | None) -> str:
    """Bytes in binary units: ``5.6 GiB``, ``512 MiB``, ``3 KiB``, ``12 B``."""
    if value is None:
        return DASH
    if abs(value) >= 2**30:
        return f"{value / 2**30:.1f} GiB"
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:.0f} {unit}"
    return f"{value:.0f} B"


def byte_rate(value: float | None) -> str:
    """Bytes per second in decimal units, as storage is quoted: ``780.0 MB/s``."""
    if value is None:
        return DASH
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B/s"


def dims(kind: str | None, shape: tuple[int, ...]) -> str:
    """An input's size in words: ``500x375 image``, ``3x224x224 tensor``."""
    return "x".join(str(d) for d in shape) + (f" {kind}" if kind else "")


def capitalised(text: str) -> str:
    """A sentence's first letter in upper case, the rest as it is."""
    return text[:1].upper() + text[1:]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` of ``noun``, the noun in the plural unless there is one: ``1 worker``, ``0 workers``;
    ``plural`` where adding an s does not make it (``2 epoch boundaries``)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
