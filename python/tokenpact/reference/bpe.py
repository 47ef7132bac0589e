"""Reference byte-level BPE: training and encoding.

The executable spec for ``src/bpe``. It recounts every pair each round and rescans every
piece after each merge: quadratic on purpose, because the obvious version is the one we
can trust. Tests compare the engine's merges, scores, stop reasons and IDs against it.

Training contract:

* units are the distinct pre-tokens (UTF-8 bytes of each regex span), weighted by how
  often they occur; no pair is ever counted across two units;
* the base alphabet is the 256 byte values; merge ``rank`` creates ``256 + rank``;
* score = weighted count of adjacent windows (overlapping windows all count);
* the rewrite replaces non-overlapping occurrences left to right;
* ties: ``"lowest_pair_ids"`` takes the smallest ``(left_id, right_id)``;
  ``"subword_nmt"`` takes the largest ``(bytes(left), bytes(right))`` and, if two pairs
  spell the same bytes, the smallest ``(left_id, right_id)`` of those;
* checks each round, in this order: merge cap reached -> ``"vocab_size_reached"``; no
  eligible pair -> ``"no_pairs_left"``; best score < ``min_frequency`` ->
  ``"below_min_frequency"``. A pair whose merged piece would exceed
  ``max_token_length`` bytes is never eligible;
* a corpus with zero bytes is a ``TrainingError``; ``vocab_size`` below
  ``256 + n_special`` is a ``TrainingError``; bad options are ``ConfigError``.

Encoding contract: among adjacent pairs present in the merge table choose the minimum
``(rank, left_position)``, rewrite that one occurrence, rescan.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import ConfigError, InvalidInputError, TrainingError, UnknownTokenError
from .pretokenize import pretokenize

BASE_SIZE = 256
TIE_BREAKS = ("lowest_pair_ids", "subword_nmt")
STOP_REASONS = ("vocab_size_reached", "below_min_frequency", "no_pairs_left")

Pair = tuple[int, int]
# (left_id, right_id) -> (rank, new_id)
MergeRank = Mapping[Pair, tuple[int, int]]


@dataclass(frozen=True)
class ReferenceTraining:
    """What the reference trainer learned, in the engine's ``tok.training`` vocabulary."""

    merges: list[Pair]
    merge_scores: list[int]
    merge_replacements: list[int]
    initial_length: int
    stop_reason: str
    vocab: dict[int, bytes] = field(repr=False)

    @property
    def lengths(self) -> list[int]:
        """Weighted training-stream length before the first merge and after each one."""
        out = [self.initial_length]
        for replaced in self.merge_replacements:
            out.append(out[-1] - replaced)
        return out


def _utf8(text: str) -> bytes:
    if not isinstance(text, str):
        raise ConfigError(f"expected text as str, got {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"text contains a lone surrogate at index {exc.start}; "
            "pass valid Unicode (e.g. decode bytes with errors='replace')"
        ) from exc


def count_pretokens(texts: Iterable[str], pattern: str) -> tuple[Counter[bytes], int]:
    """Count each distinct pre-token (as UTF-8 bytes); also return the corpus size in bytes."""
    counts: Counter[bytes] = Counter()
    corpus_bytes = 0
    for text in texts:
        corpus_bytes += len(_utf8(text))  # rejects lone surrogates before splitting
        for start, end in pretokenize(text, pattern):
            piece = text[start:end].encode("utf-8")
            if piece:
                counts[piece] += 1
    return counts, corpus_bytes


def _pair_counts(units: list[tuple[int, list[int]]]) -> Counter[Pair]:
    counts: Counter[Pair] = Counter()
    for freq, symbols in units:
        for pair in zip(symbols, symbols[1:], strict=False):
            counts[pair] += freq
    return counts


def _rewrite(symbols: list[int], pair: Pair, new_id: int) -> tuple[list[int], int]:
    """Replace non-overlapping occurrences of ``pair`` left to right; return (new, count)."""
    out: list[int] = []
    replaced = 0
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(new_id)
            replaced += 1
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out, replaced


def _break_tie(tied: list[Pair], vocab: Mapping[int, bytes], tie_break: str) -> Pair:
    if tie_break == "lowest_pair_ids":
        return min(tied)
    # subword-nmt's max((freq, pair)): largest piece strings win; equal spellings fall
    # back to the smallest IDs so the rule stays total.
    return max(tied, key=lambda p: (vocab[p[0]], vocab[p[1]], -p[0], -p[1]))


