"""Atomic file writes: a crash mid-write leaves the previous file intact."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (brief, like most tools do)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and a rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # `.NAME.tmp-PID-RANDOM`: the writer's process ID lets the next run remove what a killed
    # one left (tokenpact._stale_temps); the random tail keeps concurrent writers apart.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.tmp-{os.getpid()}-", dir=target.parent)
    try:
        # mkstemp creates 0600; give the file the mode open() would (0666 minus the umask).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    # The rename is durable only once the directory entry is flushed too.
    try:
        dir_fd = os.open(target.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write UTF-8 ``text`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))
