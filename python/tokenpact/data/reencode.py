"""Re-encoding a tokenizer-derived dataset for a new tokenizer: a release-lifecycle step.

Token IDs cannot be translated from one tokenizer to another (segmentation changes, and
normalization or unknown tokens erase text), so a dataset is re-encoded from its
retained source text. :func:`reencode_dataset` reads the old dataset's manifest, encodes
the source with the new tokenizer under the *same* settings (shard format, boundary
policy, EOD/BOS, allowed specials, truncation, shard size, compression), checks that the
source is the corpus the old dataset was made from (its corpus hash), and reports what
changed: tokens, truncations, the largest ID and the tokenizer identity the shards are
now bound to.

>>> report = reencode_dataset("data/old", docs, new_tok, "data/new")  # doctest: +SKIP
>>> report["token_ratio"]  # doctest: +SKIP
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.dataset_files import read_dataset
from ..errors import ConfigError, ContractError
from .encode import encode_dataset

if TYPE_CHECKING:
    from ..core import Tokenizer

# The old manifest's encoding settings that the new encoding keeps.
KEPT_SETTINGS = (
    "format",
    "records_per_shard",
    "add_special_tokens",
    "append_eod",
    "add_bos",
    "max_length",
    "boundary_policy",
    "compression",
)


def reencode_dataset(
    old_dataset: str | os.PathLike[str],
    source: Any,
    tokenizer: Tokenizer,
    out_dir: str | os.PathLike[str],
    **options: Any,
) -> dict[str, Any]:
    """Encode ``source`` (the retained documents or files) with ``tokenizer`` into
    ``out_dir`` with ``old_dataset``'s settings; ``options`` are passed on to
    :func:`~tokenpact.data.encode_dataset` (a reader's options, ``template``, threads).

    Raises :class:`~tokenpact.errors.ContractError` when ``source`` is not the corpus the
    old dataset was encoded from (the new dataset is then removed), and
    :class:`~tokenpact.errors.ConfigError` when the new tokenizer lacks a special token
    the old encoding allowed.
    """
    found = read_dataset(old_dataset)
    old = found.manifest
    if old is None:
        raise ConfigError(
            f"{found.path} is a bare declaration; re-encoding needs an encoded dataset's "
            "dataset.json (its encoding settings)"
        )
    settings = {key: old[key] for key in KEPT_SETTINGS if key in old}
    allowed = list(old.get("allowed_special") or [])
    missing = sorted(set(allowed) - set(tokenizer.special_tokens))
    if missing:
        raise ConfigError(
            f"the old dataset allowed the special tokens {missing}, which the new tokenizer "
            "lacks; add them to the tokenizer or re-encode with allowed_special=..."
        )
    kwargs: dict[str, Any] = {**settings, "allowed_special": allowed, **options}
    out = Path(out_dir)
    new = encode_dataset(source, tokenizer, out, **kwargs)
    if new["corpus_hash"] != old["corpus_hash"]:
        shutil.rmtree(out, ignore_errors=True)
        raise ContractError(
            f"the source is not the corpus {found.path} was encoded from (corpus hash "
            f"{new['corpus_hash']} != {old['corpus_hash']}); re-encode from the retained "
            "source text of that dataset"
        )
    return {
        "old_tokenizer_hash": old["tokenizer_hash"],
        "new_tokenizer_hash": new["tokenizer_hash"],
        "corpus_hash": new["corpus_hash"],
        "settings": {**settings, "allowed_special": allowed},
        "records": new["records"],
        "tokens": {"old": old["tokens"], "new": new["tokens"]},
        "token_ratio": new["tokens"] / old["tokens"] if old["tokens"] else None,
        "truncated": {"old": old["truncated"], "new": new["truncated"]},
        "max_token_id": {"old": old["max_token_id"], "new": new["max_token_id"]},
        "dataset": str(out / "dataset.json"),
    }
