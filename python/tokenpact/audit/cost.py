"""Vocabulary and sequence cost model.

Two sides of one trade: a wider vocabulary V adds token-indexed parameters
(``V*d`` input rows, another ``V*d`` when the output head is untied, ``V`` for an output
bias) and a ``2*N*d*V`` FLOP output projection, while it may shorten the sequences
(``N = sum n(x)`` positions, ``Q = sum n(x)^2`` legal attention pairs of independent
records). Everything here is arithmetic on declared numbers: an accounting proxy, not a
measured latency.

    >>> c = cost(32_000, 4096, tied=True, dtype="bf16")
    >>> c.input_params, c.input_bytes / 2**20
    (131072000, 250.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError

# Bytes per stored parameter for the dtypes people actually keep weights and optimizer
# state in.
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}

# Optimizer state slots per parameter (Adam/AdamW keep two moments, SGD with momentum one).
OPTIMIZER_SLOTS: dict[str, int] = {"adamw": 2, "adam": 2, "lion": 1, "sgd_momentum": 1, "sgd": 0}


def _positive_int(name: str, value: object, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _dtype_bytes(name: str, dtype: str) -> float:
    if dtype not in DTYPE_BYTES:
        raise ConfigError(f"{name}={dtype!r} is unknown; use one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class VocabCost:
    """Token-indexed parameters, memory and output-projection work of one vocabulary width."""

    vocab_size: int
    d_model: int
    tied: bool
    output_bias: bool
    dtype: str
    input_params: int  # V*d: the embedding table
    output_params: int  # V*d when untied, 0 when tied (the head reuses the input table)
    bias_params: int  # V when the output projection has a bias
    vocab_params: int  # input + output + bias
    input_bytes: float  # the embedding table alone in ``dtype``
    param_bytes: float  # all token-indexed parameters in ``dtype``
    optimizer: str
    optimizer_slots: int
    optimizer_dtype: str
    optimizer_bytes: float  # slots * vocab_params in ``optimizer_dtype``
    gradient_bytes: float  # one gradient per parameter in ``dtype``
    training_bytes: float  # parameters + gradients + optimizer state
    logits_flops_per_position: int  # 2*d*V (one multiply-accumulate = 2 FLOPs)
    logit_elements_per_position: int  # V
    positions: int | None  # N, when given
    logits_flops: int | None  # 2*N*d*V
    logit_elements: int | None  # N*V

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cost(
    vocab_size: int,
    d_model: int,
    *,
    tied: bool = True,
    bias: bool = False,
    dtype: str = "bf16",
    optimizer: str = "adamw",
    optimizer_dtype: str = "fp32",
    positions: int | None = None,
) -> VocabCost:
    """Parameters, bytes and logit work that a vocabulary of ``vocab_size`` rows costs.

    ``tied``: the output head reuses the input table (storage only: the logits still
    span V). ``bias``: the output projection has a per-class bias. ``positions`` (N)
    adds the corpus totals ``F_logits = 2*N*d*V`` and ``L_logits = N*V``.

    >>> cost(268, 64, tied=True, bias=True).vocab_params  # 65 * V
    17420
    """
    v = _positive_int("vocab_size", vocab_size)
    d = _positive_int("d_model", d_model)
    width = _dtype_bytes("dtype", dtype)
    opt_width = _dtype_bytes("optimizer_dtype", optimizer_dtype)
    if optimizer not in OPTIMIZER_SLOTS:
        raise ConfigError(
            f"optimizer={optimizer!r} is unknown; use one of {', '.join(OPTIMIZER_SLOTS)}"
        )
    n = None if positions is None else _positive_int("positions", positions, minimum=0)
    input_params = v * d
    output_params = 0 if tied else v * d
    bias_params = v if bias else 0
    total = input_params + output_params + bias_params
    slots = OPTIMIZER_SLOTS[optimizer]
    param_bytes = total * width
    optimizer_bytes = slots * total * opt_width
    return VocabCost(
        vocab_size=v,
        d_model=d,
        tied=bool(tied),
        output_bias=bool(bias),
        dtype=dtype,
        input_params=input_params,
        output_params=output_params,
        bias_params=bias_params,
        vocab_params=total,
        input_bytes=input_params * width,
        param_bytes=param_bytes,
        optimizer=optimizer,
        optimizer_slots=slots,
        optimizer_dtype=optimizer_dtype,
        optimizer_bytes=optimizer_bytes,
        gradient_bytes=param_bytes,
        training_bytes=2 * param_bytes + optimizer_bytes,
        logits_flops_per_position=2 * d * v,
        logit_elements_per_position=v,
        positions=n,
        logits_flops=None if n is None else 2 * n * d * v,
        logit_elements=None if n is None else n * v,
    )


@dataclass(frozen=True)
class SequenceCost:
    """Sequence-side work of one tokenization of a corpus (independent, unpacked records)."""

    records: int
    positions: int  # N = sum n(x)
    attention_pairs: int  # Q = sum n(x)^2 (never (sum n)^2: records do not attend across)
    n_bytes: int | None
    bytes_per_token: float | None  # ratio of totals
    padded_width: int  # longest record: the width of one rectangular batch of all records
    padding_valid_fraction: float  # N / (records * width): 1 - wasted padded positions

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _lengths(lengths: Iterable[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(lengths if isinstance(lengths, np.ndarray) else list(lengths))
    if arr.size and (arr.dtype.kind not in "iu" or int(arr.min()) < 0):
        raise ConfigError("lengths must be non-negative integers (token counts per record)")
    return arr.astype(np.int64, copy=False)


def sequence_cost(
    lengths: Iterable[int] | np.ndarray, *, n_bytes: int | None = None
) -> SequenceCost:
    """Positions, legal attention pairs and padding waste of records of ``lengths`` tokens.

    >>> sequence_cost([1024], n_bytes=4096).attention_pairs
    1048576
    """
    arr = _lengths(lengths)
    positions = int(arr.sum())
    width = int(arr.max()) if arr.size else 0
    cells = arr.size * width
    return SequenceCost(
        records=int(arr.size),
        positions=positions,
        attention_pairs=int(np.dot(arr, arr)),
        n_bytes=n_bytes,
        bytes_per_token=None if n_bytes is None or positions == 0 else n_bytes / positions,
        padded_width=width,
        padding_valid_fraction=positions / cells if cells else 1.0,
    )


def bits_per_byte(mean_loss: float, *, tokens: int, n_bytes: int, base: float = math.e) -> float:
    """Convert a mean per-token LM loss to bits per UTF-8 byte, a unit two tokenizers share.

    ``mean_loss`` is the average negative log-likelihood per token in log base ``base``
    (natural log by default); the total information ``mean_loss * tokens`` is spread
    over the ``n_bytes`` bytes of the same text. Token-level perplexities of different
    tokenizers are not comparable; bits per byte are.

    >>> round(bits_per_byte(2.0, tokens=1000, n_bytes=4000), 4)
    0.7213
    """
    if not (isinstance(mean_loss, (int, float)) and math.isfinite(mean_loss) and mean_loss >= 0):
        raise ConfigError(f"mean_loss must be a finite non-negative number, got {mean_loss!r}")
    _positive_int("tokens", tokens, minimum=0)
    _positive_int("n_bytes", n_bytes)
    if not base > 1:
        raise ConfigError(f"base must be > 1 (e for nats, 2 for bits), got {base!r}")
    return mean_loss * tokens * math.log2(base) / n_bytes


def bits_per_byte_to_loss(bpb: float, *, tokens: int, n_bytes: int, base: float = math.e) -> float:
    """Inverse of :func:`bits_per_byte`: the mean per-token loss that gives ``bpb``."""
    _positive_int("tokens", tokens)
    return bpb * n_bytes / (tokens * math.log2(base))
