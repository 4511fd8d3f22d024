"""What the verdict and the recommendations are decided from: ``Facts``, gathered once from the
runs (``gather``), its derived figures by the question their readers ask:

- ``figures``: what was measured (the runs' summaries, the loader, the batch, the epochs).
- ``ceiling``: the free-input comparison, the copies to the GPU, and the step beside the loaders.
- ``loaders``: the loaders and the batch: workers that compete or wait on storage, cheap batches.
- ``epochs``: start-up and epochs.
- ``sweep``: the num_workers sweep.

Each is a pure function of the measured numbers.
"""

from __future__ import annotations

from fastload_cli.analyzer.facts.ceiling import free_speedup, speedup
from fastload_cli.analyzer.facts.epochs import EpochFacts, boundaries_alone, crossed_epochs
from fastload_cli.analyzer.facts.loaders import LoaderFacts
from fastload_cli.analyzer.facts.sweep import SweepFacts


class Facts(LoaderFacts, EpochFacts, SweepFacts):
    """What the verdict and the recommendations are decided from."""

    __slots__ = ()


__all__ = ["Facts", "boundaries_alone", "crossed_epochs", "free_speedup", "speedup"]