def train_bpe_reference(
    texts: Iterable[str],
    *,
    vocab_size: int,
    pattern: str,
    min_frequency: int = 2,
    n_special: int = 0,
    max_token_length: int | None = None,
    tie_break: str = "lowest_pair_ids",
) -> ReferenceTraining:
    """Train byte-level BPE by full recount each round.

    >>> r = train_bpe_reference(["aaab", "aaab", "daaabac"], vocab_size=260, pattern=r"[^\\n]+")
    >>> r.merges, r.merge_scores, r.lengths, r.stop_reason
    ([(97, 97), (97, 98), (256, 257)], [6, 3, 3], [15, 12, 9, 6], 'below_min_frequency')
    """
    if isinstance(texts, (str, bytes)):
        raise ConfigError("texts must be an iterable of strings, not a single string")
    if tie_break not in TIE_BREAKS:
        raise ConfigError(f"unknown tie_break {tie_break!r}; use one of {', '.join(TIE_BREAKS)}")
    if min_frequency < 1:
        raise ConfigError("min_frequency must be >= 1")
    if max_token_length is not None and max_token_length < 1:
        raise ConfigError("max_token_length must be a positive number of bytes or None")
    if vocab_size < BASE_SIZE + n_special:
        raise TrainingError(
            f"vocab_size={vocab_size} is below 256 byte tokens + {n_special} special tokens; "
            f"use vocab_size >= {BASE_SIZE + n_special}"
        )
    # A corpus is empty when it has no bytes; text the pattern does not match is simply
    # not counted (it leaves no pairs rather than being an error).
    pieces, corpus_bytes = count_pretokens(texts, pattern)
    if corpus_bytes == 0:
        raise TrainingError("the training corpus is empty; pass at least one non-empty text")

    # Sorted only so a printed trace is stable; the result does not depend on unit order.
    units = [(freq, list(piece)) for piece, freq in sorted(pieces.items())]
    vocab = {i: bytes([i]) for i in range(BASE_SIZE)}
    initial_length = sum(freq * len(symbols) for freq, symbols in units)
    max_merges = vocab_size - BASE_SIZE - n_special
    merges: list[Pair] = []
    scores: list[int] = []
    replacements: list[int] = []

    while True:
        if len(merges) >= max_merges:
            stop = "vocab_size_reached"
            break
        counts = _pair_counts(units)
        if max_token_length is not None:
            counts = Counter(
                {
                    p: c
                    for p, c in counts.items()
                    if len(vocab[p[0]]) + len(vocab[p[1]]) <= max_token_length
                }
            )
        if not counts:
            stop = "no_pairs_left"
            break
        best = max(counts.values())
        if best < min_frequency:
            stop = "below_min_frequency"
            break
        pair = _break_tie([p for p, c in counts.items() if c == best], vocab, tie_break)
        new_id = BASE_SIZE + len(merges)
        replaced = 0
        for index, (freq, symbols) in enumerate(units):
            rewritten, n = _rewrite(symbols, pair, new_id)
            units[index] = (freq, rewritten)
            replaced += freq * n
        merges.append(pair)
        scores.append(best)
        replacements.append(replaced)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]

    return ReferenceTraining(merges, scores, replacements, initial_length, stop, vocab)


def merges_to_rank(
    merges: Sequence[Pair], base_size: int = BASE_SIZE
) -> dict[Pair, tuple[int, int]]:
    """Map each merge pair to ``(rank, base_size + rank)``; the first occurrence of a pair wins."""
    table: dict[Pair, tuple[int, int]] = {}
    for rank, pair in enumerate(merges):
        table.setdefault((pair[0], pair[1]), (rank, base_size + rank))
    return table


def vocab_from_merges(merges: Sequence[Pair]) -> dict[int, bytes]:
    """Byte pieces of the 256 base IDs plus every merge: merge ``rank`` creates ID
    ``256 + rank``, the concatenation of its parents, which must be base bytes or
    earlier merges (ConfigError otherwise). The core derives a ranked-merge model's
    vocabulary with this function (``tokenpact.core.vocab_from_merges``)."""
    vocab = {i: bytes([i]) for i in range(BASE_SIZE)}
    for rank, (left, right) in enumerate(merges):
        new_id = BASE_SIZE + rank
        if not (0 <= left < new_id and 0 <= right < new_id):
            raise ConfigError(
                f"merge {rank} ({left}, {right}) references an id that does not exist yet; "
                "merges may only use base bytes or earlier merges"
            )
        vocab[new_id] = vocab[left] + vocab[right]
    return vocab


class RankTable(NamedTuple):
    """A tiktoken-style rank file turned into the reference encoder's inputs."""

    merge_rank: dict[Pair, tuple[int, int]]
    byte_ids: list[int]  # byte value -> ID of that single byte
    piece_ids: dict[bytes, int]  # whole piece -> ID (tiktoken's direct lookup)


