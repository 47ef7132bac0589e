"""Generate src/unigram/scripts.bin: the Unicode script of every code point, for the
Unigram trainer's seed rule (a piece never mixes scripts, as SentencePiece's
``split_by_unicode_script`` default).

Script membership comes from Python's ``regex`` module (``\\p{Script=...}``), the same
Unicode database as the pre-tokenizer tables (scripts/gen_unicode_tables.py), for the
script names in ``tokenpact.reference.piece_scripts.SCRIPT_NAMES`` (the rule's spec).
Code points in no listed script are Common, as in SentencePiece.

Layout (little-endian): magic b"TPSC", u32 version=1, u32 n_names, u32 n_ranges; names as
u8 length + ASCII (id = position; id 0 is Common); n_ranges x (u32 first, u32 last, u16 id),
sorted, non-overlapping, Common ranges omitted.
Run: python scripts/gen_script_table.py
"""

from __future__ import annotations

import struct
from pathlib import Path

import regex

from tokenpact.reference.piece_scripts import SCRIPT_NAMES

MAX_CP = 0x110000
OUT = Path(__file__).resolve().parents[1] / "src" / "unigram" / "scripts.bin"


def main() -> None:
    names = ["Common", *SCRIPT_NAMES]
    chars = "".join(chr(c) if not (0xD800 <= c <= 0xDFFF) else "\x00" for c in range(MAX_CP))
    ids = [0] * MAX_CP
    known = ["Common"]
    for name in names[1:]:
        try:
            pattern = regex.compile(rf"\p{{Script={name}}}")
        except regex.error:
            continue  # a script newer than `regex`'s Unicode database
        sid = len(known)
        known.append(name)
        for m in pattern.finditer(chars):
            if not 0xD800 <= m.start() <= 0xDFFF:
                ids[m.start()] = sid
    ranges: list[tuple[int, int, int]] = []
    for cp, sid in enumerate(ids):
        if sid == 0:
            continue
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == sid:
            ranges[-1] = (ranges[-1][0], cp, sid)
        else:
            ranges.append((cp, cp, sid))
    out = bytearray(b"TPSC") + struct.pack("<III", 1, len(known), len(ranges))
    for name in known:
        out += struct.pack("<B", len(name)) + name.encode("ascii")
    for first, last, sid in ranges:
        out += struct.pack("<IIH", first, last, sid)
    OUT.write_bytes(bytes(out))
    print(f"{OUT}: {len(known)} scripts, {len(ranges)} ranges, {len(out)} bytes")


if __name__ == "__main__":
    main()
