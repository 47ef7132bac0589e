"""Removing the temporary files and directories that killed runs leave behind.

Every artifact write goes through a temporary sibling named after the target and the
writer's process ID (``.NAME.tmpPID``, ``.NAME.tmp-PID``, or ``.NAME.tmp-PID-RANDOM`` for
the atomic file writes, whose random tail keeps concurrent writers apart) and a rename. A run killed
before the rename leaves that sibling; the next run that writes the same target removes
it when no process with that ID is alive (a live one may be a concurrent writer, and is
left alone). The writers call :func:`remove_stale_temps` before they write.

>>> remove_stale_temps(out_dir)  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

_TEMP = re.compile(r"^\.(?P<name>.+)\.tmp-?(?P<pid>[0-9]{1,10})(?:-[A-Za-z0-9_]+)?$")


def pid_alive(pid: int) -> bool:
    """Whether a process with ID ``pid`` exists (ours counts; unknown errors count)."""
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process (or a value kill refuses): leave it alone
    return True


def remove_stale_temps(
    directory: str | os.PathLike[str], names: Iterable[str] | None = None
) -> list[Path]:
    """Remove ``.NAME.tmp[-]PID[-RANDOM]`` entries of dead processes in ``directory``.

    ``names``: only the temporaries of these targets (a directory shared with other
    files); ``None``: every temporary of that shape (a directory the command owns, such
    as an encoded dataset's). Returns what was removed; never raises for a race with
    another cleaner.
    """
    root = Path(directory)
    wanted = None if names is None else set(names)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None or (wanted is not None and match["name"] not in wanted):
            continue
        if pid_alive(int(match["pid"])):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            continue  # not ours to remove (permissions): the write still goes ahead
        removed.append(path)
    return removed
