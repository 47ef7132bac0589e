"""Seed 000 0x0C1's three nested byte-BPE candidates and a 12-record, group-isolated split.

compact-268: 256 byte rows + 8 reserved control rows + th, the, in, ing;
balanced-272: + er, re, ==, 10; expanded-279: + fo, foo, ba, bar, partial and full
"中", xy. Each larger candidate keeps every earlier merge rank and ID. The seed's record
texts are not published; these twelve span its slices (prose, code, numbers, CJK) and
reproduce its facts: "th" and "ing" are never emitted in fit yet encode alone, the
expanded candidate is shortest on validation but fails the parameter and exposure
limits, and the balanced winner spends 27 positions on the three test records.
"""

from __future__ import annotations

from typing import Any

from tokenpact.audit.selection import Gates, ModelShape
from tokenpact.audit.splits import SplitRecord

CONTROLS = 8
COMPACT = [(b"t", b"h"), (b"th", b"e"), (b"i", b"n"), (b"in", b"g")]
BALANCED = COMPACT + [(b"e", b"r"), (b"r", b"e"), (b"=", b"="), (b"1", b"0")]
_ZH = "中".encode()
EXPANDED = (
    BALANCED
    + [
        (b"f", b"o"),
        (b"fo", b"o"),
        (b"b", b"a"),
        (b"ba", b"r"),
        (_ZH[:1], _ZH[1:2]),  # a partial UTF-8 row: two of the three bytes of 中
        (_ZH[:2], _ZH[2:]),
        (b"x", b"y"),
    ]
)
CANDIDATE_MERGES = {"compact-268": COMPACT, "balanced-272": BALANCED, "expanded-279": EXPANDED}

# The synthetic model contract of the seed: d=64, 2-byte parameters, tied, output bias.
SHAPE = ModelShape(d_model=64, tied=True, bias=True, dtype="bf16")
# Declared release limits (the seed states that the expanded candidate exceeds both).
GATES = Gates(
    exact_reconstruction=True,
    max_vocab_params=18_000,
    min_exposure=1,
    max_underexposed_rows=3,
    max_slice_amplification=1.0,
)

RECORDS = [
    SplitRecord("r01", "g-prose-1", "fit", "prose", "the cat saw the other one"),
    SplitRecord("r02", "g-prose-2", "fit", "prose", "the winter river"),
    SplitRecord("r03", "g-code-1", "fit", "code", "return 10 == 10"),
    SplitRecord("r04", "g-code-2", "fit", "code", "def there(): pass"),
    SplitRecord("r05", "g-num-1", "fit", "numbers", "100 + 10 == 110"),
    SplitRecord("r06", "g-cjk-1", "fit", "cjk", "中文 text here"),
    SplitRecord("r07", "g-prose-3", "validation", "prose", "the reader is here"),
    SplitRecord("r08", "g-code-3", "validation", "code", "foo = bar == 10"),
    SplitRecord("r09", "g-cjk-2", "validation", "cjk", "中中 is xy"),
    SplitRecord("r10", "g-prose-4", "test", "prose", "the pointer is here"),
    SplitRecord("r11", "g-code-4", "test", "code", "x == 10"),
    SplitRecord("r12", "g-cjk-3", "test", "cjk", "中 is the"),
]


def build_candidate(tp: Any, merges: list[tuple[bytes, bytes]]) -> Any:
    """Byte rows 0-255, control rows 256-263, then one row per merge, in rank order."""
    vocab = [bytes([b]) for b in range(256)] + [f"<|ctl{i}|>".encode() for i in range(CONTROLS)]
    index = {piece: i for i, piece in enumerate(vocab)}
    records = []
    for left, right in merges:
        vocab.append(left + right)
        index[left + right] = len(vocab) - 1
        records.append((index[left], index[right], len(vocab) - 1))
    controls = [(tp.SpecialToken(f"<|ctl{i}|>"), 256 + i) for i in range(CONTROLS)]
    return tp.Tokenizer.from_merge_records(
        records, vocab=vocab, pattern="gpt2", special_tokens=controls
    )


def candidates(tp: Any) -> dict[str, Any]:
    return {name: build_candidate(tp, merges) for name, merges in CANDIDATE_MERGES.items()}


def texts(split: str) -> list[str]:
    return [r.text for r in RECORDS if r.split == split]


def slices(split: str) -> list[str]:
    return [r.slice for r in RECORDS if r.split == split]
