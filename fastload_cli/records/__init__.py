"""Records that cross fastload's stage boundaries.

Everything the runner hands to the analyzer, and the analyzer to the reporters, is one of these
frozen dataclasses. Units are in field names; missing measurements are ``None`` (the reason lives
in a caveat), never 0. The package imports nothing from fastload and nothing outside the stdlib,
so the child process can use it too.

- ``modes``: what a run is asked to do (modes, the child's specification) and how the child speaks.
- ``measured``: what one run measured (the child's events, the parent's samples): ``RunResult``.
- ``report``: what the analyzer derives and the reporters render: ``Report``.
- ``comparison``: two reports side by side: ``Comparison``.
"""

from __future__ import annotations

from fastload_cli.records.comparison import Change, Comparison, Direction, Figures, ModeChange, ModeFigures
from fastload_cli.records.measured import (
    UNCHANGED,
    UNDONE,
    BatchLayout,
    BatchRecord,
    Breakdown,
    BreakdownStep,
    ChildEnv,
    GpuDevice,
    GpuSample,
    HostSample,
    IteratorInfo,
    LoaderInfo,
    ProcRole,
    ProcSample,
    Profile,
    ProfileEntry,
    RunResult,
    SamplerHealth,
    ScriptError,
    Substitution,
    SystemSample,
    TensorLeaf,
)
from fastload_cli.records.modes import (
    CHANNEL_FD_ENV,
    RUN_ID_ENV,
    SCHEMA,
    Bottleneck,
    ChildSpec,
    EventKind,
    Mode,
    ModeSpec,
    RunStatus,
    StopReason,
)
from fastload_cli.records.report import (
    BatchInfo,
    Environment,
    Finding,
    FindingKind,
    Recommendation,
    Report,
    RunSummary,
    SweepPoint,
    SweepResult,
    Timeline,
    Verdict,
)

__all__ = [
    "CHANNEL_FD_ENV",
    "RUN_ID_ENV",
    "SCHEMA",
    "UNCHANGED",
    "UNDONE",
    "BatchInfo",
    "BatchLayout",
    "BatchRecord",
    "Bottleneck",
    "Breakdown",
    "BreakdownStep",
    "Change",
    "ChildEnv",
    "ChildSpec",
    "Comparison",
    "Direction",
    "Environment",
    "EventKind",
    "Figures",
    "Finding",
    "FindingKind",
    "GpuDevice",
    "GpuSample",
    "HostSample",
    "IteratorInfo",
    "LoaderInfo",
    "Mode",
    "ModeChange",
    "ModeFigures",
    "ModeSpec",
    "ProcRole",
    "ProcSample",
    "Profile",
    "ProfileEntry",
    "Recommendation",
    "Report",
    "RunResult",
    "RunStatus",
    "RunSummary",
    "SamplerHealth",
    "ScriptError",
    "StopReason",
    "Substitution",
    "SweepPoint",
    "SweepResult",
    "SystemSample",
    "TensorLeaf",
    "Timeline",
    "Verdict",
]
