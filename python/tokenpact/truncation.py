"""Truncation and padding policies for structured encodings.

Whether truncation happens before or after control tokens are inserted changes the
sequence: ``truncate_then_add`` keeps required EOS/BOS (the content budget is
``max_length`` minus the template's tokens); ``add_then_truncate`` cuts the right edge of
the finished sequence, so a trailing EOS may disappear. The policy is explicit.

Example::

    enc = tok.encode_structured(text, truncation=tp.Truncation(max_length=128, stride=16),
                                padding=tp.Padding(multiple=8))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from .errors import ConfigError

Strategy = Literal["longest_first", "only_first", "only_second"]
ControlPolicy = Literal["truncate_then_add", "add_then_truncate"]


@dataclass(frozen=True)
class Truncation:
    """Cut sequences to ``max_length`` tokens; ``stride`` tokens overlap between windows."""

    max_length: int
    strategy: Strategy = "longest_first"
    stride: int = 0
    control_policy: ControlPolicy = "truncate_then_add"

    def __post_init__(self) -> None:
        if isinstance(self.max_length, bool) or not isinstance(self.max_length, int):
            raise ConfigError(f"max_length must be an int, got {self.max_length!r}")
        if self.max_length < 1:
            raise ConfigError(f"max_length must be >= 1, got {self.max_length}")
        if self.strategy not in ("longest_first", "only_first", "only_second"):
            raise ConfigError(
                f"unknown truncation strategy {self.strategy!r}; use longest_first, "
                "only_first or only_second"
            )
        if self.control_policy not in ("truncate_then_add", "add_then_truncate"):
            raise ConfigError(
                f"unknown control_policy {self.control_policy!r}; use truncate_then_add "
                "(required control tokens survive) or add_then_truncate"
            )
        if self.stride < 0 or self.stride >= self.max_length:
            raise ConfigError(
                f"stride must be in 0..max_length-1 ({self.max_length - 1}), got {self.stride}"
            )


@dataclass(frozen=True)
class Padding:
    """Pad each sequence to ``length``, or, when None, a batch to its longest; then up to
    a ``multiple``. A sequence longer than ``length`` is left as it is (Hugging Face's
    ``Fixed`` padding): truncate at ``length`` for a rectangular batch."""

    length: int | None = None
    multiple: int | None = None
    side: Literal["right", "left"] = "right"
    pad_id: int | None = None

    def __post_init__(self) -> None:
        if self.side not in ("right", "left"):
            raise ConfigError(f'padding side must be "right" or "left", not {self.side!r}')
        if self.multiple is not None and self.multiple < 1:
            raise ConfigError(f"pad multiple must be >= 1, got {self.multiple}")
        if self.length is not None and self.length < 0:
            raise ConfigError(f"pad length must be >= 0, got {self.length}")

    def target(self, longest: int) -> int:
        width = max(longest, self.length or 0)
        if self.multiple:
            width = -(-width // self.multiple) * self.multiple
        return width


def split_budget(n1: int, n2: int | None, budget: int, strategy: Strategy) -> tuple[int, int]:
    """How many tokens of each sequence survive a content budget.

    ``longest_first`` removes one token at a time from the currently longer sequence
    (the first one on ties); ``only_first`` / ``only_second`` cut one sequence and fail
    when that cannot fit.
    """
    second = n2 or 0
    if n1 + second <= budget:
        return n1, second
    if budget < 0:
        raise ConfigError("max_length is smaller than the control tokens the template adds")
    if strategy == "longest_first":
        keep1, keep2 = n1, second
        excess = keep1 + keep2 - budget
        # Trim the longer side down to the shorter, then alternate: closed form of the
        # one-at-a-time rule.
        diff = abs(keep1 - keep2)
        take = min(excess, diff)
        if keep1 >= keep2:
            keep1 -= take
        else:
            keep2 -= take
        excess -= take
        keep1 -= (excess + 1) // 2
        keep2 -= excess // 2
        return keep1, keep2
    if strategy == "only_first" or n2 is None:
        if second > budget:
            raise ConfigError(
                f"only_first cannot fit: the second sequence alone has {second} tokens for a "
                f"budget of {budget}; use longest_first or a larger max_length"
            )
        return budget - second, second
    if n1 > budget:
        raise ConfigError(
            f"only_second cannot fit: the first sequence alone has {n1} tokens for a budget "
            f"of {budget}; use longest_first or a larger max_length"
        )
    return n1, budget - n1


def overflow_windows(n: int, keep: int, stride: int) -> list[tuple[int, int]]:
    """Token ranges of the overflowing windows after the first ``keep`` tokens."""
    if keep <= 0 or keep >= n:
        return []
    windows = []
    step = keep - stride
    start = keep - stride
    while start < n - stride:
        windows.append((start, min(n, start + keep)))
        start += step
    return windows


def padding_config(padding: Padding) -> dict[str, Any]:
    """A padding policy as the config (and the semantic hash) records it."""
    return {"type": "padding", **asdict(padding)}


def truncation_config(truncation: Truncation) -> dict[str, Any]:
    """A truncation policy as the config (and the semantic hash) records it."""
    return {"type": "truncation", **asdict(truncation)}


def _policy_fields(node: Any, kind: str, names: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(node, Mapping) or node.get("type") != kind:
        raise ConfigError(f'a {kind} policy must be an object with "type": "{kind}", not {node!r}')
    unknown = sorted(set(node) - {"type", *names})
    if unknown:
        raise ConfigError(f"unknown {kind} policy fields {unknown}; the fields are {list(names)}")
    return {k: v for k, v in node.items() if k != "type"}


def padding_from_config(node: Any) -> Padding:
    """The :class:`Padding` a config node describes (ConfigError when malformed)."""
    fields = _policy_fields(node, "padding", ("length", "multiple", "side", "pad_id"))
    try:
        return Padding(**fields)
    except TypeError as exc:
        raise ConfigError(f"invalid padding policy {dict(node)!r}: {exc}") from None


def truncation_from_config(node: Any) -> Truncation:
    """The :class:`Truncation` a config node describes (ConfigError when malformed)."""
    names = ("max_length", "strategy", "stride", "control_policy")
    fields = _policy_fields(node, "truncation", names)
    try:
        return Truncation(**fields)
    except TypeError as exc:
        raise ConfigError(f"invalid truncation policy {dict(node)!r}: {exc}") from None
