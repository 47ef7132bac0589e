"""Hugging Face ``Unigram`` encoding reference (``tokenizers`` ``encode_optimized``).

Viterbi over the characters of one pre-token with f64 scores: at every start position
the pieces beginning there are tried shortest first and replace a node only when
strictly better; a character no one-character piece covers gets an unknown edge scored
``min(scores) - 10``. Consecutive unknown tokens are fused; a fused run that spells a
piece becomes it, else (``byte_fallback``) its UTF-8 bytes as ``<0xXX>`` pieces when all
exist, else ``unk``. Example::

    vocab = [("<unk>", 0.0), ("a", -1.0), ("ab", -1.5)]
    hf_unigram_reference("abx", vocab, unk_id=0)   # [(2, 0, 2), (0, 2, 3)]
"""

from __future__ import annotations

from collections.abc import Sequence


def hf_unigram_reference(
    word: str,
    vocab: Sequence[tuple[str, float]],
    *,
    unk_id: int | None,
    byte_fallback: bool = False,
) -> list[tuple[int, int, int]]:
    """``(id, start, end)`` per token of one pre-token (codepoint offsets in ``word``)."""
    ids = {piece: i for i, (piece, _) in enumerate(vocab)}
    min_score = min(score for _, score in vocab)
    n = len(word)
    # best[end] = (score, start, id) of the best path ending at char `end`.
    best: list[tuple[float, int, int] | None] = [None] * (n + 1)
    best[0] = (0.0, -1, -1)
    for start in range(n):
        reached = best[start]
        here = reached[0] if reached is not None else 0.0
        single = False
        for end in range(start + 1, n + 1):
            piece = word[start:end]
            if piece not in ids:
                continue
            cand = vocab[ids[piece]][1] + here
            node = best[end]
            if node is None or cand > node[0]:
                best[end] = (cand, start, ids[piece])
            single = single or end == start + 1
        if not single:
            cand = (min_score - 10.0) + here
            node = best[start + 1]
            if node is None or cand > node[0]:
                if unk_id is None:
                    raise ValueError("unknown character and no unk_id")
                best[start + 1] = (cand, start, unk_id)
    path: list[tuple[int, int, int]] = []
    end = n
    while end > 0:
        node = best[end]
        assert node is not None
        path.append((node[2], node[1], end))
        end = node[1]
    path.reverse()
    out: list[tuple[int, int, int]] = []
    k = 0
    while k < len(path):
        i, s, e = path[k]
        if unk_id is None or i != unk_id:
            out.append(path[k])
            k += 1
            continue
        while k + 1 < len(path) and path[k + 1][0] == unk_id:
            k += 1
            e = path[k][2]
        k += 1
        run = word[s:e]
        if run in ids:
            out.append((ids[run], s, e))
            continue
        pieces = [f"<0x{b:02X}>" for b in run.encode("utf-8")]
        if byte_fallback and all(p in ids for p in pieces):
            out.extend((ids[p], s, e) for p in pieces)
        else:
            out.append((unk_id, s, e))
    return out
