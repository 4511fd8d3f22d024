"""Inside the child: every mode's actuator, found by the run's mode."""

from __future__ import annotations

from fastload_cli.records import ChildSpec, Mode
from fastload_cli.runner.child import modes
from fastload_cli.runner.child.channel import Channel
from fastload_cli.runner.child.fixing import CachedInputs, CachedNoAugmentation, FixesApplied
from fastload_cli.runner.child.in_process import InProcessSettings
from fastload_cli.runner.child.interleave import InterleavedSplit
from fastload_cli.runner.child.modes import Actuator, Timed

ACTUATORS: dict[Mode, type[Actuator]] = {
    **modes.ACTUATORS,
    Mode.CACHED: CachedInputs,
    Mode.CACHED_NO_AUG: CachedNoAugmentation,
    Mode.FIX: FixesApplied,
    Mode.SPLIT: InterleavedSplit,
    Mode.IN_PROCESS: InProcessSettings,
}


def actuator(spec: ChildSpec, channel: Channel, timed: Timed) -> Actuator:
    """The run's mode, ready to be called at the sensor's hook points."""
    return ACTUATORS[spec.mode.mode](spec=spec, channel=channel, timed=timed)
