"""Replaying and auditing a distributed epoch from its assignment record.

A record (``SamplerAssignment.to_record()``) names the dataset, tokenizer and template it
indexes, the sampler's seed, epoch, rank, world size, shuffle and ``drop_last`` policy,
the bucketing policy with the hash of the lengths it batched by, and the result (indices,
repeats, dropped tail, batches) sealed by a digest. :func:`replay_assignment` rebuilds
the sampler from the record alone, recomputes the assignment and accepts the record only
if every field is present, well formed and reproduced; anything else is a
:class:`~tokenpact.errors.ReplayError` that says which field failed.

>>> from tokenpact.batch import DistributedSampler
>>> h = "sha256:" + "ab" * 32
>>> s = DistributedSampler(10, world_size=2, rank=1, seed=3,
...                        dataset_hash=h, tokenizer_hash=h, template_hash=h)
>>> record = s.assignment(4).to_record()
>>> replay_assignment(record).digest == record["digest"]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import BatchError, ReplayError
from .samplers import (
    ASSIGNMENT_FORMAT,
    BucketingPolicy,
    DistributedSampler,
    SamplerAssignment,
    is_sha256,
    lengths_hash,
)

IDENTITIES = ("dataset_hash", "tokenizer_hash", "template_hash")
RECORD_FIELDS = (
    "format",
    "seed",
    "epoch",
    "rank",
    "world_size",
    "shuffle",
    "drop_last",
    "dataset_size",
    *IDENTITIES,
    "bucketing",
    "lengths_hash",
    "indices",
    "repeated",
    "dropped",
    "batches",
    "digest",
)
_RESULTS = ("indices", "repeated", "dropped", "batches")
_POLICY_FIELDS = ("max_tokens", "boundaries", "layout", "multiple", "max_records")


def _is_int(value: Any, low: int = 0) -> bool:
    """An int in [low, 2**63): what numpy indexes with."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < 1 << 63


def _is_int_list(value: Any) -> bool:
    return isinstance(value, list) and all(_is_int(v) for v in value)


def _bucketing(value: Any) -> BucketingPolicy | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != set(_POLICY_FIELDS):
        raise ReplayError(
            f"bucketing must be null or an object with exactly {list(_POLICY_FIELDS)}"
        )
    if not _is_int_list(value["boundaries"]):
        raise ReplayError("bucketing.boundaries must be a list of ints")
    limits = [value["max_tokens"], value["multiple"]]
    if value["max_records"] is not None:
        limits.append(value["max_records"])
    if not all(_is_int(v, 1) for v in limits):
        raise ReplayError("bucketing.max_tokens, multiple and max_records must be ints >= 1")
    try:
        return BucketingPolicy(
            max_tokens=value["max_tokens"],
            boundaries=tuple(value["boundaries"]),
            layout=value["layout"],
            multiple=value["multiple"],
            max_records=value["max_records"],
        )
    except (BatchError, OverflowError) as err:
        raise ReplayError(f"bucketing is malformed: {err}") from None


