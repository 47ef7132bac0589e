"""Opt-in long run: the newer tokenizer.json forms against ``tokenizers`` on the whole
benchmark corpus (``TOKENPACT_LONG_CONFORMANCE=1``; skipped when the corpus is absent).

Forms: SentencePiece BPE converted by transformers (character BPE, byte fallback,
Prepend/Replace normalizer, Replace/ByteFallback/Fuse/Strip decoder), HF's
SentencePieceUnigramTokenizer (Nmt + NFKC + Replace, Metaspace, Unigram) and
SentencePieceBPETokenizer (NFKC, Metaspace, BPE with unknowns), and a byte-level BPE
with ``add_prefix_space``. IDs and offsets must be identical on every document.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import peer_data
from .test_hf_char_bpe_conformance import converted_sentencepiece

tokenizers = pytest.importorskip("tokenizers")
BENCH_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

pytestmark = pytest.mark.skipif(
    os.environ.get("TOKENPACT_LONG_CONFORMANCE") != "1",
    reason="long run on ../shared/corpus: set TOKENPACT_LONG_CONFORMANCE=1",
)


def _trained(cls_name: str, train: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    implementations = __import__("tokenizers.implementations", fromlist=[cls_name])
    tok = getattr(implementations, cls_name)(**kwargs)
    tok.train_from_iterator(
        peer_data.harvest_texts(seed=4),
        vocab_size=8000,
        special_tokens=["<unk>", "<s>", "</s>"],
        show_progress=False,
        **(train or {}),
    )
    return dict(json.loads(tok.to_str()))


FORMS: dict[str, Callable[[], dict[str, Any]]] = {
    "mistral-v3-converted": lambda: converted_sentencepiece(".model.v3"),
    "sp-unigram": lambda: _trained("SentencePieceUnigramTokenizer", {"unk_token": "<unk>"}),
    "sp-bpe": lambda: _trained("SentencePieceBPETokenizer"),
    "byte-level-prefix-space": lambda: _trained("ByteLevelBPETokenizer", add_prefix_space=True),
}


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    path = BENCH_CORPUS / "bench-mixed.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent (it sits beside the checkout on developer machines)")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


@pytest.mark.parametrize("name", list(FORMS))
def test_ids_and_offsets_identical_on_benchmark_corpus(
    name: str, corpus: list[str], tmp_path: Path
) -> None:
    import tokenpact as tp

    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(FORMS[name](), ensure_ascii=False), encoding="utf-8")
    peer = tokenizers.Tokenizer.from_file(str(path))
    peer.no_truncation()
    peer.no_padding()
    ours = tp.Tokenizer.load(path)
    theirs = peer.encode_batch(corpus, add_special_tokens=False)
    differ = []
    for text, ref in zip(corpus, theirs, strict=True):
        enc = ours.encode_structured(text, allowed_special="all")
        if enc.ids != ref.ids or enc.offsets != [tuple(o) for o in ref.offsets]:
            differ.append(text[:60])
    assert not differ, f"{name}: {len(differ)} of {len(corpus)} documents differ: {differ[:3]}"
