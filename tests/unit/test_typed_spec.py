"""One typed spec: every stage of a loaded pipeline is a :mod:`tokenpact.components` node.

A ``tokenizer.json``'s normalizer, pre-tokenizer, model options and decoder are read into
typed components that remember their node's shape, and the spec's engine document and
canonical config are those components' ``to_config()``. So a real file of each model
family (WordPiece, Unigram, byte-level BPE, BPE over characters) round-trips through
``to_config()`` / ``from_config()`` node for node, and a spec rebuilt from the
round-tripped nodes has the very semantic hash recorded in tests/fixtures/hashes.json.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
from hash_cases import FIXTURE
from tokenpact.components import Component, from_config
from tokenpact.components import decoders as cd
from tokenpact.components import models as cm
from tokenpact.components import normalizers as cn
from tokenpact.components import pre_tokenizers as cp
from tokenpact.components import processors as cq
from tokenpact.core import HfModel, HfStages, TokenizerSpec
from tokenpact.errors import ConfigError

try:
    from chat import chat_data
    from conformance import peer_data
except ImportError:  # pragma: no cover - imported from the repo root
    from tests.chat import chat_data  # type: ignore[no-redef]
    from tests.conformance import peer_data  # type: ignore[no-redef]

RECORDED: dict[str, dict[str, str]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
TEXTS = ["Hello, World! hello world.", "naïve café 1234 東京タワー", "  two  spaces\tand\nlines "]


def _char_bpe_file(tmp: Path) -> Path:
    """A BPE over characters trained by Hugging Face tokenizers (no ByteLevel)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(
        models.BPE(unk_token="<unk>", continuing_subword_prefix="##", end_of_word_suffix="</w>")
    )
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
    )
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<unk>", "<s>"],
        continuing_subword_prefix="##",
        end_of_word_suffix="</w>",
    )
    tok.train_from_iterator(TEXTS * 20 + ["the cat sleeps on the warm mat"] * 20, trainer)
    path = tmp / "tokenizer.json"
    path.write_text(tok.to_str(), encoding="utf-8")
    return path


# family -> (loader of tokenizer.json's directory or file, hash fixture case or None)
FAMILIES: dict[str, tuple[Callable[[Path], Path], str | None]] = {
    "wordpiece": (lambda _: peer_data.minilm_tokenizer_json(), "hf/minilm"),
    "unigram": (
        lambda _: peer_data.offline_counter_files("jiutian-139moe-chat").tokenizer_json,
        None,
    ),
    "byte-level": (lambda _: chat_data.model_dir("qwen-2.5"), "chat/qwen-2.5"),
    "char-bpe": (_char_bpe_file, None),
}


def _document(path: Path) -> dict[str, Any]:
    file = path / "tokenizer.json" if path.is_dir() else path
    data: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    return data


def _round_trip(node: Component | None) -> Any:
    if node is None:
        return None
    return from_config(node.KIND, node.to_config(), keep_unknown=True)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    locate, case = FAMILIES[request.param]
    path = locate(tmp_path_factory.mktemp(request.param))
    return request.param, path, tp.Tokenizer.load(path), case


def test_every_stage_of_a_loaded_pipeline_is_a_typed_component(family: Any) -> None:
    name, _, tok, _ = family
    spec: TokenizerSpec = tok.spec
    stages = spec.stages
    assert stages is not None, name
    assert isinstance(stages.model, cm.Model)
    assert stages.normalizer is None or isinstance(stages.normalizer, cn.Normalizer)
    assert stages.decoder is None or isinstance(stages.decoder, cd.Decoder)
    assert isinstance(spec.pre_tokenizer, cp.PreTokenizer)
    assert spec.post_processor is None or isinstance(spec.post_processor, cq.PostProcessor)
    # No stage is a dictionary: only the token tables are mappings.
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if isinstance(value, Mapping):
            assert field.name in ("added_tokens", "added_token_flags"), field.name
    for field in dataclasses.fields(stages):
        assert not isinstance(getattr(stages, field.name), Mapping), field.name
    # The engine's split steps are derived from the typed chain, once.
    assert spec.engine_steps() == spec.engine_steps()
    assert spec.engine_steps() is not None


