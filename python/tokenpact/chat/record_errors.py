"""Per-record error policy of batch renders: one bad record either raises, naming the
record, or is skipped and reported, so that it never aborts a batch silently.

With ``on_error="skip"`` the batch is rendered as usual; when a record fails, the
records before it are known good and rendering goes on after it. The good records are
then rendered once more in one batch, so the result is exactly what the batch gives for
them (at most twice the work, only when something failed).

Both executors read a batch's records with :func:`split_item` (a message list, or a dict
with per-record tools and documents) and name a failing record with :func:`note_record`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import TokenpactError
from .errors import ChatTemplateError

ON_ERROR = ("raise", "skip")
# What a record may carry beside its messages (other options are the batch's).
_PER_CONVERSATION = ("tools", "documents")

R = TypeVar("R")


@dataclass(frozen=True)
class SkippedRecord:
    """A record left out of a batch: its index in the input, the error's type and the
    first line of its message."""

    index: int
    error: str
    message: str


class RenderedList(list):  # type: ignore[type-arg]
    """``render_batch(..., on_error="skip")``: the conversations of the records that
    rendered, in input order; ``record_index[k]`` is the input index of item ``k`` and
    ``skipped`` lists the records left out, with the reason."""

    record_index: list[int]
    skipped: tuple[SkippedRecord, ...]


def check_on_error(on_error: str) -> str:
    """``on_error``, or a typed error naming the accepted values."""
    if on_error not in ON_ERROR:
        raise ChatTemplateError(
            f"on_error must be 'raise' or 'skip' (skip reports each record left out), "
            f"not {on_error!r}"
        )
    return on_error


def record_of(exc: BaseException) -> int | None:
    """The batch position a batch render noted on ``exc`` (see ``note_record``)."""
    index = getattr(exc, "tokenpact_record", None)
    return index if isinstance(index, int) else None


def skip_failing(run: Callable[[list[int]], R], n: int) -> tuple[R, list[int], list[SkippedRecord]]:
    """``run(indices)`` over the records ``0..n-1`` that render: ``(result, indices,
    skipped)``. ``run`` renders the given records as one batch and raises the first
    failing record's typed error (its position noted, else found by rendering the
    records alone)."""
    rest = list(range(n))
    good: list[int] = []
    skipped: list[SkippedRecord] = []
    while True:
        try:
            result = run(rest)
        except TokenpactError as exc:
            k = record_of(exc)
            if k is None or not 0 <= k < len(rest):
                k, exc = _first_failing(run, rest, exc)
            first_line = str(exc).split("\n", 1)[0]
            skipped.append(SkippedRecord(rest[k], type(exc).__name__, first_line))
            good.extend(rest[:k])
            rest = rest[k + 1 :]
            continue
        if not skipped:
            return result, rest, skipped
        good.extend(rest)
        break
    return run(good), good, skipped


def _first_failing(
    run: Callable[[list[int]], Any], rest: list[int], exc: TokenpactError
) -> tuple[int, TokenpactError]:
    """The position in ``rest`` of the first record that fails alone, and its error."""
    for k, index in enumerate(rest):
        try:
            run([index])
        except TokenpactError as alone:
            return k, alone
    raise exc  # fails only together: not a per-record error


def note_record(exc: BaseException, index: int) -> None:
    """Name the failing conversation in ``exc`` (same type and message; a note below the
    message, on Python 3.11+ where exceptions carry notes)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(f"(conversation {index} of the batch)")
    # on_error="skip" reads the position back (record_errors.record_of).
    try:
        exc.tokenpact_record = index  # type: ignore[attr-defined]
    except AttributeError:  # an exception type with __slots__
        pass


def split_item(item: Any, index: int) -> tuple[Sequence[Any], dict[str, Any]]:
    """A conversation given as a message list, or ``{"messages": ..., "tools": ...,
    "documents": ...}`` (per-conversation tools and documents, as SFT records carry)."""
    if type(item) is list:  # the common case, without the ABC checks below
        return item, {}
    if isinstance(item, Mapping):
        if "messages" not in item:
            raise ChatTemplateError(
                f"conversation {index} is a dict without 'messages'; pass a list of messages "
                'or {"messages": [...], "tools": [...], "documents": [...]}'
            )
        unknown = sorted(set(item) - {"messages", *_PER_CONVERSATION})
        if unknown:
            raise ChatTemplateError(
                f"conversation {index} has unknown keys {unknown}; only messages, tools and "
                "documents are read per conversation (pass other options to render_batch)"
            )
        return item["messages"], {k: item[k] for k in _PER_CONVERSATION if k in item}
    if isinstance(item, (str, bytes)) or not isinstance(item, Sequence):
        raise ChatTemplateError(
            f"conversation {index} must be a list of messages or a dict with 'messages', "
            f"not {type(item).__name__}"
        )
    return item, {}
