"""Words for numbers, as the reports and progress lines say them."""

from __future__ import annotations

from fastload_cli.formatting import counted


def test_a_count_of_one_takes_the_singular() -> None:
    assert [counted(n, "worker") for n in (0, 1, 2)] == ["0 workers", "1 worker", "2 workers"]
