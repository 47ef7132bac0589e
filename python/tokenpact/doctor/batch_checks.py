"""Detectors that read a padded or packed batch file."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np

from .batch_view import BatchView
from .findings import detector
from .subject import Subject

Found = Iterator[tuple[str, str]]
IDENTITY_KEYS = ("tokenizer_hash", "tokenpact.tokenizer_hash", "bundle_hash", "tokenpact.bundle")


def _where(mask: np.ndarray, limit: int = 3) -> str:
    spots = [tuple(int(x) for x in p) for p in np.argwhere(mask)[:limit]]
    return ", ".join(f"[{r}, {c}]" for r, c in spots)


def pad_value(batch: BatchView) -> int | None:
    """The one ID under ``attention_mask == 0`` (``None`` when there is no padding)."""
    if batch.attention_mask is None:
        return None
    values = np.unique(batch.input_ids[batch.valid & (batch.attention_mask == 0)])
    return int(values[0]) if values.size == 1 else None


def convention(batch: BatchView, ignore: int) -> Literal["shifted", "unshifted"] | None:
    """Whether ``labels[t]`` is the token at ``t + 1`` (shifted) or at ``t`` (unshifted)."""
    if batch.labels is None:
        return None
    labels, ids, real = batch.labels, batch.input_ids, batch.real
    kept = (labels != ignore) & real
    if not kept.any():
        return None
    same = float((labels == ids)[kept].mean())
    pairs = kept[:, :-1]
    nxt = float((labels[:, :-1] == ids[:, 1:])[pairs].mean()) if pairs.any() else 0.0
    if max(same, nxt) < 0.5 or abs(same - nxt) < 0.05:
        return None  # repeated IDs can make both readings fit: do not guess
    return "unshifted" if same > nxt else "shifted"


def _id_limit(subject: Subject) -> int | None:
    """How many IDs there are: the tokenizer's vocabulary, else the checkpoint's
    embedding rows (None when neither is known)."""
    if subject.vocab_size is not None:
        return subject.vocab_size
    return subject.checkpoint["input_embedding_rows"] if subject.checkpoint else None


@detector(
    "negative-input-id",
    failure="pad_id -1 reaching embeddings",
    needs=("batch",),
)
def negative_input_id(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None:
        return
    bad = batch.valid & (batch.input_ids < 0)
    if bad.any():
        values = sorted({int(v) for v in batch.input_ids[bad]})
        yield (
            f"{int(bad.sum())} input_ids are negative (values {values[:5]}, at {_where(bad)}); "
            "an attention mask does not stop the embedding lookup from reading them",
            "pad input_ids with a real non-negative ID (the tokenizer's PAD, or EOS) and mark "
            "padding in attention_mask; keep -1/-100 for labels only",
        )


@detector(
    "id-out-of-vocab",
    failure="vocabulary size mismatch",
    needs=("batch", "tokenizer"),
)
def id_out_of_vocab(subject: Subject) -> Found:
    batch = subject.batch
    limit = _id_limit(subject)
    if batch is None or limit is None:
        return
    bad = batch.valid & (batch.input_ids >= limit)
    if bad.any():
        yield (
            f"{int(bad.sum())} input_ids are >= {limit} (largest {int(batch.input_ids.max())}, "
            f"at {_where(bad)}): the tokenizer or checkpoint here has only {limit} IDs",
            "encode with the tokenizer the model was trained with, or resize the model",
        )


@detector(
    "label-out-of-vocab",
    failure="vocabulary size mismatch",
    needs=("batch", "tokenizer"),
)
def label_out_of_vocab(subject: Subject) -> Found:
    """Labels index the output layer: each must be a vocabulary ID or the ignore index."""
    batch = subject.batch
    limit = _id_limit(subject)
    if batch is None or batch.labels is None or limit is None:
        return
    labels = batch.labels
    bad = batch.valid & (labels != subject.ignore_index) & ((labels >= limit) | (labels < 0))
    if bad.any():
        values = sorted({int(v) for v in labels[bad]})
        yield (
            f"{int(bad.sum())} labels are outside [0, {limit}) and not the ignore index "
            f"{subject.ignore_index} (values {values[:5]}, at {_where(bad)})",
            "build labels from input_ids encoded with this tokenizer, and mark ignored "
            f"positions with {subject.ignore_index}",
        )


@detector("pad-in-labels", failure="PAD in labels", needs=("batch",))
def pad_in_labels(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None or batch.labels is None:
        return
    ignore = subject.ignore_index
    if batch.attention_mask is not None:
        bad = batch.valid & (batch.attention_mask == 0) & (batch.labels != ignore)
        what = "padding positions (attention_mask == 0)"
    elif subject.pad_id is not None and subject.pad_id != subject.eos:
        bad = batch.valid & (batch.labels == subject.pad_id)
        what = f"the PAD ID {subject.pad_id}"
    else:
        return
    if bad.any():
        yield (
            f"{int(bad.sum())} labels on {what} are supervised (not {ignore}), at {_where(bad)}",
            f"set labels to {ignore} wherever attention_mask is 0; the loss must not learn "
            "to predict padding",
        )


@detector(
    "attention-mask-mismatch",
    failure="attention_mask does not match PAD positions",
    needs=("batch",),
)
def attention_mask_mismatch(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None or batch.attention_mask is None:
        return
    mask = batch.attention_mask
    odd = batch.valid & (mask != 0) & (mask != 1)
    if odd.any():
        yield (
            f"attention_mask has values other than 0/1 ({sorted(set(mask[odd].tolist()))[:5]})",
            "write a 0/1 mask (1 = real token)",
        )
    real = batch.real.astype(np.int8)
    edges = np.abs(np.diff(real, axis=1)).sum(axis=1)
    starts_real = real[:, 0] == 1
    holes = [r for r in range(real.shape[0]) if edges[r] > 2 or (edges[r] == 2 and starts_real[r])]
    if holes:
        yield (
            f"rows {holes[:5]} have masked slots between real tokens; padding belongs at one "
            "end of a row",
            "rebuild the mask from each row's length; a hole hides real content as padding",
        )
    hidden = np.unique(batch.input_ids[batch.valid & (mask == 0)])
    if hidden.size > 1:
        yield (
            f"masked slots hold {hidden.size} different IDs ({hidden[:5].tolist()}): content "
            "is hidden as padding, or padding uses several IDs",
            "pad with one ID and mask exactly the padded slots",
        )


def _targets_eos(batch: BatchView, eos: int, kind: str) -> np.ndarray:
    ids, real = batch.input_ids, batch.real
    at = np.zeros(ids.shape, dtype=bool)
    if kind == "unshifted":
        at = real & (ids == eos)
    else:
        at[:, :-1] = real[:, 1:] & (ids[:, 1:] == eos) & real[:, :-1]
    return at


@detector(
    "pad-eos-masking",
    failure="PAD equal to EOS with EOS supervised",
    needs=("batch", "tokenizer"),
)
def pad_eos_masking(subject: Subject) -> Found:
    batch, eos = subject.batch, subject.eos
    if batch is None or batch.labels is None or eos is None or pad_value(batch) != eos:
        return
    kind = convention(batch, subject.ignore_index)
    if kind is None:
        return
    at = _targets_eos(batch, eos, kind)
    supervised = (batch.labels != subject.ignore_index) & batch.real
    if at.any() and not (supervised & at).any() and supervised.any():
        yield (
            f"PAD is EOS ({eos}) and all {int(at.sum())} real EOS targets have label "
            f"{subject.ignore_index}: masking labels by ID removed EOS with the padding",
            "mask labels from attention_mask (not input_ids == pad), or use a distinct PAD; "
            "otherwise the model never learns to stop",
        )


@detector(
    "eos-lost-to-truncation",
    failure="EOS lost to truncation",
    needs=("batch",),
)
def eos_lost_to_truncation(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None:
        return
    segments = batch.segments()
    if len(segments) < 2:
        return
    longest = max(e - s for _, s, e in segments)
    ends = [(int(batch.input_ids[r, e - 1]), e - s) for r, s, e in segments]
    short_ends = [t for t, n in ends if n < longest]
    eos = subject.eos
    if eos is None and len(short_ends) >= 2 and len(set(short_ends)) == 1:
        eos = short_ends[0]  # every sequence that fit ends with the same ID
    if eos is None or not short_ends or any(t != eos for t in short_ends):
        return
    cut = [i for i, (t, n) in enumerate(ends) if n == longest and t != eos]
    if cut:
        yield (
            f"{len(cut)} sequence(s) of the maximum length {longest} end without EOS ({eos}) "
            f"while all {len(short_ends)} shorter ones end with it (sequences {cut[:5]})",
            "truncate the content and re-append EOS (reserve room for end markers), or drop "
            "over-long examples; supervised examples must keep their termination signal",
        )


@detector(
    "label-crosses-boundary",
    failure="labels crossing packed boundaries",
    needs=("batch",),
)
def label_crosses_boundary(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None or batch.labels is None or batch.cu_seqlens is None:
        return
    ignore, kind = subject.ignore_index, convention(batch, subject.ignore_index)
    crossing = []
    for row, cu in enumerate(batch.cu_seqlens):
        for boundary in cu[1:-1].tolist():
            if not 0 < boundary < batch.input_ids.shape[1]:
                continue
            last, first = batch.labels[row, boundary - 1], batch.labels[row, boundary]
            nxt = batch.input_ids[row, boundary]
            if kind is None and (last == ignore or first == ignore):
                continue  # one of the two readings keeps the boundary clean
            if kind == "unshifted" and first != ignore:
                crossing.append(f"row {row} pos {boundary}: first label {int(first)} kept")
            elif kind != "unshifted" and last != ignore:
                crossing.append(
                    f"row {row} pos {boundary - 1}: label {int(last)} = next record's first token"
                    if last == nxt
                    else f"row {row} pos {boundary - 1}: label {int(last)} kept at a record end"
                )
    if crossing:
        yield (
            f"{len(crossing)} packed boundaries carry a supervised label across records "
            f"({kind or 'shifted'} labels): " + "; ".join(crossing[:3]),
            f"set the label at each record's last position (shifted) or first position "
            f"(unshifted, for models that shift) to {ignore}; EOT must not predict the next BOS",
        )


@detector(
    "positions-not-reset",
    failure="positions not reset",
    needs=("batch",),
)
def positions_not_reset(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None or batch.position_ids is None or batch.cu_seqlens is None:
        return
    if batch.metadata.get("packing_policy", "").startswith("stream"):
        return  # a declared stream policy continues positions across records on purpose
    late = []
    for row, cu in enumerate(batch.cu_seqlens):
        for start in cu[1:-1].tolist():
            if 0 < start < batch.position_ids.shape[1] and batch.position_ids[row, start] != 0:
                late.append((row, start, int(batch.position_ids[row, start])))
    if late:
        yield (
            f"{len(late)} packed records do not start at position 0 (row, start, position): "
            f"{late[:4]}",
            "reset position_ids to 0 at every cu_seqlens start under independent-example "
            "packing (or declare a stream policy where positions continue)",
        )


@detector(
    "cu-seqlens-inconsistent",
    failure="cu_seqlens inconsistent with lengths",
    needs=("batch",),
)
def cu_seqlens_inconsistent(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None or batch.cu_seqlens is None:
        return
    problems = []
    if len(batch.cu_seqlens) != batch.input_ids.shape[0]:
        problems.append(f"{len(batch.cu_seqlens)} cu_seqlens rows for {batch.input_ids.shape[0]}")
    for row, cu in enumerate(batch.cu_seqlens[: batch.input_ids.shape[0]]):
        total = int(batch.real[row].sum())
        if cu.size < 2 or cu[0] != 0:
            problems.append(f"row {row}: cu_seqlens {cu[:4].tolist()} does not start with 0")
        elif np.any(np.diff(cu) < 0):
            problems.append(f"row {row}: cu_seqlens decreases ({cu.tolist()[:8]})")
        elif cu[-1] != total:
            problems.append(f"row {row}: cu_seqlens ends at {int(cu[-1])}, {total} tokens")
        if batch.position_ids is not None and cu.size >= 2:
            resets = set(np.flatnonzero(batch.position_ids[row, :total] == 0).tolist())
            if resets and resets - set(cu[:-1].tolist()):
                extra = sorted(resets - set(cu[:-1].tolist()))[:4]
                problems.append(f"row {row}: positions restart at {extra}, not a cu_seqlens start")
    if batch.lengths is not None:
        diffs = np.concatenate([np.diff(c) for c in batch.cu_seqlens])
        if diffs.shape != batch.lengths.shape or np.any(diffs != batch.lengths):
            problems.append(f"lengths {batch.lengths[:6].tolist()} != diff(cu_seqlens)")
    if problems:
        yield (
            "; ".join(problems[:4]),
            "rebuild cu_seqlens as [0, cumsum(lengths)] from the packed records; attention "
            "and reconstruction assign rows by it",
        )


def _identity(batch: BatchView) -> str | None:
    return next((batch.metadata[k] for k in IDENTITY_KEYS if batch.metadata.get(k)), None)


@detector(
    "batch-without-identity",
    failure="cache keys without tokenizer identity",
    needs=("batch",),
    severity="warning",
)
def batch_without_identity(subject: Subject) -> Found:
    batch = subject.batch
    if batch is not None and _identity(batch) is None:
        keys = sorted(batch.metadata) or "none"
        yield (
            f"the batch names no tokenizer identity (metadata keys: {keys}); IDs cached or "
            "reused from it cannot be checked against the tokenizer that made them",
            "store the tokenizer's semantic hash (tokenizer_hash) with every encoded batch "
            "and in every cache key",
        )


@detector(
    "batch-tokenizer-mismatch",
    failure="different tokenizer with same model weights",
    needs=("batch", "tokenizer"),
)
def batch_tokenizer_mismatch(subject: Subject) -> Found:
    batch, tok = subject.batch, subject.tokenizer
    if batch is None or tok is None:
        return
    declared = batch.metadata.get("tokenizer_hash") or batch.metadata.get(
        "tokenpact.tokenizer_hash"
    )
    if declared and declared != tok.semantic_hash:
        yield (
            f"the batch was encoded with tokenizer {declared[:19]}..., the tokenizer here is "
            f"{tok.semantic_hash[:19]}...",
            "re-encode with this tokenizer or use the one named in the batch",
        )


@detector(
    "sample-ids-dropped",
    failure="sample IDs dropped during sorting or packing",
    needs=("batch",),
)
def sample_ids_dropped(subject: Subject) -> Found:
    batch = subject.batch
    if batch is None:
        return
    problems = []
    seq_idx = batch.extras.get("seq_idx")
    if seq_idx is not None and batch.cu_seqlens is not None and batch.input_ids.shape[0] == 1:
        cu = batch.cu_seqlens[0]
        expected = np.repeat(np.arange(cu.size - 1), np.diff(cu)) if cu.size > 1 else cu[:0]
        got = np.asarray(seq_idx).reshape(-1)
        if got.shape != expected.shape or np.any(got != expected):
            problems.append(f"seq_idx {got[:8].tolist()} does not number the cu_seqlens records")
    names = batch.extras.get("sample_ids")
    if names is not None and batch.cu_seqlens is not None:
        records = sum(c.size - 1 for c in batch.cu_seqlens)
        if names.size != records or len(set(names.tolist())) != names.size:
            distinct = len(set(names.tolist()))
            problems.append(f"{names.size} sample_ids ({distinct} distinct) for {records} records")
    sample_index = batch.extras.get("sample_index")
    if sample_index is not None and sample_index.shape == batch.input_ids.shape:
        lost = batch.real & (sample_index < 0)
        if lost.any():
            problems.append(f"{int(lost.sum())} real tokens have no sample (sample_index -1)")
    if problems:
        yield (
            "; ".join(problems),
            "carry sample IDs through sorting and packing (collate with tokenpact.batch, which "
            "keeps seq_idx and sample ownership); per-sample loss and replay need them",
        )
