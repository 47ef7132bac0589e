"""Vocabulary-size sweep: nested BPE candidates, validation tokens vs parameter cost.

Each size is trained with :func:`tokenpact.train_bpe` on the fit split only, without
special tokens so that IDs are byte rows then merges. Greedy BPE training is
prefix-stable, so a larger vocabulary's merges must extend the smaller's with every
ID preserved; the sweep checks that and refuses to plot a curve that mixes non-nested
candidates (a different tie rule or an early stop would make sizes incomparable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, ContractError
from .cost import cost
from .selection import ModelShape

if TYPE_CHECKING:
    from ..core import Tokenizer


@dataclass(frozen=True)
class SweepPoint:
    vocab_size: int
    merges: int
    semantic_hash: str
    validation_tokens: int
    validation_bytes: int
    bytes_per_token: float
    vocab_params: int
    param_bytes: float
    logits_flops: int
    attention_pairs: int
    stop_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_nested(tokenizers: Sequence[Tokenizer]) -> None:
    """Raise ContractError unless each tokenizer's merges extend the previous one's."""
    for small, large in zip(tokenizers, tokenizers[1:], strict=False):
        a, b = list(small.merges), list(large.merges)
        if b[: len(a)] != a:
            at = next(k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y) if a else 0
            raise ContractError(
                f"vocabulary {large.vocab_size} does not extend {small.vocab_size}: merge {at} "
                "differs; train every size with the same corpus, pattern and tie rule"
            )
        if large.vocab()[: small.vocab_size] != small.vocab():
            raise ContractError(f"IDs of vocabulary {small.vocab_size} move in {large.vocab_size}")


def vocabulary_sweep(
    fit: Sequence[str],
    validation: Sequence[str],
    sizes: Sequence[int],
    *,
    shape: ModelShape,
    pattern: str = "gpt4",
    min_frequency: int = 2,
    progress: bool = False,
) -> tuple[list[SweepPoint], list[Any]]:
    """Train one BPE per size on ``fit``, check nesting, measure ``validation``.

    Returns the points (sorted by size) and the tokenizers. A size that training cannot
    reach (too few distinct pairs) stops early; its point says so in ``stop_reason``
    and has fewer merges than asked.
    """
    import tokenpact as tp

    if not sizes:
        raise ConfigError("give at least one vocabulary size to sweep")
    if any(s < 256 for s in sizes):
        raise ConfigError(f"every size must be >= 256 (the byte rows), got {sorted(sizes)}")
    if not fit or not validation:
        raise ConfigError("the sweep needs fit texts to train on and validation texts to measure")
    ordered = sorted(set(int(s) for s in sizes))
    iterator: Any = ordered
    if progress:
        from tqdm import tqdm

        iterator = tqdm(ordered, desc="sweep", unit="size")
    toks = [
        tp.train_bpe(
            fit, vocab_size=size, pattern=pattern, min_frequency=min_frequency, special_tokens=()
        )
        for size in iterator
    ]
    check_nested(toks)
    n_bytes = sum(len(t.encode("utf-8")) for t in validation)
    points = []
    for tok in toks:
        _, offsets = tok.encode_batch_flat(list(validation))
        lengths = np.diff(np.asarray(offsets, dtype=np.int64))
        tokens = int(lengths.sum())
        c = cost(
            tok.vocab_size,
            shape.d_model,
            tied=shape.tied,
            bias=shape.bias,
            dtype=shape.dtype,
            positions=tokens,
        )
        points.append(
            SweepPoint(
                vocab_size=int(tok.vocab_size),
                merges=len(tok.merges),
                semantic_hash=tok.semantic_hash,
                validation_tokens=tokens,
                validation_bytes=n_bytes,
                bytes_per_token=n_bytes / tokens if tokens else 0.0,
                vocab_params=c.vocab_params,
                param_bytes=c.param_bytes,
                logits_flops=int(c.logits_flops or 0),
                attention_pairs=int(np.dot(lengths, lengths)),
                stop_reason=(tok.training or {}).get("stop_reason"),
            )
        )
    return points, toks
