"""Tables and checks with one owner: GPT-2's byte alphabet is Rust's (Python reads it
through ``_native.gpt2_byte_alphabet``), the SentencePiece model-type check is the
engine's (the ``.model`` reader does not repeat it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sp_proto as pb
import tokenpact as tp
from tokenpact import _native
from tokenpact.errors import ArtifactError
from tokenpact.formats.hf_json import byte_decoder, byte_encoder


def _gpt2_bytes_to_unicode() -> dict[int, str]:
    """OpenAI's ``bytes_to_unicode`` (gpt-2 ``encoder.py``), written out as published."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs], strict=True))


def test_byte_alphabet_is_gpt2s() -> None:
    assert byte_encoder() == _gpt2_bytes_to_unicode()
    assert byte_decoder() == {c: b for b, c in _gpt2_bytes_to_unicode().items()}
    assert _native.gpt2_byte_alphabet() == "".join(_gpt2_bytes_to_unicode()[b] for b in range(256))


def test_byte_alphabet_matches_a_real_byte_level_vocabulary() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    alphabet = tokenizers.pre_tokenizers.ByteLevel.alphabet()
    assert set(alphabet) == set(_native.gpt2_byte_alphabet())


@pytest.mark.parametrize("model_type", [0, 5, 7])
def test_unknown_sentencepiece_model_type_is_refused_once(tmp_path: Path, model_type: int) -> None:
    # Unigram, BPE, word and char (1-4) load; any other type is refused by the one
    # reader both entry points share, with the same message.
    path = tmp_path / "m.model"
    pieces = [("<unk>", 0.0, pb.UNKNOWN), ("a", -1.0, pb.NORMAL)]
    path.write_bytes(pb.model(pieces, model_type=model_type))
    for load in (tp.Tokenizer.load, tp.Tokenizer.from_sentencepiece):
        with pytest.raises(ArtifactError, match=rf"model_type {model_type} is not one of"):
            load(path)
