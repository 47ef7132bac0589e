"""Rendered conversations as columns: one record's arrays, or many laid end to end.

The render core (:mod:`tokenpact.chat.render_core`) finishes each conversation as a
:class:`TokenRecord`: its token IDs, per-token kind codes and byte offsets as numpy
arrays, plus per-record facts (content runs, the assistant ranges, the boundary).
``render`` and ``render_batch`` return a :class:`Conversation` viewing each record (its
per-token lists are built on first read); :meth:`ChatTemplate.render_columns` lays the
records end to end as one :class:`RenderedColumns`, each per-token vector a numpy array
with ``offsets`` marking the records: what writing shards or packing batches wants,
without a Python list per token.

Record ``i`` equals ``render`` of conversation ``i`` exactly: :meth:`RenderedColumns.conversation`
is the :class:`Conversation` viewing that slice of the columns (the tests compare them
field by field).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .. import _native
from .conversation import CONTROL, KINDS, Conversation
from .errors import ChatTemplateError
from .ownership import RenderedText, Tokens, kind_lists, owned_tokens, token_lists
from .stop import StopPolicy

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer
    from ._encode import TokenizerFacts

# (ids, starts, ends, span_bytes, span_lo, span_hi): an encoding of a rendered text.
Encoded = tuple[np.ndarray, np.ndarray, np.ndarray, list[int], list[int], list[int]]


class TokenRecord:
    """One rendered conversation in columns: what :class:`Conversation` views and
    :class:`RenderedColumns` lays out.

    ``encoded`` is the native encoding of ``rendered.text`` (see :data:`Encoded`) with
    ``codes``, each token's kind code, or None when ``tokens`` (the owned tokens, after
    post-processor markers) holds the record; ``mask`` is the assistant mask as token
    ranges ``[lo, hi)`` or as an int8 array (``{% generation %}`` blocks)."""

    __slots__ = ("rendered", "encoded", "codes", "tokens", "mask", "boundary", "info")

    def __init__(
        self,
        rendered: RenderedText,
        encoded: Encoded | None,
        codes: np.ndarray | None,
        tokens: Tokens | None,
        mask: list[tuple[int, int]] | np.ndarray,
        boundary: int,
        info: TokenizerFacts,
    ) -> None:
        self.rendered = rendered
        self.encoded = encoded
        self.codes = codes
        self.tokens = tokens
        self.mask = mask
        self.boundary = boundary
        self.info = info

    def owned(self) -> Tokens:
        """The record's :class:`~tokenpact.chat.ownership.Tokens` (built on first use)."""
        if self.tokens is None:
            assert self.encoded is not None  # one of the two is always given
            self.tokens = owned_tokens(self.rendered, self.info, self.encoded, self.codes)
        return self.tokens

    @property
    def ids(self) -> np.ndarray:
        return self.tokens.ids if self.encoded is None else self.encoded[0]  # type: ignore[union-attr]

    @property
    def byte_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        if self.encoded is None:
            return self.tokens.starts, self.tokens.ends  # type: ignore[union-attr]
        return self.encoded[1], self.encoded[2]

    def kind_codes(self) -> np.ndarray:
        """Each token's kind code (``KINDS`` order)."""
        return self.codes if self.codes is not None else self.owned().kinds

    def runs(self) -> list[tuple[int, int, int]]:
        """``(lo, hi, owner)`` per content span (:meth:`Tokens.runs`)."""
        if self.tokens is not None:
            return self.tokens.runs()
        _, _, _, _, span_lo, span_hi = self.encoded  # type: ignore[misc]
        out = []
        pos = 0
        for (_, _, o), lo, hi in zip(self.rendered.spans, span_lo, span_hi, strict=True):
            start = lo if lo > pos else pos
            if start < hi:
                out.append((start, hi, o))
                pos = hi
        return out

    # The lists a Conversation builds on first read (conversation.TokenSource).
    def id_list(self) -> tuple[list[int]]:
        """``input_ids``, made of the engine's cached int objects when the IDs are the
        native encoder's (a reference per ID where ``tolist()`` makes an int). That list
        is not tracked by the cyclic collector: a list of ints is in no reference cycle,
        and each collection that finds a tracked one young visits every item
        (``render_batch`` builds lists while it renders; on 2 threads those visits cost
        short records a tenth of the speedup)."""
        ids = self.ids
        engine = self.info.engine
        if engine is not None and ids.dtype == np.uint32:
            return (engine.id_array_list(ids),)
        return (ids.tolist(),)

    def token_lists(self) -> tuple[list[int], list[int], list[str]]:
        """``input_ids``, ``special_tokens_mask`` and ``origin`` (one native call from the
        kind codes: cheaper than the two kind lists alone through numpy)."""
        if self.codes is not None:
            return token_lists(self.ids, self.codes, self.info.engine)
        return self.owned().trusted_columns()

    def index_lists(self) -> tuple[list[int], list[int]]:
        """``message_index`` and ``owner_index``."""
        return self.owned().index_columns()

    def mask_list(self) -> tuple[list[int]]:
        """``assistant_mask``: from its ranges, made natively so that, like the ID list,
        the cyclic collector does not track it (see :meth:`id_list`)."""
        mask = self.mask
        if isinstance(mask, np.ndarray):
            return (mask.tolist(),)
        return (_native.chat_mask_list(len(self.ids), mask),)


