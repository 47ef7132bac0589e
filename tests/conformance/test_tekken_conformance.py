"""Mistral Tekken files (``tekken_*.json`` from mistral-common) against ``Tekkenizer``.

Every Tekken file the mistral-common wheel ships loads through ``Tokenizer.load``; IDs
equal ``Tekkenizer.encode`` on harvested real text, special-token spellings spliced into
text and, when ../shared/corpus is present, the multilingual gettext mix; ``bos``
matches ``add_special_tokens=True``; decoding matches every ``SpecialTokenPolicy``
(``IGNORE``, ``KEEP``, ``RAISE``); the exported ``tokenizer.json`` loads in ``tokenizers``
with the same IDs (special spellings in text allowed, as Hugging Face matches them). A
file with its own ``special_tokens`` list (newer versions) is built
from a shipped one and checked the same way.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.errors import ArtifactError, DecodeError
from tokenpact.formats.tekken import TekkenTokenizer

from .peer_data import harvest_texts, mistral_tekken_files, special_texts

tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
base = pytest.importorskip("mistral_common.tokens.tokenizers.base")
Policy = base.SpecialTokenPolicy

FILES = mistral_tekken_files()


def _texts(specials: list[str]) -> list[str]:
    texts = [t for t in harvest_texts() if len(t) < 20_000][:1500]
    texts += special_texts(specials[:30], count=150)
    try:
        from .corpus_slices import multilingual_split

        held = multilingual_split()[1]
        texts += [line for lines in held.values() for line in lines[:60]]
    except pytest.skip.Exception:
        pass  # no ../shared corpus on this machine
    return texts


@pytest.fixture(scope="module", params=FILES, ids=[p.name for p in FILES])
def pair(request: pytest.FixtureRequest) -> tuple[TekkenTokenizer, Any]:
    tok = tp.Tokenizer.load(request.param)
    assert isinstance(tok, TekkenTokenizer)
    return tok, tekken.Tekkenizer.from_file(request.param)


def test_vocabulary_and_special_ids(pair: tuple[TekkenTokenizer, Any]) -> None:
    tok, peer = pair
    assert tok.vocab_size == peer.n_words
    assert tok.n_special == peer.num_special_tokens
    for info in peer._all_special_tokens:
        assert tok.special_tokens[info["token_str"]] == info["rank"]
    assert tok.special_tokens["<s>"] == peer.bos_id and tok.special_tokens["</s>"] == peer.eos_id
    for token_id in [*range(0, 1100, 7), *range(peer.n_words - 50, peer.n_words)]:
        assert tok.token_bytes(token_id) == peer.id_to_byte_piece(token_id, Policy.KEEP)


def test_encode_equals_tekkenizer(pair: tuple[TekkenTokenizer, Any]) -> None:
    tok, peer = pair
    texts = _texts(list(tok.special_tokens))
    mismatches = [t for t in texts if tok.encode(t) != peer.encode(t, bos=False, eos=False)]
    assert mismatches == []
    batch = tok.encode_batch(texts[:400])
    assert batch == [peer.encode(t, bos=False, eos=False) for t in texts[:400]]
    for text in texts[:200]:
        assert tok.encode(text, add_special_tokens=True) == peer.encode(text, bos=True, eos=False)


def test_decode_policies(pair: tuple[TekkenTokenizer, Any]) -> None:
    tok, peer = pair
    texts = [t for t in harvest_texts() if len(t) < 2000][:300]
    specials = [0, 1, 2, 3, 4, 10, 999]
    for k, text in enumerate(texts):
        ids = peer.encode(text, bos=True, eos=True)
        ids.insert(len(ids) // 2, specials[k % len(specials)])
        for ours, theirs in (("ignore", Policy.IGNORE), ("keep", Policy.KEEP)):
            assert tok.decode(ids, special_token_policy=ours, errors="replace") == peer.decode(
                ids, special_token_policy=theirs
            )
        with pytest.raises(ValueError):
            peer.decode(ids, special_token_policy=Policy.RAISE)
        with pytest.raises(DecodeError, match="special"):
            tok.decode(ids, special_token_policy="raise")
    plain = peer.encode(texts[0], bos=False, eos=False)
    assert tok.decode(plain, special_token_policy="raise") == peer.decode(plain, Policy.RAISE)


def test_export_hf_loads_in_tokenizers(pair: tuple[TekkenTokenizer, Any], tmp_path: Path) -> None:
    hf = pytest.importorskip("tokenizers")
    tok, _ = pair
    peer = hf.Tokenizer.from_file(str(tok.export_hf(tmp_path)))
    assert peer.get_vocab_size() == tok.vocab_size
    texts = _texts(list(tok.special_tokens))
    # Hugging Face matches added tokens in the text, Tekkenizer never does: the same
    # IDs as ours with every special spelling allowed (identical to plain encoding on
    # text without spellings).
    mismatches = [t for t in texts if tok.encode(t, allowed_special="all") != peer.encode(t).ids]
    assert mismatches == []
    plain = [t for t in texts if not any(s in t for s in tok.special_tokens)]
    assert len(plain) > 1000
    assert [tok.encode(t) for t in plain[:300]] == [peer.encode(t).ids for t in plain[:300]]


def test_listed_special_tokens(tmp_path: Path) -> None:
    """A newer-style file: its own ``special_tokens`` list, fillers for the rest."""
    doc = json.loads(FILES[0].read_bytes())
    doc["config"]["version"] = "v11"
    listed = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[THINK]", "[/THINK]"]
    doc["special_tokens"] = [
        {"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(listed)
    ]
    path = tmp_path / "tekken_listed.json"
    path.write_text(json.dumps(doc))
    tok = tp.Tokenizer.load(path)
    peer = tekken.Tekkenizer.from_file(path)
    assert tok.special_tokens["[THINK]"] == peer.get_special_token("[THINK]") == 5
    assert tok.special_tokens["<SPECIAL_7>"] == 7
    for text in [t for t in harvest_texts() if len(t) < 5000][:300] + ["[THINK] x [/THINK]"]:
        assert tok.encode(text, add_special_tokens=True) == peer.encode(text, bos=True, eos=False)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["config"].pop("pattern"), "config.pattern"),
        (lambda d: d["vocab"].__setitem__(5, {"rank": 6, "token_bytes": "BQ=="}), "rank"),
        (lambda d: d["vocab"][300].__setitem__("token_bytes", "@@"), "token_bytes"),
        (lambda d: d["config"].__setitem__("default_vocab_size", 10**9), "vocab"),
        (lambda d: d["config"].__setitem__("version", "v13"), "special_tokens"),
    ],
)
def test_malformed_files_raise_artifact_error(tmp_path: Path, edit: Any, field: str) -> None:
    doc = json.loads(FILES[0].read_bytes())
    doc["vocab"] = doc["vocab"][:131072]
    edit(doc)
    path = tmp_path / "tekken_bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match=field):
        tp.Tokenizer.load(path)


def test_save_round_trips(pair: tuple[TekkenTokenizer, Any], tmp_path: Path) -> None:
    """A loaded Tekken file saves as its exact bytes with the contract files and loads
    back with the same identity, IDs and decode policy (special IDs dropped)."""
    tok, peer = pair
    saved = tp.save(tok, tmp_path / "tekken")
    assert (saved / "tekken.json").read_bytes() == Path(tok.source["path"]).read_bytes()
    back = tp.load(saved)
    assert back.semantic_hash == tok.semantic_hash
    assert back.spec.special_decode == "ignore"
    ids = back.encode("[INST] hello", add_special_tokens=True)
    assert ids == tok.encode("[INST] hello", add_special_tokens=True)
    assert back.decode(ids) == peer.decode(ids) == "[INST] hello"
    # A Tekken spec that lost its source file says what to do instead.
    bare = tp.Tokenizer(tok.spec)
    with pytest.raises(tp.errors.ConfigError, match="export"):
        tp.save(bare, tmp_path / "bare")


def test_duplicate_rank_bytes_raise(tmp_path: Path) -> None:
    doc = json.loads(FILES[0].read_bytes())
    doc["vocab"][1000]["token_bytes"] = base64.b64encode(b"ab").decode()
    doc["vocab"][1001]["token_bytes"] = base64.b64encode(b"ab").decode()
    path = tmp_path / "tekken_dup.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="same bytes"):
        tp.Tokenizer.load(path)
