"""Write ``report.json`` and ``report.html`` atomically."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_bytes
from ..errors import ConfigError
from .html import render_html
from .run import stable_view

MAX_HTML_BYTES = 2 * 1024 * 1024


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def write_report(report: Mapping[str, Any], out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``report.json`` (everything) and ``report.html`` (the stable view)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a directory for report.json/report.html")
    out.mkdir(parents=True, exist_ok=True)
    page = render_html(stable_view(report)).encode("utf-8")
    if len(page) > MAX_HTML_BYTES:
        raise ConfigError(
            f"report.html would be {len(page):,} bytes (> 2 MiB); audit fewer tokenizers or "
            "slices, or lower --premium-languages"
        )
    json_path, html_path = out / "report.json", out / "report.html"
    text = json.dumps(report, indent=1, ensure_ascii=False, default=_json_default)
    atomic_write_bytes(json_path, (text + "\n").encode("utf-8"))
    atomic_write_bytes(html_path, page)
    return json_path, html_path
