"""Optional PyTorch conversion; torch is imported only when a caller asks for tensors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # torch is optional: numpy arrays are the default output
        raise ModuleNotFoundError(
            "to_torch() needs PyTorch; install it (pip install torch) or keep using the "
            "numpy arrays, which every field already is"
        ) from exc
    return torch


def to_torch(arrays: Mapping[str, Any], *, device: Any = None) -> dict[str, Any]:
    """Convert every numpy array in ``arrays`` to a tensor; other values pass through.

    Arrays are shared with numpy where possible (``torch.from_numpy``), then moved to
    ``device`` if one is given.
    """
    torch = _import_torch()
    out: dict[str, Any] = {}
    for key, value in arrays.items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            tensor = torch.from_numpy(np.ascontiguousarray(value))
            out[key] = tensor if device is None else tensor.to(device)
        else:
            out[key] = value
    return out