def _field_problems(record: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    if record["format"] != ASSIGNMENT_FORMAT:
        out.append(f"format {record['format']!r} is not {ASSIGNMENT_FORMAT!r}")
    for name in ("seed", "epoch", "rank", "dataset_size"):
        if not _is_int(record[name]):
            out.append(f"{name} must be an int >= 0, got {record[name]!r}")
    if not _is_int(record["world_size"], 1):
        out.append(f"world_size must be an int >= 1, got {record['world_size']!r}")
    elif _is_int(record["rank"]) and record["rank"] >= record["world_size"]:
        out.append(f"rank {record['rank']} is not below world_size {record['world_size']}")
    for name in ("shuffle", "drop_last"):
        if not isinstance(record[name], bool):
            out.append(f"{name} must be true or false, got {record[name]!r}")
    for name in IDENTITIES:
        if not is_sha256(record[name]):
            out.append(
                f"{name} is {record[name]!r}: an auditable epoch names its {name[:-5]} by "
                "'sha256:<64 hex>' (pass it to DistributedSampler)"
            )
    if record["lengths_hash"] is not None and not is_sha256(record["lengths_hash"]):
        out.append(f"lengths_hash {record['lengths_hash']!r} is not 'sha256:<64 hex>'")
    for name in ("indices", "repeated", "dropped"):
        if not _is_int_list(record[name]):
            out.append(f"{name} must be a list of record indices")
    batches = record["batches"]
    if batches is not None and not (
        isinstance(batches, list) and all(_is_int_list(b) for b in batches)
    ):
        out.append("batches must be null or a list of lists of record indices")
    if not out:
        # The shard size follows from the policy; checking it first also bounds the work
        # a forged dataset_size could ask for.
        n, ws = record["dataset_size"], record["world_size"]
        shard = n // ws if record["drop_last"] else -(-n // ws)
        if len(record["indices"]) != shard:
            out.append(
                f"indices has {len(record['indices'])} entries; dataset_size {n} over "
                f"world_size {ws} gives every rank {shard}"
            )
    if not isinstance(record["digest"], str) or len(record["digest"]) != 64:
        out.append("digest must be the 64-hex SHA-256 of the assignment")
    return out


def _first_difference(recorded: Mapping[str, Any], replayed: Mapping[str, Any]) -> str | None:
    for name in _RESULTS:
        if recorded[name] != replayed[name]:
            return name
    return None


def replay_assignment(
    record: Mapping[str, Any],
    *,
    lengths: ArrayLike | None = None,
    dataset_hash: str | None = None,
    tokenizer_hash: str | None = None,
    template_hash: str | None = None,
) -> SamplerAssignment:
    """Recompute the assignment ``record`` describes; refuse it unless it reproduces.

    ``lengths`` (the record lengths) is needed when the record has a bucketing policy,
    and must hash to the recorded ``lengths_hash``. Passing the hashes of the data at
    hand (``dataset_hash``, ``tokenizer_hash``, ``template_hash``) also checks that the
    record was made for that data. Returns the recomputed assignment; raises
    ``ReplayError`` for a missing, extra, malformed, foreign or unreproduced field.
    """
    if not isinstance(record, Mapping):
        raise ReplayError(f"an assignment record is a JSON object, not {type(record).__name__}")
    missing = [k for k in RECORD_FIELDS if k not in record]
    extra = sorted(str(k) for k in record if k not in RECORD_FIELDS)
    if missing or extra:
        raise ReplayError(
            f"assignment record refused: missing {missing}, unknown {extra}; write it with "
            "SamplerAssignment.to_record()"
        )
    problems = _field_problems(record)
    if problems:
        raise ReplayError("assignment record refused: " + "; ".join(problems))
    policy = _bucketing(record["bucketing"])
    at_hand = zip(IDENTITIES, (dataset_hash, tokenizer_hash, template_hash), strict=True)
    for name, value in at_hand:
        if value is not None and value != record[name]:
            raise ReplayError(
                f"the record was made for {name} {record[name][:19]}..., the data at hand has "
                f"{str(value)[:19]}...; this epoch does not belong to this data"
            )
    if policy is None and (record["lengths_hash"] is not None or record["batches"] is not None):
        raise ReplayError("lengths_hash and batches need a bucketing policy; the record has none")
    if policy is not None:
        if record["lengths_hash"] is None or record["batches"] is None:
            raise ReplayError("a bucketed assignment records lengths_hash and batches")
        if lengths is None:
            raise ReplayError("this record batches by length: pass the record lengths")
        try:
            actual = lengths_hash(np.asarray(lengths, dtype=np.int64))
        except (TypeError, ValueError, OverflowError):
            raise ReplayError("lengths must be a flat sequence of integer lengths") from None
        if actual != record["lengths_hash"]:
            raise ReplayError(
                "the lengths passed are not the ones this epoch was batched by "
                f"(hash {actual[:19]}... vs recorded {record['lengths_hash'][:19]}...)"
            )
    try:
        sampler = DistributedSampler(
            record["dataset_size"],
            world_size=record["world_size"],
            rank=record["rank"],
            seed=record["seed"],
            shuffle=record["shuffle"],
            drop_last=record["drop_last"],
            dataset_hash=record["dataset_hash"],
            tokenizer_hash=record["tokenizer_hash"],
            template_hash=record["template_hash"],
            lengths=None if policy is None else lengths,
            bucketing=policy,
        )
        replayed = sampler.assignment(record["epoch"])
    except (BatchError, OverflowError) as err:
        raise ReplayError(f"the record cannot be replayed: {err}") from None
    payload = {k: v for k, v in record.items() if k != "digest"}
    redone = replayed.as_dict()
    different = _first_difference(record, redone)
    if different is not None:
        raise ReplayError(
            f"replaying the epoch gives different {different}: the record was edited or "
            "made by a different sampler"
        )
    if redone != payload or replayed.digest != record["digest"]:
        raise ReplayError("the record's digest does not seal its fields: it was edited")
    return replayed
