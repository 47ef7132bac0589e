"""tokenpact.core: a spec alone rebuilds its tokenizer, declared capabilities are true,
and nothing outside a class sets a Tokenizer's private attributes."""

from __future__ import annotations

import ast
import pickle
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

import pytest

from hash_cases import generated_texts
from tokenpact import _native
from tokenpact.core import (
    Capability,
    ModelKind,
    Provenance,
    TokenizerSpec,
    build_engine,
    capabilities,
)

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "tokenpact"
TEXTS = [*generated_texts(40), "héllo <|eot|> wörld", "", "  \n\t x", "日本語のテキスト"]


def _builders(tp: ModuleType) -> dict[str, Callable[[], Any]]:
    texts = generated_texts(200)
    return {
        "merge_ranks": lambda: tp.train_bpe(texts, vocab_size=300, pattern="gpt4"),
        "tiktoken_ranks": lambda: tp.Tokenizer.from_ranks(
            [bytes([b]) for b in range(256)] + [b"th", b"the"],
            pattern="gpt2",
            special_tokens={"<|endoftext|>": 258},
        ),
        "merge_records": lambda: tp.Tokenizer.from_merge_records(
            [(116, 104, 256)], vocab=[bytes([b]) for b in range(256)] + [b"th"]
        ),
        "sentencepiece": lambda: tp.train_unigram(texts, vocab_size=200),
        "hf_pipeline": lambda: tp.train_wordpiece(texts, vocab_size=200),
        "hf_char_bpe": lambda: tp.train_char_bpe(texts, num_merges=50),
    }


CASES = ["merge_ranks", "tiktoken_ranks", "merge_records", "sentencepiece", "hf_pipeline"]


@pytest.fixture(scope="module")
def built(tp: ModuleType) -> dict[str, Any]:
    return {name: make() for name, make in _builders(tp).items()}


@pytest.mark.parametrize("name", [*CASES, "hf_char_bpe"])
def test_spec_alone_rebuilds_the_tokenizer(tp: ModuleType, built: dict, name: str) -> None:
    tok = built[name]
    again = tp.Tokenizer(tok.spec, provenance=tok.provenance)  # engine built from the spec
    assert again.semantics == tok.semantics == tok.spec.kind.value
    assert again.to_config() == tok.spec.to_config() == tok.to_config()
    assert again.semantic_hash == tok.semantic_hash
    for text in TEXTS:
        assert again.encode(text) == tok.encode(text)
        assert again.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert again.vocab() == tok.vocab() == tok.spec.vocab()


@pytest.mark.parametrize("name", [*CASES, "hf_char_bpe"])
def test_pickled_spec_rebuilds_the_same_tokenizer(tp: ModuleType, built: dict, name: str) -> None:
    # How the Ray engine ships a tokenizer to its workers (docs/DATA.md).
    tok = built[name]
    spec = pickle.loads(pickle.dumps(tok.spec, protocol=pickle.HIGHEST_PROTOCOL))
    assert isinstance(spec.added_tokens, MappingProxyType)  # frozen again
    again = tp.Tokenizer(spec)
    assert again.semantic_hash == tok.semantic_hash
    assert again.to_config() == tok.to_config()
    for text in TEXTS:
        assert again.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


@pytest.mark.parametrize("name", CASES)
def test_declared_capabilities_are_offered(built: dict, name: str) -> None:
    tok = built[name]
    # Capabilities come from the engine alone: the tokenizer's set is the engine's names.
    assert tok.capabilities == capabilities(tok.engine)
    assert {c.value for c in tok.capabilities} == set(tok.engine.capabilities)
    assert capabilities(tok.spec) == tok.capabilities  # the old signature: the spec's engine
    methods = {
        Capability.OFFSETS: "encode_offsets_lists",
        Capability.MERGES: "merge_result",
        Capability.SENTENCEPIECE_DECODE: "decode_text",
        Capability.NORMALIZE: "normalize",
    }
    for capability, method in methods.items():
        if capability in tok.capabilities:
            assert callable(getattr(tok.engine, method, None)), (name, capability)
    engine_methods = ("encode", "encode_batch", "encode_with_offsets", "decode_bytes", "vocab")
    assert all(callable(getattr(tok.engine, m)) for m in engine_methods)
    # Each native streaming cut belongs to one runtime.
    if Capability.STREAMING_ENCODE_PRETOKENS in tok.capabilities:
        assert tok.spec.kind is not ModelKind.SENTENCEPIECE, name
    if Capability.STREAMING_ENCODE_SENTENCEPIECE in tok.capabilities:
        assert tok.spec.kind is ModelKind.SENTENCEPIECE, name


