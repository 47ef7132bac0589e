"""Append-only vocabulary extension: continue BPE training, add tokens, add pieces.

Every function returns a *new* tokenizer in which each old ID keeps its bytes (or
spelling), each old merge keeps its rank, and each special token keeps its ID.

Special tokens placed after the merges (``train_bpe`` puts them at ``256 + merges``) are
never moved: new IDs start after the highest existing ID, so the layout becomes
``bytes | old merges | old specials/added | new merges``. A model's rows for the specials
therefore stay where they are and the old vocabulary is an exact ID prefix. Moving
specials to the end would need an explicit row remap of every checkpoint and dataset,
which an append-only migration never does; ``first_new_id`` reserves a range instead
(IDs between the old size and ``first_new_id`` stay unused padding rows).

Example::

    new = tp.migrate.extend_bpe(tok, texts, add_merges=500)
    assert new.token_bytes(42) == tok.token_bytes(42)
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import _native, files
from ..core import ModelKind, Tokenizer
from ..core.byte_map import byte_encoder
from ..errors import ConfigError, InvalidInputError, TrainingError
from ..train.bpe import run_merge_steps
from .layout import canonical_layout, check_extensible

BATCH_DOCS = 20_000
ROLE_KEYS = {"bos": "bos_token", "eos": "eos_token", "pad": "pad_token", "unk": "unk_token"}


def _check_count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _document(tok: Tokenizer) -> dict[str, Any]:
    """The tokenizer.json document of ``tok`` (a deep copy we may edit)."""
    return copy.deepcopy(files.hf_document(tok))


def _roles_config(tok: Tokenizer) -> dict[str, Any]:
    """``tokenizer_config.json`` keys that keep the special tokens' roles on reload."""
    config: dict[str, Any] = {}
    for content, role in tok.special_token_roles.items():
        if role in ROLE_KEYS:
            config.setdefault(ROLE_KEYS[role], content)
    return config


def used_end(tok: Tokenizer) -> int:
    """One past the highest ID in use (model pieces, specials and added tokens)."""
    return max([tok.vocab_size, *(i + 1 for i in tok.added_tokens.values())])


def _first_free(tok: Tokenizer, first_new_id: int | None) -> int:
    used = used_end(tok) - 1
    if first_new_id is None:
        return used + 1
    _check_count("first_new_id", first_new_id, 0)
    if first_new_id <= used:
        raise ConfigError(
            f"first_new_id={first_new_id} would overwrite existing ID {used}; "
            f"use first_new_id >= {used + 1} (old IDs never move)"
        )
    return first_new_id


def _reload(tok: Tokenizer, data: dict[str, Any]) -> Tokenizer:
    return files.from_hf_document(
        data, label="<extended tokenizer.json>", config=_roles_config(tok)
    )


