"""Per-batch accounting: real tokens, slots, where the PAD comes from, attention work.

For lengths ``l_b`` in a batch of ``B`` rows:

* ``S_max = max l_b``; width ``S`` = ``m * ceil(S_max / m)`` (or a fixed width),
* real tokens ``sum l_b``; slots ``B * S``; PAD = slots - real tokens,
* length-variation PAD ``B * S_max - sum l_b`` (bucketing reduces it),
* alignment PAD ``B * (S - S_max)`` (what the width rule adds; fixed widths count here),
* utilization ``eta = real / slots``,
* attention work of the dense rectangle ``B * S**2`` against the useful ``sum l_b**2``.

A packed batch has no PAD inside its buffer; when its records sit in fixed-capacity bins
the unused bin tails are its length-variation PAD.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..errors import BatchError


@dataclass(frozen=True)
class BatchReport:
    """What one batch holds and what its layout costs.

    >>> r = padded_report([6, 4, 3], multiple=4)
    >>> r.slots, r.variation_pad, r.alignment_pad, f"{r.utilization:.2%}"
    (24, 5, 6, '54.17%')
    """

    layout: str
    records: int
    real_tokens: int
    slots: int
    longest: int
    width: int
    variation_pad: int
    alignment_pad: int
    attention_dense: int
    attention_useful: int
    supervised_targets: int
    bins: int
    truncated_records: int = 0

    @property
    def pad_tokens(self) -> int:
        """Slots that hold no real token."""
        return self.slots - self.real_tokens

    @property
    def utilization(self) -> float:
        """Fraction of slots holding real tokens (``eta``)."""
        return self.real_tokens / self.slots if self.slots else 0.0

    def as_dict(self) -> dict[str, int | float | str]:
        """All counts, plus ``pad_tokens`` and ``utilization``, as a plain dict."""
        out: dict[str, int | float | str] = dict(asdict(self))
        out["pad_tokens"] = self.pad_tokens
        out["utilization"] = self.utilization
        return out

    def __str__(self) -> str:
        return (
            f"{self.layout}: {self.records} records in {self.bins} bins/rows, "
            f"real {self.real_tokens} / slots {self.slots} "
            f"(variation PAD {self.variation_pad}, alignment PAD {self.alignment_pad}), "
            f"utilization {self.utilization:.2%}, attention {self.attention_dense} dense "
            f"vs {self.attention_useful} useful, {self.supervised_targets} supervised targets"
        )


def _lengths(lengths: ArrayLike) -> np.ndarray:
    arr = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if arr.size and int(arr.min()) < 0:
        raise BatchError("lengths must be non-negative")
    return arr


def aligned_width(longest: int, multiple: int) -> int:
    """``multiple * ceil(longest / multiple)``."""
    return -(-longest // multiple) * multiple


def padded_report(
    lengths: ArrayLike,
    *,
    multiple: int = 1,
    width: int | None = None,
    supervised_targets: int = 0,
    truncated_records: int = 0,
) -> BatchReport:
    """Counts for a rectangular ``[B, width]`` batch (``width`` defaults to aligned longest)."""
    ls = _lengths(lengths)
    longest = int(ls.max()) if ls.size else 0
    if width is None:
        width = aligned_width(longest, multiple)
    if width < longest:
        raise BatchError(f"width {width} is smaller than the longest record ({longest})")
    b = int(ls.shape[0])
    real = int(ls.sum())
    return BatchReport(
        layout="padded",
        records=b,
        real_tokens=real,
        slots=b * width,
        longest=longest,
        width=width,
        variation_pad=b * longest - real,
        alignment_pad=b * (width - longest),
        attention_dense=b * width * width,
        attention_useful=int((ls * ls).sum()),
        supervised_targets=supervised_targets,
        bins=b,
        truncated_records=truncated_records,
    )


def packed_report(
    lengths: ArrayLike,
    *,
    bins: int = 1,
    capacity: int | None = None,
    supervised_targets: int = 0,
    truncated_records: int = 0,
) -> BatchReport:
    """Counts for records packed into ``bins`` rows of ``capacity`` tokens.

    Without a capacity the batch is one flat buffer of exactly the real tokens, and the
    dense reference mask over it has ``T**2`` entries.
    """
    ls = _lengths(lengths)
    real = int(ls.sum())
    longest = int(ls.max()) if ls.size else 0
    width = real if capacity is None else int(capacity)
    rows = 1 if capacity is None else int(bins)
    slots = rows * width
    if slots < real:
        raise BatchError(f"{bins} bins of {capacity} tokens cannot hold {real} tokens")
    return BatchReport(
        layout="packed",
        records=int(ls.shape[0]),
        real_tokens=real,
        slots=slots,
        longest=longest,
        width=width,
        variation_pad=slots - real,
        alignment_pad=0,
        attention_dense=rows * width * width,
        attention_useful=int((ls * ls).sum()),
        supervised_targets=supervised_targets,
        bins=int(bins),
        truncated_records=truncated_records,
    )
