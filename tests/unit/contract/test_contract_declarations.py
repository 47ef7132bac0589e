"""Corpus, dataset and checkpoint declarations, and the safetensors reader."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tokenpact.contract import (
    CheckpointDeclaration,
    CorpusDocument,
    CorpusManifest,
    DatasetDeclaration,
    EncodedDocument,
    checkpoint_from_safetensors,
    encode_document,
    read_safetensors_header,
    template_declaration,
)
from tokenpact.contract.hashing import template_hash, token_ids_hash
from tokenpact.errors import ArtifactError, ContractError

TOK = "sha256:" + "a" * 64
CORPUS = "sha256:" + "c" * 64


def test_corpus_document_digests_text_before_and_after_cleanup() -> None:
    doc = CorpusDocument.from_text(
        "<nav>menu</nav>The cat sleeps.",
        "The cat sleeps.",
        source_id="web",
        document_id="p1",
        license_class="cc-by",
    )
    assert (
        doc.raw_sha256 == "sha256:" + hashlib.sha256(b"<nav>menu</nav>The cat sleeps.").hexdigest()
    )
    assert doc.clean_sha256 == "sha256:" + hashlib.sha256(b"The cat sleeps.").hexdigest()


def _corpus(order: list[str]) -> CorpusManifest:
    docs = tuple(
        CorpusDocument.from_text(t, source_id="s", document_id=t, license_class="pd") for t in order
    )
    return CorpusManifest(revision="r1", documents=docs, seed=3, pipeline={"dedup": "v2"})


def test_corpus_manifest_round_trips_and_document_order_is_identity() -> None:
    corpus = _corpus(["a", "b"])
    assert CorpusManifest.from_json(corpus.to_json()) == corpus
    assert corpus.hash != _corpus(["b", "a"]).hash


def test_corpus_manifest_from_json_validates() -> None:
    bad = _corpus(["a"]).to_json()
    bad["documents"][0]["split"] = "dev"
    with pytest.raises(ContractError, match="invalid corpus declaration"):
        CorpusManifest.from_json(bad)


def test_template_declaration_seals_modes() -> None:
    template = template_declaration("{{ x }}", name="t", modes=["training", "generation"])
    assert template["modes"] == ["generation", "training"]
    with pytest.raises(ContractError, match="unknown template modes"):
        template_declaration("{{ x }}", name="t", modes=["serving"])


def test_encoded_document_record_stores_counts_and_an_id_digest() -> None:
    doc = EncodedDocument(
        ids=(7, 8, 10),
        source_id="toy",
        document_id="d0",
        tokenizer_hash=TOK,
        template_hash=template_hash(None),
        boundary_policy="eos_after_document",
    )
    record = doc.to_record()
    assert record["token_count"] == 3
    assert record["max_token_id"] == 10
    assert record["ids_hash"] == token_ids_hash([7, 8, 10])
    assert record["truncated"] is False and record["packed_position"] is None


class _StubTok:
    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        ids = [ord(c) for c in text]
        return [1, *ids] if add_special_tokens else ids


def test_encode_document_encodes_alone_and_records_truncation() -> None:
    doc = encode_document(
        _StubTok(),
        "abcdef",
        source_id="s",
        document_id="d",
        boundary_policy="bos_each_document",
        tokenizer_hash=TOK,
        add_special_tokens=True,
        max_length=4,
    )
    assert doc.ids == (1, 97, 98, 99)
    assert doc.truncated
    assert doc.template_hash == template_hash(None)


def _doc(ids: tuple[int, ...], name: str, tokenizer: str = TOK) -> EncodedDocument:
    return EncodedDocument(
        ids=ids,
        source_id="s",
        document_id=name,
        tokenizer_hash=tokenizer,
        template_hash=template_hash(None),
        boundary_policy="eos_after_document",
    )


def test_dataset_declaration_from_documents() -> None:
    dataset = DatasetDeclaration.from_documents(
        [_doc((1, 5), "a"), _doc((), "b"), _doc((9,), "c")], corpus_hash=CORPUS
    )
    assert dataset.record_count == 3
    assert dataset.max_token_id == 9
    assert DatasetDeclaration.from_json(dataset.to_json()) == dataset
    summary = DatasetDeclaration.from_documents(
        [_doc((1,), "a")], corpus_hash=CORPUS, list_documents=False
    )
    assert summary.to_json()["documents"] is None


def test_dataset_documents_must_share_one_tokenizer() -> None:
    with pytest.raises(ContractError, match="different tokenizers"):
        DatasetDeclaration.from_documents(
            [_doc((1,), "a"), _doc((1,), "b", "sha256:" + "b" * 64)], corpus_hash=CORPUS
        )
    with pytest.raises(ContractError, match="at least one"):
        DatasetDeclaration.from_documents([], corpus_hash=CORPUS)


def test_checkpoint_declaration_seals_stop_ids_and_round_trips() -> None:
    checkpoint = CheckpointDeclaration(
        tokenizer_hash=None,
        template_hash=None,
        input_embedding_rows=12,
        output_vocab_rows=12,
        special_ids={"bos": 9, "eos": 10, "pad": None, "stop": [11, 10, 11]},
        tied_output_head=True,
        tied_storage_verified=True,
    )
    assert checkpoint.to_json()["special_ids"]["stop"] == [10, 11]
    bound = checkpoint.bind(tokenizer_hash=TOK, template_hash=template_hash(None))
    assert CheckpointDeclaration.from_json(bound.to_json()).to_json() == bound.to_json()
    assert bound.hash != checkpoint.hash


# ---------------------------------------------------------------- safetensors


def write_safetensors(
    path: Path,
    tensors: dict[str, tuple[int, int, bytes]],
    *,
    alias: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write F32 2-D tensors ``name -> (rows, cols, bytes)``; ``alias`` maps a name to an
    existing tensor's storage (same offsets)."""
    header: dict[str, Any] = {"__metadata__": metadata or {"format": "pt"}}
    data = b""
    for name, (rows, cols, raw) in tensors.items():
        header[name] = {
            "dtype": "F32",
            "shape": [rows, cols],
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    for name, target in (alias or {}).items():
        header[name] = dict(header[target])
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def _matrix(rows: int, cols: int, seed: int) -> tuple[int, int, bytes]:
    return (
        rows,
        cols,
        struct.pack(f"<{rows * cols}f", *[float(seed + i) for i in range(rows * cols)]),
    )


def test_header_is_parsed_without_tensor_libraries(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"model.embed_tokens.weight": _matrix(12, 4, 0)})
    (info,) = read_safetensors_header(path).values()
    assert info.shape == (12, 4) and info.dtype == "F32"
    assert info.end - info.begin == 12 * 4 * 4


