"""Seeds and mutants of the data surfaces (issue 43): encoded dataset directories,
corpus JSON Lines, cleaning configurations and the batch/checkpoint files the doctor
reads. Every seed is a file the project (or numpy/pyarrow/safetensors) wrote itself."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from . import mutate

DATASET_FORMATS = ("parquet", "megatron")


def dataset_digest(ds: Any) -> str:
    """What a reader of an encoded dataset gets, as one digest (records, IDs, flags)."""
    h = hashlib.sha256()
    h.update(json.dumps([ds.doc_ids, ds.lengths.tolist(), ds.truncated.tolist()]).encode())
    h.update(np.asarray(ds.input_ids, dtype=np.int64).tobytes())
    return h.hexdigest()


def encoded_datasets(directory: Path) -> tuple[Path, dict[str, Path], dict[str, str]]:
    """A saved tokenizer, a small dataset per shard format (4 shards each) encoded with
    it, and the digest of each dataset as read back."""
    import tokenpact as tp
    from tokenpact.data import Document, encode_dataset, open_dataset

    from .seeds import _corpus

    texts = [p for t in _corpus(12) for p in t.split("\n\n") if p.strip()][:60]
    tok = tp.train_bpe(texts, vocab_size=300, special_tokens=tp.DEFAULT_SPECIAL_TOKENS)
    tok_dir = tok.save(directory / "tok")
    docs = [Document(f"d{i:03d}", t) for i, t in enumerate(texts[:30])]
    out, digests = {}, {}
    for fmt in DATASET_FORMATS:
        out[fmt] = directory / f"ds-{fmt}"
        encode_dataset(docs, tok, out[fmt], format=fmt, records_per_shard=8, append_eod=True)
        digests[fmt] = dataset_digest(open_dataset(out[fmt], tokenizer=tok, verify="open"))
    return tok_dir, out, digests


# ----------------------------------------------------------------------- dataset mutants
def _manifest(path: Path) -> dict[str, Any]:
    return json.loads((path / "dataset.json").read_text(encoding="utf-8"))


def _write_manifest(path: Path, manifest: Any) -> None:
    (path / "dataset.json").write_text(json.dumps(manifest), encoding="utf-8")


def _rehash_declaration(m: dict[str, Any]) -> None:
    from tokenpact.contract import DatasetDeclaration

    try:
        m["declaration_hash"] = DatasetDeclaration.from_json(m["declaration"]).hash
    except Exception:  # noqa: BLE001 - a mutated declaration may no longer parse
        pass


def _lie(m: dict[str, Any], rng: random.Random) -> None:
    """A consistent-looking lie: the edits an attacker makes to keep totals adding up."""
    shards = m["shards"]
    choice = rng.randrange(9)
    if choice == 0 and len(shards) > 1:  # drop an entry, fix the totals
        gone = shards.pop(rng.randrange(len(shards)))
        m["records"] -= gone["records"]
        m["tokens"] -= gone["tokens"]
        if rng.random() < 0.5:
            m["declaration"]["record_count"] = m["records"]
    elif choice == 1 and len(shards) > 1:  # swap two entries
        i, j = rng.sample(range(len(shards)), 2)
        shards[i], shards[j] = shards[j], shards[i]
    elif choice == 2:  # duplicate an entry, fix the totals
        k = rng.randrange(len(shards))
        shards.insert(k, dict(shards[k]))
        m["records"] += shards[k]["records"]
        m["tokens"] += shards[k]["tokens"]
    elif choice == 3:
        m["declaration"]["tokenizer_hash"] = "sha256:" + "ab" * 32
    elif choice == 4:
        m["max_token_id"] = m["declaration"]["max_token_id"] = rng.randrange(m["max_token_id"])
    elif choice == 5:
        m["vocab_size"] = rng.choice([m["vocab_size"] - 1, m["vocab_size"] + 1, 70_000, 1])
    elif choice == 6:
        m["corpus_hash"] = m["declaration"]["corpus_hash"] = "sha256:" + "cd" * 32
    elif choice == 7:
        k = rng.randrange(len(shards))
        key = rng.choice(["records", "tokens", "first_doc_id", "last_doc_id"])
        value = shards[k][key]
        shards[k][key] = value + 1 if isinstance(value, int) else value + "0"
    else:
        key = rng.choice(["records_per_shard", "truncated", "dtype", "format", "template_hash"])
        m[key] = {
            "records_per_shard": m["records_per_shard"] * 2,
            "truncated": m["truncated"] + 1,
            "dtype": "uint32" if m["dtype"] == "uint16" else "uint16",
            "format": "megatron" if m["format"] == "parquet" else "parquet",
            "template_hash": "sha256:" + "ef" * 32,
        }[key]
    if rng.random() < 0.8:
        _rehash_declaration(m)


def _reseal(path: Path, name: str) -> None:
    """Recompute the manifest's digest of ``name`` after it changed (an attacker's edit)."""
    m = _manifest(path)
    digest = "sha256:" + hashlib.sha256((path / name).read_bytes()).hexdigest()
    for entry in m["shards"]:
        if name in entry["files"]:
            entry["files"][name] = digest
    _write_manifest(path, m)


def _shift_ids(path: Path, name: str, rng: random.Random, vocab: int) -> None:
    """Rewrite one ID of a shard as a valid file of its format (then re-sealed)."""
    new_id = rng.choice([vocab, vocab + 1, 65_535, rng.randrange(vocab)])
    if name.endswith(".bin"):
        data = np.frombuffer((path / name).read_bytes(), dtype="<u2").copy()
        if data.size:
            data[rng.randrange(data.size)] = new_id
        (path / name).write_bytes(data.tobytes())
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path / name)
    lists = table.column("input_ids").combine_chunks()
    flat = lists.flatten().to_numpy().copy()
    if flat.size:
        flat[rng.randrange(flat.size)] = new_id
    column = pa.ListArray.from_arrays(lists.offsets, pa.array(flat, type=lists.type.value_type))
    pq.write_table(table.set_column(1, "input_ids", column), path / name)


def dataset_mutants(
    originals: dict[str, Path], vocab: int, directory: Path, count: int, seed: int
) -> Iterator[tuple[int, str]]:
    """Copies of the encoded datasets with one edit each; ``<dir>.op`` names the edit
    (``reseal`` marks a changed shard whose digest was recomputed)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    ops = ["json", "lie", "lie", "corpus", "bytes", "reseal", "reseal", "shift", "delete", "deep"]
    for i in range(count):
        fmt = rng.choice(DATASET_FORMATS)
        target = directory / f"m{i}"
        shutil.copytree(originals[fmt], target)
        op = rng.choice(ops)
        shard_files = sorted(p.name for p in target.iterdir() if p.name.startswith("shard-"))
        if op == "json":
            doc = mutate.mutate_json(_manifest(target), rng)
            (target / "dataset.json").write_bytes(mutate.dump_json(doc, rng))
        elif op == "lie":
            m = _manifest(target)
            _lie(m, rng)
            _write_manifest(target, m)
        elif op == "corpus":
            data = (target / "corpus.json").read_bytes()
            if rng.random() < 0.5:
                doc = mutate.mutate_json(json.loads(data), rng)
                data = mutate.dump_json(doc, rng)
            else:
                data = mutate.mutate_bytes(data, rng)
            (target / "corpus.json").write_bytes(data)
        elif op in ("bytes", "reseal"):
            name = rng.choice(shard_files)
            (target / name).write_bytes(mutate.mutate_bytes((target / name).read_bytes(), rng))
            if op == "reseal":
                _reseal(target, name)
        elif op == "shift":
            name = rng.choice([n for n in shard_files if n.endswith((".bin", ".parquet"))])
            _shift_ids(target, name, rng, vocab)
            _reseal(target, name)
            op = "reseal"
        elif op == "delete":
            rng.choice([p for p in target.iterdir() if p.is_file()]).unlink()
        else:
            (target / "dataset.json").write_bytes(b'{"shards": ' + b"[" * 50_000)
        Path(f"{target}.op").write_text(f"{fmt} {op}", encoding="utf-8")
        yield i, str(target)


