"""Write a SentencePiece Unigram model's pieces and normalized ``bench-mixed`` texts to
one file for ``examples/profile_unigram.rs`` (segmentation timed in Rust alone)::

    python benchmarks/dump_unigram_texts.py MODEL.model 15 /tmp/unigram.dump
    cargo run --release --example profile_unigram -- /tmp/unigram.dump 7

Layout (little-endian): u32 piece count, then per piece u32 byte length, f32 score,
u8 type, the UTF-8 bytes; u32 text count, then per text u32 byte length and the bytes
(normalized by tokenpact, as the encoder sees them).
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path, help="a SentencePiece Unigram .model file")
    parser.add_argument("megabytes", type=float, help="text to dump from bench-mixed")
    parser.add_argument("output", type=Path)
    args = parser.parse_args(argv)

    import tokenpact as tp
    from tokenpact.formats.sentencepiece_model import read_sentencepiece_model

    model = read_sentencepiece_model(args.model)
    tok = tp.Tokenizer.load(args.model)
    texts = common.load_texts(common.corpus_path(), limit_bytes=int(args.megabytes * common.MB))
    with args.output.open("wb") as f:
        f.write(struct.pack("<I", len(model.pieces)))
        for p in model.pieces:
            raw = p.piece.encode("utf-8")
            f.write(struct.pack("<IfB", len(raw), p.score, p.type) + raw)
        f.write(struct.pack("<I", len(texts)))
        for text in texts:
            raw = tok.normalize(text).encode("utf-8")
            f.write(struct.pack("<I", len(raw)) + raw)
    print(f"{len(model.pieces)} pieces, {len(texts)} texts -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
