"""The native artifact (tokenpact.json): round trips and every rejection of a damaged file."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tokenpact.core import (
    MergeRecords,
    RankedMerges,
    TiktokenRanks,
    TokenizerSpec,
    vocab_from_merges,
)
from tokenpact.core.literal_text import LiteralTextPolicy
from tokenpact.errors import ArtifactError, ConfigError
from tokenpact.formats.native import (
    FILENAME,
    native_path,
    read_native,
    to_json,
    write_native,
)
from tokenpact.patterns import PATTERNS
from tokenpact.special import AddedTokenFlags, SpecialToken
from tokenpact.truncation import Padding, Truncation

# ab -> 256, abc -> 257, abab -> 258
MERGES = [(97, 98), (256, 99), (256, 256)]
TRAINING = {"stop_reason": "vocab_size_reached", "merges_learned": 3, "ratio": 0.5}


def merge_spec(**changes: Any) -> TokenizerSpec:
    spec = TokenizerSpec(
        RankedMerges(MERGES),
        pattern=PATTERNS["gpt4"],
        pattern_name="gpt4",
        special_tokens=[
            (SpecialToken("<|bos|>", "bos"), 259),
            (SpecialToken("<|eos|>", "eos"), 260),
            (SpecialToken("<|résumé|>", "reserved"), 300),  # gaps are allowed
        ],
        post_processor={"type": "prepend_bos", "token": "<|bos|>"},
    )
    return spec.replace(**changes)


def tiktoken_spec() -> TokenizerSpec:
    singles = [bytes([b]) for b in range(256)]
    random.Random(0).shuffle(singles)  # single bytes need not sit at ids 0..255
    return TokenizerSpec(
        TiktokenRanks([*singles, b"ab", b"abc"]),
        pattern=r"\w+|\s+|[^\w\s]+",
        special_tokens=[(SpecialToken("<|endoftext|>", "eot"), 258)],
    )


def valid_obj() -> dict[str, Any]:
    return json.loads(to_json(merge_spec(), TRAINING))


def write_obj(tmp_path: Path, obj: Any) -> Path:
    path = tmp_path / FILENAME
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- round trips


def test_round_trip_merge_ranks(tmp_path: Path) -> None:
    spec = merge_spec()
    written = write_native(tmp_path / "tok", spec, TRAINING)
    assert written == tmp_path / "tok" / FILENAME
    for path in (tmp_path / "tok", written):
        loaded, provenance = read_native(path)
        assert loaded.to_config() == spec.to_config()
        assert provenance.training == TRAINING and provenance.format == "tokenpact_json"
    assert loaded.vocab()[256:] == [b"ab", b"abc", b"abab"]
    # The document is the spec's canonical config plus the training record.
    assert json.loads(written.read_text("utf-8")) == {**spec.to_config(), "training": TRAINING}
    # The atomic write leaves no temporary files behind.
    assert sorted(p.name for p in (tmp_path / "tok").iterdir()) == [FILENAME]


def test_round_trip_tiktoken_ranks(tmp_path: Path) -> None:
    spec = tiktoken_spec()
    write_native(tmp_path, spec)
    loaded, provenance = read_native(tmp_path)
    assert loaded.to_config() == spec.to_config()
    assert isinstance(loaded.model, TiktokenRanks) and provenance.training is None
    assert loaded.pattern_name is None and loaded.merge_ranks is None


def test_round_trip_added_tokens_flags_and_special_decode(tmp_path: Path) -> None:
    spec = merge_spec(
        added_tokens={"<tab>": 301, "<nl>": 302},
        added_token_flags={"<nl>": AddedTokenFlags(rstrip=True), "<|eos|>": AddedTokenFlags()},
        special_decode="ignore",
    )
    write_native(tmp_path, spec)
    loaded, _ = read_native(tmp_path)
    assert loaded.to_config() == spec.to_config()
    assert dict(loaded.added_tokens) == {"<tab>": 301, "<nl>": 302}
    assert loaded.added_token_flags["<nl>"].rstrip and loaded.special_decode == "ignore"


def test_from_config_is_the_inverse_of_to_config_policy_included() -> None:
    # tokenpact.json leaves the policy to policy.json; the config itself carries it.
    spec = merge_spec(
        padding=Padding(multiple=8, side="left", pad_id=260),
        truncation=Truncation(max_length=16, stride=2),
        literal_text=LiteralTextPolicy("escaped", "~"),
        special_decode="raise",
    )
    assert TokenizerSpec.from_config(spec.to_config()).to_config() == spec.to_config()
    assert "padding" not in json.loads(to_json(spec))


def test_pattern_name_is_kept_as_written(tmp_path: Path) -> None:
    # A built-in regex without its name stays unnamed: loading gives back the same config
    # (and semantic hash) that was saved.
    spec = merge_spec(pattern_name=None, special_tokens=(), post_processor=None)
    write_native(tmp_path, spec)
    assert read_native(tmp_path)[0].to_config() == spec.to_config()


def test_json_is_stable_sorted_and_readable() -> None:
    text = to_json(merge_spec(), TRAINING)
    assert text == to_json(merge_spec(), TRAINING)
    assert text.endswith("}\n")
    assert "<|résumé|>" in text  # ensure_ascii=False
    obj = json.loads(text)
    assert list(obj) == sorted(obj)
    assert obj["format"] == "tokenpact.tokenizer" and obj["format_version"] == 1
    assert obj["model"]["merges"] == [[97, 98], [256, 99], [256, 256]]
    assert obj["model"]["vocab"][256:] == ["6162", "616263", "61626162"]
    # One merge per line keeps large artifacts compact.
    assert "\n      [97, 98],\n" in text


def test_tiktoken_ranks_are_base64() -> None:
    obj = json.loads(to_json(tiktoken_spec()))
    assert obj["model"]["ranks"][-1] == base64.b64encode(b"abc").decode()
    assert "merges" not in obj["model"] and "vocab" not in obj["model"]


def test_native_path(tmp_path: Path) -> None:
    assert native_path(tmp_path) == tmp_path / FILENAME
    assert native_path(tmp_path / "new-dir") == tmp_path / "new-dir" / FILENAME
    assert native_path(tmp_path / "x.json") == tmp_path / "x.json"
    (tmp_path / "plainfile").write_text("{}")
    assert native_path(tmp_path / "plainfile") == tmp_path / "plainfile"


def test_write_refuses_invalid_artifact(tmp_path: Path) -> None:
    spec = merge_spec(post_processor={"type": "prepend_bos", "token": "<s>"})
    with pytest.raises(ArtifactError, match=r"artifact being saved: post_processor\.token"):
        write_native(tmp_path, spec)
    with pytest.raises(ArtifactError, match="JSON values"):
        write_native(tmp_path, merge_spec(), {"loss": object()})
    assert not (tmp_path / FILENAME).exists()


def test_write_refuses_what_the_file_cannot_describe(tmp_path: Path) -> None:
    records = TokenizerSpec(MergeRecords([bytes([b]) for b in range(256)], []), pattern="x")
    with pytest.raises(ArtifactError, match="explicit merge records"):
        write_native(tmp_path, records)
    offset = TokenizerSpec(TiktokenRanks([bytes([b]) for b in range(256)], id_offset=1))
    with pytest.raises(ArtifactError, match="cannot describe it"):
        write_native(tmp_path, offset)
    chain = merge_spec(pre_tokenizer={"type": "sequence", "steps": [["x", None]]})
    with pytest.raises(ArtifactError, match="chain of steps"):
        write_native(tmp_path, chain)
    assert not (tmp_path / FILENAME).exists()


def test_non_finite_training_values_are_written_as_strings(tmp_path: Path) -> None:
    # JSON has no inf/nan; a training trace holds them (issue 13: -inf in Unigram EM).
    training = {"loss": float("nan"), "trace": [[0, float("-inf")], [1, -3.5]]}
    write_native(tmp_path, merge_spec(), training)
    _, provenance = read_native(tmp_path)
    assert provenance.training == {"loss": "nan", "trace": [[0, "-inf"], [1, -3.5]]}


def test_vocab_from_merges_rejects_forward_reference() -> None:
    with pytest.raises(ConfigError, match="does not exist yet"):
        vocab_from_merges([(97, 257)])


def test_from_config_refuses_a_model_it_cannot_rebuild() -> None:
    records = TokenizerSpec(MergeRecords([bytes([b]) for b in range(256)], []), pattern="x")
    with pytest.raises(ConfigError, match="cannot be rebuilt"):
        TokenizerSpec.from_config(records.to_config())


# --------------------------------------------------------------------------- file-level damage


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist; pass a directory written by"):
        read_native(tmp_path / "nope")
    with pytest.raises(ArtifactError, match=f"has no {FILENAME}"):
        read_native(tmp_path)


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / FILENAME
    path.write_text(to_json(merge_spec(), TRAINING)[:-40], encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"invalid JSON at line \d+ column \d+") as info:
        read_native(path)
    assert str(path) in str(info.value) and "tok.save()" in str(info.value)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / FILENAME
    path.write_bytes(b'{"format": "\xff"}')
    with pytest.raises(ArtifactError, match="not UTF-8"):
        read_native(path)


def test_duplicate_key(tmp_path: Path) -> None:
    path = tmp_path / FILENAME
    path.write_text('{"format": "tokenpact.tokenizer", "format": "x"}', encoding="utf-8")
    with pytest.raises(ArtifactError, match="'format' appears twice"):
        read_native(path)


def test_top_level_not_object(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="top level: expected a JSON object"):
        read_native(write_obj(tmp_path, [1, 2]))


# --------------------------------------------------------------------------- field-level damage

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """Mutation that sets a dotted path (list indices allowed) to ``value``."""

    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _delete(path: str) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[part]
        del node[last]

    return mutate


def _append_merge(obj: dict[str, Any]) -> None:
    obj["model"]["merges"].append([97, 98])  # same bytes as id 256
    obj["model"]["vocab"].append("6162")
    for tok in obj["special_tokens"]:
        tok["id"] += 1


def _swap_merges(obj: dict[str, Any]) -> None:
    merges = obj["model"]["merges"]
    merges[0], merges[1] = merges[1], merges[0]


def _custom_pattern(pattern: str) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        obj["pre_tokenizer"].update(name=None, pattern=pattern)

    return mutate


def _flags(content: str, token_id: int, **flags: Any) -> dict[str, Any]:
    return {"id": token_id, "content": content, **AddedTokenFlags()._asdict(), **flags}


def _spec_tokens(*tokens: tuple[Any, Any, Any]) -> Mutation:
    return _set("special_tokens", [{"id": i, "content": c, "role": r} for i, c, r in tokens])


REJECTIONS: list[tuple[str, Mutation, str]] = [
    ("wrong format", _set("format", "huggingface"), r"format: is 'huggingface'.*tp\.Tokenizer"),
    ("newer version", _set("format_version", 2), "version 2 is not supported.*upgrade"),
    ("version type", _set("format_version", "1"), "format_version: expected an integer"),
    ("version bool", _set("format_version", True), "format_version: expected an integer"),
    ("missing model", _delete("model"), "top level: missing field 'model'"),
    ("missing training", _delete("training"), "missing field 'training'"),
    ("unknown top field", _set("extra", 1), "unknown field 'extra'; remove it"),
    ("pre type", _set("pre_tokenizer.type", "whitespace"), r"pre_tokenizer\.type"),
    ("pattern type", _set("pre_tokenizer.pattern", 5), r"pre_tokenizer\.pattern: expected a str"),
    ("empty pattern", _set("pre_tokenizer.pattern", ""), "must not be empty"),
    ("bad regex", _custom_pattern("(unclosed"), r"pre_tokenizer\.pattern: is not a valid regex"),
    ("unknown name", _set("pre_tokenizer.name", "gpt9"), "unknown built-in pattern 'gpt9'"),
    ("name mismatch", _set("pre_tokenizer.name", "gpt2"), "differs from the built-in 'gpt2'"),
    ("model type", _set("model.type", "unigram"), r"model\.type: is 'unigram'"),
    ("semantics", _set("model.semantics", "hf"), r"model\.semantics: is 'hf'"),
    ("missing merges", _delete("model.merges"), "model: missing field 'merges'"),
    ("ranks in merge model", _set("model.ranks", []), "model: unknown field 'ranks'"),
    ("merges type", _set("model.merges", {}), r"model\.merges: expected a JSON array"),
    ("merge shape", _set("model.merges.1", [256]), r"model\.merges\[1\]: expected a pair"),
    ("merge float", _set("model.merges.1", [256, 99.0]), r"model\.merges\[1\]: expected a pair"),
    ("merge self ref", _set("model.merges.1", [257, 99]), r"merges\[1\]: left id 257 is not"),
    ("merge negative", _set("model.merges.0", [97, -1]), r"merges\[0\]: right id -1"),
    ("merge order", _swap_merges, r"model\.merges\[0\]: left id 256 .*rank order"),
    ("vocab length", _set("model.vocab", ["00"] * 10), "has 10 entries but 256 bytes"),
    ("vocab hex", _set("model.vocab.256", "zz"), r"model\.vocab\[256\]: expected .*hex"),
    ("vocab upper", _set("model.vocab.256", "6A62"), r"model\.vocab\[256\]: expected .*hex"),
    ("vocab empty", _set("model.vocab.256", ""), r"model\.vocab\[256\]: expected .*hex"),
    ("base byte", _set("model.vocab.65", "42"), r"model\.vocab\[65\]: base id 65 must be"),
    ("ancestry", _set("model.vocab.257", "616264"), r"vocab\[257\]: is 616264 but merge 1"),
    ("duplicate piece", _append_merge, r"model\.vocab\[259\]: piece 6162 duplicates id 256"),
    ("specials type", _set("special_tokens", {}), "special_tokens: expected a JSON array"),
    ("special shape", _set("special_tokens.0", "<|bos|>"), r"special_tokens\[0\]: expected"),
    ("special id type", _set("special_tokens.0.id", "259"), r"\[0\]\.id: expected an integer"),
    ("special id in model", _set("special_tokens.0.id", 258), "inside the model's ids 0..258"),
    ("special id huge", _set("special_tokens.0.id", 2**32), "above 4294967295"),
    ("special id reuse", _set("special_tokens.1.id", 259), "reuses id 259 of '<|bos|>'"),
    ("special empty", _set("special_tokens.1.content", ""), r"\[1\]\.content: must not be"),
    ("special twice", _set("special_tokens.1.content", "<|bos|>"), "'<|bos|>' is declared twice"),
    ("special role", _set("special_tokens.1.role", "boss"), "unknown role 'boss'; use one of"),
    ("role twice", _set("special_tokens.1.role", "bos"), "role 'bos' is already held"),
    ("special extra key", _set("special_tokens.0.lstrip", True), "unknown field 'lstrip'"),
    ("post type", _set("post_processor.type", "template"), r"post_processor\.type"),
    ("post token", _set("post_processor.token", "<s>"), "'<s>' is not a declared special"),
    ("post no specials", _spec_tokens(), "'<|bos|>' is not a declared special"),
    ("decoder", _set("decoder", {"type": "wordpiece"}), r"decoder\.type: is 'wordpiece'"),
    ("decoder missing", _set("decoder", {}), "decoder: missing field 'type'"),
    ("training type", _set("training", [1]), "training: expected an object or null"),
    ("added in model", _set("added_tokens", [{"id": 9, "content": "<x>"}]), "model's ids 0..258"),
    ("added reuse", _set("added_tokens", [{"id": 259, "content": "<x>"}]), "reuses id 259 of"),
    ("added twice", _set("added_tokens", [{"id": 301, "content": "<|eos|>"}]), "declared twice"),
    ("added shape", _set("added_tokens", [{"id": 301}]), r"added_tokens\[0\]: missing field"),
    ("flags unknown", _set("added_token_flags", [_flags("<x>", 301)]), "not a declared token"),
    ("flag type", _set("added_token_flags", [_flags("<|bos|>", 259, lstrip=1)]), "true or false"),
    ("special decode", _set("special_decode", "drop"), "special_decode: is 'drop'"),
]


@pytest.mark.parametrize(
    ("mutate", "message"), [r[1:] for r in REJECTIONS], ids=[r[0] for r in REJECTIONS]
)
def test_rejects_damaged_merge_artifact(tmp_path: Path, mutate: Mutation, message: str) -> None:
    obj = valid_obj()
    mutate(obj)
    path = write_obj(tmp_path, obj)
    with pytest.raises(ArtifactError, match=message) as info:
        read_native(path)
    text = str(info.value)
    assert text.startswith(f"{path}: "), "the message names the file"
    assert "; " in text, "the message says what to do"


def _tiktoken_obj() -> dict[str, Any]:
    return json.loads(to_json(tiktoken_spec()))


def _drop_byte(obj: dict[str, Any]) -> None:
    ranks = obj["model"]["ranks"]
    ranks.remove(base64.b64encode(b"\x00").decode())
    ranks.append(base64.b64encode(b"xyz").decode())


TIKTOKEN_REJECTIONS: list[tuple[str, Mutation, str]] = [
    ("duplicate bytes", _set("model.ranks.257", base64.b64encode(b"ab").decode()), "duplicates"),
    ("missing byte", _drop_byte, "1 single bytes have no rank .first: 00"),
    ("bad base64", _set("model.ranks.256", "!!"), r"ranks\[256\]: '!!' is not valid base64"),
    ("empty piece", _set("model.ranks.256", ""), r"ranks\[256\]: expected non-empty base64"),
    ("rank type", _set("model.ranks.256", 5), r"ranks\[256\]: expected non-empty base64"),
    ("merges in tiktoken", _set("model.merges", []), "model: unknown field 'merges'"),
    ("special in ranks", _set("special_tokens.0.id", 0), "inside the model's ids 0..257"),
]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [r[1:] for r in TIKTOKEN_REJECTIONS],
    ids=[r[0] for r in TIKTOKEN_REJECTIONS],
)
def test_rejects_damaged_tiktoken_artifact(tmp_path: Path, mutate: Mutation, message: str) -> None:
    obj = _tiktoken_obj()
    mutate(obj)
    with pytest.raises(ArtifactError, match=message):
        read_native(write_obj(tmp_path, obj))
