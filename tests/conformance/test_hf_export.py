"""Our trained tokenizers exported as tokenizer.json load in HF `tokenizers` identically."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from . import peer_data

tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return peer_data.harvest_texts()


@pytest.mark.parametrize("pattern", ["gpt4", "llama3", "gpt2", "o200k"])
def test_exported_tokenizer_json_matches_hf(
    tp: ModuleType, texts: list[str], tmp_path: Path, pattern: str
) -> None:
    tok = tp.train_bpe(texts[::7], vocab_size=1500, pattern=pattern)
    path = tok.export_hf(tmp_path / "tokenizer.json")
    peer = tokenizers.Tokenizer.from_file(str(path))
    ours_again = tp.Tokenizer.load(path)
    mismatches = []
    for text in texts[::3]:
        ids = tok.encode(text)
        ref = peer.encode(text, add_special_tokens=False).ids
        if ids != ref:
            mismatches.append(text[:60])
        assert ours_again.encode(text) == ids
    assert not mismatches, f"{len(mismatches)} texts differ, e.g. {mismatches[:3]}"
    bos = tok.special_tokens["<|bos|>"]
    assert peer.encode("hi there").ids == [bos, *tok.encode("hi there")]
    assert peer.decode(tok.encode("héllo wörld"), skip_special_tokens=False) == "héllo wörld"


def test_tiktoken_rank_tokenizers_refuse_hf_export(tp: ModuleType, tmp_path: Path) -> None:
    tok = tp.Tokenizer.from_tiktoken(peer_data.cl100k_tiktoken(), pattern="gpt4")
    with pytest.raises(tp.ArtifactError, match="export_tiktoken"):
        tok.export_hf(tmp_path)
