"""In the parent: turn the child's event lines into records as they arrive."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from fastload_cli.records import (
    SYNTHETIC_LOCATION,
    BatchLayout,
    BatchRecord,
    Breakdown,
    BreakdownStep,
    ChildEnv,
    EventKind,
    FoldedBatches,
    IteratorInfo,
    LoaderInfo,
    PhaseMark,
    ScriptError,
    StopReason,
    Substitution,
    TensorLeaf,
)
from fastload_cli.runner.kept import KeptBatches, without_dropped


@dataclass
class EventCollector:
    """Everything the child said, kept in arrival order; malformed lines are counted, not fatal."""

    loaders: list[LoaderInfo] = field(default_factory=list)
    iterators: list[IteratorInfo] = field(default_factory=list)
    kept: KeptBatches = field(default_factory=KeptBatches)  # the batches, bounded over a long run
    layouts: list[BatchLayout] = field(default_factory=list)
    substitutions: list[Substitution] = field(default_factory=list)
    env: ChildEnv = field(default_factory=ChildEnv)
    error: ScriptError | None = None
    raised_ns: int | None = None  # when the script's exception reached the child
    end_reason: StopReason | None = None
    end_exit_code: int | None = None
    end_ns: int | None = None
    schedstat: bool = False
    breakdown: Breakdown | None = None
    breakdown_ns: int = 0  # the time timing it took
    phases: list[PhaseMark] = field(default_factory=list)
    hello: bool = False
    pid: int | None = None
    rank: int | None = None  # in a data-parallel job: the global rank, local rank and world size
    local_rank: int | None = None
    world_size: int | None = None
    malformed: int = 0
    channel_bytes: int = 0  # what the process sent over its event channel (the parent's reading cost)
    _per_loader: Counter[int] = field(default_factory=Counter)
    _first_replay: dict[int, int] = field(default_factory=dict)  # loader id -> its batches before its first replay
    _partial: bytes = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Parse complete lines from ``data`` (a chunk of the pipe); returns the new events."""
        self.channel_bytes += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        events = []
        for line in lines:
            event = self._parse(line)
            if event is not None:
                self._apply(event)
                events.append(event)
        return events

    @property
    def batches(self) -> tuple[BatchRecord, ...]:
        """The batches kept one by one, in arrival order (a long run's middle is in ``folded``)."""
        return self.kept.records()

    def folded(self) -> tuple[FoldedBatches, ...]:
        return self.kept.folded()

    def most_batches(self) -> int:
        """Batches delivered by the busiest loader (the training loader, as a rule)."""
        return max(self._per_loader.values(), default=0)

    def first_replay(self) -> int | None:
        """The busiest loader's batches before its first replayed one (a run that switched to
        replaying one batch), or None before any."""
        busiest = self._busiest()
        return self._first_replay.get(busiest) if busiest is not None else None

    def replay_refused(self) -> bool:
        """The child said a loader's batch could not be copied: it stays real, and replays none."""
        return any(s.location == SYNTHETIC_LOCATION for s in self.substitutions)

    def busiest_phases(self) -> list[PhaseMark]:
        """The PHASE marks of the busiest loader: those of an in-process run's training loader."""
        busiest = self._busiest()
        return [m for m in self.phases if m.loader_id == busiest]

    def _busiest(self) -> int | None:
        """The loader that delivered the most batches (the training loader, as a rule)."""
        return max(self._per_loader, key=self._per_loader.__getitem__, default=None)

    # -- internals -------------------------------------------------------------------------

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        if not line.strip():
            return None
        try:
            event = json.loads(line)
            EventKind(event["kind"])
        except (ValueError, KeyError, TypeError):
            self.malformed += 1
            return None
        return event if isinstance(event, dict) else None

    def _apply(self, e: dict[str, Any]) -> None:
        kind = EventKind(e["kind"])
        try:
            handler = _HANDLERS[kind]
            handler(self, e)
        except (KeyError, TypeError, ValueError):
            self.malformed += 1

    def _on_hello(self, e: dict[str, Any]) -> None:
        self.hello = True
        self.schedstat = bool(e.get("schedstat"))
        self.pid = e.get("pid")
        self.rank, self.local_rank, self.world_size = e.get("rank"), e.get("local_rank"), e.get("world_size")

    def _on_loader(self, e: dict[str, Any]) -> None:
        self.loaders.append(build(LoaderInfo, e, created_ns=e["t_ns"]))

    def _on_iterator(self, e: dict[str, Any]) -> None:
        self.iterators.append(build(IteratorInfo, e))

    def _on_epoch_end(self, e: dict[str, Any]) -> None:
        key = (e["loader_id"], e["iterator_id"])
        for i in range(len(self.iterators) - 1, -1, -1):  # the epoch that ends is the latest, as a rule
            if (self.iterators[i].loader_id, self.iterators[i].iterator_id) == key:
                self.iterators[i] = replace(self.iterators[i], ended_ns=int(e["ended_ns"]))
                return

    def _on_batch(self, e: dict[str, Any]) -> None:
        record = build(BatchRecord, e)
        self.kept.add(record)
        if self.kept.dropped_epochs:
            self.iterators = without_dropped(self.iterators, self.kept.dropped_epochs)
            self.kept.dropped_epochs.clear()
        if record.synthetic:
            self._first_replay.setdefault(record.loader_id, self._per_loader[record.loader_id])
        self._per_loader[record.loader_id] += 1

    def _on_layout(self, e: dict[str, Any]) -> None:
        leaves = tuple(build(TensorLeaf, leaf) for leaf in e["leaves"])
        self.layouts.append(build(BatchLayout, e, leaves=leaves))

    def _on_substitution(self, e: dict[str, Any]) -> None:
        self.substitutions.append(build(Substitution, e))

    def _on_env(self, e: dict[str, Any]) -> None:
        known = {k: _frozen(v) for k, v in e.items() if k in ChildEnv.__dataclass_fields__ and v is not None}
        self.env = replace(self.env, **known)

    def _on_exception(self, e: dict[str, Any]) -> None:
        self.error = build(ScriptError, e, rank=self.rank)
        self.raised_ns = e.get("t_ns") if isinstance(e.get("t_ns"), int) else None

    def _on_breakdown(self, e: dict[str, Any]) -> None:
        self.breakdown = breakdown_record(e)
        self.breakdown_ns = int(e.get("spent_ns") or 0)

    def _on_phase(self, e: dict[str, Any]) -> None:
        self.phases.append(build(PhaseMark, e))

    def _on_end(self, e: dict[str, Any]) -> None:
        self.end_reason = StopReason(e["reason"])
        self.end_exit_code = e["exit_code"]
        self.end_ns = e["t_ns"]


