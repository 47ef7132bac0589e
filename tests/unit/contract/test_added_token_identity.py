"""Non-special added tokens are behaviour: they change the semantic hash."""

from __future__ import annotations

import tokenpact as tp
from tokenpact.components import AddedToken, decoders, models, pre_tokenizers

VOCAB = {"[UNK]": 0, "a": 1, "b": 2, "ab": 3, "<tool>": 4}


def _build(*added: AddedToken) -> tp.Tokenizer:
    return tp.Tokenizer.from_components(
        models.WordLevel(vocab=VOCAB, unk_token="[UNK]"),
        pre_tokenizer=pre_tokenizers.Whitespace(),
        decoder=decoders.WordPiece(),
        added_tokens=added,
    )


def test_non_special_added_token_changes_the_semantic_hash() -> None:
    plain = _build()
    with_added = _build(AddedToken("<tool>", 4, special=False))
    assert plain.semantic_hash != with_added.semantic_hash
    assert with_added.encode("ab<tool>", allowed_special="all") == [3, 4]
    # An ordinary added token is content: it matches without permission, as in HF.
    assert with_added.encode("ab<tool>") == [3, 4]
    assert plain.encode("ab<tool>") == [3, 0, 0, 0]


def test_added_token_ids_are_part_of_the_config() -> None:
    config = _build(AddedToken("<tool>", 4, special=False)).to_config()
    assert config["added_tokens"] == [{"id": 4, "content": "<tool>"}]
    assert "added_tokens" not in _build().to_config()
