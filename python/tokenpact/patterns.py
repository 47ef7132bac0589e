"""Named pre-tokenization patterns.

These regex sources are the contract: the Rust built-in scanners must split text into
exactly the spans Python's ``regex`` module finds for the same source (the differential
tests in ``tests/properties`` check this). Any other regex is run by a general engine.
"""

from __future__ import annotations

# The original GPT-2 pattern (encoder.py, and Hugging Face's ByteLevel pre-tokenizer).
GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# cl100k_base exactly as tiktoken ships it (possessive quantifiers, whitespace-to-end rule).
GPT4 = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# o200k_base as tiktoken ships it.
O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# Llama 3 (tokenizer.model / tokenizer.json Split pattern).
LLAMA3 = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

PATTERNS: dict[str, str] = {
    "gpt2": GPT2,
    "gpt4": GPT4,
    "cl100k": GPT4,
    "o200k": O200K,
    "llama3": LLAMA3,
}


def resolve_pattern(pattern: str) -> tuple[str | None, str]:
    """Return ``(name, regex_source)`` for a built-in name or a user regex."""
    if pattern in PATTERNS:
        name = "gpt4" if pattern == "cl100k" else pattern
        return name, PATTERNS[pattern]
    for name, source in PATTERNS.items():
        if source == pattern:
            return ("gpt4" if name == "cl100k" else name), source
    return None, pattern


def pretokenize(text: str, pattern: str = "gpt4") -> list[tuple[int, int]]:
    """Trace pre-tokenization: codepoint spans ``(start, end)`` of each pre-token.

    >>> pretokenize("Hello world")
    [(0, 5), (5, 11)]
    """
    from ._native import pretokenize as native_pretokenize

    name, source = resolve_pattern(pattern)
    return native_pretokenize(text, source, name)
