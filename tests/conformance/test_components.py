"""Pipeline components: ``to_config``/``from_config`` agree with Hugging Face's own node
serialization, round-trip real files, and build the same tokenizer as the file."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.components import (
    AddedToken,
    Pipeline,
    Regex,
    decoders,
    from_config,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)
from tokenpact.errors import ConfigError

from . import peer_data

hf = pytest.importorskip("tokenizers")


def _hf_nodes() -> list[tuple[str, Any]]:
    """(kind, Hugging Face object) with non-default parameters where they exist."""
    n, p, d, q = hf.normalizers, hf.pre_tokenizers, hf.decoders, hf.processors
    return [
        ("normalizer", n.NFC()),
        ("normalizer", n.NFKD()),
        ("normalizer", n.Lowercase()),
        ("normalizer", n.StripAccents()),
        ("normalizer", n.Nmt()),
        ("normalizer", n.Strip(left=False, right=True)),
        ("normalizer", n.Replace("a", "b")),
        ("normalizer", n.Replace(hf.Regex(" {2,}"), " ")),
        ("normalizer", n.Prepend("\u2581")),
        ("normalizer", n.BertNormalizer(strip_accents=False, lowercase=False)),
        ("normalizer", n.Sequence([n.NFD(), n.StripAccents(), n.Lowercase()])),
        ("normalizer", n.ByteLevel()),
        ("pre_tokenizer", p.ByteLevel(add_prefix_space=False, use_regex=False)),
        ("pre_tokenizer", p.Metaspace(replacement="_", prepend_scheme="first", split=False)),
        ("pre_tokenizer", p.Split(hf.Regex(r"\p{N}{1,3}"), "merged_with_next", invert=True)),
        ("pre_tokenizer", p.Split("x", "removed")),
        ("pre_tokenizer", p.Punctuation("contiguous")),
        ("pre_tokenizer", p.Digits(individual_digits=True)),
        ("pre_tokenizer", p.CharDelimiterSplit("|")),
        ("pre_tokenizer", p.Whitespace()),
        ("pre_tokenizer", p.WhitespaceSplit()),
        ("pre_tokenizer", p.BertPreTokenizer()),
        ("pre_tokenizer", p.UnicodeScripts()),
        ("pre_tokenizer", p.Sequence([p.Whitespace(), p.Digits()])),
        ("decoder", d.ByteLevel()),
        ("decoder", d.WordPiece(prefix="@@", cleanup=False)),
        ("decoder", d.Metaspace(prepend_scheme="never")),
        ("decoder", d.BPEDecoder(suffix="_w")),
        ("decoder", d.ByteFallback()),
        ("decoder", d.Fuse()),
        ("decoder", d.Strip(" ", 1, 0)),
        ("decoder", d.Replace("\u2581", " ")),
        ("decoder", d.CTC()),
        ("decoder", d.Sequence([d.Replace("\u2581", " "), d.ByteFallback(), d.Fuse()])),
        ("post_processor", q.BertProcessing(("[SEP]", 3), ("[CLS]", 2))),
        ("post_processor", q.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=False)),
        ("post_processor", q.ByteLevel(trim_offsets=False)),
        (
            "post_processor",
            q.TemplateProcessing(
                single="[CLS] $A [SEP]",
                pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                special_tokens=[("[CLS]", 1), ("[SEP]", 2)],
            ),
        ),
        ("post_processor", q.Sequence([q.ByteLevel(), q.BertProcessing(("b", 1), ("a", 0))])),
        ("model", hf.models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")], unk_token="a")),
        ("model", hf.models.WordPiece({"[UNK]": 0, "x": 1}, max_input_chars_per_word=7)),
        ("model", hf.models.WordLevel({"<unk>": 0, "x": 1}, unk_token="<unk>")),
        ("model", hf.models.Unigram([("<unk>", 0.0), ("a", -1.5)], 0, True)),
    ]


@pytest.mark.parametrize("kind,obj", _hf_nodes(), ids=lambda v: getattr(v, "__class__", v).__name__)
def test_round_trip_equals_hugging_face_serialization(kind: str, obj: Any) -> None:
    node = json.loads(obj.__getstate__())
    component = from_config(kind, node)
    assert component.to_config() == node
    assert from_config(kind, component.to_config()) == component


def test_template_from_strings_equals_hugging_face() -> None:
    ours = processors.TemplateProcessing.from_strings(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 1), ("[SEP]", 2)],
    )
    theirs = hf.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 1), ("[SEP]", 2)],
    )
    assert ours.to_config() == json.loads(theirs.__getstate__())


def _contains(big: Any, small: Any) -> bool:
    """Every key of ``small`` is in ``big`` with an equal value (defaults may be added)."""
    if isinstance(small, dict):
        if not isinstance(big, dict):
            return False
        return all(k in big and _contains(big[k], v) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(big) == len(small) and all(map(_contains, big, small))
    return bool(big == small)


def _real_files() -> list[Any]:
    return [
        peer_data.deepseek_v3_files().tokenizer_json,
        peer_data.llama3_hf_json(),
        peer_data.minilm_tokenizer_json(),
    ]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["deepseek-v3", "llama3.2", "minilm"])
def test_real_files_round_trip_and_rebuild(index: int) -> None:
    path = _real_files()[index]
    document = json.loads(path.read_text(encoding="utf-8"))
    pipeline = Pipeline.from_config(document)
    again = pipeline.to_config()
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "added_tokens"):
        assert _contains(again[key], document[key]), key
    model = dict(document["model"])
    if model.get("merges") and isinstance(model["merges"][0], str):
        model["merges"] = [m.split(" ") for m in model["merges"]]
    assert _contains(again["model"], model)

    # padding/truncation are not pipeline stages: the loaded tokenizer carries the
    # file's as its policy, which a pipeline does not.
    loaded = tp.Tokenizer.load(path).with_padding(None).with_truncation(None)
    side = path.with_name("tokenizer_config.json")  # roles (bos/eos/pad)
    config = json.loads(side.read_text(encoding="utf-8")) if side.is_file() else {}
    if document.get("padding"):  # padding is not a pipeline stage: give its role
        config.setdefault("pad_token", document["padding"]["pad_token"])
    built = pipeline.build(config=config)
    assert built.to_config() == loaded.to_config()
    assert built.components() == pipeline
    texts = peer_data.harvest_texts()[::7]
    assert built.encode_batch(texts) == loaded.encode_batch(texts)


def test_from_components_matches_hugging_face_on_the_same_document() -> None:
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "un": 3, "##want": 4, "##ed": 5, "runn": 6}
    vocab |= {"##ing": 7, ",": 8, "want": 9}
    pipeline = Pipeline(
        model=models.WordPiece(vocab=vocab),
        normalizer=normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()]),
        pre_tokenizer=pre_tokenizers.Sequence(
            [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
        ),
        post_processor=processors.TemplateProcessing.from_strings(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
        ),
        decoder=decoders.WordPiece(),
        added_tokens=(AddedToken("[CLS]", 1), AddedToken("[SEP]", 2), AddedToken("[UNK]", 0)),
    )
    ours = pipeline.build()
    theirs = hf.Tokenizer.from_str(json.dumps(pipeline.to_config()))
    for text in ["Unwanted, running", "UNWANTED want 42 wanted", "", "x [SEP] un"]:
        want = theirs.encode(text)
        got = ours.encode_structured(text, allowed_special="all", add_special_tokens=True)
        assert got.ids == want.ids
        assert [tuple(o) for o in got.offsets] == want.offsets


def test_byte_level_tokenizer_has_a_component_form() -> None:
    tok = tp.Tokenizer.from_merges([(97, 98), (256, 99)], pattern="gpt4")
    pipeline = tok.components()
    assert isinstance(pipeline.model, models.BPE)
    assert pipeline.model.merges[:2] == [("a", "b"), ("ab", "c")]
    rebuilt = tp.Tokenizer.from_components(
        pipeline.model, pre_tokenizer=pipeline.pre_tokenizer, decoder=pipeline.decoder
    )
    assert rebuilt.encode("abc abcab") == tok.encode("abc abcab")


@pytest.mark.parametrize(
    "kind,node,needle",
    [
        ("normalizer", {"type": "Nope"}, "unknown normalizer type 'Nope'"),
        ("normalizer", {"type": "Strip", "strip_middle": True}, "strip_middle"),
        ("pre_tokenizer", {"type": "Split", "pattern": {"Glob": "*"}}, "pattern"),
        ("model", {"type": "BPE", "merges": ["a b c"]}, "merges[0]"),
        ("model", {"type": "Unigram", "vocab": [["a"]]}, "vocab[0]"),
        ("decoder", {"type": "Sequence", "decoders": [{"type": "Bogus"}]}, "decoders[0]"),
        ("decoder", "ByteLevel", "expected a JSON object"),
    ],
)
def test_bad_nodes_raise_config_error_naming_the_problem(kind: str, node: Any, needle: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        from_config(kind, node)
    assert needle in str(info.value)


def test_regex_and_literal_patterns_are_distinct() -> None:
    literal = normalizers.Replace(".", "")
    regex = normalizers.Replace(Regex("."), "")
    assert literal.to_config()["pattern"] == {"String": "."}
    assert regex.to_config()["pattern"] == {"Regex": "."}
    assert literal != regex


def test_describable_but_not_runnable_component_raises_artifact_error() -> None:
    from tokenpact.errors import ArtifactError

    with pytest.raises(ArtifactError, match="UnicodeScripts"):
        tp.Tokenizer.from_components(
            models.WordLevel(vocab={"<unk>": 0, "a": 1}),
            pre_tokenizer=pre_tokenizers.UnicodeScripts(),
        )
