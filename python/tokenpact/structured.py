"""Assembling an Encoding: content parts, truncation, template, padding."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .encoding import SHARED_PROVENANCE, Encoding, provenance_of
from .errors import ConfigError
from .postprocess import apply, count_added
from .truncation import Padding, Truncation, overflow_windows, split_budget

if TYPE_CHECKING:
    from .core import Tokenizer


@dataclass(frozen=True)
class Content:
    """One encoded input before control tokens: per-token IDs, offsets and origins."""

    ids: list[int]
    offsets: Sequence[tuple[int, int]]
    origins: list[str]
    length: int  # of the input text in the offset coordinate

    def cut(self, start: int, stop: int) -> Content:
        return Content(
            self.ids[start:stop], self.offsets[start:stop], self.origins[start:stop], self.length
        )


def _join(
    tok: Tokenizer,
    first: Content,
    second: Content | None,
    add_special_tokens: bool,
    coordinate: str,
    pieces: Callable[[list[int]], list[str]],
) -> Encoding:
    post = tok.spec.post_processor if add_special_tokens else None
    if post is None and second is None:
        # The common case, without per-token Python work.
        n = len(first.ids)
        return Encoding(
            ids=first.ids,
            tokens=pieces(first.ids),
            offsets=first.offsets,
            coordinate=coordinate,  # type: ignore[arg-type]
            # Plain text has no control token: skip the per-token test (a list scan in C).
            special_tokens_mask=(
                [1 if o == "control" else 0 for o in first.origins]
                if "control" in first.origins
                else [0] * n
            ),
            origins=first.origins,
            attention_mask=[1] * n,
            type_ids=[0] * n,
            sequence_ids=[0] * n,
            original_length=first.length,
            provenance=getattr(tok, SHARED_PROVENANCE, None) or provenance_of(tok),
        )
    ids, type_ids, seq_ids, control = apply(
        post, tok.special_tokens, first.ids, second.ids if second is not None else None
    )
    parts = [first] if second is None else [first, second]
    offsets: list[tuple[int, int]] = []
    origins: list[str] = []
    cursor = [0, 0]
    for is_control, sid in zip(control, seq_ids, strict=True):
        if is_control or sid is None:
            offsets.append((0, 0))
            origins.append("control")
        else:
            part = parts[sid]
            offsets.append(part.offsets[cursor[sid]])
            origins.append(part.origins[cursor[sid]])
            cursor[sid] += 1
    return Encoding(
        ids=ids,
        tokens=pieces(ids),
        offsets=offsets,
        coordinate=coordinate,  # type: ignore[arg-type]
        special_tokens_mask=[1 if o == "control" else 0 for o in origins],
        origins=origins,
        attention_mask=[1] * len(ids),
        type_ids=type_ids,
        sequence_ids=seq_ids,
        original_length=first.length,
        provenance=getattr(tok, SHARED_PROVENANCE, None) or provenance_of(tok),
    )


def _cut_right(enc: Encoding, keep: int) -> Encoding:
    fields = (
        "ids",
        "tokens",
        "offsets",
        "special_tokens_mask",
        "origins",
        "attention_mask",
        "type_ids",
        "sequence_ids",
    )
    return replace(enc, **{f: getattr(enc, f)[:keep] for f in fields}, truncated=True)


def assemble(
    tok: Tokenizer,
    first: Content,
    second: Content | None,
    *,
    add_special_tokens: bool,
    coordinate: str,
    truncation: Truncation | None,
    pieces: Callable[[list[int]], list[str]],
) -> Encoding:
    """Truncate (per policy), apply the template, and attach overflowing windows;
    ``pieces`` gives the piece text of each ID (the encoding's ``tokens``)."""
    if truncation is None:
        return _join(tok, first, second, add_special_tokens, coordinate, pieces)
    if truncation.control_policy == "add_then_truncate":
        whole = _join(tok, first, second, add_special_tokens, coordinate, pieces)
        if len(whole.ids) <= truncation.max_length:
            return whole
        return _cut_right(whole, truncation.max_length)
    added = count_added(tok.spec.post_processor, second is not None) if add_special_tokens else 0
    budget = truncation.max_length - added
    if budget < 1:
        raise ConfigError(
            f"max_length={truncation.max_length} leaves no room for content after the "
            f"{added} control tokens the template adds; raise max_length"
        )
    n2 = len(second.ids) if second is not None else None
    keep1, keep2 = split_budget(len(first.ids), n2, budget, truncation.strategy)
    truncated = keep1 < len(first.ids) or (second is not None and keep2 < len(second.ids))
    head = _join(
        tok,
        first.cut(0, keep1),
        second.cut(0, keep2) if second is not None else None,
        add_special_tokens,
        coordinate,
        pieces,
    )
    overflowing: list[Encoding] = []
    if truncated:
        # Overflow windows continue the sequence that was cut, with `stride` overlap.
        if second is None or keep2 == len(second.ids):
            for a, b in overflow_windows(len(first.ids), keep1, truncation.stride):
                overflowing.append(
                    _join(
                        tok,
                        first.cut(a, b),
                        second.cut(0, keep2) if second else None,
                        add_special_tokens,
                        coordinate,
                        pieces,
                    )
                )
        elif keep1 == len(first.ids):
            for a, b in overflow_windows(len(second.ids), keep2, truncation.stride):
                overflowing.append(
                    _join(tok, first, second.cut(a, b), add_special_tokens, coordinate, pieces)
                )
    return replace(head, truncated=truncated, overflowing=overflowing)


def pad(enc: Encoding, width: int, padding: Padding, pad_id: int, pad_token: str = "") -> Encoding:
    """Pad one encoding to ``width`` on ``padding.side``; pads are masked and ownerless,
    and their ``tokens`` entry is ``pad_token`` (the pad ID's spelling, as Hugging Face
    shows it). Its overflowing windows are padded to the same width (as Hugging Face pads
    them)."""
    if enc.overflowing:
        enc = replace(
            enc,
            overflowing=[pad(o, width, padding, pad_id, pad_token) for o in enc.overflowing],
        )
    n = width - len(enc.ids)
    if n <= 0:
        return enc
    fill = {
        "ids": [pad_id] * n,
        "tokens": [pad_token] * n,
        "offsets": [(0, 0)] * n,
        "special_tokens_mask": [1] * n,
        "origins": ["pad"] * n,
        "attention_mask": [0] * n,
        "type_ids": [0] * n,
        "sequence_ids": [None] * n,
    }
    if padding.side == "right":
        values = {k: getattr(enc, k) + v for k, v in fill.items()}
    else:
        values = {k: v + getattr(enc, k) for k, v in fill.items()}
    return replace(enc, **values)


def pad_all(
    encodings: list[Encoding],
    padding: Padding,
    tok: Tokenizer,
    pieces: Callable[[list[int]], list[str]],
) -> list[Encoding]:
    """Pad a batch: to ``padding.length`` or else the longest, rounded to ``multiple``;
    with the policy's pad ID, else ``tok``'s pad token. ``pieces`` gives the piece text
    of IDs (the ``tokens`` column)."""
    pad_id = padding.pad_id if padding.pad_id is not None else tok.pad_id
    if pad_id is None:
        raise ConfigError(
            "padding needs a PAD ID: this tokenizer has no pad token; pass Padding(pad_id=...)"
        )
    pad_token = _pad_token(tok, pad_id, pieces)
    # A fixed length pads each sequence to it (Hugging Face's Fixed: a longer one stays
    # as it is); without one, the batch pads to its longest.
    longest = 0 if padding.length is not None else max((len(e.ids) for e in encodings), default=0)
    width = padding.target(longest)
    return [pad(e, width, padding, pad_id, pad_token) for e in encodings]


def _pad_token(tok: Tokenizer, pad_id: int, pieces: Callable[[list[int]], list[str]]) -> str:
    """The ``tokens`` entry of a pad: the pad ID's piece text, as every other ID's
    (Hugging Face shows its padding's ``pad_token``, the spelling of ``pad_id``); "" for
    an ID outside the vocabulary."""
    if not 0 <= pad_id < tok.vocab_size:
        return ""
    return pieces([pad_id])[0]
