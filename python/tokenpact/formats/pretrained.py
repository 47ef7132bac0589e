"""transformers' directory habits: ``Tokenizer.from_pretrained`` and ``save_pretrained``.

``from_pretrained`` takes what transformers takes, without a network: a local model
directory, a file :meth:`~tokenpact.core.Tokenizer.load` reads (a
``tokenizer_config.json`` stands for its directory), or a Hub model ID that is already in
the local Hugging Face cache (``HF_HUB_CACHE``, ``HF_HOME/hub`` or
``~/.cache/huggingface/hub``). ``save_pretrained`` writes ``tokenizer.json`` and
``tokenizer_config.json`` (plus ``chat_template.jinja`` when the source had one), which
``AutoTokenizer.from_pretrained`` loads with identical IDs and template.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .._io import atomic_write_bytes, atomic_write_text
from ..core import Tokenizer
from ..errors import ArtifactError
from . import hf_export

__all__ = ["hub_cache_dirs", "pretrained_path", "save_pretrained"]

CONFIG_FILE = "tokenizer_config.json"
TEMPLATE_FILE = "chat_template.jinja"
# A Hub model ID: "name" or "owner/name" (no path separators beyond the one slash).
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# transformers' keys of the named special tokens, by tokenpact role.
_ROLE_KEYS = {
    "bos": "bos_token",
    "eos": "eos_token",
    "pad": "pad_token",
    "unk": "unk_token",
    "sep": "sep_token",
    "cls": "cls_token",
    "mask": "mask_token",
}


def hub_cache_dirs() -> list[Path]:
    """Where the Hugging Face Hub client keeps downloaded models, in its precedence."""
    found: list[Path] = []
    if os.environ.get("HF_HUB_CACHE"):
        found.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        found.append(Path(os.environ["HF_HOME"]) / "hub")
    found.append(Path.home() / ".cache" / "huggingface" / "hub")
    return found


def _cached_snapshot(model_id: str) -> Path | None:
    """The snapshot directory of ``model_id`` in a local Hub cache (the ``main`` ref
    first, else the newest snapshot holding a tokenizer file)."""
    folder = "models--" + model_id.replace("/", "--")
    for cache in hub_cache_dirs():
        root = cache / folder
        if not root.is_dir():
            continue
        ref = root / "refs" / "main"
        if ref.is_file():
            snapshot = root / "snapshots" / ref.read_text(encoding="utf-8").strip()
            if snapshot.is_dir():
                return snapshot
        snapshots = sorted(
            (p for p in (root / "snapshots").glob("*") if (p / "tokenizer.json").exists()),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        if snapshots:
            return snapshots[0]
    return None


def pretrained_path(name_or_path: str | os.PathLike[str]) -> Path:
    """The local path ``Tokenizer.from_pretrained(name_or_path)`` loads."""
    path = Path(name_or_path)
    if path.exists():
        if path.is_file() and path.name == CONFIG_FILE:
            return path.parent  # the config alone holds no vocabulary: its directory does
        return path
    text = os.fspath(name_or_path)
    if _HUB_ID.match(text):
        snapshot = _cached_snapshot(text)
        if snapshot is not None:
            return snapshot
        caches = ", ".join(str(c) for c in hub_cache_dirs())
        raise ArtifactError(
            f"{text!r} is not a local file or directory, and no Hugging Face cache holds "
            f"it ({caches}); tokenpact downloads nothing: fetch it first with "
            f"`hf download {text} --include 'tokenizer*' 'chat_template.jinja'` (or "
            f"huggingface_hub.snapshot_download) and pass the model ID or the directory"
        )
    raise ArtifactError(f"{text}: no such file or directory; check the path")


def _config_source(tok: Tokenizer) -> tuple[bytes | None, Path | None]:
    """The source's ``tokenizer_config.json`` bytes and directory, when it had one."""
    raw = tok.provenance.files.get(CONFIG_FILE)
    config_path = tok.source.get("config_path")
    folder = Path(config_path).parent if isinstance(config_path, str) else None
    return raw, folder


def _token_entry(content: str) -> str:
    return content


def generated_config(tok: Tokenizer) -> dict[str, Any]:
    """A ``tokenizer_config.json`` for a tokenizer that has none (trained by tokenpact,
    or loaded from a tiktoken or SentencePiece file)."""
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(1e30),
    }
    for content, role in tok.special_token_roles.items():
        key = _ROLE_KEYS.get(role)
        if key is not None and key not in config:
            config[key] = _token_entry(content)
    template = tok.source.get("chat_template")
    if template:
        config["chat_template"] = template
    return config


def save_pretrained(tok: Tokenizer, directory: Path) -> Path:
    """Write ``tokenizer.json`` and ``tokenizer_config.json`` into ``directory``."""
    if directory.exists() and not directory.is_dir():
        raise ArtifactError(f"{directory}: exists and is not a directory; pass a directory")
    directory.mkdir(parents=True, exist_ok=True)
    hf_export.export_hf(tok, directory / "tokenizer.json")
    raw, folder = _config_source(tok)
    if raw is not None:
        # The source's own config, byte for byte: transformers reads its keys as it did.
        atomic_write_bytes(directory / CONFIG_FILE, raw)
        if folder is not None and (folder / TEMPLATE_FILE).is_file():
            atomic_write_bytes(directory / TEMPLATE_FILE, (folder / TEMPLATE_FILE).read_bytes())
    else:
        text = json.dumps(generated_config(tok), indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(directory / CONFIG_FILE, text)
    return directory
