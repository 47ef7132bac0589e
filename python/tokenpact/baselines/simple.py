"""Character, byte and word tokenizers with explicit unknown and round-trip promises."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import ConfigError, DecodeError, UnknownTokenError

UNK = "<unk>"


def _check_ids(ids: Iterable[int], size: int) -> list[int]:
    out = [int(i) for i in ids]
    for i in out:
        if not 0 <= i < size:
            raise UnknownTokenError(f"ID {i} is outside this vocabulary of {size}")
    return out


class CharacterTokenizer:
    """One ID per character seen when fitting; ID 0 is ``<unk>``.

    Promise: ``decode(encode(x)) == x`` iff every character of x was in the fit text;
    unknown characters encode to 0 and decode to nothing (so the loss is visible).

    >>> tok = CharacterTokenizer.fit(["abc"])
    >>> tok.encode("cab?"), tok.decode(tok.encode("cab?"))
    ([3, 1, 2, 0], 'cab')
    """

    unk_id = 0

    def __init__(self, alphabet: Sequence[str]) -> None:
        if any(len(c) != 1 for c in alphabet):
            raise ConfigError("a character alphabet holds single characters")
        self.itos = [UNK, *sorted(set(alphabet))]
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    @classmethod
    def fit(cls, texts: Iterable[str]) -> CharacterTokenizer:
        chars: set[str] = set()
        for text in texts:
            chars.update(text)
        return cls(sorted(chars))

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(c, 0) for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.itos[i] for i in _check_ids(ids, len(self.itos)) if i != 0)


class ByteTokenizer:
    """The 256 UTF-8 byte values: every string round-trips, nothing is unknown.

    Decoding arbitrary IDs may not be valid UTF-8: ``errors="replace"`` substitutes
    U+FFFD, ``"strict"`` raises ``DecodeError``.

    >>> ByteTokenizer().decode([0xC3, 0x28], errors="replace")
    '\\ufffd('
    """

    vocab_size = 256

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Iterable[int], errors: str = "strict") -> str:
        data = bytes(_check_ids(ids, 256))
        if errors == "strict":
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DecodeError(
                    f"bytes {exc.start}..{exc.end} are not valid UTF-8; decode with "
                    "errors='replace' to substitute U+FFFD"
                ) from None
        if errors != "replace":
            raise ConfigError(f"errors must be 'strict' or 'replace', got {errors!r}")
        return data.decode("utf-8", errors="replace")


class WordTokenizer:
    """Whitespace-separated words seen when fitting; ID 0 is ``<unk>``.

    Promise: decode returns the known words joined by single spaces; whitespace layout
    is not preserved and every unseen word becomes ``<unk>``.
    """

    unk_id = 0

    def __init__(self, words: Iterable[str]) -> None:
        self.itos = [UNK, *sorted(set(words) - {UNK})]
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @classmethod
    def fit(cls, texts: Iterable[str]) -> WordTokenizer:
        words: set[str] = set()
        for text in texts:
            words.update(text.split())
        return cls(words)

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(w, 0) for w in text.split()]

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.itos[i] for i in _check_ids(ids, len(self.itos)))
