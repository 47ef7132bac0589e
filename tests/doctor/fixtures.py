"""One triggering and one clean fixture per doctor detector, built in a temp directory.

Each builder returns ``(paths, options)`` for :func:`tokenpact.doctor.diagnose`. Clean
batches come from tokenpact's own collators; triggers break one thing each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

import tokenpact as tp
from tokenpact.batch import SequenceRecord, collate_packed, collate_padded
from tokenpact.contract import CheckpointDeclaration, DatasetDeclaration

Built = tuple[list[Path], dict[str, Any]]
Builder = Callable[[Path], Built]
CORPUS = ["the cat sat on the mat", "a dog ran 12 laps", "naïve café"] * 20
CHAT = "{% for m in messages %}{MARK}{{ m.role }}\n{{ m.content }}{END}\n{% endfor %}"
OTHER_HASH = "sha256:" + "ab" * 32


def _write_json(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def hf_bpe(
    folder: Path,
    *,
    specials: tuple[str, ...] = ("<s>", "</s>", "<pad>"),
    bos_post: bool = False,
    normalizer: Any = None,
    config: dict[str, Any] | None = None,
) -> Path:
    """A small byte-level BPE ``tokenizer.json`` (+ ``tokenizer_config.json``) in ``folder``."""
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if normalizer is not None:
        tok.normalizer = normalizer
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    if bos_post:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))]
        )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", **(config or {})}
    _write_json(folder / "tokenizer_config.json", cfg)
    return folder


def hf_wordpiece(folder: Path, *, decoder: Any = "wordpiece", chars: str = "") -> Path:
    """A tiny BERT-style WordPiece; ``chars`` adds each character and its ``##`` form."""
    pieces = ["[PAD]", "[UNK]", "a", "b", "the", "cat", "##s", "."]
    for ch in dict.fromkeys(chars):
        pieces += [p for p in (ch, f"##{ch}") if p not in pieces]
    vocab = {t: i for i, t in enumerate(pieces)}
    tok = HFTokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if decoder == "wordpiece":
        tok.decoder = decoders.WordPiece()
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"


def hf_unigram(folder: Path, *, flat: bool) -> Path:
    pieces = ["<unk>", "a", "b", "c", "ab", "bc", "abc", " "]
    scores = [0.0] * len(pieces) if flat else [0.0, -1.0, -1.5, -2.0, -2.5, -3.0, -3.2, -4.0]
    tok = HFTokenizer(models.Unigram(list(zip(pieces, scores, strict=True)), unk_id=0))
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"


def hf_unigram_control(folder: Path, *, reachable: bool) -> Path:
    """A Unigram file with the control token ``</s>``; ``reachable``: the vocabulary also
    holds ``</s>`` as a scored piece (as SentencePiece conversions do)."""
    pieces = ["<unk>", "a", "b", "<", "/", "s", ">"] + (["</s>"] if reachable else [])
    scores = [0.0, -1.0, -1.5, -3.0, -3.0, -3.0, -3.0] + ([0.0] if reachable else [])
    tok = HFTokenizer(models.Unigram(list(zip(pieces, scores, strict=True)), unk_id=0))
    tok.add_special_tokens(["</s>"])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"


def byte_bpe_artifact(folder: Path, *, merges: list[tuple[int, int]] | None = None) -> Path:
    special = tp.SpecialToken("<|endoftext|>", role="eos")
    tok = tp.Tokenizer.from_merges(merges or [], special_tokens=[special])
    return tok.save(folder)


def npz(path: Path, **arrays: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})
    return path


# ----------------------------------------------------------------------------- batches
EOS = 2
PAD = 0
RECORDS = [
    SequenceRecord("r0", [5, 6, 7, EOS]),
    SequenceRecord("r1", [8, 9, EOS]),
    SequenceRecord("r2", [10, 11, 12, 13, EOS]),
]


def padded(**overrides: Any) -> dict[str, Any]:
    batch = collate_padded(RECORDS, pad_id=PAD).model_inputs()
    out = {k: np.array(v) for k, v in batch.items()}
    out.update(overrides)
    return out


def packed(**overrides: Any) -> dict[str, Any]:
    batch = collate_packed(RECORDS)
    out = {
        "input_ids": batch.input_ids.copy(),
        "labels": batch.labels.copy(),
        "position_ids": batch.position_ids.copy(),
        "cu_seqlens": batch.cu_seqlens.copy(),
        "lengths": batch.lengths.copy(),
        "seq_idx": batch.seq_idx.copy(),
    }
    out.update(overrides)
    return out


def batch_file(tmp: Path, arrays: dict[str, Any], name: str = "batch.npz") -> Path:
    return npz(tmp / name, **arrays)


# ----------------------------------------------------------------------------- checkpoints
def checkpoint(
    tmp: Path, *, rows: int, out_rows: int | None = None, config: dict[str, Any] | None = None
) -> Path:
    folder = tmp / "model"
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {"model.embed_tokens.weight": np.zeros((rows, 4), dtype=np.float32)}
    if out_rows is not None:
        tensors["lm_head.weight"] = np.ones((out_rows, 4), dtype=np.float32)
    save_file(tensors, str(folder / "model.safetensors"))
    cfg = {"architectures": ["X"], "tie_word_embeddings": out_rows is None, **(config or {})}
    _write_json(folder / "config.json", cfg)
    return folder / "model.safetensors"


def declaration(tmp: Path, *, tokenizer_hash: str | None, rows: int) -> Path:
    decl = CheckpointDeclaration(
        tokenizer_hash=tokenizer_hash,
        template_hash=None,
        input_embedding_rows=rows,
        output_vocab_rows=rows,
        special_ids={"bos": None, "eos": None, "pad": None, "stop": []},
        tied_output_head=False,
        tied_storage_verified=False,
    )
    return _write_json(tmp / "checkpoint.json", decl.to_json())


def dataset(tmp: Path, *, tokenizer_hash: str, max_token_id: int) -> Path:
    decl = DatasetDeclaration(
        corpus_hash="sha256:" + "cd" * 32,
        tokenizer_hash=tokenizer_hash,
        template_hash="sha256:" + "ef" * 32,
        record_count=1,
        max_token_id=max_token_id,
    )
    return _write_json(tmp / "dataset.json", decl.to_json())
