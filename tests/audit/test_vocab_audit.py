"""Static vocabulary audit: classes, proofs of unreachability, witnesses, exposure."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.audit.token_table import token_table
from tokenpact.audit.vocab import CLASSES, audit_vocabulary, exposure_counts, exposure_summary


def test_shadowed_merge_is_unreachable_with_its_proof(tp: Any) -> None:
    # bc (rank 0) always fires before ab (rank 1), so abc = ab + c can never form.
    tok = tp.Tokenizer.from_merges([(98, 99), (97, 98), (257, 99)], special_tokens=())
    audit = audit_vocabulary(tok)
    assert audit.class_of(258) == "unreachable"
    assert audit.proofs[258] == [97, 256]
    assert tok.encode("abc") == [97, 256]
    assert audit.class_of(256) == "alone" and audit.class_of(257) == "alone"


def test_ignore_merges_comes_from_the_model_not_the_source(tp: Any) -> None:
    # The same shadowed merge as merge records; with Hugging Face's ignore_merges a whole
    # pre-token is looked up first, so abc is reachable. Built in memory: no source
    # record says ignore_merges, the model does.
    from tokenpact.core import MergeRecords

    vocab = [bytes([b]) for b in range(256)] + [b"bc", b"ab", b"abc"]
    records = [(98, 99, 256), (97, 98, 257), (257, 99, 258)]
    plain = tp.Tokenizer.from_merge_records(records, vocab=vocab)
    whole = tp.Tokenizer(plain.spec.replace(model=MergeRecords(vocab, records, True)))
    assert plain.source == whole.source == {}
    assert plain.encode("abc") == [97, 256] and whole.encode("abc") == [258]
    assert audit_vocabulary(plain).class_of(258) == "unreachable"
    audit = audit_vocabulary(whole)
    assert audit.class_of(258) != "unreachable"
    assert "ignore_merges" in audit.proof_applies


def test_bytes_no_utf8_text_contains_are_unreachable(tp: Any) -> None:
    audit = audit_vocabulary(tp.Tokenizer.from_merges([], special_tokens=()))
    for byte in (0xC0, 0xC1, 0xF5, 0xFF):
        assert audit.class_of(byte) == "unreachable"
    for byte in (0x41, 0x80, 0xC3, 0xE4, 0xF0):
        assert audit.class_of(byte) in ("alone", "context")
    assert audit.class_of(0x41) == "alone"
    assert audit.witnesses[0xE4] and 0xE4 in tp.Tokenizer.from_merges([]).encode(
        audit.witnesses[0xE4]
    )


@pytest.fixture(scope="module")
def trained(tp: Any) -> Any:
    from tokenpact.corpus import builtin_corpus

    texts = [d.text for d in builtin_corpus(max_bytes=120_000)]
    return tp.train_bpe(texts, vocab_size=900, special_tokens=["<|endoftext|>"])


@pytest.fixture(scope="module")
def trained_audit(trained: Any) -> Any:
    return audit_vocabulary(trained)


@settings(max_examples=60)
@given(st.text(max_size=80))
def test_no_emitted_id_is_ever_classified_unreachable(
    trained: Any, trained_audit: Any, text: str
) -> None:
    for token_id in trained.encode(text):
        assert trained_audit.class_of(token_id) != "unreachable"


def test_every_witness_really_emits_its_id(trained: Any, trained_audit: Any) -> None:
    for token_id, text in trained_audit.witnesses.items():
        assert token_id in trained.encode(text)
    for token_id in trained_audit.ids("alone")[:200].tolist():
        assert trained.encode(trained.token_bytes(token_id).decode()) == [token_id]
    counts = trained_audit.counts()
    assert sum(counts.values()) == trained.vocab_size
    assert counts["special"] == 1


def test_exposure_histogram_and_never_seen(trained: Any) -> None:
    ids, _ = trained.encode_batch_flat(["the the the", "ok"])
    exposure = exposure_counts(ids, trained.vocab_size)
    assert exposure.sum() == ids.size
    audit = audit_vocabulary(trained, exposure=exposure)
    summary = exposure_summary(exposure, audit.classes)
    assert sum(summary["histogram"]["counts"]) == trained.vocab_size
    assert summary["never_seen"] == int((exposure == 0).sum())
    assert sum(summary["never_seen_by_class"].values()) == summary["never_seen"]
    assert set(audit.summary(token_table(trained))["classes"]) == set(CLASSES)


def test_llama3_tokenizer_json_has_ids_no_text_reaches(tp: Any) -> None:
    """Llama 3.2's tokenizer.json (ignore_merges=false) shadows some merges; the HF peer
    agrees that the text of each such ID encodes to other IDs."""
    from tests.conformance import peer_data
    from tokenizers import Tokenizer as HFTokenizer

    path = peer_data.llama3_hf_json()
    tok = tp.Tokenizer.load(path)
    audit = audit_vocabulary(tok)
    unreachable = audit.ids("unreachable")
    assert unreachable.size > 100
    peer = HFTokenizer.from_file(str(path))
    valid = [int(i) for i in unreachable if not audit.partial_utf8[i]][:50]
    assert valid
    for token_id in valid:
        text = tok.token_bytes(token_id).decode("utf-8")
        assert token_id not in peer.encode(text, add_special_tokens=False).ids
    # Loaded from the tiktoken-format file, whole pre-tokens are looked up first, so the
    # same byte strings are reachable there: the proof is about the file's semantics.
    tik = tp.Tokenizer.from_tiktoken(peer_data.llama3_tiktoken_model(), pattern="llama3")
    assert tik.encode(tok.token_bytes(valid[0]).decode()) == [valid[0]]


def test_large_vocabulary_classifies_every_id(tp: Any) -> None:
    from tests.conformance import peer_data

    tok = tp.Tokenizer.load(peer_data.offline_counter_files("qwen-3.5").tokenizer_json)
    assert tok.vocab_size > 240_000
    audit = audit_vocabulary(tok)
    counts = audit.counts()
    assert sum(counts.values()) == tok.vocab_size
    assert counts["alone"] > 0.99 * tok.vocab_size
    assert np.all(audit.classes < len(CLASSES))


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_non_bpe_models_get_sound_witnesses(tp: Any, kind: str) -> None:
    from tests.conformance import peer_data

    path = (
        peer_data.minilm_tokenizer_json() if kind == "wordpiece" else peer_data.mistral_models()[-1]
    )
    tok = tp.Tokenizer.load(path)
    audit = audit_vocabulary(tok)
    counts = audit.counts()
    assert counts["unreachable"] == 0  # no proof is claimed outside rank BPE
    assert counts["alone"] > 0.4 * tok.vocab_size
    for token_id, text in list(audit.witnesses.items())[:300]:
        assert token_id in tok.encode(text)
    if kind == "wordpiece":
        assert audit.class_of(tok.token_id("##ing")) == "context"
    else:
        assert counts["byte_fallback"] == 256


@settings(max_examples=60)
@given(
    st.lists(st.tuples(st.integers(97, 100), st.integers(97, 100)), max_size=8),
    st.binary(min_size=1, max_size=10).map(lambda b: bytes(97 + x % 4 for x in b)),
)
def test_proof_bpe_equals_the_reference_oracle(pairs: list[tuple[int, int]], piece: bytes) -> None:
    from tokenpact.audit.vocab import bpe_own_bytes
    from tokenpact.reference.bpe import encode_reference, merges_to_rank

    table = merges_to_rank(pairs)
    assert bpe_own_bytes(piece, table, list(range(256))) == encode_reference(piece, table)
