"""WordPiece encoding reference: longest match first, whole-word UNK.

Example::

    vocab = {"un": 1, "##want": 2, "##ed": 3, "[UNK]": 0}
    wordpiece_reference("unwanted", vocab, unk="[UNK]")   # [1, 2, 3]
"""

from __future__ import annotations


def wordpiece_reference(
    word: str,
    vocab: dict[str, int],
    *,
    unk: str,
    prefix: str = "##",
    max_chars: int = 100,
) -> list[tuple[int, int, int]]:
    """``(id, start, end)`` per token of one pre-token (codepoint offsets in ``word``)."""
    if not word:
        return []
    if len(word) > max_chars:
        return [(vocab[unk], 0, len(word))]
    out = []
    start = 0
    while start < len(word):
        found = None
        for end in range(len(word), start, -1):
            surface = word[start:end] if start == 0 else prefix + word[start:end]
            if surface in vocab:
                found = (vocab[surface], start, end)
                break
        if found is None:
            return [(vocab[unk], 0, len(word))]  # discard every partial match
        out.append(found)
        start = found[2]
    return out
