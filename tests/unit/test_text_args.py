"""The batch-argument check: plain lists of str pass through one type scan; anything
else takes the checked path, with the same typed errors."""

from __future__ import annotations

import pytest

import tokenpact as tp
from tokenpact._text import _texts_arg
from tokenpact.errors import ConfigError, InvalidInputError


class _Str(str):
    pass


def test_plain_list_passes_through_unchanged() -> None:
    texts = ["a", "b c", ""]
    assert _texts_arg(texts, "encode_batch") is texts


@pytest.mark.parametrize(
    "texts,expected",
    [(("a", "b"), ["a", "b"]), (iter(["x"]), ["x"]), ([_Str("s"), "t"], ["s", "t"]), ([], [])],
)
def test_other_iterables_and_str_subclasses(texts: object, expected: list[str]) -> None:
    got = _texts_arg(texts, "encode_batch")
    assert got == expected and all(type(t) in (str, _Str) for t in got)


@pytest.mark.parametrize("bad", [[1], ["a", None], ["a", b"b"], 5])
def test_wrong_types_are_config_errors(bad: object) -> None:
    with pytest.raises(ConfigError):
        _texts_arg(bad, "encode_batch")


def test_one_string_is_refused_and_batches_still_encode() -> None:
    with pytest.raises(InvalidInputError, match="takes a list of texts"):
        _texts_arg("abc", "encode_batch")
    tok = tp.train_bpe(["low lower lowest"] * 4, vocab_size=270, special_tokens=())
    assert tok.encode_batch(["low", _Str("lower")]) == [tok.encode("low"), tok.encode("lower")]
    with pytest.raises(ConfigError):
        tok.encode_batch(["low", None])  # type: ignore[list-item]
