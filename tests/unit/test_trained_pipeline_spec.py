"""Trained pipelines: the spec built from components equals the file reader's spec.

The WordPiece and character BPE trainers build their spec from typed components
(``core/lowering.py``: the components are the spec's stages) without parsing a
document; the ``tokenizer.json`` they save is those components' document. Reading
that document back with the ``tokenizer.json`` reader must give the same spec
(canonical config, engine document, split steps, specials) and the same provenance,
for any options.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.components import Pipeline, Regex, decoders, models, normalizers, pre_tokenizers
from tokenpact.core.lowering import pipeline_spec, pre_tokenizer_steps
from tokenpact.errors import ConfigError
from tokenpact.formats.hf_json import hf_document_spec

TEXTS = ["low lower lowest newer wider", "Hello, World! hello world.", "東京 タワー, é è"] * 3
SPECIALS = st.sampled_from(
    [
        ("[UNK]",),
        ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
        ("<unk>", "<|endoftext|>", "<s>"),
    ]
)


def _same(tok: tp.Tokenizer, label: str) -> None:
    files = tok.provenance.files
    config = json.loads(files["tokenizer_config.json"])
    document = json.loads(files["tokenizer.json"])
    spec, provenance = hf_document_spec(document, label=label, config=config)
    assert spec.to_config() == tok.spec.to_config()
    assert spec.stages is not None and tok.spec.stages is not None
    assert spec.engine_document() == tok.spec.engine_document()
    assert spec.engine_steps() == tok.spec.engine_steps()
    assert (spec.pattern, spec.pattern_name) == (tok.spec.pattern, tok.spec.pattern_name)
    assert list(spec.special_tokens) == list(tok.spec.special_tokens)
    assert dict(spec.added_tokens) == dict(tok.spec.added_tokens)
    assert dict(spec.added_token_flags) == dict(tok.spec.added_token_flags)
    assert dict(provenance.source) == dict(tok.provenance.source)
    assert dict(provenance.files) == dict(files)
    again = tp.Tokenizer(spec, provenance=provenance.with_training(tok.training))
    assert again.semantic_hash == tok.semantic_hash
    assert again.release_hash == tok.release_hash
    for text in TEXTS:
        assert again.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


def _specials(names: tuple[str, ...]) -> list[tp.SpecialToken]:
    roles = {"[UNK]": "unk", "<unk>": "unk", "[PAD]": "pad", "[CLS]": "bos", "[SEP]": "eos"}
    return [tp.SpecialToken(n, roles.get(n, "reserved")) for n in names]


@settings(max_examples=12, deadline=None)
@given(
    specials=SPECIALS,
    lowercase=st.booleans(),
    prefix=st.sampled_from(["##", "@@"]),
    size=st.integers(40, 120),
)
def test_wordpiece_spec_equals_reader(
    specials: tuple[str, ...], lowercase: bool, prefix: str, size: int
) -> None:
    tok = tp.train_wordpiece(
        TEXTS,
        vocab_size=size,
        special_tokens=_specials(specials),
        lowercase=lowercase,
        continuing_subword_prefix=prefix,
        min_frequency=1,
    )
    _same(tok, "<train_wordpiece>")


@settings(max_examples=12, deadline=None)
@given(
    specials=SPECIALS,
    lowercase=st.booleans(),
    merges=st.integers(0, 60),
    marker=st.sampled_from(["</w>", "#"]),
)
def test_char_bpe_spec_equals_reader(
    specials: tuple[str, ...], lowercase: bool, merges: int, marker: str
) -> None:
    tok = tp.train_char_bpe(
        TEXTS,
        num_merges=merges,
        special_tokens=_specials(specials),
        lowercase=lowercase,
        end_of_word=marker,
    )
    _same(tok, "<train_char_bpe>")


def test_pre_tokenizer_steps_equal_reader_steps() -> None:
    """Every pre-tokenizer over strings lowers to the reader's steps."""
    from pathlib import Path

    from tokenpact.formats.hf_json import parse_pre_tokenizer

    chain = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(prepend_scheme="first"),
            pre_tokenizers.Whitespace(),
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.BertPreTokenizer(),
            pre_tokenizers.Punctuation(behavior="Removed"),
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.CharDelimiterSplit("|"),
            pre_tokenizers.Split("a.b", behavior="MergedWithNext", invert=True),
            pre_tokenizers.Split(Regex(r"\p{L}+")),
        ]
    )
    steps, byte_level = parse_pre_tokenizer(Path("<x>"), chain.to_config(), byte_level_ok=False)
    assert not byte_level and pre_tokenizer_steps(chain) == steps


def test_lowering_refuses_what_it_cannot_express() -> None:
    wp = models.WordPiece(vocab={"[UNK]": 0, "a": 1})
    with pytest.raises(ConfigError, match="Metaspace"):
        pre_tokenizer_steps(
            pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Metaspace()])
        )
    with pytest.raises(ConfigError, match="ByteLevel"):
        pre_tokenizer_steps(pre_tokenizers.ByteLevel())
    flagged = Pipeline(wp, added_tokens=(tp.components.AddedToken("[UNK]", 0, lstrip=True),))
    with pytest.raises(ConfigError, match="from_components"):
        pipeline_spec(flagged, roles={})
    holes = Pipeline(models.WordPiece(vocab={"[UNK]": 0, "a": 2}), decoder=decoders.WordPiece())
    with pytest.raises(ConfigError, match="no piece"):
        pipeline_spec(holes, roles={})
    lowered = pipeline_spec(
        Pipeline(wp, normalizer=normalizers.Sequence([])), roles={"[UNK]": "unk"}
    )
    assert lowered.normalizer is None


@settings(max_examples=6, deadline=None)
@given(
    byte_fallback=st.booleans(),
    normalization=st.sampled_from(["identity", "nmt_nfkc"]),
    cleanup=st.booleans(),
)
def test_unigram_model_equals_its_model_file(
    byte_fallback: bool, normalization: str, cleanup: bool
) -> None:
    """train_unigram builds its spec from the typed SentencePiece model; the ``.model``
    bytes it saves parse back to that very model (and spec, and hashes)."""
    from pathlib import Path

    from tokenpact.formats.sentencepiece_model import parse_model, sentencepiece_spec

    tok = tp.train_unigram(
        TEXTS * 4,
        vocab_size=300 if byte_fallback else 60,
        byte_fallback=byte_fallback,
        normalization=normalization,
        remove_extra_whitespaces=cleanup,
    )
    data = tok.provenance.files["tokenizer.model"]
    assert parse_model(data, Path("<trained unigram model>")) == tok.spec.sentencepiece_model
    spec, provenance = sentencepiece_spec(data, "<trained unigram model>")
    assert spec.to_config() == tok.spec.to_config()
    assert dict(provenance.source) == dict(tok.provenance.source)
    again = tp.train.UnigramTokenizer(spec, provenance=provenance.with_training(tok.training))
    assert (again.semantic_hash, again.release_hash) == (tok.semantic_hash, tok.release_hash)
