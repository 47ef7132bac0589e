"""Binding an existing checkpoint to its tokenizer: the ``"tokenpact"`` key of its
``config.json`` (``tokenizer_semantic_hash``, ``template_hash``), which ``verify
--checkpoint``, ``release`` and ``doctor`` read.

>>> report = bind_checkpoint("ckpt/", tok)  # doctest: +SKIP
>>> report.ok  # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ContractError
from .checkpoint_reader import checkpoint_from_safetensors
from .hashing import semantic_hash, template_hash
from .reconcile import check_checkpoint
from .report import Report
from .semantics import max_id, special_policy

if TYPE_CHECKING:
    from ..core import Tokenizer

BINDING_KEY = "tokenpact"
"""The ``config.json`` key holding a checkpoint's tokenizer and template hashes."""


def bind_checkpoint(
    folder: str | os.PathLike[str],
    tokenizer: Tokenizer,
    *,
    template: Mapping[str, Any] | None = None,
) -> Report:
    """Check the checkpoint in ``folder`` against ``tokenizer`` (rows cover every ID,
    special IDs agree with its sequence policy, tied head) and, only when every check
    passes, write the binding into ``config.json`` (atomically, every other key kept).
    Returns the report; nothing is written when it fails."""
    root = Path(folder)
    config_path = root / "config.json"
    if not config_path.is_file():
        raise ContractError(
            f"{root} has no config.json to hold the binding; pass the model directory "
            "(config.json beside the safetensors weights)"
        )
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ContractError(f"cannot read {config_path}: {exc}") from None
    if not isinstance(config, dict):
        raise ContractError(f"{config_path} is not a JSON object")
    semantic, thash = semantic_hash(tokenizer), template_hash(template)
    declaration = checkpoint_from_safetensors(root, tokenizer_hash=semantic, template_hash=thash)
    report = Report(f"bind {root}")
    tok_config = tokenizer.to_config()
    check_checkpoint(
        report,
        declaration.to_json(),
        semantic=semantic,
        template=thash,
        policy=special_policy(tok_config),
        top_id=max_id(tok_config),
    )
    if not report.ok:
        return report
    binding = dict(config.get(BINDING_KEY) or {})
    binding.update(tokenizer_semantic_hash=semantic, template_hash=thash)
    config[BINDING_KEY] = binding
    tmp = config_path.with_name(f".{config_path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, config_path)
    report.passed("binding.written", f"{config_path} binds tokenizer {semantic}")
    return report
