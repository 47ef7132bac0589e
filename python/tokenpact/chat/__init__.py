"""Conversation formatting with trusted control tokens.

Control IDs come only from trusted insertion (a template's own markers, a declared
grammar); message content, tool arguments, tool results and documents are encoded as
ordinary text whatever they contain.

>>> import tokenpact as tp
>>> tok = tp.Tokenizer.load("deepseek-v3/")                               # doctest: +SKIP
>>> template = tp.chat.ChatTemplate.from_hf("deepseek-v3/", tok)          # doctest: +SKIP
>>> conv = template.render([{"role": "user", "content": "The cat sleeps."}],
...                        add_generation_prompt=True)                    # doctest: +SKIP
>>> conv.input_ids, conv.origin[:2]                                       # doctest: +SKIP
([0, 128803, 671, 7539, 114896, 16, 128804], ['control', 'control'])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .columns import RecordColumns, RenderedColumns
from .conversation import KINDS, Conversation
from .errors import (
    ChatTemplateError,
    ConversationError,
    FixedGrammarExceedsContext,
    MessageContentError,
    UntrackedContentError,
)
from .grammar import (
    SEED_SPECIAL_TOKENS,
    LengthModel,
    SequenceCompiler,
    SequenceGrammar,
    TurnLength,
)
from .limits import TemplateLimitError, TemplateLimits
from .messages import (
    MODES,
    ROLES,
    Document,
    Message,
    ToolCall,
    as_messages,
    assistant,
    system,
    tool_result,
    user,
    validate_messages,
)
from .ownership import RenderedText
from .record_errors import RenderedList, SkippedRecord
from .stop import StopHit, StopMatcher, StopPolicy
from .supervision import RecordReport, Turn, expand_turns, supervision_report
from .truncation import DroppedGroup, Group, TruncationResult, check_groups, plan_groups, truncate

if TYPE_CHECKING:
    from .hf_template import ChatTemplate

_LAZY = ("ChatTemplate",)


def __getattr__(name: str) -> object:
    # Jinja2 is only needed for Hugging Face templates; import it on first use so that
    # `import tokenpact` works without it.
    if name in _LAZY:
        try:
            from . import hf_template
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                f"tokenpact.chat.{name} needs Jinja2 >= 3.1.6: pip install 'jinja2>=3.1.6'"
            ) from exc
        return getattr(hf_template, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "KINDS",
    "MODES",
    "ROLES",
    "SEED_SPECIAL_TOKENS",
    "ChatTemplate",
    "ChatTemplateError",
    "TemplateLimitError",
    "TemplateLimits",
    "Conversation",
    "ConversationError",
    "Document",
    "DroppedGroup",
    "FixedGrammarExceedsContext",
    "Group",
    "LengthModel",
    "Message",
    "MessageContentError",
    "RecordColumns",
    "RecordReport",
    "RenderedColumns",
    "RenderedList",
    "RenderedText",
    "SequenceCompiler",
    "SequenceGrammar",
    "SkippedRecord",
    "StopHit",
    "StopMatcher",
    "StopPolicy",
    "ToolCall",
    "TruncationResult",
    "Turn",
    "TurnLength",
    "UntrackedContentError",
    "as_messages",
    "assistant",
    "check_groups",
    "expand_turns",
    "plan_groups",
    "supervision_report",
    "system",
    "tool_result",
    "truncate",
    "user",
    "validate_messages",
]
