"""Start writing a file's dirty pages to disk while the rest of it is still being written.

A durable write ends with fsync, which waits for every byte to reach the disk. Written
in one go, a 1 GB file is first copied into the page cache and only then flushed, so the
copy and the disk write run one after the other. Linux's ``sync_file_range`` with
``SYNC_FILE_RANGE_WRITE`` starts the write-back of a range without waiting for it, so
the flush of each block overlaps the copy of the next and the final fsync only waits
for the tail. It changes no byte and no durability guarantee: fsync still runs (and
still decides); elsewhere (no such call, or it fails) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable

SYNC_FILE_RANGE_WRITE = 2
START_EVERY = 32 << 20  # bytes written between two write-back requests


def _load_sync_file_range() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        func = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func  # type: ignore[no-any-return]


_SYNC_FILE_RANGE = _load_sync_file_range()


class Writeback:
    """Tracks how far a file descriptor has been written and starts write-back of each
    ``START_EVERY`` bytes as they complete (the file is written sequentially)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.end = 0  # bytes written so far
        self.started = 0  # write-back requested for [0, started)
        self.enabled = _SYNC_FILE_RANGE is not None

    def written(self, count: int) -> None:
        self.end += count
        if self.enabled and self.end - self.started >= START_EVERY:
            self._start()

    def _start(self) -> None:
        assert _SYNC_FILE_RANGE is not None
        # ctypes releases the GIL around the call; a failure only loses the overlap.
        if _SYNC_FILE_RANGE(self.fd, self.started, self.end - self.started, SYNC_FILE_RANGE_WRITE):
            self.enabled = False
        self.started = self.end
