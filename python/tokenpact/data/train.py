"""BPE training on either engine: pre-tokens counted locally or on Ray, merges once.

>>> tok = train_bpe(docs, vocab_size=32_000, engine="ray")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core import Tokenizer
from ..errors import ConfigError
from ..train import count_pretokens, train_bpe_from_counts
from .documents import Document
from .sampling import SourceSample


def train_bpe(
    texts: Iterable[str | Document] | SourceSample,
    *,
    vocab_size: int,
    pattern: str = "gpt4",
    engine: str = "local",
    threads: int | None = None,
    ray_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Tokenizer:
    """:func:`tokenpact.train_bpe` with the counting on ``engine`` ("local" or "ray").

    Documents (or plain strings) are counted where the engine runs; the merges are
    computed once from the summed counts and equal those of ``tp.train_bpe(texts)``.
    A :class:`~tokenpact.data.SourceSample` (from :func:`~tokenpact.data.sample_sources`)
    trains on its documents and records its policy and realized shares as
    ``tok.training["sampling"]``.
    ``options`` are those of :func:`tokenpact.train.train_bpe_from_counts`.
    """
    sample = texts if isinstance(texts, SourceSample) else None
    items = [t.text if isinstance(t, Document) else t for t in texts]
    if engine == "local":
        parts = [count_pretokens(items, pattern=pattern, threads=threads)]
    elif engine == "ray":
        from .ray_engine import ray_count_pretokens

        parts = list(ray_count_pretokens(items, pattern=pattern, **dict(ray_options or {})))
    else:
        raise ConfigError(f"unknown engine {engine!r}; use 'local' or 'ray'")
    tok = train_bpe_from_counts(parts, vocab_size=vocab_size, threads=threads, **options)
    if sample is None:
        return tok
    # The sampling policy and its realized shares join the training record (saved in
    # training.json and summarized in the manifest's training section).
    training = {**(tok.training or {}), "sampling": sample.record()}
    return Tokenizer(tok.spec, tok.engine, tok.provenance.with_training(training))
