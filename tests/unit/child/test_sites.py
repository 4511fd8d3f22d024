"""Who built a loader, as the child reports it: the script's line that called the constructor,
past a DataLoader subclass's ``__init__`` calling ``super().__init__``."""

from __future__ import annotations

import sys
from typing import Any

from fastload_cli.runner.child.sites import call_site


class Patched:
    """Stands for the patched ``DataLoader.__init__``: it reads its caller, as the sensor does."""

    def __init__(self, *args: Any) -> None:
        self.site = call_site(sys._getframe(1), self)


class Subclass(Patched):
    def __init__(self) -> None:
        super().__init__(1, 2)


def test_the_call_site_is_the_line_that_called_the_constructor() -> None:
    line = sys._getframe().f_lineno + 1
    loader = Patched(
        "dataset",
    )
    assert loader.site is not None and loader.site[0] == __file__
    assert line <= loader.site[1] <= line + 2  # a call over several lines: one of its lines


def test_a_subclass_calling_super_is_passed_by() -> None:
    line = sys._getframe().f_lineno + 1
    loader = Subclass()
    assert loader.site == (__file__, line)