def _fill_gap(data: dict[str, Any], start: int, stop: int) -> None:
    """Reserved IDs between the old size and ``first_new_id`` become placeholder added
    tokens (never produced from text), so IDs stay dense as Hugging Face requires."""
    for i in range(start, stop):
        data["added_tokens"].append(
            {
                "id": i,
                "content": f"<|tokenpact_reserved_{i}|>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )


def build_extended(
    tok: Tokenizer, new_merges: Sequence[tuple[int, int]], *, first_new_id: int | None = None
) -> Tokenizer:
    """The tokenizer that appends canonical ``new_merges`` to ``tok`` (see module doc).

    A new merge whose bytes already name an old piece (two merge paths to one string)
    creates that old ID again instead of a duplicate, as ``tokenizer.json`` requires.
    """
    layout = canonical_layout(tok)
    enc = byte_encoder()
    data = _document(tok)
    model = data["model"]
    vocab: dict[str, int] = model["vocab"]
    strings = ["".join(enc[b] for b in p) for p in layout.pieces]
    start = _first_free(tok, first_new_id)
    _fill_gap(data, used_end(tok), start)
    next_id = start
    merges = model["merges"]
    as_lists = not merges or isinstance(merges[0], list)
    for left, right in new_merges:
        if left >= len(strings) or right >= len(strings):
            raise ConfigError(f"merge ({left}, {right}) uses a canonical ID not yet created")
        merged = strings[left] + strings[right]
        if merged not in vocab:
            vocab[merged] = next_id
            next_id += 1
        strings.append(merged)
        merges.append(
            [strings[left], strings[right]] if as_lists else f"{strings[left]} {strings[right]}"
        )
    files.pin_added_token_ids(data)
    return _reload(tok, data)


def _feed(trainer: Any, texts: Iterable[str]) -> None:
    from ..corpus import TextFiles

    if isinstance(texts, TextFiles):  # read by Rust, no Python strings
        trainer.add_files(list(texts.paths), list(texts.formats), texts.text_field)
        return
    if isinstance(texts, (str, bytes)):
        raise ConfigError("texts must be an iterable of strings, not one string; pass [text]")
    batch: list[str] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigError(f"document {i} is {type(text).__name__}, not str")
        batch.append(text)
        if len(batch) >= BATCH_DOCS:
            _add(trainer, batch)
            batch = []
    if batch:
        _add(trainer, batch)


def _add(trainer: Any, batch: list[str]) -> None:
    try:
        trainer.add_texts(batch)
    except UnicodeEncodeError:
        raise InvalidInputError(
            "a training document contains a lone surrogate, which is not valid Unicode; "
            "decode the source with errors='replace'"
        ) from None


def extend_merges(
    tok: Tokenizer,
    texts: Iterable[str],
    *,
    add_merges: int,
    min_frequency: int = 2,
    threads: int | None = None,
    progress: bool = False,
) -> list[tuple[int, int]]:
    """New canonical merges (Rust trainer seeded with ``tok``'s merges)."""
    check_extensible(tok)
    _check_count("add_merges", add_merges, 0)
    _check_count("min_frequency", min_frequency, 1)
    layout = canonical_layout(tok)
    old = len(layout.merges)
    trainer = _native.BpeTrainer(
        tok.pattern,
        tok.pattern_name,
        old + add_merges,
        min_frequency,
        None,
        "lowest_pair_ids",
        threads,
    )
    _feed(trainer, texts)
    if trainer.corpus_stats()[1] == 0:
        raise TrainingError("the extension corpus is empty; pass at least one non-empty text")
    trainer.start()
    trainer.seed_merges(layout.merges)
    run_merge_steps(trainer, total=add_merges, desc="new merges", progress=progress)
    merges = [tuple(m) for m in trainer.result()["merges"]]
    return merges[old:]  # type: ignore[return-value]


def extend_bpe(
    tok: Tokenizer,
    texts: Iterable[str],
    *,
    add_merges: int,
    min_frequency: int = 2,
    first_new_id: int | None = None,
    threads: int | None = None,
    progress: bool = False,
) -> Tokenizer:
    """Continue byte-level BPE training of ``tok`` on ``texts`` for up to ``add_merges``
    merges; old IDs, merge ranks and special IDs are kept, new IDs come after them.

    Fewer merges are added when no pair reaches ``min_frequency``. ``first_new_id``
    reserves IDs between the old size and the first new merge.
    """
    new = extend_merges(
        tok,
        texts,
        add_merges=add_merges,
        min_frequency=min_frequency,
        threads=threads,
        progress=progress,
    )
    return build_extended(tok, new, first_new_id=first_new_id)


def add_tokens(
    tok: Tokenizer,
    tokens: Sequence[str],
    *,
    special: bool = False,
    roles: Mapping[str, str] | None = None,
    first_new_id: int | None = None,
) -> Tokenizer:
    """Append added tokens (``special=True``: control tokens matched only with permission).

    Tokens already present are an error, so a call never silently re-assigns an ID.
    ``roles`` gives a role ("bos", "eos", "pad", "unk") to new special spellings.
    """
    if isinstance(tokens, str) or not tokens:
        raise ConfigError("tokens must be a non-empty list of strings, e.g. ['<|tool|>']")
    if len(set(tokens)) != len(tokens):
        raise ConfigError("tokens contains duplicates; list each new token once")
    data = _document(tok)
    existing = {t["content"] for t in data.get("added_tokens") or []}
    start = _first_free(tok, first_new_id)
    _fill_gap(data, used_end(tok), start)
    for offset, content in enumerate(tokens):
        if not isinstance(content, str) or not content:
            raise ConfigError(f"token {content!r} must be a non-empty string")
        if content in existing or content in tok.special_tokens:
            raise ConfigError(f"{content!r} is already a token (ID {tok.token_id(content)})")
        data.setdefault("added_tokens", []).append(
            {
                "id": start + offset,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": special,
            }
        )
    config = _roles_config(tok)
    for content, role in (roles or {}).items():
        if role not in ROLE_KEYS:
            raise ConfigError(f"role {role!r} is not one of {sorted(ROLE_KEYS)}")
        config[ROLE_KEYS[role]] = content
    return files.from_hf_document(data, label="<extended tokenizer.json>", config=config)


def extend_vocab(
    tok: Tokenizer,
    pieces: Sequence[str],
    *,
    scores: Sequence[float] | None = None,
) -> Tokenizer:
    """Append model pieces to a WordPiece or Unigram tokenizer (loaded from tokenizer.json).

    WordPiece: each piece (``"##ing"`` for a continuation) gets the next free ID; the
    greedy longest match then prefers it where it fits. Unigram: each piece is appended
    at the end of the piece list with its ``scores`` entry (default: the lowest existing
    score, so a new piece wins only where no old segmentation is as likely). BPE needs
    merges, not bare pieces: use extend_bpe() or add_tokens().
    """
    # The pieces are added to the tokenizer.json the tokenizer was built from.
    if tok.spec.kind is not ModelKind.HF_PIPELINE or "tokenizer.json" not in tok.provenance.files:
        raise ConfigError(
            "extend_vocab works on WordPiece/Unigram tokenizers loaded from tokenizer.json; "
            "use extend_bpe() for byte-level BPE and add_tokens() for anything else"
        )
    if isinstance(pieces, str) or not pieces or len(set(pieces)) != len(pieces):
        raise ConfigError("pieces must be a non-empty list of distinct strings")
    data = _document(tok)
    model = data["model"]
    kind = model.get("type")
    start = _first_free(tok, None)
    if kind == "WordPiece":
        vocab: dict[str, int] = model["vocab"]
        for offset, piece in enumerate(pieces):
            if piece in vocab:
                raise ConfigError(f"{piece!r} is already in the vocabulary (ID {vocab[piece]})")
            vocab[piece] = start + offset
    elif kind == "Unigram":
        table: list[list[Any]] = model["vocab"]
        if len(table) != start:
            raise ConfigError(
                f"the Unigram piece list ends at ID {len(table) - 1} but IDs up to {start - 1} "
                "are taken by added tokens; new pieces cannot be appended without moving them"
            )
        known = {row[0] for row in table}
        floor = min(float(row[1]) for row in table)
        if scores is not None and len(scores) != len(pieces):
            raise ConfigError(f"{len(scores)} scores for {len(pieces)} pieces; give one each")
        for offset, piece in enumerate(pieces):
            if piece in known:
                raise ConfigError(f"{piece!r} is already a Unigram piece")
            table.append([piece, floor if scores is None else float(scores[offset])])
    else:
        raise ConfigError(f"extend_vocab supports WordPiece and Unigram models, not {kind!r}")
    return _reload(tok, data)
