"""The hand-written SentencePiece ModelProto reader, on good and damaged input."""

from __future__ import annotations

from pathlib import Path

import pytest

import sp_proto as pb
from tokenpact.errors import ArtifactError
from tokenpact.formats.sentencepiece_model import (
    looks_like_sentencepiece,
    parse_model,
    read_sentencepiece_model,
)

PIECES = [("<unk>", 0.0, pb.UNKNOWN), ("<s>", 0.0, pb.CONTROL), ("a", -1.0, pb.NORMAL)]


def test_reads_pieces_and_specs() -> None:
    data = pb.model(PIECES, model_type=2, byte_fallback=False, add_dummy_prefix=True)
    m = parse_model(data, Path("x.model"))
    assert [(p.piece, p.score, p.type_name) for p in m.pieces] == [
        ("<unk>", 0.0, "unknown"),
        ("<s>", 0.0, "control"),
        ("a", -1.0, "normal"),
    ]
    ts = m.trainer_spec
    assert (ts.model_type, ts.vocab_size, ts.unk_id, ts.bos_id, ts.eos_id) == ("bpe", 3, 0, -1, -1)
    assert ts.pad_id == -1  # the proto default
    ns = m.normalizer_spec
    assert (ns.name, ns.add_dummy_prefix, ns.remove_extra_whitespaces) == ("identity", True, False)
    assert not m.denormalizer_spec.present
    assert looks_like_sentencepiece(data[:1])
    assert not looks_like_sentencepiece(b"IQ== 0\n")


def test_unknown_fields_are_skipped() -> None:
    data = pb.model(PIECES) + pb.field_bytes(4, b"\x0a\x00") + pb.field_varint(99, 7)
    assert len(parse_model(data, Path("x.model")).pieces) == 3


@pytest.mark.parametrize("cut", [1, 5, 17, -3, -1])
def test_truncated_file_names_file_and_field(tmp_path: Path, cut: int) -> None:
    data = pb.model(PIECES)
    path = tmp_path / "broken.model"
    path.write_bytes(data[:cut])
    with pytest.raises(ArtifactError) as err:
        read_sentencepiece_model(path)
    message = str(err.value)
    assert str(path) in message
    assert "ModelProto" in message
    assert "copy it again" in message


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (pb.field_varint(1, 5), "ModelProto.pieces[0]"),  # a piece must be a message
        (pb.field_bytes(1, pb.field_varint(3, 9)), "ModelProto.pieces[0].type"),
        (pb.field_bytes(1, b"\x0a\x01\xff"), "ModelProto.pieces[0].piece"),
        (pb.field_bytes(2, pb.field_varint(3, 7)), "ModelProto.trainer_spec.model_type"),
        (pb.field_bytes(2, pb.field_bytes(35, b"x")), "ModelProto.trainer_spec.byte_fallback"),
        (b"\x0f", "ModelProto.field 1"),  # wire type 7 does not exist
        (b"\xff" * 11, "ModelProto"),  # an endless varint
        (b"", "ModelProto.pieces"),  # no pieces at all
        (pb.field_bytes(1, pb.piece("", 0.0)), "ModelProto.pieces[0].piece"),
    ],
)
def test_malformed_fields(data: bytes, where: str) -> None:
    with pytest.raises(ArtifactError, match="x.model: " + where.replace("[", r"\[")):
        parse_model(data, Path("x.model"))


def test_inconsistent_models_raise_artifact_error(tmp_path: Path, tp) -> None:
    cases = {
        "no_unk": [("a", -1.0, pb.NORMAL)],
        "two_unk": [("<unk>", 0.0, pb.UNKNOWN), ("<u2>", 0.0, pb.UNKNOWN)],
        "dup": [("<unk>", 0.0, pb.UNKNOWN), ("a", -1.0, pb.NORMAL), ("a", -2.0, pb.NORMAL)],
        "byte_without_fallback": [("<unk>", 0.0, pb.UNKNOWN), ("<0x41>", 0.0, pb.BYTE)],
    }
    for name, pieces in cases.items():
        path = tmp_path / f"{name}.model"
        path.write_bytes(pb.model(pieces))
        with pytest.raises(ArtifactError, match=str(path)):
            tp.Tokenizer.load(path)
    partial = tmp_path / "partial_bytes.model"
    partial.write_bytes(
        pb.model([("<unk>", 0.0, pb.UNKNOWN), ("<0x41>", 0.0, pb.BYTE)], byte_fallback=True)
    )
    with pytest.raises(ArtifactError, match="all 256 byte pieces"):
        tp.Tokenizer.load(partial)


def test_tiktoken_named_model_still_loads_as_tiktoken(tmp_path: Path, tp) -> None:
    import base64

    path = tmp_path / "tokenizer.model"
    path.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)))
    tok = tp.Tokenizer.load(path)
    assert tok.semantics == "tiktoken_ranks"
    assert tok.encode("hi") == [104, 105]
