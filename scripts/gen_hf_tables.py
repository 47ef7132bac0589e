"""Generate src/normalize/hf_unicode.bin by probing Hugging Face ``tokenizers`` itself.

HF's components classify characters with Unicode tables of different ages: the
``unicode_categories`` crate (control / punctuation / nonspacing marks: an old Unicode
version, so characters assigned later count as unassigned "Other" and BERT's clean_text
deletes them), Oniguruma's ``\\w``/``\\s`` (Whitespace), Rust std (``is_whitespace``,
``is_numeric``, ``to_lowercase``) and ``unicode-normalization-alignments`` (Unicode 9-era
decompositions). Exact conformance needs the same sets, so each one is measured here on
every code point, from the peer's own behaviour, rather than taken from another database.

Layout (little-endian u32 words): magic b"TPHF", version, n_sets; per set: name length,
name bytes padded to 4, number of ranges, then (first, last) inclusive pairs. Then the
lowercase map: count, then (code point, first, second or 0) triples for every non-ASCII
code point HF's Lowercase changes. Run: python scripts/gen_hf_tables.py
"""

from __future__ import annotations

import struct
from pathlib import Path

import tokenizers
from tokenizers import normalizers as N
from tokenizers import pre_tokenizers as P

OUT = Path(__file__).resolve().parents[1] / "src" / "normalize" / "hf_unicode.bin"
CPS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


def ranges(points: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in sorted(points):
        if out and out[-1][1] + 1 == c:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def pieces(pre: object, text: str) -> list[str]:
    return [p for p, _ in pre.pre_tokenize_str(text)]  # type: ignore[attr-defined]


def main() -> None:
    sets: dict[str, list[int]] = {}
    clean = N.BertNormalizer(
        clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False
    )
    chinese = N.BertNormalizer(
        clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False
    )
    sets["bert_control"], sets["bert_space"], sets["bert_chinese"] = [], [], []
    for c in CPS:
        out = clean.normalize_str(chr(c))
        if out == "":
            sets["bert_control"].append(c)
        elif out == " " and c != 32:
            sets["bert_space"].append(c)
        if chinese.normalize_str(chr(c)) != chr(c):
            sets["bert_chinese"].append(c)
    # StripAccents drops combining marks (Mn, Mc, Me); BertNormalizer only Mn.
    strip = N.StripAccents()
    sets["combining_mark"] = [c for c in CPS if strip.normalize_str(chr(c)) == ""]
    bert_strip = N.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False
    )
    sets["nonspacing_mark"] = [c for c in CPS if bert_strip.normalize_str(chr(c)) == ""]
    nfd, nfkd = N.NFD(), N.NFKD()
    sets["nfd_changes"] = [c for c in CPS if nfd.normalize_str(chr(c)) != chr(c)]
    sets["nfkd_changes"] = [c for c in CPS if nfkd.normalize_str(chr(c)) != chr(c)]
    ws, bert, digits, split = (
        P.Whitespace(),
        P.BertPreTokenizer(),
        P.Digits(True),
        P.WhitespaceSplit(),
    )
    sets["onig_word"], sets["onig_space"] = [], []
    sets["bert_punct"], sets["numeric"], sets["rust_space"] = [], [], []
    for c in CPS:
        ch = chr(c)
        got = pieces(ws, "a" + ch)
        if got == ["a" + ch]:
            sets["onig_word"].append(c)
        elif got == ["a"]:
            sets["onig_space"].append(c)
        if len(pieces(bert, "a" + ch + "a")) == 3:
            sets["bert_punct"].append(c)
        if len(pieces(digits, "a" + ch + "a")) == 3:
            sets["numeric"].append(c)
        if len(pieces(split, "a" + ch + "a")) == 2:
            sets["rust_space"].append(c)
    lower = N.Lowercase()
    lows = []
    for c in CPS:
        if c < 128:
            continue
        out = lower.normalize_str(chr(c))
        if out != chr(c):
            if len(out) > 2:
                raise SystemExit(f"lowercase of U+{c:04X} has {len(out)} chars")
            lows.append((c, ord(out[0]), ord(out[1]) if len(out) > 1 else 0))
    words = [int.from_bytes(b"TPHF", "little"), 1, len(sets)]
    for name, points in sets.items():
        raw = name.encode("ascii")
        raw += b"\0" * (-len(raw) % 4)
        words.append(len(name))
        words.extend(struct.unpack(f"<{len(raw) // 4}I", raw))
        rs = ranges(points)
        words.append(len(rs))
        for a, b in rs:
            words.extend((a, b))
        print(f"{name}: {len(points)} code points, {len(rs)} ranges")
    words.append(len(lows))
    for triple in lows:
        words.extend(triple)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(struct.pack(f"<{len(words)}I", *words))
    print(f"lowercase: {len(lows)} mappings; tokenizers {tokenizers.__version__}; wrote {OUT}")


if __name__ == "__main__":
    main()
