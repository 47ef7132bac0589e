"""Shared data for the contract tests (imported by conftest and test modules)."""

from __future__ import annotations

CORPUS = [
    "The cat sleeps. The cat sleeps on the mat.",
    "A train arrives at 10:45; the train leaves at 11:00.",
    "def encode(text):\n    return [ord(c) for c in text]\n",
    "Ελληνικά και English, café naïve, 12345 apples and 678 pears.",
    "literal <|bos|> text is ordinary text",
] * 8

# Small golden sizes keep the tests quick; default sizes are exercised in the golden tests.
GOLDEN_OPTIONS = {"long_span_chars": 300, "long_input_chars": 1200}