def test_round_trip_of_a_real_file_keeps_every_node_and_the_hash(family: Any) -> None:
    name, path, tok, case = family
    spec: TokenizerSpec = tok.spec
    stages = spec.stages
    assert stages is not None
    document = _document(path)
    # Each stage writes the file's node back exactly (its keys, defaults and extras).
    normalizer = document.get("normalizer")
    if normalizer is not None and normalizer.get("normalizers") != []:
        assert stages.normalizer is not None and stages.normalizer.to_config() == normalizer
    assert stages.decoder is None or stages.decoder.to_config() == document["decoder"]
    options = {k: v for k, v in document["model"].items() if k not in cm.TABLES}
    assert stages.model.to_config() == options
    if document.get("pre_tokenizer") is not None:
        assert spec.pre_tokenizer is not None
        assert spec.pre_tokenizer.to_config() == document["pre_tokenizer"]
    # A spec whose nodes went through to_config() / from_config() is the same tokenizer.
    again = spec.replace(
        stages=HfStages(
            _round_trip(stages.normalizer),
            _round_trip(stages.model),
            _round_trip(stages.decoder),
            stages.byte_level,
        ),
        pre_tokenizer=_round_trip(spec.pre_tokenizer),
        post_processor=_round_trip(spec.post_processor),
    )
    assert again.to_config() == spec.to_config()
    assert again.engine_document() == spec.engine_document()
    rebuilt = tp.Tokenizer(again, provenance=tok.provenance)
    assert rebuilt.semantic_hash == tok.semantic_hash
    if case is not None:
        assert tok.semantic_hash == RECORDED[case]["semantic"]
    for text in TEXTS:
        assert rebuilt.encode(text, allowed_special="all") == tok.encode(
            text, allowed_special="all"
        )


def test_a_read_node_keeps_its_shape_and_a_built_one_writes_every_field() -> None:
    node = {"replacement": "_", "type": "Metaspace", "add_prefix_space": True}
    with pytest.raises(ConfigError, match="add_prefix_space"):
        from_config("pre_tokenizer", node)
    read = from_config("pre_tokenizer", node, keep_unknown=True)
    assert read == cp.Metaspace(replacement="_")
    assert list(read.to_config().items()) == list(node.items())
    assert dict(read.extra) == {"add_prefix_space": True}
    assert read.given("split", "absent") == "absent" and read.given("replacement", "") == "_"
    built = cp.Metaspace(replacement="_")
    assert built.to_config() == {
        "type": "Metaspace",
        "replacement": "_",
        "prepend_scheme": "always",
        "split": True,
    }
    assert not built.extra and built.given("split", "absent") is True
    # Children keep theirs too.
    seq = {"type": "Sequence", "normalizers": [{"type": "BertNormalizer", "lowercase": False}]}
    assert from_config("normalizer", seq).to_config() == seq


def test_model_options_leave_the_tables_out() -> None:
    wp = cm.WordPiece(vocab={"[UNK]": 0, "a": 1})
    options = cm.options(wp)
    assert options.to_config() == {
        "type": "WordPiece",
        "unk_token": "[UNK]",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": 100,
    }
    read = from_config("model", {"type": "Unigram", "unk_id": 3, "vocab": [["a", -1.0]]})
    assert cm.options(read).to_config() == {"type": "Unigram", "unk_id": 3}


def test_post_processors_are_typed_templates() -> None:
    bos = cq.PrependBos("<s>")
    assert bos.to_config() == {"type": "prepend_bos", "token": "<s>"}
    assert from_config("post_processor", bos.to_config()) == bos
    template = cq.Template(
        single=(("special", "[CLS]", 0), ("sequence", "A", 0)),
        pair=(("sequence", "A", 0), ("sequence", "B", 1)),
    )
    config = template.to_config()
    assert config["single"] == [["special", "[CLS]", 0], ["sequence", "A", 0]]
    assert from_config("post_processor", config) == template
    with pytest.raises(ConfigError, match="template form"):
        cq.BertProcessing().template_items()
    # Tokenizer.from_merge_records still takes the config dict.
    tok = tp.Tokenizer.from_merge_records(
        [],
        vocab=[bytes([b]) for b in range(256)] + [b"<s>"],
        special_tokens=[(tp.SpecialToken("<s>", "bos"), 256)],
        post_processor={"type": "prepend_bos", "token": "<s>"},
    )
    assert tok.spec.post_processor == bos
    assert tok.post_processor == {"type": "prepend_bos", "token": "<s>"}
    assert tok.encode("a", add_special_tokens=True) == [256, 97]
    # A spec given the config dict (the old form) holds the node.
    variant = tok.spec.replace(post_processor={"type": "prepend_bos", "token": "<s>"})
    assert variant.post_processor == bos and variant.to_config() == tok.spec.to_config()
    with pytest.raises(ConfigError, match="holds a template"):
        tok.spec.replace(post_processor={"type": "BertProcessing"})


def test_hf_model_holds_only_tables() -> None:
    model = HfModel([b"a", b"b"], scores=[-1.0, -2.0])
    assert model.table_fields({"type": "Unigram"}) == {"scores": ["-1.0", "-2.0"]}
    assert model.table_fields({"type": "WordPiece"}) == {}
