"""Loader states: the record a :class:`tokenpact.data.TokenLoader` saves to resume, and
the checks of such a file against its datasets (``tokenpact doctor``), reading only
the datasets' manifests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .dataset_files import DATASET_MANIFEST

STATE_KIND = "tokenpact.loader-state"
STATE_VERSION = 1


def canonical_hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def exact_counts(weights: Sequence[float | str], total: int) -> list[int]:
    """Integer per-source counts summing to ``total``, proportional to ``weights``.

    Largest remainder on exact rationals (no floating drift): each source gets the floor
    of its quota, the remaining samples go to the largest remainders, ties to the lower
    source index.
    """
    try:
        fracs = [Fraction(w) for w in weights]
    except (ValueError, TypeError, OverflowError):
        raise ConfigError(f"blend weights must be finite numbers, got {list(weights)!r}") from None
    if any(f < 0 for f in fracs) or sum(fracs) <= 0:
        raise ConfigError("blend weights must be non-negative with a positive sum")
    whole = sum(fracs)
    quotas = [f * total / whole for f in fracs]
    counts = [int(q) for q in quotas]
    left = total - sum(counts)
    order = sorted(range(len(quotas)), key=lambda k: (-(quotas[k] - counts[k]), k))
    for k in order[:left]:
        counts[k] += 1
    return counts


def state_file_problems(
    state: Any, *, base: Path | None = None, tokenizer_hash: str | None = None
) -> list[tuple[str, str]]:
    """``(problem, fix)`` pairs for a saved loader state checked against its datasets on
    disk (``dataset_paths``, relative ones from ``base``): each dataset's manifest hash,
    the tokenizer binding, the per-source counts and the cursor. Reads only manifests."""
    if not isinstance(state, dict) or state.get("kind") != STATE_KIND:
        return [("not a tokenpact loader state", "save it with TokenLoader.state_dict()")]
    order = state.get("order")
    if state.get("version") != STATE_VERSION or not isinstance(order, dict):
        return [("the loader state has no order record or an unknown version", "re-save it")]
    out: list[tuple[str, str]] = []
    if state.get("fingerprint") != canonical_hash(order):
        out.append(
            (
                "the state's fingerprint is not the hash of its order record: it was edited",
                "restore the state file saved with the checkpoint",
            )
        )
    paths = state.get("dataset_paths")
    hashes = order.get("datasets")
    if not isinstance(paths, list) or not isinstance(hashes, list) or len(paths) != len(hashes):
        return out + [("the state names no dataset paths", "re-save it with this version")]
    seq_len = order.get("seq_len")
    sizes = []
    for raw, want in zip(paths, hashes, strict=True):
        path = Path(raw) if base is None or Path(raw).is_absolute() else base / raw
        manifest_path = path / DATASET_MANIFEST
        try:
            data = manifest_path.read_bytes()
            manifest = json.loads(data)
            if not isinstance(manifest, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            out.append((f"dataset {raw} cannot be read: {exc}", "restore the dataset or its path"))
            continue
        got = "sha256:" + hashlib.sha256(data).hexdigest()
        if got != want:
            out.append(
                (
                    f"dataset {raw} is {got}, the run trained on {want}",
                    "resume with the datasets the run started with (re-encoding changes them)",
                )
            )
        if manifest.get("tokenizer_hash") != order.get("tokenizer_hash"):
            out.append(
                (
                    f"dataset {raw} is bound to tokenizer {manifest.get('tokenizer_hash')}, the "
                    f"state to {order.get('tokenizer_hash')}",
                    "use the datasets encoded with the run's tokenizer",
                )
            )
        if isinstance(seq_len, int) and seq_len > 0 and isinstance(manifest.get("tokens"), int):
            sizes.append(max(int(manifest["tokens"]) - 1, 0) // seq_len)
    if tokenizer_hash is not None and tokenizer_hash != order.get("tokenizer_hash"):
        out.append(
            (
                f"the run's tokenizer is {order.get('tokenizer_hash')}, not {tokenizer_hash}",
                "load the tokenizer the run trained with",
            )
        )
    total = state.get("samples_per_epoch")
    if len(sizes) == len(hashes):
        weights = order.get("weights")
        try:
            counts = sizes if weights is None else exact_counts(weights, int(total or 0))
        except (ConfigError, TypeError, ValueError):
            counts = None
        if counts != order.get("counts"):
            out.append(
                (
                    f"per-source counts {order.get('counts')} do not follow from the datasets "
                    f"and weights ({counts})",
                    "the state or the datasets were edited; restore them",
                )
            )
    cursor = state.get("cursor")
    if not isinstance(cursor, int) or not isinstance(total, int) or not 0 <= cursor <= total:
        out.append((f"cursor {cursor!r} is outside the epoch of {total!r}", "re-save the state"))
    return out