def test_one_capability_enum_for_python_and_rust() -> None:
    assert [c.value for c in Capability] == _native.capability_names()
    # A member is its native name, and the deprecated names are aliases of members.
    assert Capability.MERGES == "merges" and "merges" in {Capability.MERGES}
    assert Capability.TEXT_DECODE is Capability.SENTENCEPIECE_DECODE
    assert Capability.ADDED_TOKEN_NORMALIZER is Capability.ADDED_TOKEN_FLAGS


def test_spec_is_frozen_and_variants_are_new_tokenizers(tp: ModuleType) -> None:
    tok = tp.Tokenizer.from_merges([(116, 104)], special_tokens=[tp.SpecialToken("<|bos|>", "bos")])
    with pytest.raises(AttributeError):
        tok.spec.pattern = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        tok.spec.added_tokens["x"] = 1  # type: ignore[index]
    plain = tp.Tokenizer(tok.spec.replace(post_processor=None), tok.engine, tok.provenance)
    assert tok.encode("the", add_special_tokens=True) == [257, 256, 101]
    assert plain.encode("the", add_special_tokens=True) == [256, 101]
    assert plain.semantic_hash != tok.semantic_hash


def test_provenance_keeps_source_bytes_and_training(tp: ModuleType, built: dict) -> None:
    uni = built["sentencepiece"]
    assert uni.provenance.format == "sentencepiece_model"
    assert set(uni.provenance.files) == {"tokenizer.model"}
    assert uni.training is not None and uni.provenance.training is not None
    wp = built["hf_pipeline"]
    assert wp.provenance.files["tokenizer.json"].startswith(b"{")
    bpe = built["merge_ranks"]
    assert bpe.provenance.format is None and not bpe.provenance.files
    assert bpe.training == dict(bpe.provenance.training or {})
    assert Provenance().with_training({"a": 1}).training == {"a": 1}


def test_build_engine_names_the_origin_of_a_bad_spec() -> None:
    from tokenpact.components import models
    from tokenpact.core import HfModel, HfStages
    from tokenpact.errors import ArtifactError

    # The engine refuses the model (a Unigram without scores for its piece).
    spec = TokenizerSpec(
        HfModel([b"a"]),
        stages=HfStages(None, models.options(models.Unigram()), None, False),
    )
    with pytest.raises(ArtifactError, match="^<probe>: "):
        build_engine(spec, label="<probe>")


@pytest.mark.parametrize("name", ["merge_ranks", "tiktoken_ranks", "merge_records", "hf_pipeline"])
def test_vocabulary_sequences_leave_the_cyclic_gc(built: dict, name: str) -> None:
    """A loaded model's vocabulary-sized sequences are tuples of ints and bytes, which
    the cyclic GC stops tracking after one collection: a full collection in a long batch
    does not walk a 280,000-item merge list of a tokenizer that lives as long as the
    process."""
    import gc

    model = built[name].spec.model
    fields = {
        "merge_ranks": ["merges"],
        "tiktoken_ranks": ["ranks"],
        "merge_records": ["vocab_pieces", "records"],
        "hf_pipeline": ["pieces", "records"],
    }[name]
    gc.collect()
    gc.collect()
    for field in fields:
        value = getattr(model, field)
        assert type(value) is tuple, field
        assert not gc.is_tracked(value), field


def _private_sets_outside_classes() -> list[str]:
    """``x._name = ...`` where ``x`` is not ``self``/``cls`` (a loader or trainer reaching
    into an object it did not create as its own class)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            for target in targets:
                for sub in ast.walk(target):
                    if (
                        isinstance(sub, ast.Attribute)
                        and sub.attr.startswith("_")
                        and not (
                            isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls")
                        )
                    ):
                        found.append(
                            f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(sub)}"
                        )
    return found


def test_no_private_attribute_is_set_from_outside() -> None:
    # SpanStr is a str subclass built with str.__new__ by its own module (chat spans).
    # conversation.py fills its own frozen Conversation through the instance dict (one
    # update instead of 16 setattrs on the render hot path); jinja_env.py keeps per-template
    # and per-macro caches in Jinja's own objects' dicts.
    allowed = {"chat/spans.py", "chat/hf_inputs.py", "chat/conversation.py", "chat/jinja_env.py"}
    offenders = [f for f in _private_sets_outside_classes() if f.split(":")[0] not in allowed]
    assert offenders == []
