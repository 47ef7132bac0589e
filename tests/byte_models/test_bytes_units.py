"""tokenpact.bytes: configuration identity, artifacts, errors and the incremental patcher."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tokenpact.bytes import (
    BLTConfig,
    ByT5Config,
    ByteNGramModel,
    CanineConfig,
    EntropyPatcher,
    EntropyRule,
    FixedStridePatcher,
    MegabyteConfig,
    Smoothing,
    TextUnits,
    WhitespacePatcher,
    check_global_inputs,
    check_starts,
)
from tokenpact.errors import ArtifactError, ConfigError, InvalidInputError

CORPUS = ["the cat sat on the mat.\n", "the dog sat on the log.\n", "naïve café ünïcödé\n"] * 5


@pytest.fixture(scope="module")
def model() -> ByteNGramModel:
    return ByteNGramModel.train(CORPUS, context_bytes=2, smoothing=Smoothing(alpha=0.05))


def test_config_hash_is_declared_identity() -> None:
    assert CanineConfig(stride=4).hash == CanineConfig(stride=4).hash
    assert CanineConfig(stride=4).hash != CanineConfig(stride=2).hash
    assert CanineConfig(stride=4).hash != CanineConfig(stride=4, num_hash_buckets=8192).hash
    assert ByT5Config().hash != ByT5Config(add_eos=True).hash
    fixed = BLTConfig(patcher=FixedStridePatcher(stride=4))
    assert fixed.hash != BLTConfig(patcher=WhitespacePatcher()).hash
    assert fixed.account("abcdefghij").global_starts == (0, 4, 8)


def test_entropy_blt_config_names_the_model(model: ByteNGramModel) -> None:
    patcher = EntropyPatcher(model, EntropyRule(threshold=3.0))
    config = BLTConfig(patcher=patcher).to_config()
    assert config["patcher"]["model"] == model.hash
    assert config["patcher"]["rule"] == {"kind": "global", "threshold_bits": "3.0"}
    other = EntropyPatcher(model, EntropyRule(threshold=3.5))
    assert BLTConfig(patcher=other).hash != BLTConfig(patcher=patcher).hash


def test_model_round_trip_and_hash(tmp_path: Path, model: ByteNGramModel) -> None:
    path = model.save(tmp_path / "entropy.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entropy.npz"]  # no temp left
    loaded = ByteNGramModel.load(path)
    assert loaded.hash == model.hash
    np.testing.assert_array_equal(loaded.entropy_table, model.entropy_table)
    retrained = ByteNGramModel.train(CORPUS, context_bytes=2, smoothing=Smoothing(alpha=0.05))
    assert retrained.hash == model.hash
    assert ByteNGramModel.train(CORPUS[:2], context_bytes=2).hash != model.hash


def test_tampered_or_foreign_model_is_rejected(tmp_path: Path, model: ByteNGramModel) -> None:
    path = model.save(tmp_path / "m.npz")
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["counts"] = arrays["counts"] + 1
    np.savez(tmp_path / "tampered.npz", **arrays)
    with pytest.raises(ArtifactError, match="altered"):
        ByteNGramModel.load(tmp_path / "tampered.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ArtifactError, match="not a byte n-gram model"):
        ByteNGramModel.load(tmp_path / "junk.npz")


def test_entropy_reads_only_earlier_bytes(model: ByteNGramModel) -> None:
    patcher = EntropyPatcher(model, EntropyRule(threshold=2.0))
    a = patcher.entropies(b"the cat sat")
    b = patcher.entropies(b"the cat saw the mat")
    np.testing.assert_array_equal(a, b[: len(a)])  # later bytes never change earlier H
    # A predictable context has lower entropy than an unseen one.
    seen = patcher.entropies(b"the")[2]  # after "th"
    unseen = patcher.entropies(b"\x01\x02\x03")[2]  # after a context never trained on
    assert seen < unseen


def test_incremental_patcher_commits_before_the_byte(model: ByteNGramModel) -> None:
    patcher = EntropyPatcher(model, EntropyRule(threshold=2.0))
    data = "the dog sat on the mat. naïve".encode()
    stream = patcher.incremental()
    for i in range(len(data)):
        predicted = stream.next_starts_patch()
        new = stream.push(data[i : i + 1]).tolist()
        assert (new == [i]) == predicted
    assert stream.starts.tolist() == patcher.starts(data).tolist()
    assert stream.position == len(data)


def test_bad_options_raise_typed_errors(model: ByteNGramModel) -> None:
    with pytest.raises(ConfigError, match="stride"):
        CanineConfig(stride=0)
    with pytest.raises(ConfigError, match="context_bytes"):
        ByteNGramModel.train(["x"], context_bytes=4)
    with pytest.raises(ConfigError, match="alpha"):
        Smoothing(alpha=-1.0)
    with pytest.raises(ConfigError, match="kind"):
        EntropyRule(kind="sideways")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="surrogate"):
        TextUnits.of("a\ud800b")
    with pytest.raises(InvalidInputError, match="begin with 0"):
        check_starts([1, 2], 5)
    with pytest.raises(InvalidInputError, match="increase"):
        check_starts([0, 3, 3], 5)
    with pytest.raises(InvalidInputError, match="str or bytes"):
        ByteNGramModel.train([123])  # type: ignore[list-item]


def test_megabyte_leak_is_flagged() -> None:
    config = MegabyteConfig(patch_width=4)
    assert check_global_inputs(config.global_input_spans(14), 4) == []
    leaking = [(0, 4), (4, 8), (8, 12), (12, 14)]  # patch k reads itself: no causal shift
    problems = check_global_inputs(leaking, 4)
    assert [k for k, _ in problems] == [0, 1, 2, 3]
    assert "shift the global input" in problems[0][1]


def test_corpus_must_be_a_list_of_texts() -> None:
    with pytest.raises(InvalidInputError, match="wrap a single text"):
        ByteNGramModel.train("just one string")


def test_bpe_shaped_patches_need_unnormalized_pieces() -> None:
    import tokenpact as tp
    from tokenpact.bytes import BpeShapedPatcher

    tok = tp.Tokenizer.from_merges([(ord("a"), ord("b"))])
    patcher = BpeShapedPatcher(tok)
    assert patcher.starts(b"abab cd").tolist() == [0, 2, 4, 5, 6]
    with pytest.raises(InvalidInputError, match="whole UTF-8"):
        patcher.starts("é".encode()[:1])
    blt = BLTConfig(patcher=patcher)
    assert blt.account("abab cd").n_global == 5
    assert blt.to_config()["patcher"]["tokenizer"] == tok.semantic_hash
