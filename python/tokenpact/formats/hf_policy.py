"""A ``tokenizer.json``'s ``padding`` and ``truncation`` fields as tokenpact policies.

Hugging Face ``tokenizers`` applies both fields on every ``encode`` / ``encode_batch``
of a file that sets them (all-MiniLM-L6-v2 pads to 128 and truncates at 128; Qwen 2 VL
pads a batch on the left). Loading imports them as the tokenizer's own
:class:`~tokenpact.Padding` / :class:`~tokenpact.Truncation`, so ``encode_structured``
and ``encode_structured_batch`` (with ``add_special_tokens=True``, HF's default) give
HF's IDs, attention masks and offsets, and they are in the semantic hash. Exporting
writes the tokenizer's policy back into the fields.

The mapping:

* ``truncation``: ``max_length``, ``stride``, ``strategy`` (``LongestFirst`` ->
  ``longest_first``, ``OnlyFirst``, ``OnlySecond``); HF's budget counts the template's
  tokens and cuts the content first, which is ``control_policy="truncate_then_add"``.
  ``direction`` must be ``Right`` (tokenpact cuts the end of a sequence).
* ``padding``: ``strategy`` ``BatchLongest`` -> ``Padding(length=None)``, ``{"Fixed": n}``
  -> ``Padding(length=n)``; ``direction`` -> ``side``; ``pad_to_multiple_of`` ->
  ``multiple``; ``pad_id``; ``pad_type_id`` must be 0 (tokenpact pads type IDs with 0).

A field this mapping cannot represent is an :class:`~tokenpact.errors.ArtifactError`
naming it, never a silent difference from Hugging Face.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ArtifactError, ConfigError, TokenpactError
from ..truncation import Padding, Truncation

if TYPE_CHECKING:
    from ..core import Tokenizer

# A "padding" or "truncation" key whose value is not null (confirmed by parsing).
_NON_NULL_FIELD = re.compile(rb'"(?:padding|truncation)"\s*:\s*(?!null\b)')
_STRATEGIES = {
    "LongestFirst": "longest_first",
    "OnlyFirst": "only_first",
    "OnlySecond": "only_second",
}
_HF_STRATEGIES = {v: k for k, v in _STRATEGIES.items()}
_SIDES = {"Right": "right", "Left": "left"}
_HF_SIDES = {v: k for k, v in _SIDES.items()}


def _fail(where: str, field: str, value: Any, fix: str) -> ArtifactError:
    return ArtifactError(f"{where}: $.{field} = {value!r} {fix}")


def truncation_from_hf(node: Any, where: str) -> Truncation | None:
    """The :class:`Truncation` a ``tokenizer.json`` ``truncation`` field declares."""
    if node is None:
        return None
    if not isinstance(node, Mapping):
        raise _fail(where, "truncation", node, "is not an object or null")
    known = {"max_length", "strategy", "stride", "direction"}
    unknown = sorted(set(node) - known)
    if unknown:
        raise _fail(where, "truncation", unknown, "holds fields tokenpact does not know")
    direction = node.get("direction", "Right")
    if direction != "Right":
        raise _fail(
            where,
            "truncation.direction",
            direction,
            "is not supported (tokenpact truncates the end of a sequence); set "
            '"direction": "Right" or "truncation": null in the file',
        )
    strategy = node.get("strategy", "LongestFirst")
    if not isinstance(strategy, str) or strategy not in _STRATEGIES:
        raise _fail(where, "truncation.strategy", strategy, f"is not one of {list(_STRATEGIES)}")
    try:
        return Truncation(
            max_length=node.get("max_length"),  # type: ignore[arg-type]
            strategy=_STRATEGIES[strategy],  # type: ignore[arg-type]
            stride=_int(node.get("stride", 0), where, "truncation.stride"),
        )
    except ConfigError as exc:
        raise ArtifactError(f"{where}: $.truncation: {exc}") from None


def padding_from_hf(node: Any, where: str) -> Padding | None:
    """The :class:`Padding` a ``tokenizer.json`` ``padding`` field declares."""
    if node is None:
        return None
    if not isinstance(node, Mapping):
        raise _fail(where, "padding", node, "is not an object or null")
    known = {"strategy", "direction", "pad_to_multiple_of", "pad_id", "pad_type_id", "pad_token"}
    unknown = sorted(set(node) - known)
    if unknown:
        raise _fail(where, "padding", unknown, "holds fields tokenpact does not know")
    strategy = node.get("strategy", "BatchLongest")
    if strategy == "BatchLongest":
        length = None
    elif isinstance(strategy, Mapping) and set(strategy) == {"Fixed"}:
        length = _int(strategy["Fixed"], where, "padding.strategy.Fixed")
    else:
        raise _fail(where, "padding.strategy", strategy, 'is not "BatchLongest" or {"Fixed": n}')
    side = node.get("direction", "Right")
    if not isinstance(side, str) or side not in _SIDES:
        raise _fail(where, "padding.direction", side, 'is not "Right" or "Left"')
    if node.get("pad_type_id", 0) != 0:
        raise _fail(
            where,
            "padding.pad_type_id",
            node.get("pad_type_id"),
            "is not supported (tokenpact pads type IDs with 0)",
        )
    multiple = node.get("pad_to_multiple_of")
    try:
        return Padding(
            length=length,
            # HF reads a multiple of 0 as none.
            multiple=_int(multiple, where, "padding.pad_to_multiple_of") or None
            if multiple is not None
            else None,
            side=_SIDES[side],  # type: ignore[arg-type]
            pad_id=_int(node.get("pad_id", 0), where, "padding.pad_id"),
        )
    except ConfigError as exc:
        raise ArtifactError(f"{where}: $.padding: {exc}") from None


def _int(value: Any, where: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(where, field, value, "is not a non-negative integer")
    return value


def truncation_to_hf(truncation: Truncation | None) -> dict[str, Any] | None:
    """``truncation`` as a ``tokenizer.json`` field (None: null)."""
    if truncation is None:
        return None
    if truncation.control_policy != "truncate_then_add":
        raise ArtifactError(
            "tokenizer.json has no place for control_policy='add_then_truncate' (Hugging "
            "Face cuts the content, then adds the template's tokens); export the tokenizer "
            "with_truncation(Truncation(..., control_policy='truncate_then_add')) or None"
        )
    return {
        "direction": "Right",
        "max_length": truncation.max_length,
        "strategy": _HF_STRATEGIES[truncation.strategy],
        "stride": truncation.stride,
    }


def padding_to_hf(tok: Tokenizer, padding: Padding | None) -> dict[str, Any] | None:
    """``padding`` as a ``tokenizer.json`` field (None: null); its ``pad_token`` is the
    spelling of the pad ID (the policy's, else the tokenizer's pad token)."""
    if padding is None:
        return None
    pad_id = padding.pad_id if padding.pad_id is not None else tok.pad_id
    if pad_id is None:
        raise ArtifactError(
            "tokenizer.json padding needs a pad ID: this tokenizer has no pad token; give "
            "the policy one (Padding(pad_id=...))"
        )
    spellings = {i: s for s, i in {**tok.added_tokens, **tok.special_tokens}.items()}
    if pad_id in spellings:
        pad_token = spellings[pad_id]
    else:
        try:
            pad_token = tok.token_bytes(pad_id).decode("utf-8")
        except (UnicodeDecodeError, TokenpactError) as exc:
            raise ArtifactError(
                f"tokenizer.json padding needs the pad token's text; ID {pad_id} has none "
                f"({exc!r:.120})"
            ) from None
    return {
        "strategy": "BatchLongest" if padding.length is None else {"Fixed": padding.length},
        "direction": _HF_SIDES[padding.side],
        "pad_to_multiple_of": padding.multiple,
        "pad_id": pad_id,
        "pad_type_id": 0,
        "pad_token": pad_token,
    }


def with_policy(document: dict[str, Any], tok: Tokenizer) -> dict[str, Any]:
    """``document`` with its ``padding`` / ``truncation`` fields set to ``tok``'s policy
    (a field that already declares that policy is kept as written)."""
    try:
        keep_truncation = truncation_from_hf(document.get("truncation"), "") == tok.truncation
    except ArtifactError:
        keep_truncation = False
    if not keep_truncation:
        document["truncation"] = truncation_to_hf(tok.truncation)
    try:
        keep_padding = padding_from_hf(document.get("padding"), "") == tok.padding
    except ArtifactError:
        keep_padding = False
    if not keep_padding:
        document["padding"] = padding_to_hf(tok, tok.padding)
    return document


def declares_policy(raw: bytes) -> bool:
    """Whether a ``tokenizer.json``'s bytes set ``padding`` or ``truncation`` (a save of a
    tokenizer built from it then records the tokenizer's own policy beside it, so a
    policy removed or changed after loading survives the round trip)."""
    if _NON_NULL_FIELD.search(raw) is None:  # both null (most files): no parse needed
        return False
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not isinstance(document, Mapping):
        return False
    return document.get("padding") is not None or document.get("truncation") is not None
