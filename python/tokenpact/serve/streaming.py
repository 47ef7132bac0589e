"""The playground's streaming view, computed with the public serving runtime.

Input side: the text's UTF-8 bytes arrive in transport chunks of ``chunk_size`` bytes
(a chunk may end inside a character); after each push the view records the IDs the
:class:`~tokenpact.runtime.StreamingEncoder` committed and the provisional IDs of the
undecided tail. Output side: the final IDs are replayed one at a time through an
:class:`~tokenpact.runtime.OutputStream`, as if a model generated them, recording the
text each ID made visible, the text held back as a possible stop, and the stop
decision. Nothing here is simulated: both sides are the runtime's own engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..runtime import OutputStream, StopPolicy, StreamingEncoder
from .views import piece_text

if TYPE_CHECKING:
    from ..core import Tokenizer


def _piece(tok: Tokenizer, token_id: int) -> dict[str, Any]:
    text, partial = piece_text(tok.token_bytes(token_id))
    return {"id": token_id, "text": text, "partial": partial}


def inbound_steps(tok: Tokenizer, data: bytes, chunk_size: int) -> tuple[str, list[dict[str, Any]]]:
    """The commit rule and one record per push, then one for ``finish()``.

    ``committed`` holds the IDs this push committed (the page accumulates them;
    ``committed_total`` is the running count), so the reply grows with the number of
    steps, not with steps times IDs.
    """
    encoder = StreamingEncoder(tok, scan_step=0)  # a demo: commit as soon as final
    steps: list[dict[str, Any]] = []
    total = 0
    for at in range(0, len(data), chunk_size):
        chunk = data[at : at + chunk_size]
        committed = encoder.push_bytes(chunk)
        total += len(committed)
        shown, partial = piece_text(chunk)
        steps.append(
            {
                "chunk_hex": chunk.hex(),
                "chunk_text": shown,
                "chunk_partial": partial,
                "committed": committed,
                "committed_total": total,
                "provisional": encoder.provisional(),
                "pending_text": encoder.pending_text,
            }
        )
    final = encoder.finish()
    steps.append(
        {
            "chunk_hex": None,
            "chunk_text": None,
            "chunk_partial": False,
            "committed": final,
            "committed_total": total + len(final),
            "provisional": [],
            "pending_text": "",
        }
    )
    return encoder.rule, steps


def outbound_steps(tok: Tokenizer, ids: Sequence[int], policy: StopPolicy) -> dict[str, Any]:
    """Replay ``ids`` one at a time as generated output; stop where the policy says.

    ``stop_position`` is the index (in ``ids``) of the ID that ended generation, for a
    ``"stop"`` or ``"length"`` decision; ``None`` when the IDs ran out first
    (``"end"``, after ``finish()`` flushed the held text).
    """
    out = OutputStream(tok, policy)
    steps: list[dict[str, Any]] = []
    for token_id in ids:
        delta = out.push(token_id)
        steps.append({**_piece(tok, token_id), "visible": delta.text, "held": out.held_text})
        if delta.finished:
            break
    stop_position = len(out.processed_ids) - 1 if out.finished else None
    if not out.finished:
        delta = out.finish()
        steps.append(
            {"id": None, "text": None, "partial": False, "visible": delta.text, "held": ""}
        )
    matched = out.matched_stop
    return {
        "steps": steps,
        "visible_text": out.visible_text,
        "finish_reason": out.finish_reason,
        "matched_stop": list(matched) if isinstance(matched, tuple) else matched,
        "stop_position": stop_position,
        "processed": len(out.processed_ids),
    }


def stream_view(
    tok: Tokenizer,
    text: str,
    *,
    chunk_size: int,
    stop_strings: Sequence[str],
    max_new_tokens: int | None,
) -> dict[str, Any]:
    """Both sides of the stream for ``text``; ``ids`` equals ``tok.encode(text)``."""
    data = text.encode("utf-8")
    rule, inbound = inbound_steps(tok, data, chunk_size)
    ids = [token_id for step in inbound for token_id in step["committed"]]
    policy = StopPolicy(stop_strings=stop_strings, max_new_tokens=max_new_tokens)
    seen = {*ids, *(i for step in inbound for i in step["provisional"])}
    return {
        "rule": rule,
        "bytes": len(data),
        "chunk_size": chunk_size,
        "ids": ids,
        "inbound": inbound,
        # Each distinct ID's piece once (the steps carry bare IDs).
        "pieces": {str(i): _piece(tok, i) for i in sorted(seen)},
        "outbound": outbound_steps(tok, ids, policy),
    }
