"""Generate src/pretok/unicode_classes.bin from Python's ``regex`` module.

The built-in pre-tokenizers must classify characters exactly as ``regex`` does for the
named patterns, so the tables are derived from ``regex`` itself rather than from another
Unicode database (which may be a different Unicode version).

Layout (all little-endian):
  magic b"TPUC", u32 version=1, u32 n_classes, u32 n_blocks, u32 label_len,
  label "REGEX_RELEASE;UNICODE_VERSION",
  n_classes x u16 flag sets,
  4352 x u16 block index (one per 256-codepoint block, codepoints 0..0x10FFFF),
  n_blocks x 256 x u8 class ids.
Run: python scripts/gen_unicode_tables.py
"""

from __future__ import annotations

import struct
from pathlib import Path

import regex

FLAGS = [
    ("L", r"\p{L}"),
    ("N", r"\p{N}"),
    ("WS", r"\s"),
    ("Lu", r"\p{Lu}"),
    ("Ll", r"\p{Ll}"),
    ("Lt", r"\p{Lt}"),
    ("Lm", r"\p{Lm}"),
    ("Lo", r"\p{Lo}"),
    ("M", r"\p{M}"),
]
MAX_CP = 0x110000
# The first letter of a script each Unicode version added: the newest one `regex` knows
# names the Unicode version of the tables (a lower bound when `regex` is newer still).
VERSION_PROBES = [
    ("15.0.0", 0x11F04),  # Kawi
    ("15.1.0", 0x2EBF0),  # CJK Unified Ideographs Extension I
    ("16.0.0", 0x10D50),  # Garay
    ("17.0.0", 0x323B0),  # CJK Unified Ideographs Extension J
]


def unicode_version() -> str:
    known = [v for v, cp in VERSION_PROBES if regex.match(r"\p{L}", chr(cp))]
    return known[-1] if known else "14.0.0"


def main() -> None:
    flags = [0] * MAX_CP
    # Surrogates cannot occur in a Rust &str; keep them at 0.
    chars = "".join(chr(c) if not (0xD800 <= c <= 0xDFFF) else "\x00" for c in range(MAX_CP))
    for bit, (_, pattern) in enumerate(FLAGS):
        for m in regex.finditer(pattern, chars):
            cp = m.start()
            if 0xD800 <= cp <= 0xDFFF:
                continue
            flags[cp] |= 1 << bit
    classes: dict[int, int] = {}
    class_list: list[int] = []
    for f in flags:
        if f not in classes:
            classes[f] = len(class_list)
            class_list.append(f)
    blocks: dict[bytes, int] = {}
    block_list: list[bytes] = []
    index: list[int] = []
    for b in range(MAX_CP // 256):
        data = bytes(classes[f] for f in flags[b * 256 : (b + 1) * 256])
        if data not in blocks:
            blocks[data] = len(block_list)
            block_list.append(data)
        index.append(blocks[data])
    version = f"{regex.__version__};{unicode_version()}".encode()
    out = bytearray(b"TPUC")
    out += struct.pack("<IIII", 1, len(class_list), len(block_list), len(version)) + version
    out += struct.pack(f"<{len(class_list)}H", *class_list)
    out += struct.pack(f"<{len(index)}H", *index)
    for data in block_list:
        out += data
    target = Path(__file__).resolve().parent.parent / "src" / "pretok" / "unicode_classes.bin"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bytes(out))
    print(f"{target}: {len(class_list)} classes, {len(block_list)} blocks, {len(out)} bytes")


if __name__ == "__main__":
    main()
