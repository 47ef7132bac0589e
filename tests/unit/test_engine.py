"""The one native engine class (src/engine.rs, src/py/engine.rs): both runtimes behind
``_native.Engine``, declared capabilities, and the trust gate for untrusted spans."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sp_proto as pb
from tokenpact import Tokenizer, _native
from tokenpact.encoding import byte_to_char_offsets
from tokenpact.errors import ConfigError

SPECIALS = ["<|bos|>", "<|eot|>"]


def _byte_bpe() -> Tokenizer:
    return Tokenizer.from_merges([(104, 101), (256, 108)], special_tokens=SPECIALS)


def _sentencepiece(tmp_path: Path) -> Tokenizer:
    pieces = [("<unk>", 0.0, pb.UNKNOWN), ("<s>", 0.0, pb.CONTROL), ("</s>", 0.0, pb.CONTROL)]
    pieces += [(f"<0x{b:02X}>", 0.0, pb.BYTE) for b in range(256)]
    pieces += [("\u2581", -2.0, pb.NORMAL), ("h", -3.0, pb.NORMAL), ("e", -3.0, pb.NORMAL)]
    pieces += [("he", -1.0, pb.NORMAL), ("\u2581he", -0.5, pb.NORMAL), ("l", -3.0, pb.NORMAL)]
    path = tmp_path / "tiny.model"
    path.write_bytes(pb.model(pieces, byte_fallback=True, add_dummy_prefix=True))
    return Tokenizer.load(path)


def test_both_runtimes_are_one_class_with_declared_capabilities(tmp_path: Path) -> None:
    bpe, sp = _byte_bpe().engine, _sentencepiece(tmp_path).engine
    assert type(bpe) is type(sp) is _native.Engine
    assert _native.BpeCore is _native.Engine  # the constructors' old home still works
    assert (bpe.kind, bpe.model_kind) == ("pipeline", "bpe")
    assert (sp.kind, sp.model_kind) == ("sentencepiece", "unigram")
    assert isinstance(bpe.capabilities, frozenset)
    shared = {"offsets", "untrusted_spans", "incremental_decode"}
    assert shared <= bpe.capabilities and shared <= sp.capabilities
    assert {"merges", "pretokenize", "streaming_encode_pretokens", "added_token_flags"} <= (
        bpe.capabilities
    )
    assert not {"normalize", "sentencepiece_decode", "byte_fallback"} & bpe.capabilities
    assert {"normalize", "sentencepiece_decode", "byte_fallback"} <= sp.capabilities
    # A Unigram .model: no pre-token cut; no piece holds U+2581 past its start, so a
    # sentence may be cut before a space (the Viterbi score carried across the cut).
    assert not {"merges", "pretokenize", "streaming_encode_pretokens"} & sp.capabilities
    assert "streaming_encode_sentencepiece" in sp.capabilities


def test_methods_outside_a_capability_fail_with_a_typed_error(tmp_path: Path) -> None:
    bpe, sp = _byte_bpe().engine, _sentencepiece(tmp_path).engine
    with pytest.raises(ConfigError, match="capabilities"):
        bpe.normalize("hello")
    with pytest.raises(ConfigError, match="capabilities"):
        _native.core_pretokenize(sp, "hello")
    with pytest.raises(ConfigError, match="does not run on a sentencepiece engine"):
        _native.StreamingCore(sp, "pretokens", "gpt2")
    # Lookups every engine answers.
    assert sp.merges() == [] and sp.merge_result(3, 4) is None
    assert bpe.merge_result(104, 101) == 256
    assert bpe.piece_to_id("he") == 256 and bpe.piece_to_id("<|eot|>") is not None
    assert bpe.piece_to_id("zzz") is None
    assert sp.piece_to_id("he") == 262 and sp.piece_to_id("zzz") == 0  # <unk>


@pytest.mark.parametrize("runtime", ["bpe", "sentencepiece"])
def test_offset_lists_equal_numpy_offsets_on_both_runtimes(tmp_path: Path, runtime: str) -> None:
    """The list path (now taken for SentencePiece too) reports the numpy path's offsets."""
    tok = _byte_bpe() if runtime == "bpe" else _sentencepiece(tmp_path)
    engine = tok.engine
    for text in ["hello", "h\u00e9llo \u4e16\u754c", "", "  he  ", "\U0001f600he"]:
        ids_arr, starts, ends = engine.encode_with_offsets(text)
        for codepoints in (True, False):
            ids, flat = engine.encode_offsets_lists(text, None, None, codepoints)
            assert ids == ids_arr.tolist() == engine.encode(text)
            s, e = (starts, ends) if not codepoints else byte_to_char_offsets(text, starts, ends)
            assert flat == [x for pair in zip(s.tolist(), e.tolist(), strict=True) for x in pair]
        # piece_strs is each ID's bytes read with U+FFFD.
        strs = engine.piece_strs(np.asarray(ids_arr, dtype=np.uint32))
        want = [(engine.token_bytes(i) or b"").decode("utf-8", "replace") for i in ids_arr]
        assert strs == want


NESTED = [[(0, 30)], [(0, 30), (1, 2)], [(1, 2), (0, 30)], [(0, 30), (1, 2), (20, 21)]]


@pytest.mark.parametrize("spans", [*NESTED, [(3, 9), (0, 6)]])
def test_nested_or_unordered_untrusted_spans_never_yield_control_ids(
    spans: list[tuple[int, int]],
) -> None:
    """Regression: the gate binary-searched caller ranges as given; a range nested in
    another (or out of order) let the spelling inside the outer range through."""
    tok = _byte_bpe()
    text = "aaaa<|eot|>bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
    enc = tok.encode_structured(text, allowed_special="all", untrusted_spans=spans)
    assert "control" not in enc.origins
    assert tok.special_tokens["<|eot|>"] not in enc.ids
    trusted = tok.encode_structured(text, allowed_special="all", untrusted_spans=[(0, 4)])
    assert trusted.origins.count("control") == 1


def test_sentencepiece_engine_applies_the_same_gate(tmp_path: Path) -> None:
    tok = _sentencepiece(tmp_path)
    engine = tok.engine
    matcher = _native.SpecialMatcher([("<s>", 1)])
    text = "he<s>he"
    ids, _, _ = engine.encode_with_offsets(text, matcher, None)
    assert 1 in ids.tolist()
    for spans in ([(0, 7), (1, 2)], [(3, 4), (0, 3)]):
        ids, _, _ = engine.encode_with_offsets(text, matcher, spans)
        assert 1 not in ids.tolist(), spans
    with pytest.raises(ConfigError, match="ends before it starts"):
        engine.encode_with_offsets(text, matcher, [(4, 2)])


def test_incremental_decoder_runs_on_either_runtime(tmp_path: Path) -> None:
    for tok in (_byte_bpe(), _sentencepiece(tmp_path)):
        ids = tok.encode("hello he")
        dec = _native.IncrementalDecoderCore(tok.engine, True, [])
        text = "".join(dec.push_one(i) for i in ids) + dec.finish()
        assert text == tok.decode(ids)
