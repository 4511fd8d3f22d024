"""What every recommendation rule shares: the evidence it cites and the bounds on its gain."""

from __future__ import annotations

from collections.abc import Sequence

from fastload_cli.analyzer.facts import Facts
from fastload_cli.records import Bottleneck, FindingKind, LoaderInfo, Verdict

# The findings that say what the loading processes did.
LOADER_ACTIVITY = (
    FindingKind.LOADERS_BUSY,
    FindingKind.LOADERS_IDLE,
    FindingKind.LOADERS_MIXED,
    FindingKind.LOADERS_COMPETE,
    FindingKind.HANDOFF,
    FindingKind.KERNEL_READS,
)


def cited(v: Verdict, *kinds: FindingKind) -> tuple[str, ...]:
    """The verdict's evidence a recommendation rests on: its findings of these kinds."""
    return tuple(finding.sentence for finding in v.of(*kinds))


def bounded(gain: float | None, ceiling: float | None) -> float | None:
    """A gain capped by the ceiling; unknown without one. Not rounded here: reporters round the
    gain and the ceiling alike, so a gain equal to the ceiling is shown equal to it.

    A gain is at least 1.0x unless the ceiling itself is below 1 (the input pipeline cannot help).
    """
    if gain is None or ceiling is None:
        return None
    return min(max(1.0, gain), ceiling)


def input_bound(v: Verdict) -> bool:
    return v.bottleneck in (Bottleneck.CPU, Bottleneck.IO)


def pipeline_bound(f: Facts, v: Verdict) -> bool:
    """Input-bound by building batches in the steady state: not by workers starting again every
    epoch, nor by handing cheap batches over from workers (their own rules speak for those)."""
    return input_bound(v) and not f.restarts_dominate and f.cheap_batches is None


def capped(gain: float | None, ceiling: float | None) -> float | None:
    """A measured gain, capped by the ceiling when one was measured."""
    if gain is None:
        return None
    return gain if ceiling is None else min(gain, ceiling)


# How Hugging Face's TrainingArguments name the DataLoader's settings.
_TRAINING_ARGUMENTS = {
    "num_workers": "dataloader_num_workers",
    "persistent_workers": "dataloader_persistent_workers",
    "prefetch_factor": "dataloader_prefetch_factor",
    "pin_memory": "dataloader_pin_memory",
}
WHERE = {
    "lightning": "  # in your LightningDataModule's train_dataloader()",
    "pytorch_lightning": "  # in your LightningDataModule's train_dataloader()",
    "accelerate": "  # the loader you pass to accelerator.prepare()",
}


def loader_change(loader: LoaderInfo | None, settings: Sequence[tuple[str, object]]) -> str:
    """The loader settings as the user writes them: in ``DataLoader(...)``, or where the framework
    that built the loader takes them (``TrainingArguments``, timm's ``create_loader`` and its
    train.py flags)."""
    framework = loader.framework if loader is not None else None
    if framework == "transformers":
        named = ", ".join(f"{_TRAINING_ARGUMENTS.get(k, k)}={v}" for k, v in settings)
        return f"TrainingArguments(..., {named})"
    written = ", ".join(f"{k}={v}" for k, v in settings)
    if framework == "timm":
        flags = [f"--workers {v}" for k, v in settings if k == "num_workers"]
        flags += ["--pin-mem" for k, v in settings if k == "pin_memory" and v is True]
        return f"create_loader(..., {written})" + (f"  # timm's train.py: {' '.join(flags)}" if flags else "")
    return f"DataLoader(dataset, ..., {written}){WHERE.get(framework or '', '')}"


def variant_settings(variant: str | None) -> list[tuple[str, object]]:
    """A sweep variant (``prefetch_factor=4,pin_memory=True``) as settings."""
    return [(k, v) for k, _, v in (item.partition("=") for item in (variant or "").split(",") if item)]
