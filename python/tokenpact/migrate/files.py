"""Atomic writes for migration artifacts (temp file + fsync + rename), and the cleanup
of temporary files that killed runs left behind.

Every migration output is first written as ``.NAME.tmp-PID`` beside its final name and
renamed into place, so a kill -9 leaves the old result or a temp entry no reader opens.
The next write of the same output removes the temp entries of processes that are gone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process (or an odd number): leave its files alone
    return True


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the ``.NAME.tmp-PID`` files and directories beside ``target`` whose process
    no longer runs (a killed resize or write); return what was removed. Temp entries of
    running processes, this one included, are left alone."""
    path = Path(target)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.tmp-(\d{{1,10}})")
    removed: list[Path] = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or _alive(int(match.group(1))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def atomic_write_text(path: str | os.PathLike[str], text: str, *, durable: bool = True) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new one, never half
    (``durable``: fsync before the rename, so a crash cannot leave an empty file)."""
    target = Path(path)
    remove_stale_temps(target)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())
    os.replace(tmp, target)


def atomic_write_json(path: str | os.PathLike[str], value: Any) -> None:
    atomic_write_text(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