class RecordColumns(NamedTuple):
    """Record ``i`` of a :class:`RenderedColumns`: views into its arrays."""

    input_ids: NDArray[np.uint32]
    special_tokens_mask: NDArray[np.uint8]
    origin: NDArray[np.uint8]  # codes into RenderedColumns.origin_names
    message_index: NDArray[np.int32]
    owner_index: NDArray[np.int32]
    assistant_mask: NDArray[np.uint8]
    prompt_boundary: int


@dataclass(frozen=True, eq=False, repr=False)
class RenderedColumns:
    """Conversations rendered and tokenized, as flat columns.

    Per token (aligned, ``offsets[-1]`` long): ``input_ids`` (uint32),
    ``special_tokens_mask`` (uint8, 1 exactly on control tokens), ``origin`` (uint8 codes
    into ``origin_names``: control, template, content, document, tools),
    ``message_index`` and ``owner_index`` (int32, -1 outside content), ``assistant_mask``
    (uint8) and ``byte_starts``/``byte_ends`` (uint32 UTF-8 offsets in the record's
    text). Per record: ``offsets`` (int64, N+1: record ``i`` is tokens
    ``offsets[i]:offsets[i+1]``), ``prompt_boundary`` (int64, relative to the record),
    ``owners`` (content labels, indexed by ``owner_index``), ``roles`` and ``texts``.
    With ``on_error="skip"``, ``record_index`` (int64, N) is each record's index in the
    input and ``skipped`` the :class:`~tokenpact.chat.SkippedRecord` of each record left
    out (else None and empty).
    """

    input_ids: NDArray[np.uint32]
    offsets: NDArray[np.int64]
    special_tokens_mask: NDArray[np.uint8]
    origin: NDArray[np.uint8]
    message_index: NDArray[np.int32]
    owner_index: NDArray[np.int32]
    assistant_mask: NDArray[np.uint8]
    byte_starts: NDArray[np.uint32]
    byte_ends: NDArray[np.uint32]
    prompt_boundary: NDArray[np.int64]
    owners: tuple[tuple[str, ...], ...]
    roles: tuple[tuple[str, ...], ...]
    texts: tuple[str, ...]
    stop_ids: tuple[int, ...]
    tokenizer_hash: str
    template_hash: str
    mode: str
    origin_names: tuple[str, ...] = KINDS
    tokenizer: Tokenizer | None = field(default=None, repr=False)
    # With on_error="skip": the input index of each record, and the records left out.
    record_index: NDArray[np.int64] | None = None
    skipped: tuple[Any, ...] = ()

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> RecordColumns:
        i = self._index(i)
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return RecordColumns(
            self.input_ids[a:b],
            self.special_tokens_mask[a:b],
            self.origin[a:b],
            self.message_index[a:b],
            self.owner_index[a:b],
            self.assistant_mask[a:b],
            int(self.prompt_boundary[i]),
        )

    def __repr__(self) -> str:
        return (
            f"RenderedColumns(records={len(self)}, tokens={len(self.input_ids)}, "
            f"mode={self.mode!r}, template_hash={self.template_hash[:19]}...)"
        )

    @property
    def lengths(self) -> NDArray[np.int64]:
        """Tokens per record."""
        return np.diff(self.offsets)

    def _index(self, i: int) -> int:
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
            raise ChatTemplateError(f"record index {i!r} is out of range for {n} records")
        return int(i) % n

    def conversation(self, i: int) -> Conversation:
        """Record ``i`` as the :class:`Conversation` that ``render`` returns for it."""
        i = self._index(i)
        boundary = int(self.prompt_boundary[i])
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self._view(i, a, b, StopPolicy(boundary, self.stop_ids))

    def to_conversations(self) -> list[Conversation]:
        """Every record as a :class:`Conversation` (what ``render_batch`` returns): views
        of these columns, one stop policy per prompt length (the process executor of
        ``render_batch`` makes its workers' conversations here, on the calling thread)."""
        bounds = self.offsets.tolist()
        policies: dict[int, StopPolicy] = {}
        out = []
        for i, boundary in enumerate(self.prompt_boundary.tolist()):
            policy = policies.get(boundary)
            if policy is None:
                policy = policies[boundary] = StopPolicy(boundary, self.stop_ids)
            out.append(self._view(i, bounds[i], bounds[i + 1], policy))
        return out

    def _view(self, i: int, a: int, b: int, policy: StopPolicy) -> Conversation:
        """Record ``i`` (tokens ``a:b``) as a :class:`Conversation` viewing its slice."""
        return Conversation.view(
            _ColumnSlice(self, a, b),
            owners=self.owners[i],
            prompt_boundary=policy.prompt_length,
            stop_policy=policy,
            tokenizer_hash=self.tokenizer_hash,
            template_hash=self.template_hash,
            mode=self.mode,
            roles=self.roles[i],
            text=self.texts[i],
            byte_offsets=(
                self.byte_starts[a:b].astype(np.int64),
                self.byte_ends[a:b].astype(np.int64),
            ),
            tokenizer=self.tokenizer,
        )

    @classmethod
    def from_records(
        cls,
        records: Sequence[TokenRecord],
        *,
        tokenizer: Tokenizer,
        template_hash: str,
        mode: str,
        stops: tuple[int, ...],
    ) -> RenderedColumns:
        """The records end to end: each record's arrays once, its runs and mask ranges
        filled in as step functions (no Python loop over tokens)."""
        lengths = [len(r.ids) for r in records]
        total = sum(lengths)
        offsets = np.zeros(len(records) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        run_lo: list[int] = []
        run_hi: list[int] = []
        run_owner: list[int] = []
        run_message: list[int] = []
        mask_lo: list[int] = []
        mask_hi: list[int] = []
        mask_arrays: list[tuple[int, np.ndarray]] = []
        for base, r in zip(offsets.tolist(), records, strict=False):
            owners = r.rendered.owners
            for lo, hi, o in r.runs():
                run_lo.append(base + lo)
                run_hi.append(base + hi)
                run_owner.append(o)
                run_message.append(owners[o].message_index)
            if isinstance(r.mask, np.ndarray):
                mask_arrays.append((base, r.mask))
            else:
                for lo, hi in r.mask:
                    mask_lo.append(base + lo)
                    mask_hi.append(base + hi)

        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        origin = cat([r.kind_codes() for r in records], np.uint8)
        steps = np.zeros(total + 1, dtype=np.int64)
        np.add.at(steps, np.asarray(mask_lo, dtype=np.int64), 1)
        np.add.at(steps, np.asarray(mask_hi, dtype=np.int64), -1)
        assistant = (np.cumsum(steps[:total]) > 0).astype(np.uint8)
        for base, array in mask_arrays:
            assistant[base : base + len(array)] = array
        offsets_of = [r.byte_offsets for r in records]
        return cls(
            input_ids=cat([r.ids for r in records], np.uint32),
            offsets=offsets,
            special_tokens_mask=(origin == CONTROL).astype(np.uint8),
            origin=origin,
            message_index=_fill_runs(total, run_lo, run_hi, run_message),
            owner_index=_fill_runs(total, run_lo, run_hi, run_owner),
            assistant_mask=assistant,
            byte_starts=cat([o[0] for o in offsets_of], np.uint32),
            byte_ends=cat([o[1] for o in offsets_of], np.uint32),
            prompt_boundary=np.asarray([r.boundary for r in records], dtype=np.int64),
            owners=tuple([tuple([o.label for o in r.rendered.owners]) for r in records]),
            roles=tuple([r.rendered.roles for r in records]),
            texts=tuple([r.rendered.text for r in records]),
            stop_ids=stops,
            tokenizer_hash=tokenizer.semantic_hash,
            template_hash=template_hash,
            mode=mode,
            tokenizer=tokenizer,
        )

    def to_record_table(self, sample_ids: Sequence[str] | None = None) -> Any:
        """A :class:`tokenpact.batch.RecordTable` for ``collate_padded`` / ``collate_packed``
        and the packing planners: the IDs, the records' boundaries, the control tokens,
        ``assistant_mask`` as the supervised targets and the origins as owner codes.
        ``sample_ids`` default to ``"0"``, ``"1"``, ... (record order)."""
        from ..batch import RecordTable

        ids = [str(k) for k in range(len(self))] if sample_ids is None else list(sample_ids)
        return RecordTable(
            self.input_ids.astype(np.int64),
            self.offsets,
            sample_ids=ids,
            special_tokens_mask=self.special_tokens_mask.astype(bool),
            target_supervision=self.assistant_mask.astype(bool),
            owner_codes=self.origin.astype(np.int16),
            owner_names=self.origin_names,
        )


def _fill_runs(total: int, lo: list[int], hi: list[int], values: list[int]) -> NDArray[np.int32]:
    """-1 everywhere except ``values[k]`` on tokens ``[lo[k], hi[k])`` (disjoint, non-empty
    runs): a step function built from its jumps, so no Python loop over tokens or runs."""
    steps = np.zeros(total + 1, dtype=np.int64)
    if lo:
        v = np.asarray(values, dtype=np.int64) + 1
        steps[np.asarray(lo, dtype=np.int64)] += v
        np.subtract.at(steps, np.asarray(hi, dtype=np.int64), v)
    return (np.cumsum(steps[:total]) - 1).astype(np.int32)


class _ColumnSlice:
    """Record tokens ``a:b`` of a :class:`RenderedColumns`: the lists a
    :class:`Conversation` viewing them builds on first read."""

    __slots__ = ("columns", "a", "b")

    def __init__(self, columns: RenderedColumns, a: int, b: int) -> None:
        self.columns, self.a, self.b = columns, a, b

    def id_list(self) -> tuple[list[int]]:
        return (self.columns.input_ids[self.a : self.b].tolist(),)

    def token_lists(self) -> tuple[list[int], list[int], list[str]]:
        c = self.columns
        return (c.input_ids[self.a : self.b].tolist(), *kind_lists(c.origin[self.a : self.b]))

    def index_lists(self) -> tuple[list[int], list[int]]:
        c = self.columns
        return c.message_index[self.a : self.b].tolist(), c.owner_index[self.a : self.b].tolist()

    def mask_list(self) -> tuple[list[int]]:
        return (self.columns.assistant_mask[self.a : self.b].tolist(),)
