"""Errors of conversation formatting. Each message says what to change."""

from __future__ import annotations

from ..errors import InvalidInputError, TokenpactError


class ConversationError(TokenpactError, ValueError):
    """Messages break the conversation grammar (role order, tool pairing, mode, alignment)."""


class MessageContentError(ConversationError, InvalidInputError):
    """A message, tool call or document holds a value that is not text (a number, a list,
    ``None`` where text belongs), text with a lone surrogate, or ``messages`` is not a
    list of messages. Also an :class:`~tokenpact.errors.InvalidInputError`."""


class ChatTemplateError(TokenpactError, ValueError):
    """A chat template is missing, invalid, or failed while rendering."""


class UntrackedContentError(ChatTemplateError):
    """Content holding a control spelling reached the output through an untracked operation.

    Rendering tracks content through the string operations templates use; a filter that
    rebuilds strings from scratch hides where the content went. When such content holds a
    control spelling, recognizing control tokens would be a guess, so rendering stops.
    """


class FixedGrammarExceedsContext(TokenpactError, ValueError):
    """The parts that truncation may not drop already exceed the context limit.

    ``limit`` is the context limit, ``fixed_length`` the length of the conversation with
    every droppable group removed, and ``accounting`` its per-part token counts.
    """

    def __init__(self, message: str, *, limit: int, fixed_length: int, accounting: dict[str, int]):
        super().__init__(message)
        self.limit = limit
        self.fixed_length = fixed_length
        self.accounting = dict(accounting)
