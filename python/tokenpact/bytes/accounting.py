"""Position accounts: how many positions each stage of a byte or character model sees.

``n_raw`` counts the external input coordinate, ``n_local`` the positions of the light
local stages, ``n_global`` those of the expensive global stack, ``n_output`` the positions
exposed or generated. ``n_global ** 2`` is a shape diagnostic only:
widths, depths and local stages differ between models, so it is not a FLOP count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..contract import framed_hash

Unit = Literal["bytes", "code_points"]
CONFIG_HASH_DOMAIN = "byte-model-config-v1"


def config_hash(config: dict[str, Any]) -> str:
    """Framed SHA-256 of a byte/char model configuration's canonical JSON."""
    return framed_hash(CONFIG_HASH_DOMAIN, config)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class PositionAccount:
    """Exact position counts of one text under one declared model configuration.

    ``global_starts`` are the raw-coordinate offsets where each global position begins
    (half-open intervals ending at the next start, the last at ``n_raw``).
    """

    model: str
    unit: Unit
    n_raw: int
    n_local: int
    n_global: int
    n_output: int
    global_starts: tuple[int, ...]
    config_hash: str
    details: dict[str, int] = field(default_factory=dict)

    @property
    def n_global_squared(self) -> int:
        """Attention-shape diagnostic ``n_global ** 2`` (not comparable FLOPs)."""
        return self.n_global * self.n_global

    @property
    def boundaries(self) -> tuple[int, ...]:
        """``global_starts`` plus the final boundary ``n_raw``."""
        return (*self.global_starts, self.n_raw)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "unit": self.unit,
            "n_raw": self.n_raw,
            "n_local": self.n_local,
            "n_global": self.n_global,
            "n_global_squared": self.n_global_squared,
            "n_output": self.n_output,
            "global_starts": list(self.global_starts),
            "config_hash": self.config_hash,
            "details": dict(self.details),
        }
