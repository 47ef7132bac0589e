"""The first calls users of tiktoken and transformers type, against those libraries.

tiktoken: ``tp.get_encoding`` / ``tp.encoding_for_model`` (the rank file found where it
already is), ``encode_ordinary``, ``special_tokens_set``, ``n_vocab``,
``max_token_value``, and a standard ``*.tiktoken`` file recognized by content hash.
transformers: ``from_pretrained`` (directory, config path, Hub cache), ``save_pretrained``
(``AutoTokenizer`` loads it with identical IDs and template), ``len``, ``tok(text)``,
``convert_*``, ``batch_decode``, the ``*_token_id`` properties, ``get_vocab_size``.
Each is compared with the peer's own function on the same real files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import pytest

from . import peer_data

tiktoken = pytest.importorskip("tiktoken")
transformers = pytest.importorskip("transformers")


def _texts(count: int = 400) -> list[str]:
    return peer_data.harvest_texts()[:count]


# ----------------------------------------------------------------------------- tiktoken
@pytest.fixture(scope="module")
def cl100k_file() -> Path:
    return peer_data.cl100k_tiktoken()


@pytest.fixture(scope="module")
def cl100k_peer(cl100k_file: Path) -> Any:
    """tiktoken's own cl100k_base definition, over the packaged rank file."""
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public

    digest = hashlib.sha256(cl100k_file.read_bytes()).hexdigest()
    ranks = load_tiktoken_bpe(str(cl100k_file), expected_hash=digest)
    with mock.patch.object(openai_public, "load_tiktoken_bpe", return_value=ranks):
        definition = openai_public.cl100k_base()
    return tiktoken.Encoding(
        definition["name"],
        pat_str=definition["pat_str"],
        mergeable_ranks=definition["mergeable_ranks"],
        special_tokens=definition["special_tokens"],
    )


