"""Many rendered conversations as flat numpy columns (offline SFT data preparation).

:meth:`ChatTemplate.render_columns` returns one :class:`RenderedColumns`: every record's
tokens laid end to end with ``offsets`` marking the records, each per-token vector a
numpy array. A user writing shards or packing batches wants exactly that, and it avoids
what ``render_batch`` must pay for under the GIL on every record: building the
per-token Python lists of a :class:`Conversation` and the cyclic collector walking them.
The per-token kind codes come from the native chunk encoder's worker threads; this
thread keeps only per-record facts (content runs, the assistant ranges, the boundary) and
fills the arrays once at the end.

Record ``i`` equals ``render`` of conversation ``i`` exactly: :meth:`RenderedColumns.conversation`
rebuilds that :class:`Conversation` (the tests compare them field by field).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .conversation import KINDS, Conversation, Owner, assemble
from .errors import ChatTemplateError
from .ownership import (
    RenderedText,
    add_post_processor_markers,
    generation_mask,
    in_spans,
    is_plain_record,
    owned_tokens,
    response_start,
)
from .stop import StopPolicy
from .supervision import ranges_and_boundary

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer


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
        names = np.array(self.origin_names, dtype=object)
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self._assemble(i, a, b, names, StopPolicy(boundary, self.stop_ids))

    def to_conversations(self) -> list[Conversation]:
        """Every record as a :class:`Conversation` (what ``render_batch`` returns).

        The same records as :meth:`conversation`, built the way ``render`` builds them:
        every per-token list on first read (from views of these arrays, which the
        conversations keep alive until then), one stop policy per prompt length (the
        process path of ``render_batch`` rebuilds its conversations here, on the calling
        thread, so this is its serial part).
        """
        names = np.array(self.origin_names, dtype=object)
        bounds = self.offsets.tolist()
        policies: dict[int, StopPolicy] = {}
        out = []
        for i, boundary in enumerate(self.prompt_boundary.tolist()):
            policy = policies.get(boundary)
            if policy is None:
                policy = policies[boundary] = StopPolicy(boundary, self.stop_ids)
            out.append(self._assemble(i, bounds[i], bounds[i + 1], names, policy))
        return out

    def _assemble(
        self, i: int, a: int, b: int, names: np.ndarray, policy: StopPolicy
    ) -> Conversation:
        """Record ``i`` (tokens ``a:b``) as a :class:`Conversation` whose per-token lists
        are built on first read."""
        return assemble(
            tokenizer=self.tokenizer,
            columns=functools.partial(
                _token_lists,
                self.input_ids[a:b],
                self.special_tokens_mask[a:b],
                names,
                self.origin[a:b],
            ),
            index_columns=functools.partial(
                _index_lists, self.message_index[a:b], self.owner_index[a:b]
            ),
            owners=(),
            owner_labels=self.owners[i],
            assistant_mask=functools.partial(_mask_lists, self.assistant_mask[a:b]),
            prompt_boundary=policy.prompt_length,
            stop_policy=policy,
            template_hash=self.template_hash,
            mode=self.mode,
            roles=self.roles[i],
            text=self.texts[i],
            byte_offsets=(
                self.byte_starts[a:b].astype(np.int64),
                self.byte_ends[a:b].astype(np.int64),
            ),
            tokenizer_hash=self.tokenizer_hash,
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


def _index_lists(message: np.ndarray, owner: np.ndarray) -> tuple[list[int], list[int]]:
    return message.tolist(), owner.tolist()


def _token_lists(
    ids: np.ndarray, special: np.ndarray, names: np.ndarray, origin: np.ndarray
) -> tuple[list[int], list[int], list[str]]:
    return ids.tolist(), special.tolist(), names[origin].tolist()


def _mask_lists(mask: np.ndarray) -> tuple[list[int]]:
    return (mask.tolist(),)


class ColumnsBuilder:
    """Collects records one by one (per-record facts only) and lays them out at the end."""

    def __init__(self) -> None:
        self.ids: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self.starts: list[np.ndarray] = []
        self.ends: list[np.ndarray] = []
        self.lengths: list[int] = []
        self.boundaries: list[int] = []
        self.owners: list[tuple[str, ...]] = []
        self.roles: list[tuple[str, ...]] = []
        self.texts: list[str] = []
        self.total = 0
        # Content runs and assistant ranges in global token positions.
        self.run_lo: list[int] = []
        self.run_hi: list[int] = []
        self.run_owner: list[int] = []
        self.run_message: list[int] = []
        self.mask_lo: list[int] = []
        self.mask_hi: list[int] = []
        self.mask_arrays: list[tuple[int, np.ndarray]] = []

    def add(
        self,
        *,
        ids: np.ndarray,
        codes: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        runs: list[tuple[int, int, int]],
        owners: Sequence[Owner],
        mask: np.ndarray | list[list[int]],
        boundary: int,
        roles: tuple[str, ...],
        text: str,
    ) -> None:
        """One record: its arrays, content ``runs`` ``(lo, hi, owner)``, and ``mask`` as an
        array or as ``[lo, hi)`` token ranges."""
        base = self.total
        self.ids.append(ids)
        self.codes.append(codes)
        self.starts.append(starts)
        self.ends.append(ends)
        n = len(ids)
        self.lengths.append(n)
        self.total += n
        self.boundaries.append(boundary)
        self.owners.append(tuple([o.label for o in owners]))
        self.roles.append(roles)
        self.texts.append(text)
        for lo, hi, o in runs:
            self.run_lo.append(base + lo)
            self.run_hi.append(base + hi)
            self.run_owner.append(o)
            self.run_message.append(owners[o].message_index)
        if isinstance(mask, np.ndarray):
            self.mask_arrays.append((base, mask))
        else:
            for lo, hi in mask:
                if lo < hi:
                    self.mask_lo.append(base + lo)
                    self.mask_hi.append(base + hi)

    def add_conversation(self, conv: Conversation) -> None:
        """A record from a rendered :class:`Conversation` (the path without the native
        engine)."""
        base = self.total
        n = len(conv.input_ids)
        code = {name: k for k, name in enumerate(KINDS)}
        self.ids.append(np.asarray(conv.input_ids, dtype=np.int64))
        self.codes.append(np.array([code[o] for o in conv.origin], dtype=np.uint8))
        starts, ends = conv.byte_offsets or (np.zeros(n, np.int64), np.zeros(n, np.int64))
        self.starts.append(starts)
        self.ends.append(ends)
        self.lengths.append(n)
        self.total += n
        self.boundaries.append(conv.prompt_boundary)
        self.owners.append(conv.owners)
        self.roles.append(conv.roles)
        self.texts.append(conv.text or "")
        owner, message = conv.owner_index, conv.message_index
        t = 0
        while t < n:  # runs of one owner
            u = t + 1
            while u < n and owner[u] == owner[t]:
                u += 1
            if owner[t] >= 0:
                self.run_lo.append(base + t)
                self.run_hi.append(base + u)
                self.run_owner.append(owner[t])
                self.run_message.append(message[t])
            t = u
        self.mask_arrays.append((base, np.asarray(conv.assistant_mask, dtype=np.uint8)))

    def build(
        self, *, tokenizer: Tokenizer, template_hash: str, mode: str, stops: tuple[int, ...]
    ) -> RenderedColumns:
        total = self.total
        offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])

        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        origin = cat(self.codes, np.uint8)
        mask = np.zeros(total + 1, dtype=np.int64)
        np.add.at(mask, np.asarray(self.mask_lo, dtype=np.int64), 1)
        np.add.at(mask, np.asarray(self.mask_hi, dtype=np.int64), -1)
        assistant = (np.cumsum(mask[:total]) > 0).astype(np.uint8)
        for base, array in self.mask_arrays:
            assistant[base : base + len(array)] = array
        return RenderedColumns(
            input_ids=cat(self.ids, np.uint32),
            offsets=offsets,
            special_tokens_mask=(origin == 0).astype(np.uint8),
            origin=origin,
            message_index=_fill_runs(total, self.run_lo, self.run_hi, self.run_message),
            owner_index=_fill_runs(total, self.run_lo, self.run_hi, self.run_owner),
            assistant_mask=assistant,
            byte_starts=cat(self.starts, np.uint32),
            byte_ends=cat(self.ends, np.uint32),
            prompt_boundary=np.asarray(self.boundaries, dtype=np.int64),
            owners=tuple(self.owners),
            roles=tuple(self.roles),
            texts=tuple(self.texts),
            stop_ids=stops,
            tokenizer_hash=tokenizer.semantic_hash,
            template_hash=template_hash,
            mode=mode,
            tokenizer=tokenizer,
        )


def add_record(
    template: Any,
    builder: ColumnsBuilder,
    messages: Sequence[Any],
    options: dict[str, Any],
    rendered: RenderedText,
    result: Any,
    mode: str,
    add_special_tokens: bool,
    supervise: str = "turns",
) -> None:
    """``ChatTemplate._finish`` for the columnar result: the same checks, masks and boundary, kept
    as per-record facts (the per-token kind codes come from the native workers)."""
    stops = template._stop_ids()
    training = mode == "training"
    if is_plain_record(rendered, result, add_special_tokens):
        (ids, starts, ends, _, span_lo, span_hi), _ = result
        found = ranges_and_boundary(
            template,
            messages,
            options,
            rendered,
            (ids, starts, ends),
            functools.partial(in_spans, span_lo, span_hi),
            stops,
            training,
            supervise,
        )
        _add_plain(builder, rendered, result, found)
        return
    if result is None:
        tokens, codes = template._tokenize(rendered), None
    else:
        encoded, codes = result
        tokens = owned_tokens(rendered, template._info, encoded)
    if rendered.control_in_input is not None:
        template._check_untracked(rendered, tokens, messages, options)
    if add_special_tokens:
        marked = add_post_processor_markers(tokens, template._info)
        if marked is not tokens:
            tokens, codes = marked, None
    if codes is None:
        codes = tokens.kinds
    mask: Any
    if rendered.generation_spans:
        mask = generation_mask(tokens, rendered)
        boundary = len(tokens.ids)
        if training:
            boundary = response_start(tokens, mask, rendered)
    else:
        mask, boundary = ranges_and_boundary(
            template,
            messages,
            options,
            rendered,
            (tokens.ids, tokens.starts, tokens.ends),
            tokens.in_content,
            stops,
            training,
            supervise,
            tokens.shift,
        )
    builder.add(
        ids=tokens.ids,
        codes=codes,
        starts=tokens.starts,
        ends=tokens.ends,
        runs=tokens.runs(),
        owners=rendered.owners,
        mask=mask,
        boundary=boundary,
        roles=rendered.roles,
        text=rendered.text,
    )


def _add_plain(
    builder: ColumnsBuilder,
    rendered: RenderedText,
    result: Any,
    found: tuple[list[tuple[int, int]], int],
) -> None:
    """:func:`add_record` of the common SFT record (no control spelling in the inputs,
    no post-processor markers, no generation blocks) straight from the native encoding:
    the runs of :meth:`Tokens.runs` from the spans' token ranges, and ``found``, the
    supervised ranges and boundary (the tests compare every record with ``render``)."""
    (ids, starts, ends, _, span_lo, span_hi), codes = result
    owners = rendered.owners
    base = builder.total
    n = len(ids)
    pos = 0
    run_lo, run_hi = builder.run_lo, builder.run_hi
    run_owner, run_message = builder.run_owner, builder.run_message
    for (_, _, o), lo, hi in zip(rendered.spans, span_lo, span_hi, strict=True):
        start = lo if lo > pos else pos
        if start < hi:
            run_lo.append(base + start)
            run_hi.append(base + hi)
            run_owner.append(o)
            run_message.append(owners[o].message_index)
            pos = hi
    ranges, boundary = found
    for lo, hi in ranges:
        builder.mask_lo.append(base + lo)
        builder.mask_hi.append(base + hi)
    builder.ids.append(ids)
    builder.codes.append(codes)
    builder.starts.append(starts)
    builder.ends.append(ends)
    builder.lengths.append(n)
    builder.total += n
    builder.boundaries.append(boundary)
    builder.owners.append(tuple([o.label for o in owners]))
    builder.roles.append(rendered.roles)
    builder.texts.append(rendered.text)


def _fill_runs(total: int, lo: list[int], hi: list[int], values: list[int]) -> NDArray[np.int32]:
    """-1 everywhere except ``values[k]`` on tokens ``[lo[k], hi[k])`` (disjoint, non-empty
    runs): a step function built from its jumps, so no Python loop over tokens or runs."""
    steps = np.zeros(total + 1, dtype=np.int64)
    if lo:
        v = np.asarray(values, dtype=np.int64) + 1
        steps[np.asarray(lo, dtype=np.int64)] += v
        np.subtract.at(steps, np.asarray(hi, dtype=np.int64), v)
    return (np.cumsum(steps[:total]) - 1).astype(np.int32)
