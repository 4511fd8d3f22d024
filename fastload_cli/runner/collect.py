"""In the parent: turn the child's event lines into records as they arrive."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from fastload_cli.records import (
    BatchLayout,
    BatchRecord,
    ChildEnv,
    EventKind,
    IteratorInfo,
    LoaderInfo,
    ScriptError,
    StopReason,
    Substitution,
    TensorLeaf,
)


@dataclass
class EventCollector:
    """Everything the child said, kept in arrival order; malformed lines are counted, not fatal."""

    loaders: list[LoaderInfo] = field(default_factory=list)
    iterators: list[IteratorInfo] = field(default_factory=list)
    batches: list[BatchRecord] = field(default_factory=list)
    layouts: list[BatchLayout] = field(default_factory=list)
    substitutions: list[Substitution] = field(default_factory=list)
    env: ChildEnv = field(default_factory=ChildEnv)
    error: ScriptError | None = None
    end_reason: StopReason | None = None
    end_exit_code: int | None = None
    end_ns: int | None = None
    schedstat: bool = False
    hello: bool = False
    malformed: int = 0
    _per_loader: Counter[int] = field(default_factory=Counter)
    _partial: bytes = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Parse complete lines from ``data`` (a chunk of the pipe); returns the new events."""
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        events = []
        for line in lines:
            event = self._parse(line)
            if event is not None:
                self._apply(event)
                events.append(event)
        return events

    def most_batches(self) -> int:
        """Batches delivered by the busiest loader (the training loader, as a rule)."""
        return max(self._per_loader.values(), default=0)

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

    def _on_loader(self, e: dict[str, Any]) -> None:
        self.loaders.append(
            LoaderInfo(
                loader_id=e["loader_id"],
                created_ns=e["t_ns"],
                batch_size=e["batch_size"],
                num_workers=e["num_workers"],
                pin_memory=e["pin_memory"],
                persistent_workers=e["persistent_workers"],
                prefetch_factor=e["prefetch_factor"],
                dataset_type=e["dataset_type"],
                dataset_len=e["dataset_len"],
                iterable_dataset=e["iterable_dataset"],
                multiprocessing_context=e["multiprocessing_context"],
                augmentations=tuple(e.get("augmentations", ())),
                original_num_workers=e.get("original_num_workers"),
            )
        )

    def _on_iterator(self, e: dict[str, Any]) -> None:
        self.iterators.append(
            IteratorInfo(
                loader_id=e["loader_id"],
                iterator_id=e["iterator_id"],
                started_ns=e["started_ns"],
                ready_ns=e["ready_ns"],
                worker_pids=tuple(e["worker_pids"]),
                reused=e["reused"],
            )
        )

    def _on_batch(self, e: dict[str, Any]) -> None:
        self.batches.append(
            BatchRecord(
                loader_id=e["loader_id"],
                iterator_id=e["iterator_id"],
                index=e["index"],
                wait_start_ns=e["wait_start_ns"],
                wait_end_ns=e["wait_end_ns"],
                samples=e["samples"],
                nbytes=e["nbytes"],
                thread_cpu_ns=e.get("thread_cpu_ns"),
                thread_runq_ns=e.get("thread_runq_ns"),
                synthetic=e.get("synthetic", False),
            )
        )
        self._per_loader[e["loader_id"]] += 1

    def _on_layout(self, e: dict[str, Any]) -> None:
        leaves = tuple(
            TensorLeaf(
                path=leaf["path"],
                dtype=leaf["dtype"],
                shape=tuple(leaf["shape"]),
                nbytes=leaf["nbytes"],
                pinned=leaf["pinned"],
                device=leaf["device"],
            )
            for leaf in e["leaves"]
        )
        self.layouts.append(BatchLayout(loader_id=e["loader_id"], python_type=e["python_type"], leaves=leaves))

    def _on_substitution(self, e: dict[str, Any]) -> None:
        self.substitutions.append(
            Substitution(
                loader_id=e["loader_id"],
                location=e["location"],
                original=e["original"],
                replacement=e["replacement"],
                guessed=e["guessed"],
            )
        )

    def _on_env(self, e: dict[str, Any]) -> None:
        known = {k: v for k, v in e.items() if k in ChildEnv.__dataclass_fields__ and v is not None}
        if "cuda_devices" in known:
            known["cuda_devices"] = tuple(known["cuda_devices"])
        self.env = replace(self.env, **known)

    def _on_exception(self, e: dict[str, Any]) -> None:
        self.error = ScriptError(type_name=e["type_name"], message=e["message"], traceback=e["traceback"])

    def _on_end(self, e: dict[str, Any]) -> None:
        self.end_reason = StopReason(e["reason"])
        self.end_exit_code = e["exit_code"]
        self.end_ns = e["t_ns"]


_HANDLERS = {
    EventKind.HELLO: EventCollector._on_hello,
    EventKind.LOADER: EventCollector._on_loader,
    EventKind.ITERATOR: EventCollector._on_iterator,
    EventKind.BATCH: EventCollector._on_batch,
    EventKind.LAYOUT: EventCollector._on_layout,
    EventKind.SUBSTITUTION: EventCollector._on_substitution,
    EventKind.ENV: EventCollector._on_env,
    EventKind.EXCEPTION: EventCollector._on_exception,
    EventKind.END: EventCollector._on_end,
}