@pytest.fixture
def tiktoken_cache(tmp_path: Path, cl100k_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """cl100k_base in a tiktoken cache directory, under tiktoken's own cache file name."""
    from tokenpact.formats import tiktoken_registry

    url = tiktoken_registry.ENCODINGS["cl100k_base"].url
    shutil.copyfile(cl100k_file, tmp_path / hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_get_encoding_matches_tiktoken(tp: ModuleType, tiktoken_cache: Path, cl100k_peer: Any):
    enc = tp.get_encoding("cl100k_base")
    texts = _texts() + peer_data.special_texts(sorted(cl100k_peer.special_tokens_set), count=100)
    for text in texts:
        assert enc.encode(text, allowed_special="all") == cl100k_peer.encode(
            text, allowed_special="all"
        ), text[:80]
        assert enc.encode_ordinary(text) == cl100k_peer.encode_ordinary(text), text[:80]
    assert enc.encode_ordinary_batch(texts[:50]) == cl100k_peer.encode_ordinary_batch(texts[:50])
    assert enc.special_tokens_set == cl100k_peer.special_tokens_set
    assert enc.n_vocab == cl100k_peer.n_vocab
    assert enc.max_token_value == cl100k_peer.max_token_value
    assert enc.source["encoding"] == "cl100k_base"
    assert enc.eos_token_id == cl100k_peer.eot_token


def test_encoding_for_model_matches_tiktoken(tp: ModuleType, tiktoken_cache: Path):
    for model in ("gpt-4", "gpt-3.5-turbo", "gpt-4-0613", "text-embedding-3-small"):
        assert tiktoken.encoding_name_for_model(model) == "cl100k_base"
        assert (
            tp.encoding_for_model(model).semantic_hash
            == tp.get_encoding("cl100k_base").semantic_hash
        )
    for model in ("gpt-4o", "gpt-oss-120b", "text-davinci-003", "davinci"):
        from tokenpact.formats.tiktoken_registry import encoding_name_for_model

        assert encoding_name_for_model(model) == tiktoken.encoding_name_for_model(model)
    with pytest.raises(tp.ConfigError, match="get_encoding"):
        tp.encoding_for_model("no-such-model")
    assert tp.list_encoding_names() == [
        n for n in tiktoken.list_encoding_names() if n in tp.list_encoding_names()
    ]


def test_get_encoding_names_where_to_put_a_missing_file(
    tp: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from tokenpact.formats import tiktoken_registry

    monkeypatch.setattr(tiktoken_registry, "_search_dirs", lambda: [tmp_path])
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(tp.ArtifactError) as info:
        tp.get_encoding("o200k_base")
    assert str(tmp_path / "o200k_base.tiktoken") in str(info.value)
    assert "o200k_base.tiktoken" in str(info.value) and "https://" in str(info.value)
    with pytest.raises(tp.ConfigError, match="cl100k_base"):
        tp.get_encoding("cl100k")


def test_a_file_with_the_wrong_hash_is_not_used(
    tp: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cl100k_file: Path
):
    from tokenpact.formats import tiktoken_registry

    (tmp_path / "cl100k_base.tiktoken").write_bytes(cl100k_file.read_bytes()[:-30] + b"\n")
    monkeypatch.setattr(tiktoken_registry, "_search_dirs", lambda: [tmp_path])
    with pytest.raises(tp.ArtifactError, match="SHA-256"):
        tp.get_encoding("cl100k_base")


def test_standard_file_gets_its_special_tokens_by_content_hash(
    tp: ModuleType, tmp_path: Path, cl100k_file: Path, cl100k_peer: Any
):
    # Renamed: recognition is by content, not by file name.
    renamed = tmp_path / "ranks.tiktoken"
    shutil.copyfile(cl100k_file, renamed)
    for tok in (tp.Tokenizer.load(renamed), tp.Tokenizer.from_tiktoken(renamed)):
        assert tok.special_tokens == cl100k_peer._special_tokens
        text = "a<|endoftext|>b"
        assert tok.encode(text, allowed_special="all") == cl100k_peer.encode(
            text, allowed_special="all"
        )
    # What the caller passes wins over the registry.
    bare = tp.Tokenizer.from_tiktoken(renamed, special_tokens={})
    assert bare.special_tokens == {}


# ----------------------------------------------------------------------------- transformers
@pytest.fixture(scope="module", params=["llama-3.2", "qwen-2.5"])
def hf_pair(request: pytest.FixtureRequest, tp: ModuleType) -> tuple[Any, Any, Path]:
    if request.param == "llama-3.2":
        folder = peer_data.llama3_hf_json().parent
    else:
        folder = peer_data.offline_counter_files("qwen-2.5").tokenizer_json.parent
    ours = tp.Tokenizer.from_pretrained(folder)
    peer = transformers.AutoTokenizer.from_pretrained(str(folder))
    return ours, peer, folder


def _plain_texts(peer: Any) -> list[str]:
    """Texts without special spellings: there the trust rule (control spellings in text
    are plain text in tokenpact, matched by transformers) does not apply."""
    spellings = [str(s) for s in peer.all_special_tokens]
    return [t for t in _texts(300) if not any(s in t for s in spellings)]


def test_from_pretrained_reads_directory_and_config(hf_pair: Any, tp: ModuleType):
    ours, peer, folder = hf_pair
    assert len(ours) == len(peer)
    assert ours.bos_token_id == peer.bos_token_id
    assert ours.eos_token_id == peer.eos_token_id
    assert ours.pad_token_id == peer.pad_token_id
    assert ours.unk_token_id == peer.unk_token_id
    assert ours.get_vocab_size() == peer.backend_tokenizer.get_vocab_size(True)
    assert ours.get_vocab_size(False) == peer.backend_tokenizer.get_vocab_size(False)
    config = folder / "tokenizer_config.json"
    if config.exists():
        assert tp.Tokenizer.from_pretrained(config).semantic_hash == ours.semantic_hash
    assert tp.Tokenizer.from_file(folder / "tokenizer.json").get_vocab() == peer.get_vocab()


def test_call_and_batch_match_transformers(hf_pair: Any):
    ours, peer, _ = hf_pair
    texts = _plain_texts(peer)
    assert len(texts) > 100
    for text in texts[:150]:
        expected = peer(text)
        got = ours(text)
        assert got["input_ids"] == expected["input_ids"], text[:80]
        assert got["attention_mask"] == expected["attention_mask"]
        assert (
            ours(text, add_special_tokens=False)["input_ids"]
            == peer(text, add_special_tokens=False)["input_ids"]
        )
    batch = ours(texts)
    assert batch["input_ids"] == peer(texts)["input_ids"]
    assert batch["attention_mask"] == peer(texts)["attention_mask"]


def test_convert_and_decode_match_transformers(hf_pair: Any):
    ours, peer, _ = hf_pair
    texts = _plain_texts(peer)[:100]
    batches = [peer(t)["input_ids"] for t in texts]
    for ids in batches:
        tokens = peer.convert_ids_to_tokens(ids)
        assert ours.convert_ids_to_tokens(ids) == tokens
        assert ours.convert_tokens_to_ids(tokens) == peer.convert_tokens_to_ids(tokens)
        assert ours.convert_ids_to_tokens(
            ids, skip_special_tokens=True
        ) == peer.convert_ids_to_tokens(ids, skip_special_tokens=True)
    assert ours.convert_ids_to_tokens(batches[0][0]) == peer.convert_ids_to_tokens(batches[0][0])
    missing = "no such token ☃☃☃"
    assert ours.convert_tokens_to_ids(missing) == peer.convert_tokens_to_ids(missing)
    skip = ours.batch_decode(batches, skip_special_tokens=True)
    assert skip == peer.batch_decode(
        batches, skip_special_tokens=True, clean_up_tokenization_spaces=False
    )
    keep = ours.batch_decode(batches)
    assert keep == peer.batch_decode(batches, clean_up_tokenization_spaces=False)


def test_len_on_every_model_kind(tp: ModuleType):
    uni = tp.train_unigram(["the cat sleeps on the mat"] * 30, vocab_size=40)
    assert len(uni) == uni.vocab_size
    bpe = tp.train_bpe(["the cat sleeps on the mat"] * 30, vocab_size=280)
    assert len(bpe) == bpe.vocab_size


def test_tokenizer_call_rejects_non_text(tp: ModuleType):
    bpe = tp.train_bpe(["the cat sleeps on the mat"] * 30, vocab_size=280)
    with pytest.raises(tp.InvalidInputError, match="str or a list of str"):
        bpe(42)


def test_save_pretrained_loads_in_transformers(hf_pair: Any, tmp_path: Path, tp: ModuleType):
    ours, peer, _ = hf_pair
    ours.save_pretrained(tmp_path)
    again = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    texts = _texts(200)  # special spellings included: both sides are transformers
    assert again(texts)["input_ids"] == peer(texts)["input_ids"]
    assert again.chat_template == peer.chat_template
    assert len(again) == len(peer)
    assert tp.Tokenizer.from_pretrained(tmp_path).semantic_hash == ours.semantic_hash


def test_save_pretrained_of_a_trained_tokenizer(tp: ModuleType, tmp_path: Path):
    texts = _texts(300)
    bpe = tp.train_bpe(texts, vocab_size=600)
    bpe.save_pretrained(tmp_path / "out")
    peer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "out"))
    assert peer(texts[:100], add_special_tokens=False)["input_ids"] == bpe.encode_batch(texts[:100])
    assert peer.eos_token_id == bpe.eos_token_id and peer.pad_token_id == bpe.pad_token_id
    assert peer.bos_token_id == bpe.bos_token_id and len(peer) == len(bpe)


def test_from_pretrained_reads_the_hub_cache(
    tp: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = peer_data.offline_counter_files("qwen-2.5").tokenizer_json.parent
    snapshot = tmp_path / "models--Qwen--Qwen2.5-0.5B" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(folder / name, snapshot / name)
    (tmp_path / "models--Qwen--Qwen2.5-0.5B" / "refs").mkdir()
    (tmp_path / "models--Qwen--Qwen2.5-0.5B" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    tok = tp.Tokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
    assert tok.semantic_hash == tp.Tokenizer.from_pretrained(folder).semantic_hash
    with pytest.raises(tp.ArtifactError, match="hf download Qwen/Qwen3-8B"):
        tp.Tokenizer.from_pretrained("Qwen/Qwen3-8B")
    with pytest.raises(tp.ArtifactError, match="no such file"):
        tp.Tokenizer.from_pretrained(os.path.join("no", "such", "dir", "x"))


@pytest.mark.parametrize("flag", [False, True])
def test_add_bos_token_as_transformers_reads_it(tp: ModuleType, tmp_path: Path, flag: bool):
    """``add_bos_token`` in tokenizer_config.json: transformers 5 lets the tokenizer.json
    post-processor decide for these models; from_pretrained gives the same IDs."""
    import json

    for folder in (
        peer_data.llama3_hf_json().parent,
        peer_data.offline_counter_files("qwen-2.5").tokenizer_json.parent,
    ):
        copy = tmp_path / f"{folder.name}-{flag}"
        shutil.copytree(folder, copy)
        config = json.loads((copy / "tokenizer_config.json").read_text(encoding="utf-8"))
        config["add_bos_token"] = flag
        (copy / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        peer = transformers.AutoTokenizer.from_pretrained(str(copy))
        ours = tp.Tokenizer.from_pretrained(copy)
        for text in ("hi", "The cat sleeps."):
            assert ours(text)["input_ids"] == peer(text)["input_ids"]