def test_absent_output_head_is_tied_by_the_loader(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"model.embed_tokens.weight": _matrix(12, 4, 0)})
    (tmp_path / "config.json").write_text(
        json.dumps({"tie_word_embeddings": True, "bos_token_id": 9, "eos_token_id": [10, 11]})
    )
    ckpt = checkpoint_from_safetensors(path)
    assert (ckpt.input_embedding_rows, ckpt.output_vocab_rows) == (12, 12)
    assert ckpt.tied_output_head and ckpt.tied_storage_verified
    assert ckpt.to_json()["special_ids"] == {"bos": 9, "eos": 10, "pad": None, "stop": [10, 11]}


def test_shared_storage_is_refused(tmp_path: Path) -> None:
    """Two names over one byte range overlap: the safetensors library refuses the file,
    so the declaration reader does too (issue 43)."""
    path = tmp_path / "m.safetensors"
    write_safetensors(
        path,
        {"transformer.wte.weight": _matrix(12, 4, 0)},
        alias={"lm_head.weight": "transformer.wte.weight"},
    )
    with pytest.raises(ArtifactError, match="without gap or overlap"):
        checkpoint_from_safetensors(path, {})


def test_byte_identical_head_is_verified_and_different_head_is_not(tmp_path: Path) -> None:
    same = tmp_path / "same.safetensors"
    write_safetensors(
        same, {"tok_embeddings.weight": _matrix(12, 4, 0), "output.weight": _matrix(12, 4, 0)}
    )
    assert checkpoint_from_safetensors(same, {}).tied_storage_verified
    differ = tmp_path / "differ.safetensors"
    write_safetensors(
        differ, {"tok_embeddings.weight": _matrix(12, 4, 0), "output.weight": _matrix(16, 4, 1)}
    )
    tied = checkpoint_from_safetensors(differ, {"tie_word_embeddings": True})
    assert tied.tied_output_head and not tied.tied_storage_verified
    assert tied.output_vocab_rows == 16
    untied = checkpoint_from_safetensors(differ, {"tie_word_embeddings": False})
    assert not untied.tied_output_head


def test_sharded_checkpoints_are_read_through_the_index(tmp_path: Path) -> None:
    write_safetensors(
        tmp_path / "model-1.safetensors", {"model.embed_tokens.weight": _matrix(12, 4, 0)}
    )
    write_safetensors(tmp_path / "model-2.safetensors", {"lm_head.weight": _matrix(12, 4, 0)})
    index = {
        "weight_map": {
            "model.embed_tokens.weight": "model-1.safetensors",
            "lm_head.weight": "model-2.safetensors",
        }
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    ckpt = checkpoint_from_safetensors(tmp_path, {"tie_word_embeddings": True})
    assert ckpt.tied_storage_verified and ckpt.output_vocab_rows == 12


def test_embedding_name_can_be_given(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"enc.tokens": _matrix(7, 2, 0)})
    with pytest.raises(ContractError, match="embedding_name="):
        checkpoint_from_safetensors(path, {})
    assert (
        checkpoint_from_safetensors(path, {}, embedding_name="enc.tokens").input_embedding_rows == 7
    )


@pytest.mark.parametrize(
    ("blob", "needle"),
    [
        (b"\x01\x02", "shorter than"),
        (struct.pack("<Q", 1 << 40) + b"{}", "does not fit"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (struct.pack("<Q", 3) + b"{x}", "not UTF-8 JSON"),
        (
            struct.pack("<Q", 58) + b'{"w":{"dtype":"U8","shape":[99],"data_offsets":[0,99]}}    ',
            "cover 99 data bytes",
        ),
        (
            struct.pack("<Q", 56)
            + b'{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,4]}}'
            + b"\0" * 4,
            "wrong byte length",
        ),
    ],
)
def test_malformed_files_are_artifact_errors(tmp_path: Path, blob: bytes, needle: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(ArtifactError, match=needle):
        read_safetensors_header(path)
