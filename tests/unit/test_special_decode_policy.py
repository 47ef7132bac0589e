"""How decode renders special-token IDs is the spec's ``special_decode`` field, read by
the one ``Tokenizer.decode`` (Tekken's "ignore" included); the old Tekken keyword
``special_token_policy`` still works."""

from __future__ import annotations

import pytest

import tokenpact as tp
from tokenpact.errors import ConfigError, DecodeError


def _tok(policy: str = "keep") -> tp.Tokenizer:
    base = tp.Tokenizer.from_merges([(97, 98)], special_tokens=["<|eot|>"])
    return tp.Tokenizer(base.spec.replace(special_decode=policy))


def test_the_spec_policy_is_the_default_and_the_flags_win() -> None:
    keep, ignore, refuse = _tok(), _tok("ignore"), _tok("raise")
    ids = keep.encode("ab<|eot|>", allowed_special="all")
    assert keep.decode(ids) == "ab<|eot|>"
    assert ignore.decode(ids) == "ab"
    with pytest.raises(DecodeError, match="special tokens"):
        refuse.decode(ids)
    assert refuse.decode(ids[:1]) == "ab"
    assert ignore.decode(ids, skip_special_tokens=False) == "ab<|eot|>"
    assert keep.decode(ids, skip_special_tokens=True) == "ab"
    assert ignore.batch_decode([ids]) == ["ab"]
    # The deprecated Tekken keyword.
    assert keep.decode(ids, special_token_policy="ignore") == "ab"
    with pytest.raises(DecodeError):
        keep.decode(ids, special_token_policy="raise")
    with pytest.raises(ConfigError, match="not both"):
        keep.decode(ids, special_token_policy="keep", skip_special_tokens=True)
    with pytest.raises(ConfigError, match="special_token_policy"):
        keep.decode(ids, special_token_policy="drop")  # type: ignore[arg-type]


def test_the_policy_is_behaviour_in_the_config() -> None:
    keep, ignore = _tok(), _tok("ignore")
    assert "special_decode" not in keep.to_config()  # every other tokenizer keeps its hash
    assert ignore.to_config()["special_decode"] == "ignore"
    assert keep.semantic_hash != ignore.semantic_hash
    with pytest.raises(ConfigError, match="special_decode"):
        keep.spec.replace(special_decode="drop")