def breakdown_record(e: dict[str, Any]) -> Breakdown:
    """The BREAKDOWN event as a record: milliseconds per sample and shares, largest first."""
    raw = e.get("steps") or []
    total_ns = sum(float(step["ns_per_sample"]) for step in raw)
    steps = sorted(
        (
            BreakdownStep(
                name=str(step["name"]),
                location=str(step["location"]),
                kind=str(step["kind"]),
                ms_per_sample=float(step["ns_per_sample"]) / 1e6,
                share=float(step["ns_per_sample"]) / total_ns if total_ns > 0 else 0.0,
                input_kind=step.get("input_kind"),
                input_shape=tuple(step.get("input_shape") or ()),
            )
            for step in raw
        ),
        key=lambda step: -step.ms_per_sample,
    )
    return Breakdown(
        loader_id=e.get("loader_id"),
        items=int(e.get("items", 0)),
        threads=int(e.get("threads", 1)),
        ms_per_sample=total_ns / 1e6 if raw else None,
        steps=tuple(steps),
        unavailable=e.get("unavailable"),
    )


R = TypeVar("R")


def build(record: type[R], event: dict[str, Any], **given: Any) -> R:
    """A record from the event's fields of the same names (lists become tuples); fields the
    event lacks keep their defaults, and a missing required one raises TypeError (the event
    is then counted as malformed)."""
    names = [f.name for f in fields(record)]  # type: ignore[arg-type]
    found = {name: _frozen(event[name]) for name in names if name in event and name not in given}
    return record(**found, **given)


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


_HANDLERS = {
    EventKind.HELLO: EventCollector._on_hello,
    EventKind.LOADER: EventCollector._on_loader,
    EventKind.ITERATOR: EventCollector._on_iterator,
    EventKind.EPOCH_END: EventCollector._on_epoch_end,
    EventKind.BATCH: EventCollector._on_batch,
    EventKind.LAYOUT: EventCollector._on_layout,
    EventKind.SUBSTITUTION: EventCollector._on_substitution,
    EventKind.ENV: EventCollector._on_env,
    EventKind.EXCEPTION: EventCollector._on_exception,
    EventKind.END: EventCollector._on_end,
    EventKind.BREAKDOWN: EventCollector._on_breakdown,
    EventKind.PHASE: EventCollector._on_phase,
}
