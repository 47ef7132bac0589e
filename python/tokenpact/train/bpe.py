"""Byte-level BPE training.

Example::

    tok = tp.train_bpe(["low lower newest widest"] * 10, vocab_size=300, special_tokens=())
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from .. import _native
from ..components import Pipeline
from ..components.normalizers import Normalizer
from ..core import Tokenizer
from ..errors import ConfigError, InvalidInputError, TrainingError
from ..formats.hf_export import byte_level_document
from ..patterns import resolve_pattern
from ..special import DEFAULT_SPECIAL_TOKENS, SpecialToken, normalize_special_tokens
from .counts import PretokenCounts

# Python input is handed to Rust in batches: large enough to amortize the call and to
# keep both cores busy, small enough that memory stays bounded by distinct pre-tokens.
BATCH_CHARS = 4_000_000
BATCH_DOCS = 20_000
STEP_MERGES = 256
TIE_BREAKS = ("lowest_pair_ids", "subword_nmt")


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def _feed(trainer: Any, texts: Iterable[str]) -> None:
    from ..corpus import TextFiles

    if isinstance(texts, TextFiles):
        trainer.add_files(list(texts.paths), list(texts.formats), texts.text_field)
        return
    if isinstance(texts, (str, bytes)):
        raise ConfigError(
            "texts must be an iterable of strings, not a single string; pass [text] "
            "or tp.TextFiles([...]) for files"
        )
    batch: list[str] = []
    chars = 0
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigError(f"document {i} is {type(text).__name__}, not str")
        batch.append(text)
        chars += len(text)
        if chars >= BATCH_CHARS or len(batch) >= BATCH_DOCS:
            _add(trainer, batch)
            batch, chars = [], 0
    if batch:
        _add(trainer, batch)


def _add(trainer: Any, batch: list[str]) -> None:
    try:
        trainer.add_texts(batch)
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"a training document contains a lone surrogate ({exc.object[exc.start]!r}), "
            "which is not valid Unicode; decode the source with errors='replace' or clean it"
        ) from None


def train_bpe(
    texts: Iterable[str],
    *,
    vocab_size: int,
    pattern: str = "gpt4",
    min_frequency: int = 2,
    special_tokens: Iterable[SpecialToken | str] = DEFAULT_SPECIAL_TOKENS,
    max_token_length: int | None = None,
    tie_break: str = "lowest_pair_ids",
    threads: int | None = None,
    progress: bool = False,
    normalizer: Normalizer | None = None,
) -> Tokenizer:
    """Train a byte-level BPE tokenizer.

    ``vocab_size`` counts the 256 byte IDs, the learned merges and the special tokens.
    Pairs are counted inside pre-tokens only, weighted by pre-token frequency; ties go to
    the smallest ``(left_id, right_id)`` (``tie_break="subword_nmt"``: the largest pair of
    byte strings). Training stops at the size cap (``vocab_size_reached``), when the best
    pair occurs fewer than ``min_frequency`` times (``below_min_frequency``), or when no
    pair is left (``no_pairs_left``); the reason is in ``tok.training["stop_reason"]``.
    The result does not depend on ``threads`` or on document order.

    ``normalizer`` (a :mod:`tokenpact.components.normalizers` node: ``NFKC()``,
    ``Sequence([NFC(), Lowercase()])``, ...) runs before pre-tokenization, in training
    and in the trained tokenizer: the merges are learned from normalized text, and the
    result is a byte-level BPE pipeline (``tokenizer.json``) whose ``encode`` normalizes
    first, as Hugging Face's ``BpeTrainer`` does with a normalizer. Offsets then point
    into the raw text through the normalizer's alignment.
    """
    trainer, specials, source, name = _new_trainer(
        vocab_size, pattern, min_frequency, special_tokens, max_token_length, tie_break, threads
    )
    node = _normalizer_node(normalizer)
    _feed(trainer, texts if node is None else _normalized(texts, node))
    tok = _finish(
        trainer,
        vocab_size=vocab_size,
        specials=specials,
        source=source,
        name=name,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        tie_break=tie_break,
        progress=progress,
        normalizer=None if node is None else json.loads(node),
    )
    return tok if node is None else with_normalizer(tok, json.loads(node))


def _normalizer_node(normalizer: Normalizer | None) -> str | None:
    """The JSON node of a normalizer argument (None: no normalizer)."""
    if normalizer is None:
        return None
    if not isinstance(normalizer, Normalizer):
        raise ConfigError(
            f"normalizer must be a tokenpact.components.normalizers node such as NFKC(), "
            f"not {type(normalizer).__name__}"
        )
    return json.dumps(normalizer.to_config())


def _normalized(texts: Iterable[str], node: str) -> Iterator[str]:
    """Each document after the normalizer (the native one the tokenizer will run)."""
    if isinstance(texts, (str, bytes)):
        raise ConfigError(
            "texts must be an iterable of strings, not a single string; pass [text] "
            "or tp.TextFiles([...]) for files"
        )
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigError(f"document {i} is {type(text).__name__}, not str")
        try:
            yield _native.normalize_str(node, text)[0]
        except UnicodeEncodeError as exc:
            raise InvalidInputError(
                f"a training document contains a lone surrogate ({exc.object[exc.start]!r}), "
                "which is not valid Unicode; decode the source with errors='replace' or clean it"
            ) from None


def with_normalizer(tok: Tokenizer, node: dict[str, Any]) -> Tokenizer:
    """The byte-level BPE ``tok`` with the normalizer ``node`` in front: the same pieces,
    merges (rank order) and special tokens, as a Hugging Face pipeline (the byte-level
    BPE model keeps no normalizer stage of its own)."""
    pieces = tok.vocab()
    merges = [(pieces[a], pieces[b]) for a, b in tok.merges]
    document = byte_level_document(tok, pieces, merges, post_processor=None)
    document["normalizer"] = node
    # tokenizer_config.json carries the single roles; well-known spellings keep theirs.
    roles = tok.special_token_roles
    config = {f"{r}_token": c for c, r in roles.items() if r in ("bos", "eos", "pad", "unk")}
    built = Pipeline.from_config(document).build(config=config)
    return Tokenizer(built.spec, provenance=built.provenance.with_training(tok.training))


def train_bpe_from_counts(
    counts: PretokenCounts | Iterable[PretokenCounts],
    *,
    vocab_size: int,
    min_frequency: int = 2,
    special_tokens: Iterable[SpecialToken | str] = DEFAULT_SPECIAL_TOKENS,
    max_token_length: int | None = None,
    tie_break: str = "lowest_pair_ids",
    threads: int | None = None,
    progress: bool = False,
) -> Tokenizer:
    """Train from pre-token counts made elsewhere (:func:`count_pretokens` on workers).

    Training depends only on the counts, so counts summed from any split of the corpus
    give the merges :func:`train_bpe` learns from the whole corpus, and the same
    training record (corpus digest included). ``counts`` may be several parts (one per
    worker); they are added in Rust.
    """
    parts = [counts] if isinstance(counts, PretokenCounts) else list(counts)
    if not parts:
        raise TrainingError("no pre-token counts given; count at least one document")
    if len({resolve_pattern(p.pattern) for p in parts}) != 1:
        raise ConfigError("the counts were made with different pre-tokenizer patterns")
    trainer, specials, source, name = _new_trainer(
        vocab_size,
        parts[0].pattern,
        min_frequency,
        special_tokens,
        max_token_length,
        tie_break,
        threads,
    )
    for part in parts:
        trainer.add_counts(list(part.pieces), part.counts, part.documents, part.bytes, part.digest)
    return _finish(
        trainer,
        vocab_size=vocab_size,
        specials=specials,
        source=source,
        name=name,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        tie_break=tie_break,
        progress=progress,
    )


def _new_trainer(
    vocab_size: int,
    pattern: str,
    min_frequency: int,
    special_tokens: Iterable[SpecialToken | str],
    max_token_length: int | None,
    tie_break: str,
    threads: int | None,
) -> tuple[Any, list[SpecialToken], str, str | None]:
    specials = normalize_special_tokens(special_tokens)
    _check_int("vocab_size", vocab_size, 0)
    if vocab_size < 256 + len(specials):
        raise TrainingError(
            f"vocab_size={vocab_size} is too small: it must hold the 256 byte IDs and the "
            f"{len(specials)} special tokens; use vocab_size >= {256 + len(specials)}"
        )
    _check_int("min_frequency", min_frequency, 1)
    if max_token_length is not None:
        _check_int("max_token_length", max_token_length, 1)
    if tie_break not in TIE_BREAKS:
        raise ConfigError(f"unknown tie_break {tie_break!r}; use one of {TIE_BREAKS}")
    if threads is not None:
        _check_int("threads", threads, 1)
    if not isinstance(pattern, str) or not pattern:
        # Checked before training: an empty pattern would train, then fail to save.
        raise ConfigError(
            f"pattern must be a built-in name (gpt2, gpt4, o200k, llama3) or a non-empty "
            f"regex, got {pattern!r}"
        )
    name, source = resolve_pattern(pattern)
    max_merges = vocab_size - 256 - len(specials)
    trainer = _native.BpeTrainer(
        source, name, max_merges, min_frequency, max_token_length, tie_break, threads
    )
    return trainer, list(specials), source, name


def _finish(
    trainer: Any,
    *,
    vocab_size: int,
    specials: list[SpecialToken],
    source: str,
    name: str | None,
    min_frequency: int,
    max_token_length: int | None,
    tie_break: str,
    progress: bool,
    normalizer: dict[str, Any] | None = None,
) -> Tokenizer:
    max_merges = vocab_size - 256 - len(specials)
    documents, nbytes, digest, distinct = trainer.corpus_stats()
    if nbytes == 0:
        raise TrainingError(
            f"the training corpus is empty ({documents} documents, 0 bytes); "
            "pass at least one non-empty text"
        )
    trainer.start()
    run_merge_steps(trainer, total=max_merges, desc="merges", progress=progress)
    result = trainer.result()
    training = {
        "algorithm": "byte_bpe",
        "config": {
            "vocab_size": vocab_size,
            "pattern": source,
            "pattern_name": name,
            "min_frequency": min_frequency,
            "max_token_length": max_token_length,
            "tie_break": tie_break,
            "special_tokens": [{"content": t.content, "role": t.role} for t in specials],
            # Listed only when set, so the records of earlier trainings keep their bytes.
            **({} if normalizer is None else {"normalizer": normalizer}),
        },
        "corpus": {
            "documents": documents,
            "bytes": nbytes,
            "digest": f"sha256-multiset:{digest}",
        },
        "distinct_pretokens": distinct,
        "stop_reason": result["stop_reason"],
        "merges_requested": max_merges,
        "merges_learned": len(result["merges"]),
        "merge_scores": result["merge_scores"],
        "merge_replacements": result["merge_replacements"],
        "initial_length": result["initial_length"],
    }
    return Tokenizer.from_merges(
        result["merges"], pattern=source, special_tokens=specials, training=training
    )


def run_merge_steps(trainer: Any, *, total: int, desc: str, progress: bool) -> None:
    """Step a started native BPE trainer until it stops, with a tqdm bar when asked.

    Steps of ``STEP_MERGES`` merges keep Ctrl-C and the bar responsive without a Python
    call per merge.
    """
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=desc, unit="merge", leave=False)
    try:
        while True:
            before = trainer.merges_done()
            stop = trainer.step(STEP_MERGES)
            if bar is not None:
                bar.update(trainer.merges_done() - before)
            if stop is not None:
                return
    finally:
        if bar is not None:
            bar.close()
