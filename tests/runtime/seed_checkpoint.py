"""The chat-seed tokenizer (256 bytes plus the seed's special tokens), its sequence
compiler, and a checkpoint declaration that matches them: what the ``compile_request``
tests serve."""

from __future__ import annotations

from typing import Any

import tokenpact as tp
from tokenpact.chat import SEED_SPECIAL_TOKENS, SequenceCompiler
from tokenpact.contract import CheckpointDeclaration

TOK = tp.Tokenizer.from_merges([], special_tokens=SEED_SPECIAL_TOKENS)
COMPILER = SequenceCompiler(TOK)


def checkpoint(**change: Any) -> CheckpointDeclaration:
    """The declaration of a checkpoint trained with ``TOK`` and ``COMPILER``'s template;
    ``change`` replaces fields."""
    fields: dict[str, Any] = {
        "tokenizer_hash": TOK.semantic_hash,
        "template_hash": COMPILER.template_hash,
        "input_embedding_rows": 266,
        "output_vocab_rows": 266,
        "special_ids": {"bos": 256, "eos": 257, "stop": [260]},
        "tied_output_head": False,
        "tied_storage_verified": False,
    }
    fields.update(change)
    return CheckpointDeclaration(**fields)
