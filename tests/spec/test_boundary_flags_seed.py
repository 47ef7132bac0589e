"""BOS/EOS as explicit flags, independent of the post-processor (seed 0x02, 0x09 failure
lab: no double BOS, truncation must not remove the EOS)."""

from __future__ import annotations

import pytest

from tokenpact import SpecialToken, Tokenizer
from tokenpact.contract import encode_document
from tokenpact.errors import ConfigError, ContractError

TOK_HASH = "sha256:" + "a" * 64


def _tokenizer(post: bool) -> Tokenizer:
    tok = Tokenizer.from_merges(
        [], special_tokens=[SpecialToken("<s>", "bos"), SpecialToken("</s>", "eos")]
    )
    template = {"type": "prepend_bos", "token": "<s>"} if post else None
    return Tokenizer(tok.spec.replace(post_processor=template))


BOS, EOS = 256, 257


def test_flags_work_without_a_post_processor() -> None:
    tok = _tokenizer(post=False)
    content = tok.encode("abc")
    assert content == [97, 98, 99]
    assert tok.encode("abc", bos=True) == [BOS, *content]
    assert tok.encode("abc", eos=True) == [*content, EOS]
    assert tok.encode("abc", bos=True, eos=False) == [BOS, *content]
    assert tok.encode("abc", bos=True, eos=True) == [BOS, *content, EOS]
    # add_special_tokens without a template adds nothing; the flags still do.
    assert tok.encode("abc", add_special_tokens=True, eos=True) == [*content, EOS]


def test_explicit_flags_win_over_the_template_and_never_double_bos() -> None:
    tok = _tokenizer(post=True)
    content = tok.encode("abc")
    assert tok.encode("abc", add_special_tokens=True) == [BOS, *content]
    # The template already gives a BOS: bos=True adds no second one.
    assert tok.encode("abc", add_special_tokens=True, bos=True) == [BOS, *content]
    # bos=False drops the template's BOS; eos=True appends an EOS it never inserts.
    assert tok.encode("abc", add_special_tokens=True, bos=False) == content
    assert tok.encode("abc", add_special_tokens=True, eos=True) == [BOS, *content, EOS]
    # The flags act without add_special_tokens too.
    assert tok.encode("abc", bos=True) == [BOS, *content]


def test_a_bos_spelled_in_allowed_text_is_not_doubled() -> None:
    tok = _tokenizer(post=True)
    ids = tok.encode("<s>abc</s>", allowed_special="all", add_special_tokens=True, bos=True)
    assert ids == [BOS, 97, 98, 99, EOS]
    assert tok.encode("<s>abc</s>", allowed_special="all", eos=True) == [BOS, 97, 98, 99, EOS]
    # The template alone (HF behaviour) does not look at the text: two BOS.
    assert tok.encode("<s>abc", allowed_special="all", add_special_tokens=True)[:2] == [BOS, BOS]


def test_batch_encoding_takes_the_same_flags() -> None:
    tok = _tokenizer(post=True)
    texts = ["abc", "<s>x", ""]
    for flags in ({"bos": True, "eos": True}, {"add_special_tokens": True, "bos": False}):
        expected = [tok.encode(t, allowed_special="all", **flags) for t in texts]
        assert tok.encode_batch(texts, allowed_special="all", **flags) == expected
    assert tok.encode_batch([""], eos=True) == [[EOS]]


def test_a_flag_needs_its_role() -> None:
    tok = Tokenizer.from_merges([])
    with pytest.raises(ConfigError, match="role 'eos'"):
        tok.encode("abc", eos=True)


def test_encode_document_truncates_content_then_adds_the_eos() -> None:
    tok = _tokenizer(post=True)

    def doc(max_length: int | None, **flags: bool) -> tuple[int, ...]:
        encoded = encode_document(
            tok,
            "abcdef",
            source_id="s",
            document_id="d",
            boundary_policy="bos_eos_each_document",
            tokenizer_hash=TOK_HASH,
            max_length=max_length,
            **flags,
        )
        assert encoded.truncated == (max_length is not None and max_length < 8)
        return encoded.ids

    assert doc(None, bos=True, eos=True) == (BOS, 97, 98, 99, 100, 101, 102, EOS)
    # The EOS is required: the content is cut to make room for both boundaries.
    assert doc(4, bos=True, eos=True) == (BOS, 97, 98, EOS)
    assert doc(4, add_special_tokens=True, eos=True) == (BOS, 97, 98, EOS)
    assert doc(3, eos=True) == (97, 98, EOS)
    with pytest.raises(ContractError, match="no room"):
        doc(1, bos=True, eos=True)


def test_encode_document_content_ending_in_eos_keeps_one_eos_after_cutting() -> None:
    tok = _tokenizer(post=False)
    encoded = encode_document(
        tok,
        "ab",
        source_id="s",
        document_id="d",
        boundary_policy="eos_after_document",
        tokenizer_hash=TOK_HASH,
        max_length=2,
        eos=True,
    )
    assert encoded.ids == (97, EOS)
