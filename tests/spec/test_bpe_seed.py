"""Seed 000 worked examples for byte-level BPE, with the seed's exact numbers.

0x06: the three-merge training trace, the "aaaa" trainer that runs out of pairs, the
merge cap. 0x07: abc / abab encoding records, the improper dictionary, split UTF-8 bytes
of the euro sign. Each example runs against the reference (``reference_*`` tests) and the
engine (tests taking the ``tp`` fixture).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import pytest

from tokenpact.errors import DecodeError
from tokenpact.reference import (
    decode_bytes_reference,
    encode_reference,
    encode_text_reference,
    iter_encode_states,
    merges_to_rank,
    tiktoken_merge_rank,
    train_bpe_reference,
    vocab_from_merges,
)

# One pre-token per line, so each seed text is exactly one training unit.
UNIT = r"[^\n]+"
A, B, C, D = 97, 98, 99, 100  # the seed's addresses 0..3, as byte IDs

# 0x06: [a a a b] x2 and [d a a a b a c] x1.
TRACE_TEXTS = ["aaab", "aaab", "daaabac"]
TRACE_MERGES = [(A, A), (A, B), (256, 257)]  # seed: (0,0)->4, (0,1)->5, (4,5)->6
TRACE_SCORES = [6, 3, 3]
TRACE_LENGTHS = [15, 12, 9, 6]

# 0x07 synthetic records: ab, bc, ab+c, ab+ab.
ABC_MERGES = [(A, B), (B, C), (256, C), (256, 256)]
EURO = "\u20ac"  # UTF-8 E2 82 AC
EURO_MERGES = [*ABC_MERGES, (0xE2, 0x82)]  # the fifth merge gets the seed's ID 260


def _lengths(training: dict) -> list[int]:
    lengths = [training["initial_length"]]
    for replaced in training["merge_replacements"]:
        lengths.append(lengths[-1] - replaced)
    return lengths


def _train(tp: ModuleType, texts: Sequence[str], **options):
    options.setdefault("pattern", UNIT)
    options.setdefault("special_tokens", ())
    return tp.train_bpe(list(texts), **options)


# ---- 0x06 three-merge trace -------------------------------------------------------------


def test_reference_three_merge_trace():
    result = train_bpe_reference(TRACE_TEXTS, vocab_size=256 + 4, pattern=UNIT, min_frequency=2)
    assert result.merges == TRACE_MERGES
    assert result.merge_scores == TRACE_SCORES
    # (a,a) scores 6 from overlapping windows but only 3 weighted rewrites are legal.
    assert result.merge_replacements == [3, 3, 3]
    assert result.lengths == TRACE_LENGTHS
    assert result.stop_reason == "below_min_frequency"
    assert [result.vocab[i] for i in (256, 257, 258)] == [b"aa", b"ab", b"aaab"]


def test_engine_three_merge_trace(tp: ModuleType):
    tok = _train(tp, TRACE_TEXTS, vocab_size=256 + 4, min_frequency=2)
    training = tok.training
    assert tok.merges == TRACE_MERGES
    assert training["merge_scores"] == TRACE_SCORES
    assert training["merge_replacements"] == [3, 3, 3]
    assert training["initial_length"] == 15
    assert _lengths(training) == TRACE_LENGTHS
    assert training["stop_reason"] == "below_min_frequency"
    assert training["merges_learned"] == 3
    assert training["merges_requested"] == 4  # M_cap = 260 - 256 - 0 reserved rows
    assert training["corpus"]["documents"] == 3
    assert training["corpus"]["bytes"] == 15
    # V_final = V_base + M_actual + V_reserved: the unused fourth row is not created.
    assert tok.vocab_size == 256 + 3
    assert [tok.token_bytes(i) for i in (256, 257, 258)] == [b"aa", b"ab", b"aaab"]


def test_trace_final_sequences_equal_encodings(tp: ModuleType):
    """The rewritten training units (Z x2; dZac x1) are what the encoder produces."""
    rank = merges_to_rank(TRACE_MERGES)
    tok = _train(tp, TRACE_TEXTS, vocab_size=256 + 4)
    for text, want in (("aaab", [258]), ("daaabac", [D, 258, A, C])):
        assert encode_text_reference(text, UNIT, rank) == want
        assert tok.encode(text) == want


def test_subword_nmt_tie_break_differs_at_rank_one(tp: ModuleType):
    """At rank 1, C(a,b) = C(aa,a) = 3: the numeric rule takes (a,b), subword-nmt (aa,a)."""
    want = [(A, A), (256, A), (257, B)]  # aa, aaa, aaab
    result = train_bpe_reference(TRACE_TEXTS, vocab_size=260, pattern=UNIT, tie_break="subword_nmt")
    assert result.merges == want
    assert result.merge_scores == [6, 3, 3]
    assert result.stop_reason == "below_min_frequency"
    tok = _train(tp, TRACE_TEXTS, vocab_size=260, tie_break="subword_nmt")
    assert tok.merges == want
    assert tok.training["merge_scores"] == [6, 3, 3]


# ---- 0x06 stopping ----------------------------------------------------------------------


def test_aaaa_runs_out_of_pairs(tp: ModuleType):
    """aaaa -> [aa, aa] -> [aaaa]; a third merge would find no pair at all."""
    want = {
        "merges": [(A, A), (256, 256)],
        "merge_scores": [3, 1],
        "merge_replacements": [2, 1],
        "initial_length": 4,
        "stop_reason": "no_pairs_left",
    }
    result = train_bpe_reference(["aaaa"], vocab_size=256 + 8, pattern=UNIT, min_frequency=1)
    assert {key: getattr(result, key) for key in want} == want
    tok = _train(tp, ["aaaa"], vocab_size=256 + 8, min_frequency=1)
    got = {key: tok.training[key] for key in want if key != "merges"}
    assert {"merges": tok.merges, **got} == want
    assert tok.training["merges_learned"] == 2
    assert tok.vocab_size == 258
    assert tok.encode("aaaa") == [257]


def test_aaaa_with_min_frequency_two_stops_after_one_merge(tp: ModuleType):
    result = train_bpe_reference(["aaaa"], vocab_size=256 + 8, pattern=UNIT, min_frequency=2)
    assert (result.merges, result.stop_reason) == ([(A, A)], "below_min_frequency")
    tok = _train(tp, ["aaaa"], vocab_size=256 + 8, min_frequency=2)
    assert (tok.merges, tok.training["stop_reason"]) == ([(A, A)], "below_min_frequency")


def test_merge_cap_stops_with_vocab_size_reached(tp: ModuleType):
    result = train_bpe_reference(TRACE_TEXTS, vocab_size=256 + 2, pattern=UNIT)
    assert (result.merges, result.stop_reason) == (TRACE_MERGES[:2], "vocab_size_reached")
    tok = _train(tp, TRACE_TEXTS, vocab_size=256 + 2)
    assert tok.merges == TRACE_MERGES[:2]
    assert tok.training["stop_reason"] == "vocab_size_reached"
    assert tok.training["merges_learned"] == tok.training["merges_requested"] == 2


def test_reserved_special_rows_count_against_the_cap(tp: ModuleType):
    """M_cap = V_target - V_base - V_reserved; specials follow the merges in declared order."""
    specials = tp.DEFAULT_SPECIAL_TOKENS
    n = len(specials)
    result = train_bpe_reference(TRACE_TEXTS, vocab_size=256 + 2 + n, pattern=UNIT, n_special=n)
    assert result.merges == TRACE_MERGES[:2]
    tok = _train(tp, TRACE_TEXTS, vocab_size=256 + 2 + n, special_tokens=specials)
    assert tok.merges == TRACE_MERGES[:2]
    assert tok.training["stop_reason"] == "vocab_size_reached"
    assert tok.vocab_size == 256 + 2 + n
    assert tok.special_tokens == {s.content: 258 + i for i, s in enumerate(specials)}


def test_max_token_length_makes_long_pairs_ineligible(tp: ModuleType):
    """With pieces capped at 2 bytes only byte pairs merge; then no eligible pair remains."""
    options = {"vocab_size": 256 + 10, "min_frequency": 1, "max_token_length": 2}
    result = train_bpe_reference(TRACE_TEXTS, pattern=UNIT, **options)
    assert result.merges == [(A, A), (A, B), (A, C)]
    assert result.merge_scores == [6, 3, 1]
    assert result.stop_reason == "no_pairs_left"
    tok = _train(tp, TRACE_TEXTS, **options)
    assert tok.merges == result.merges
    assert tok.training["merge_scores"] == result.merge_scores
    assert tok.training["stop_reason"] == "no_pairs_left"


# ---- 0x07 encoding records --------------------------------------------------------------


def test_reference_abc_and_abab_records():
    rank = merges_to_rank(ABC_MERGES)
    assert list(iter_encode_states(b"abc", rank)) == [[A, B, C], [256, C], [258]]
    assert list(iter_encode_states(b"abab", rank)) == [
        [A, B, A, B],
        [256, A, B],
        [256, 256],
        [259],
    ]
    vocab = vocab_from_merges(ABC_MERGES)
    assert [vocab[i] for i in range(256, 260)] == [b"ab", b"bc", b"abc", b"abab"]


def test_engine_abc_and_abab(tp: ModuleType):
    tok = tp.Tokenizer.from_merges(ABC_MERGES, pattern=UNIT)
    assert tok.encode("abc") == [258]
    assert tok.encode("abab") == [259]
    # Rank 1 alone still applies when rank 0 cannot: b c -> bc.
    assert tok.encode("bc") == [257]
    assert [tok.token_bytes(i) for i in range(256, 260)] == [b"ab", b"bc", b"abc", b"abab"]
    assert tok.vocab_size == 260


def test_transport_chunks_are_not_token_boundaries(tp: ModuleType):
    """a | b | c encoded chunk by chunk gives [97, 98, 99], not the canonical [258]."""
    tok = tp.Tokenizer.from_merges(ABC_MERGES, pattern=UNIT)
    chunked = [i for chunk in "abc" for i in tok.encode(chunk)]
    assert chunked == [A, B, C] != tok.encode("abc")
    assert tok.decode(chunked) == tok.decode([258]) == "abc"


def _one_pass_schedule(piece: bytes, rules: list[tuple[tuple[int, int], int]]) -> list[int]:
    """Visit each rule once in rank order and apply it exhaustively (0x07's contrast)."""
    ids = list(piece)
    for pair, new_id in rules:
        out: list[int] = []
        i = 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(new_id)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids


def test_reference_improper_dictionary_uses_dynamic_priority():
    """rank 0: (256, a) -> 257 depends on rank 1: (a, a) -> 256."""
    rank = {(256, A): (0, 257), (A, A): (1, 256)}
    assert encode_reference(b"aaaa", rank) == [257, A]
    assert _one_pass_schedule(b"aaaa", [((256, A), 257), ((A, A), 256)]) == [256, 256]


def test_engine_improper_dictionary_uses_dynamic_priority(tp: ModuleType):
    """Seed 0x07's records with explicit IDs: rank 0 (256, a) -> 257, rank 1 (a, a) -> 256."""
    vocab = [bytes([b]) for b in range(256)] + [b"aa", b"aaa"]
    records = [(256, A, 257), (A, A, 256)]
    tok = tp.Tokenizer.from_merge_records(records, vocab=vocab, pattern=UNIT)
    assert tok.encode("aaaa") == [257, A]
    assert tok.decode_bytes([257, A]) == b"aaaa"
    # The same dictionary as ranked merges (new id = 256 + rank) is rejected: rank 0
    # would use an ID that does not exist yet.
    with pytest.raises(tp.ArtifactError, match="does not exist yet"):
        tp.Tokenizer.from_merges([(257, A), (A, A)], pattern=UNIT)


# ---- 0x07 split UTF-8 -------------------------------------------------------------------


def test_reference_euro_split_bytes():
    rank = merges_to_rank(EURO_MERGES)
    ids = encode_text_reference(EURO, "gpt4", rank)
    assert ids == [260, 0xAC]
    vocab = vocab_from_merges(EURO_MERGES)
    assert decode_bytes_reference([260], vocab) == b"\xe2\x82"
    assert decode_bytes_reference(ids, vocab).decode("utf-8") == EURO


def test_engine_euro_split_bytes(tp: ModuleType):
    tok = tp.Tokenizer.from_merges(EURO_MERGES, pattern="gpt4")
    ids = tok.encode(EURO)
    assert ids == [260, 172]
    assert tok.decode_bytes([260]) == b"\xe2\x82"
    with pytest.raises(DecodeError):
        tok.decode([260])
    with pytest.raises(DecodeError):
        tok.decode([260], errors="strict")
    assert tok.decode([260], errors="replace") == "\ufffd"
    assert tok.decode_bytes(ids) == b"\xe2\x82\xac"
    assert tok.decode(ids) == EURO
    # Decoding token by token inserts replacement characters the whole stream does not have.
    per_token = "".join(tok.decode([i], errors="replace") for i in ids)
    assert per_token == "\ufffd\ufffd" != EURO


# ---- tiktoken rank semantics (reference only; conformance tests cover real files) -------


def test_reference_tiktoken_rank_semantics():
    """A pair merges when its concatenated bytes have a rank; that rank is ID and priority."""
    ranks = [b"bc", *(bytes([i]) for i in range(256)), b"ab", b"abc", b"xyz"]
    table = tiktoken_merge_rank(ranks)
    assert table.byte_ids[A] == A + 1  # single bytes sit after b"bc"
    plain = {"byte_ids": table.byte_ids}
    tiktoken = {**plain, "piece_ids": table.piece_ids, "whole_piece_first": True}
    # bc (rank 0) beats ab (rank 257); then a + bc has rank 258.
    assert encode_reference(b"abc", table.merge_rank, **plain) == [258]
    # xyz is ranked but no split of it is: only the whole-piece lookup finds it.
    assert encode_reference(b"xyz", table.merge_rank, **plain) == [ord("x") + 1, 122, 123]
    assert encode_reference(b"xyz", table.merge_rank, **tiktoken) == [259]
    # Equal ranks: the leftmost occurrence merges first; abab itself has no rank.
    assert encode_reference(b"abab", table.merge_rank, **tiktoken) == [257, 257]
