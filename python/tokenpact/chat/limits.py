"""Bounds on chat-template execution: loop iterations, output size, recursion.

A chat template is code that ships with a model. ``transformers`` runs it in Jinja's
sandbox, which blocks unsafe attributes but not runaway work: ``range`` stops at 100,000
items (with an ``OverflowError``), yet three nested loops over such a range, a string
doubled in a loop, or ``'a' * 10**10`` still run for hours or exhaust memory. Here each
render gets a budget; exceeding it raises :class:`TemplateLimitError`, a typed error that
names the limit and how to raise it.

The budget is per thread (``render_batch`` renders on several threads), so it lives in a
``threading.local``: :func:`charge_iterations` and :func:`check_size` are called by the
span environment's loop wrapper, operators and filters.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import ChatTemplateError


class TemplateLimitError(ChatTemplateError):
    """A chat template exceeded a bound of :class:`TemplateLimits` (loops, size, depth)."""


@dataclass(frozen=True)
class TemplateLimits:
    """Bounds on one render.

    ``max_loop_iterations`` counts every iteration of every ``{% for %}`` loop (nested
    loops multiply); ``max_output_chars`` bounds the rendered text and every string or
    list the template builds (``+``, ``~``, ``*``, ``join``, buffers, padding filters);
    ``max_exponent_bits`` bounds integers built with ``**``. Recursion (macros calling
    themselves, recursive loops) is bounded by the interpreter's recursion limit and
    reported as the same typed error.
    """

    max_loop_iterations: int = 1_000_000
    max_output_chars: int = 32 * 1024 * 1024
    max_exponent_bits: int = 4096

    def __post_init__(self) -> None:
        for name in ("max_loop_iterations", "max_output_chars", "max_exponent_bits"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ChatTemplateError(f"TemplateLimits.{name} must be a positive int")


DEFAULT_LIMITS = TemplateLimits()


class _Budget(threading.local):
    """What the render running on this thread may still spend."""

    iterations: int = DEFAULT_LIMITS.max_loop_iterations
    max_chars: int = DEFAULT_LIMITS.max_output_chars
    limits: TemplateLimits = DEFAULT_LIMITS


_BUDGET = _Budget()


def start(limits: TemplateLimits) -> None:
    """Reset this thread's budget at the start of a render."""
    _BUDGET.limits = limits
    _BUDGET.iterations = limits.max_loop_iterations
    _BUDGET.max_chars = limits.max_output_chars


def current() -> TemplateLimits:
    return _BUDGET.limits


def max_chars() -> int:
    """This thread's bound on the size of any string or list the template builds."""
    return _BUDGET.max_chars


def _too_many_iterations() -> TemplateLimitError:
    limit = _BUDGET.limits.max_loop_iterations
    return TemplateLimitError(
        f"the chat template ran more than {limit:,} loop iterations; a template that loops "
        "this much is broken or hostile (raise TemplateLimits(max_loop_iterations=...) "
        "if the conversation really needs it)"
    )


def charge_iterations(count: int) -> None:
    """Spend ``count`` loop iterations of this thread's budget."""
    _BUDGET.iterations -= count
    if _BUDGET.iterations < 0:
        raise _too_many_iterations()


def counted(iterable: Any) -> Iterator[Any]:
    """Iterate ``iterable`` (of unknown length), spending one iteration per item."""
    budget = _BUDGET
    for item in iterable:
        budget.iterations -= 1
        if budget.iterations < 0:
            raise _too_many_iterations()
        yield item


def too_large(size: int, what: str) -> TemplateLimitError:
    limit = _BUDGET.limits.max_output_chars
    return TemplateLimitError(
        f"the chat template built {what} of {size:,} items, over the limit of {limit:,}; "
        "raise TemplateLimits(max_output_chars=...) if the conversation really is this large"
    )


def check_size(value: Any, what: str = "a string") -> Any:
    """``value`` unchanged, after checking that its length fits the output limit."""
    if isinstance(value, (str, list, tuple)) and len(value) > _BUDGET.max_chars:
        raise too_large(len(value), what)
    return value


def check_width(value: Any, what: str) -> None:
    """An integer argument that sets an output width (padding, repetition) must fit."""
    if isinstance(value, int) and value > _BUDGET.max_chars:
        raise too_large(value, what)


def check_power(base: Any, exponent: Any) -> None:
    """``base ** exponent`` on integers must stay below ``max_exponent_bits``."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        bits = abs(base).bit_length() * exponent
        if abs(base) > 1 and bits > _BUDGET.limits.max_exponent_bits:
            raise TemplateLimitError(
                f"the chat template computes an integer power of about {bits:,} bits, over "
                f"the limit of {_BUDGET.limits.max_exponent_bits:,} "
                "(TemplateLimits(max_exponent_bits=...))"
            )