# ----------------------------------------------------------------------- corpus inputs
def corpus_jsonl_seed() -> bytes:
    from .seeds import _corpus

    paras = [p for t in _corpus(6) for p in t.split("\n\n") if p.strip()][:25]
    lines = [
        json.dumps({"id": f"doc-{i}", "text": p, "source": f"s{i % 3}", "lang": "en"})
        for i, p in enumerate(paras)
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def clean_config_seeds() -> list[Any]:
    return [
        {"quality": {"min_words": 3, "stop_word_languages": ["en"]}, "pii": {}},
        {"repair": {"fix_encoding": True}, "quality": {"max_symbol_word_ratio": 0.5}},
        {"pii": {"types": ["EMAIL", "IPV4"], "policy": "replace", "placeholder": "<{type}>"}},
        {"langid": {"languages": ["en"], "min_confidence": 0.2}, "quality": {}},
        {"quality": {"min_words": 1, "max_dup_lines": 0.5}, "repair": {}},
    ]


# ----------------------------------------------------------------------- doctor inputs
def doctor_seeds(directory: Path) -> list[tuple[str, bytes]]:
    """(suffix, bytes) of batch files and a checkpoint the doctor reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    ids = np.array([[5, 6, 7, 2, 0, 0], [8, 9, 10, 11, 12, 2]], dtype=np.int64)
    labels = np.where(ids == 0, -100, ids)
    mask = (ids != 0).astype(np.int64)
    out = []
    for name, save in (("plain.npz", np.savez), ("zipped.npz", np.savez_compressed)):
        save(directory / name, input_ids=ids, labels=labels, attention_mask=mask)
        out.append((".npz", (directory / name).read_bytes()))
    np.savez(
        directory / "packed.npz",
        input_ids=ids[ids != 0],
        position_ids=np.concatenate([np.arange(4), np.arange(6)]),
        cu_seqlens=np.array([0, 4, 10]),
        tokenizer_hash=np.asarray("sha256:" + "00" * 32),
    )
    out.append((".npz", (directory / "packed.npz").read_bytes()))
    table = pa.table(
        {
            "input_ids": pa.array([[5, 6, 7, 2], [8, 9, 2]], type=pa.list_(pa.int32())),
            "labels": pa.array([[5, 6, 7, 2], [-100, 9, 2]], type=pa.list_(pa.int64())),
        }
    )
    pq.write_table(table, directory / "batch.parquet")
    out.append((".parquet", (directory / "batch.parquet").read_bytes()))
    header = {
        "__metadata__": {"format": "pt"},
        "model.embed_tokens.weight": {"dtype": "F32", "shape": [8, 2], "data_offsets": [0, 64]},
        "lm_head.weight": {"dtype": "F32", "shape": [8, 2], "data_offsets": [64, 128]},
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    body = np.arange(32, dtype=np.float32).tobytes()
    out.append((".safetensors", len(raw).to_bytes(8, "little") + raw + body))
    return out