def tiktoken_merge_rank(ranks: Sequence[bytes]) -> RankTable:
    """Build tiktoken's rank semantics: ``(a, b)`` merges iff ``bytes(a)+bytes(b)`` has a rank.

    The new ID and the priority are both that rank. Only splits whose two halves are
    themselves ranked can ever be adjacent, so enumerating split points is complete.
    """
    piece_ids: dict[bytes, int] = {}
    for rank, piece in enumerate(ranks):
        if piece in piece_ids:
            raise ConfigError(f"piece {piece!r} appears twice in the rank list")
        piece_ids[piece] = rank
    # Bytes that never occur in UTF-8 (0xC0, 0xC1, 0xF5..0xFF) may lack a piece: text
    # cannot contain them (their byte_ids entry is -1, never read).
    missing = [b for b in range(BASE_SIZE) if bytes([b]) not in piece_ids]
    needed = [b for b in missing if not never_in_utf8(b)]
    if needed:
        raise ConfigError(
            f"rank list lacks single bytes {needed[:8]}; it must cover every byte UTF-8 "
            "text can contain"
        )
    merge_rank: dict[Pair, tuple[int, int]] = {}
    for rank, piece in enumerate(ranks):
        for k in range(1, len(piece)):
            left, right = piece_ids.get(piece[:k]), piece_ids.get(piece[k:])
            if left is not None and right is not None:
                merge_rank[(left, right)] = (rank, rank)
    byte_ids = [piece_ids.get(bytes([b]), -1) for b in range(BASE_SIZE)]
    return RankTable(merge_rank, byte_ids, piece_ids)


def never_in_utf8(byte: int) -> bool:
    """0xC0, 0xC1 (overlong lead bytes) and 0xF5..0xFF (past U+10FFFF)."""
    return byte in (0xC0, 0xC1) or byte >= 0xF5


def iter_encode_states(
    piece: bytes, merge_rank: MergeRank, *, byte_ids: Sequence[int] | None = None
) -> Iterator[list[int]]:
    """Yield the symbol sequence before the first merge and after each merge."""
    ids = list(piece) if byte_ids is None else [byte_ids[b] for b in piece]
    yield list(ids)
    while len(ids) > 1:
        best: tuple[int, int, int] | None = None
        for pos in range(len(ids) - 1):
            record = merge_rank.get((ids[pos], ids[pos + 1]))
            if record is not None and (best is None or (record[0], pos) < best[:2]):
                best = (record[0], pos, record[1])
        if best is None:
            return
        _, pos, new_id = best
        ids[pos : pos + 2] = [new_id]
        yield list(ids)


def encode_reference(
    piece: bytes,
    merge_rank: MergeRank,
    *,
    byte_ids: Sequence[int] | None = None,
    piece_ids: Mapping[bytes, int] | None = None,
    whole_piece_first: bool = False,
) -> list[int]:
    """Encode one pre-token by minimum ``(rank, left_position)`` merges.

    ``whole_piece_first`` models tiktoken: a piece that is itself in ``piece_ids`` is
    emitted as that single ID without running merges.

    >>> encode_reference(b"abc", merges_to_rank([(97, 98), (98, 99), (256, 99)]))
    [258]
    """
    if whole_piece_first:
        if piece_ids is None:
            raise ConfigError("whole_piece_first needs piece_ids")
        whole = piece_ids.get(piece)
        if whole is not None:
            return [whole]
    *_, final = iter_encode_states(piece, merge_rank, byte_ids=byte_ids)
    return final


def encode_text_reference(
    text: str,
    pattern: str,
    merge_rank: MergeRank,
    *,
    byte_ids: Sequence[int] | None = None,
    piece_ids: Mapping[bytes, int] | None = None,
    whole_piece_first: bool = False,
) -> list[int]:
    """Pre-tokenize ``text`` with the reference splitter and encode each piece."""
    _utf8(text)
    ids: list[int] = []
    for start, end in pretokenize(text, pattern):
        ids.extend(
            encode_reference(
                text[start:end].encode("utf-8"),
                merge_rank,
                byte_ids=byte_ids,
                piece_ids=piece_ids,
                whole_piece_first=whole_piece_first,
            )
        )
    return ids


def decode_bytes_reference(ids: Iterable[int], vocab: Mapping[int, bytes]) -> bytes:
    """Concatenate the byte pieces of ``ids`` (text rendering happens afterwards)."""
    out = bytearray()
    for token_id in ids:
        if token_id not in vocab:
            raise UnknownTokenError(f"token ID {token_id} is not in the vocabulary")
        out += vocab[token_id]
    return bytes(out)
