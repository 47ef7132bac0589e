"""tp.load, tp.save and tp.export: the registry-driven file functions, and the deprecated
Tokenizer methods that alias them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.errors import ArtifactError
from tokenpact.formats import registry


def _byte_tokenizer() -> tp.Tokenizer:
    return tp.Tokenizer.from_merges([(104, 105), (256, 33)], pattern="gpt2")


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    tok = _byte_tokenizer()
    saved = tp.save(tok, tmp_path / "artifact")
    assert saved == tmp_path / "artifact"
    assert {"manifest.json", "golden.json"} <= {p.name for p in saved.iterdir()}
    again = tp.load(saved)
    assert again.semantic_hash == tok.semantic_hash
    assert again.encode("hi!") == tok.encode("hi!") == [256, 33]


def test_export_offers_every_registered_writer_by_name(tmp_path: Path) -> None:
    tok = _byte_tokenizer()
    names = tp.files.export_formats()
    assert set(names) == {"native", "hf", "tiktoken", "sentencepiece"}
    written = tp.export(tok, "hf", tmp_path / "tok.json")
    assert json.loads(written.read_text(encoding="utf-8"))["model"]["type"] == "BPE"
    assert tp.load(written).encode("hi!") == tok.encode("hi!")
    ranks = tp.export(tok, "tiktoken", tmp_path / "tok.tiktoken")
    assert tp.files.from_tiktoken(ranks, pattern="gpt2").encode("hi!") == tok.encode("hi!")
    with pytest.raises(ArtifactError, match="known: "):
        tp.export(tok, "nonsense", tmp_path / "x")
    with pytest.raises(ArtifactError, match="SentencePiece"):
        tp.export(tok, "sentencepiece", tmp_path / "tok.model")


def test_a_registered_writer_is_exported_by_its_name(tmp_path: Path) -> None:
    calls: list[Path] = []

    def write(tok: tp.Tokenizer, path: Path) -> Path:
        calls.append(path)
        path.write_text(str(tok.vocab_size), encoding="utf-8")
        return path

    registry.register(
        registry.Format("sizes", sniff=lambda p: False, read=None, write=write, export_name="size")  # type: ignore[arg-type]
    )
    try:
        assert "size" in tp.files.export_formats()
        out = tp.export(_byte_tokenizer(), "size", tmp_path / "size.txt")
    finally:
        registry.unregister("sizes")
    assert calls == [out] and out.read_text(encoding="utf-8") == "258"
    assert "size" not in tp.files.export_formats()


def test_the_deprecated_methods_alias_the_functions(tmp_path: Path) -> None:
    tok = _byte_tokenizer()
    saved = tok.save(tmp_path / "a")
    assert tp.Tokenizer.load(saved).semantic_hash == tp.load(saved).semantic_hash
    assert tok.release_hash == tp.files.release_hash(tok)
    assert tok.manifest == tp.files.manifest(tok)
    hf = tok.export_hf(tmp_path / "hf.json")
    assert hf.read_bytes() == tp.export(tok, "hf", tmp_path / "hf2.json").read_bytes()
    assert tp.Tokenizer.from_hf(hf).encode("hi!") == tp.files.from_hf(hf).encode("hi!")
    assert tok.components().to_config() == tp.files.components(tok).to_config()


def test_load_passes_the_class_asked_for(tmp_path: Path) -> None:
    class Mine(tp.Tokenizer):
        pass

    saved = tp.save(_byte_tokenizer(), tmp_path / "a")
    assert type(Mine.load(saved)) is Mine
    assert type(tp.load(saved, cls=Mine)) is Mine
    assert type(tp.load(saved)) is tp.Tokenizer


@pytest.mark.parametrize(
    "importer",
    ["import tokenpact; Tokenizer = tokenpact.Tokenizer", "from tokenpact.core import Tokenizer"],
)
def test_the_aliases_work_from_a_fresh_interpreter(importer: str, tmp_path: Path) -> None:
    # Nothing but the import line has run: the alias reaches tokenpact.files by its name.
    tok = _byte_tokenizer()
    saved = tp.save(tok, tmp_path / "artifact")
    code = (
        f"{importer}\n"
        f"tok = Tokenizer.load({str(saved)!r})\n"
        "print(tok.semantic_hash, type(tok).__module__, tok.encode('hi!'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [tok.semantic_hash, "tokenpact.core.tokenizer", "[256,", "33]"]


def test_the_old_module_path_still_exports_the_class() -> None:
    from tokenpact.core import Tokenizer
    from tokenpact.tokenizer import Tokenizer as Old

    assert Old is Tokenizer is tp.Tokenizer
