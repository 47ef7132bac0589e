"""Write SentencePiece's built-in normalization rules as data for ``train_unigram``.

SentencePiece compiles its named rules (``nmt_nfkc``, ``nfkc``, ...) into a
``precompiled_charsmap``: a Darts-clone double array of rewrite rules that every
``.model`` trained with the rule carries in its NormalizerSpec. ``train_unigram``
(normalization="nmt_nfkc") writes the same blob into its ``.model`` and normalizes its
training text with it, so the model it writes normalizes exactly as SentencePiece's own.

This script asks ``sentencepiece`` itself for each blob (by training a tiny model with
the rule and reading the charsmap back from the ModelProto) and stores it xz-compressed
in python/tokenpact/train/sp_rules/<name>.charsmap.xz. The tables are SentencePiece's
(Apache-2.0), derived from Unicode NFKC. Run: python scripts/gen_sp_charsmaps.py
"""

from __future__ import annotations

import io
import lzma
import sys
from pathlib import Path

import sentencepiece as spm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from tokenpact.formats.sentencepiece_model import parse_model  # noqa: E402

RULES = ("nmt_nfkc", "nfkc")
OUT = ROOT / "python" / "tokenpact" / "train" / "sp_rules"


def charsmap(rule: str) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["a b c d e f g h"] * 20),
        model_writer=model,
        model_type="char",
        vocab_size=12,
        normalization_rule_name=rule,
        minloglevel=2,
    )
    spec = parse_model(model.getvalue(), Path(f"<{rule}>")).normalizer_spec
    assert spec.name == rule and spec.precompiled_charsmap, rule
    return spec.precompiled_charsmap


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for rule in RULES:
        blob = charsmap(rule)
        (OUT / f"{rule}.charsmap.xz").write_bytes(lzma.compress(blob, preset=9))
        print(f"{rule}: {len(blob):,} bytes (sentencepiece {spm.__version__})")


if __name__ == "__main__":
    main()
