"""Reference for Hugging Face BPE over characters (``tokenizer.json`` BPE without
ByteLevel), written from tokenizers' ``models/bpe/model.rs`` (``merge_word``) and
``word.rs`` (``merge_all``).

A word starts as its characters: every one but the first is spelled with
``continuing_subword_prefix``, the last with ``end_of_word_suffix``. A spelling missing
from the vocabulary becomes its ``<0xXX>`` byte pieces (``byte_fallback``, when all
exist) or ``unk`` (runs fused when ``fuse_unk``; with no ``unk`` the character is
dropped). Merges then pop from a queue ordered by (rank, position); an entry is applied
when the pair now at its position produces the same token, even if that pair has
another rank (two merges can build one piece). Example::

    vocab = {"a": 0, "b": 1, "ab": 2}
    hf_bpe_reference("ab", vocab, [("a", "b")])   # [(2, 0, 2)]
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True)
class HfBpeOptions:
    prefix: str | None = None
    suffix: str | None = None
    unk: str | None = None
    fuse_unk: bool = False
    byte_fallback: bool = False
    ignore_merges: bool = False


def merge_map(
    vocab: dict[str, int], merges: list[tuple[str, str]], prefix: str | None
) -> dict[tuple[int, int], tuple[int, int]]:
    """``(left, right) -> (rank, new)``; a pair listed twice keeps its last rank."""
    cut = len((prefix or "").encode("utf-8"))
    table = {}
    for rank, (a, b) in enumerate(merges):
        joined = a + b.encode("utf-8")[cut:].decode("utf-8")
        table[(vocab[a], vocab[b])] = (rank, vocab[joined])
    return table


def _symbols(word: str, vocab: dict[str, int], o: HfBpeOptions) -> list[list[int]]:
    """``[id, byte_len]`` per initial symbol."""
    out: list[list[int]] = []
    pending: list[int] | None = None
    for i, c in enumerate(word):
        spelled = (o.prefix or "") + c if i > 0 else c
        if i == len(word) - 1:
            spelled += o.suffix or ""
        size = len(c.encode("utf-8"))
        if spelled in vocab:
            if pending is not None:
                out.append(pending)
                pending = None
            out.append([vocab[spelled], size])
            continue
        codes = [f"<0x{b:02X}>" for b in spelled.encode("utf-8")]
        if o.byte_fallback and all(code in vocab for code in codes):
            out.extend([vocab[code], 1] for code in codes)  # a pending unk waits (as HF)
            continue
        if o.unk is None:
            continue
        if pending is not None and o.fuse_unk:
            pending[1] += size
            continue
        if pending is not None:
            out.append(pending)
        pending = [vocab[o.unk], size]
    if pending is not None:
        out.append(pending)
    return out


def hf_bpe_reference(
    word: str,
    vocab: dict[str, int],
    merges: list[tuple[str, str]],
    options: HfBpeOptions | None = None,
) -> list[tuple[int, int, int]]:
    """``(id, start, end)`` per token of one pre-token; offsets in bytes of ``word``
    (HF counts one byte per fallback piece, prefix and suffix bytes included)."""
    o = options or HfBpeOptions()
    if not word:
        return []
    if o.ignore_merges and word in vocab:
        return [(vocab[word], 0, len(word.encode("utf-8")))]
    table = merge_map(vocab, merges, o.prefix)
    syms = _symbols(word, vocab, o)
    ids = [s[0] for s in syms]
    lens = [s[1] for s in syms]
    nxt = [i + 1 if i + 1 < len(syms) else -1 for i in range(len(syms))]
    prv = [i - 1 for i in range(len(syms))]
    queue = []
    for i in range(len(syms) - 1):
        if (ids[i], ids[i + 1]) in table:
            rank, new = table[(ids[i], ids[i + 1])]
            queue.append((rank, i, new))
    heapq.heapify(queue)
    while queue:
        _, pos, new = heapq.heappop(queue)
        if lens[pos] == 0 or nxt[pos] == -1:
            continue
        right = nxt[pos]
        entry = table.get((ids[pos], ids[right]))
        if entry is None or entry[1] != new:
            continue  # stale
        ids[pos], lens[pos], nxt[pos] = new, lens[pos] + lens[right], nxt[right]
        lens[right] = 0
        if nxt[pos] != -1:
            prv[nxt[pos]] = pos
        if prv[pos] >= 0 and (ids[prv[pos]], ids[pos]) in table:
            rank, made = table[(ids[prv[pos]], ids[pos])]
            heapq.heappush(queue, (rank, prv[pos], made))
        if nxt[pos] != -1 and (ids[pos], ids[nxt[pos]]) in table:
            rank, made = table[(ids[pos], ids[nxt[pos]])]
            heapq.heappush(queue, (rank, pos, made))
    out = []
    at = 0
    for i, size in zip(ids, lens, strict=True):
        if size:
            out.append((i, at, at + size))
            at += size
    return out
