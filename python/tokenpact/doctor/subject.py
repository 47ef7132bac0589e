"""Sniff the paths given to ``tokenpact doctor`` and load what they hold.

A directory may hold several things at once (a Hugging Face model folder has a
tokenizer, a chat template, a model config and weights); each is loaded once into a
:class:`Subject` that the detectors read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.corpus_sidecar import expand_corpus_manifest, is_compact
from ..errors import TokenpactError
from .batch_view import BatchView, load_batch
from .findings import Inspected

if TYPE_CHECKING:
    from .. import Tokenizer

MAX_JSON_BYTES = 256 * 1024 * 1024  # tokenizer.json files reach tens of MB; bound the read
TOKENIZER_FILES = ("tokenpact.json", "tokenizer.json", "tokenizer.model")
CHECKPOINT_FILES = ("model.safetensors.index.json", "model.safetensors")


@dataclass
class Subject:
    """What the doctor loaded; detectors read the fields they need."""

    tokenizer: Tokenizer | None = None
    tokenizer_path: str = ""
    hf_json: dict[str, Any] | None = None
    tokenizer_config: dict[str, Any] | None = None
    template: str | None = None
    template_path: str = ""
    template_specials: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None
    checkpoint_path: str = ""
    batches: list[tuple[str, BatchView]] = field(default_factory=list)
    manifests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # The one batch or manifest a batch/manifest detector is looking at.
    batch: BatchView | None = None
    manifest: dict[str, Any] | None = None
    manifest_path: str = ""
    # Overrides from the command line (a batch file rarely says which ID is EOS).
    eos_id: int | None = None
    pad_id: int | None = None
    ignore_index: int = -100
    # Results several detectors share (the rendered template), computed once.
    cache: dict[str, Any] = field(default_factory=dict)

    def focus(
        self, *, batch: BatchView | None = None, manifest: Any = None, manifest_path: str = ""
    ) -> Subject:
        return replace(self, batch=batch, manifest=manifest, manifest_path=manifest_path)

    @property
    def eos(self) -> int | None:
        if self.eos_id is not None:
            return self.eos_id
        return self.tokenizer.eos_id if self.tokenizer is not None else None

    @property
    def vocab_size(self) -> int | None:
        return self.tokenizer.vocab_size if self.tokenizer is not None else None


def read_json(path: Path) -> Any:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise ValueError(f"{path} is larger than {MAX_JSON_BYTES} bytes")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise ValueError(f"{path} nests too deeply to be a file the doctor reads") from None


# Files the project writes that no detector reads: recognized (so the doctor says what
# it saw, not "nothing recognizable"), with nothing to check.
_RECORD_KINDS = {
    "tokenpact.release": "release bundle",
    "tokenpact.release-pointer": "release pointer",
    "tokenpact.bundle": "reconcile bundle",
    "tokenpact.doctor": "doctor report",
}
_REPORT_KEYS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"settings", "totals", "per_source", "clusters"}), "dedup report"),
    (frozenset({"steps", "totals"}), "cleaning report"),
    (frozenset({"settings", "pairs"}), "leakage report"),
)
# Beside a saved tokenizer: its manifest and golden set stand for the artifact.
_ARTIFACT_FILES = ("manifest.json", "golden.json")


def _json_kind(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    kind = doc.get("kind")
    if kind == "tokenpact.encoded_dataset":
        return "encoded dataset"
    if kind == "tokenpact.loader-state":
        return "loader state"
    if doc.get("format") == "tokenpact.tokenizer":
        return "tokenizer"
    if kind in _RECORD_KINDS:
        return _RECORD_KINDS[kind]
    for keys, name in _REPORT_KEYS:
        if keys <= doc.keys():
            return name
    if kind == "tokenpact.checkpoint":
        return "checkpoint declaration"
    if kind in ("tokenpact.dataset", "tokenpact.corpus") or "cache_key" in doc:
        return "dataset manifest"
    if "model" in doc and ("added_tokens" in doc or "normalizer" in doc):
        return "tokenizer"
    if "chat_template" in doc or "bos_token" in doc or "eos_token" in doc:
        return "tokenizer config"
    if "architectures" in doc or "vocab_size" in doc:
        return "model config"
    return None


def _load_tokenizer(subject: Subject, path: Path) -> None:
    from .. import Tokenizer

    subject.tokenizer_path = str(path)
    folder = path if path.is_dir() else path.parent
    raw = path if path.is_file() else folder / "tokenizer.json"
    if raw.suffix == ".json" and raw.is_file():
        # Read before loading: the raw-file detectors still run when the load fails.
        doc = read_json(raw)
        subject.hf_json = doc if isinstance(doc, dict) and "model" in doc else None
    config = folder / "tokenizer_config.json"
    if subject.tokenizer_config is None and config.is_file():
        _load_tokenizer_config(subject, config)
    subject.tokenizer = Tokenizer.load(path)


def _load_tokenizer_config(subject: Subject, path: Path) -> None:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ValueError("tokenizer_config.json is not a JSON object")
    subject.tokenizer_config = doc
    template = doc.get("chat_template")
    if isinstance(template, list):  # transformers' named-template form
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    jinja = path.parent / "chat_template.jinja"
    if jinja.is_file():
        template = jinja.read_text(encoding="utf-8")
    if isinstance(template, str) and subject.template is None:
        subject.template = template
        subject.template_path = str(jinja if jinja.is_file() else path)
    subject.template_specials = {
        k: doc.get(k) for k in ("bos_token", "eos_token", "pad_token", "unk_token")
    }


def _load_checkpoint(subject: Subject, path: Path, declaration: Any = None) -> None:
    from ..contract import CheckpointDeclaration, checkpoint_from_safetensors

    if declaration is not None:
        subject.checkpoint = CheckpointDeclaration.from_json(declaration).to_json()
    else:
        subject.checkpoint = checkpoint_from_safetensors(path).to_json()
    subject.checkpoint_path = str(path)


def _inspect_dir(subject: Subject, path: Path, kinds: list[str]) -> list[str]:
    if any((path / name).is_file() for name in TOKENIZER_FILES) or list(path.glob("*.tiktoken")):
        kinds.append("tokenizer")
        _load_tokenizer(subject, path)
    config = path / "tokenizer_config.json"
    if config.is_file() and subject.tokenizer_config is None:
        _load_tokenizer_config(subject, config)
    if (path / "chat_template.jinja").is_file() or (config.is_file() and subject.template):
        kinds.append("chat template")
    if any((path / name).is_file() for name in CHECKPOINT_FILES):
        kinds.append("checkpoint")
        _load_checkpoint(subject, path)
    for name in ("dataset.json", "manifest.json"):
        doc_path = path / name
        if not doc_path.is_file():
            continue
        kind = _json_kind(doc := read_json(doc_path))
        if kind in ("dataset manifest", "encoded dataset"):
            subject.manifests.append((str(doc_path), doc))
            kinds.append(kind)
    return kinds


def _inspect_shard(subject: Subject, path: Path) -> list[str]:
    """A shard file of an encoded dataset is checked as its dataset (``dataset.json``
    beside it binds it to a tokenizer); without one nothing can be checked."""
    manifest = path.parent / "dataset.json"
    if not manifest.is_file():
        raise ValueError(
            f"{path.name} is a dataset shard without the dataset.json beside it, so nothing "
            "binds it to a tokenizer; pass the encode-dataset output directory"
        )
    doc = read_json(manifest)
    if _json_kind(doc) != "encoded dataset":
        raise ValueError(f"{manifest} is not an encoded-dataset manifest")
    if all(p != str(manifest) for p, _ in subject.manifests):
        subject.manifests.append((str(manifest), doc))
    return ["encoded dataset"]


def _inspect_file(subject: Subject, path: Path, kinds: list[str]) -> list[str]:
    name = path.name
    shard = name.startswith("shard-") and name.endswith((".parquet", ".bin", ".idx", ".docs.tsv"))
    # A Parquet file named like a shard with no dataset.json beside it is a batch file.
    if shard and not (name.endswith(".parquet") and not (path.parent / "dataset.json").exists()):
        return _inspect_shard(subject, path)
    if name.endswith((".npz", ".parquet")):
        subject.batches.append((str(path), load_batch(path)))
        return ["batch"]
    if name.endswith(".safetensors") or name.endswith(".safetensors.index.json"):
        _load_checkpoint(subject, path)
        return ["checkpoint"]
    if name.endswith(".jinja"):
        subject.template = path.read_text(encoding="utf-8")
        subject.template_path = str(path)
        return ["chat template"]
    if name.endswith(".tiktoken") or ".model" in name:
        kinds.append("tokenizer")
        _load_tokenizer(subject, path)
        return ["tokenizer"]
    if name in (*_ARTIFACT_FILES, "tokenpact.json") and (path.parent / "manifest.json").is_file():
        kinds.append("tokenizer")
        _load_tokenizer(subject, path.parent)
        return ["tokenizer"]
    if name.endswith((".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson")):
        return ["JSON Lines records (no detector reads corpus records)"]
    if name.endswith(".json"):
        doc = read_json(path)
        kind = _json_kind(doc)
        if kind == "tokenizer":
            kinds.append(kind)
            _load_tokenizer(subject, path)
        elif kind == "tokenizer config":
            _load_tokenizer_config(subject, path)
            return ["chat template"] if subject.template else ["tokenizer config"]
        elif kind == "checkpoint declaration":
            _load_checkpoint(subject, path, declaration=doc)
        elif kind in ("dataset manifest", "encoded dataset", "loader state"):
            if is_compact(doc):  # a corpus manifest with a sidecar: read and check it
                doc = expand_corpus_manifest(doc, path)
            subject.manifests.append((str(path), doc))
        return [kind] if kind else []
    return kinds


def gather(
    paths: list[str | os.PathLike[str]],
    *,
    eos_id: int | None = None,
    pad_id: int | None = None,
    ignore_index: int = -100,
) -> tuple[Subject, list[Inspected]]:
    """Load every path; a path that cannot be read is reported, not raised."""
    subject = Subject(eos_id=eos_id, pad_id=pad_id, ignore_index=ignore_index)
    inspected = []
    for raw in paths:
        path = Path(raw)
        kinds: list[str] = []
        try:
            if not path.exists():
                raise FileNotFoundError(f"{path} does not exist")
            inspect = _inspect_dir if path.is_dir() else _inspect_file
            kinds = list(dict.fromkeys(inspect(subject, path, kinds)))
            problem = None if kinds else "not a tokenizer, template, batch, checkpoint or manifest"
        except (TokenpactError, OSError, ValueError, KeyError, TypeError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        inspected.append(Inspected(str(path), tuple(kinds), problem))
    return subject, inspected
