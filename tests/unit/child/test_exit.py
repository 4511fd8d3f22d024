"""The child's exit where the script ended by itself: python's exit short of its teardown."""

from __future__ import annotations

import gzip
import io

from fastload_cli.runner.child.main import _buffered_types


class Journal(io.TextIOWrapper):
    """A script's own kind of file."""


def test_every_kind_of_file_that_buffers_writes_is_flushed_at_exit() -> None:
    kinds = _buffered_types()
    for kind in (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom, gzip.GzipFile, Journal):
        assert kind in kinds, kind
    assert not kinds & {io.FileIO, io.RawIOBase, bytes, object}  # unbuffered: nothing is held back
