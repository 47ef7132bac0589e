"""Structured encodings (:class:`tokenpact.Encoding`) stacked into the ``[B, S]`` tensor
contract: IDs, attention and special-token masks, type IDs and pair ``sequence_ids``.

``sequence_ids`` is 0 for the first sequence of a pair, 1 for the second, and the
sentinel (``-1`` by default) for control tokens the template inserted and for PAD: a
single attention mask cannot tell these apart (a ``[SEP]`` is visible to the model yet
belongs to neither sequence).

>>> import tokenpact as tp
>>> tok = tp.Tokenizer.from_merges([])
>>> batch = collate_encodings([tok.encode_structured("ab", "c")], pad_id=0)
>>> batch["sequence_ids"].tolist()
[[0, 0, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..errors import BatchError
from .flat import check_positive_int, check_token_id
from .metrics import aligned_width

if TYPE_CHECKING:
    from ..encoding import Encoding

SEQUENCE_SENTINEL = -1


def collate_encodings(
    encodings: Sequence[Encoding],
    *,
    pad_id: int,
    multiple: int = 1,
    sentinel: int = SEQUENCE_SENTINEL,
) -> dict[str, NDArray[np.int64] | NDArray[np.bool_]]:
    """Right-pad encodings to the longest (rounded up to ``multiple``) and stack them:
    ``input_ids``, ``attention_mask``, ``special_tokens_mask`` (PAD counts as special),
    ``type_ids``, ``sequence_ids`` (``sentinel`` for inserted controls and PAD) and
    ``lengths`` (``[B]``, tokens before padding). Encodings already padded keep their PAD
    (its ``attention_mask`` is 0 and its sequence ID the sentinel)."""
    if not encodings:
        raise BatchError("collate_encodings needs at least one encoding")
    pad_id = check_token_id(pad_id, "pad_id")
    if isinstance(sentinel, bool) or not isinstance(sentinel, int) or sentinel >= 0:
        raise BatchError(f"sentinel must be a negative int (0 and 1 are sequences): {sentinel!r}")
    m = check_positive_int(multiple, "multiple")
    width = aligned_width(max(max(len(e) for e in encodings), 1), m)
    n = len(encodings)
    ids = np.full((n, width), pad_id, dtype=np.int64)
    attention = np.zeros((n, width), dtype=np.int64)
    special = np.ones((n, width), dtype=bool)
    types = np.zeros((n, width), dtype=np.int64)
    seq = np.full((n, width), sentinel, dtype=np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    for i, enc in enumerate(encodings):
        k = len(enc)
        ids[i, :k] = enc.ids
        attention[i, :k] = enc.attention_mask
        special[i, :k] = np.asarray(enc.special_tokens_mask, dtype=bool)
        types[i, :k] = enc.type_ids
        seq[i, :k] = [sentinel if s is None else s for s in enc.sequence_ids]
        lengths[i] = int(np.count_nonzero(attention[i]))
    return {
        "input_ids": ids,
        "attention_mask": attention,
        "special_tokens_mask": special,
        "type_ids": types,
        "sequence_ids": seq,
        "lengths": lengths,
    }
