"""Atomic writes for migration artifacts (temp file + fsync + rename), and the cleanup
of temporary files that killed runs left behind.

Every migration output is first written as ``.NAME.tmp-PID`` beside its final name and
renamed into place, so a kill -9 leaves the old result or a temp entry no reader opens.
The next write of the same output removes the temp entries of processes that are gone.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._stale_temps import remove_stale_temps


def atomic_write_text(path: str | os.PathLike[str], text: str, *, durable: bool = True) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new one, never half
    (``durable``: fsync before the rename, so a crash cannot leave an empty file)."""
    target = Path(path)
    remove_stale_temps(target.parent, [target.name])
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())
    os.replace(tmp, target)


def atomic_write_json(path: str | os.PathLike[str], value: Any) -> None:
    atomic_write_text(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


@contextmanager
def staged_dir(dst: Path) -> Iterator[Path]:
    """A fresh temporary directory beside ``dst``, renamed to ``dst`` when the block
    completes and removed when it fails; what killed runs left beside ``dst`` is removed
    first. ``dst`` may exist as an empty directory (it is replaced)."""
    remove_stale_temps(dst.parent, [dst.name])
    tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        if dst.exists():
            dst.rmdir()
        os.replace(tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
