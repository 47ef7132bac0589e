"""Special-token registry and a word-vocabulary builder that counts only the fit split."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from ..errors import ConfigError, UnknownTokenError

REGISTRY_NAMES = ("<pad>", "<bos>", "<eos>", "<unk>")


class SpecialTokenRegistry:
    """Reserves control IDs directly above a base vocabulary, before any encoding.

    >>> reg = SpecialTokenRegistry(base_vocabulary_size=38)
    >>> reg.stoi
    {'<pad>': 38, '<bos>': 39, '<eos>': 40, '<unk>': 41}
    >>> reg.wrap([])
    [39, 40]
    """

    def __init__(self, base_vocabulary_size: int, names: Sequence[str] = REGISTRY_NAMES) -> None:
        if base_vocabulary_size < 0:
            raise ConfigError("base_vocabulary_size must be >= 0")
        if len(set(names)) != len(names):
            raise ConfigError("special token names must be distinct")
        self.base_vocabulary_size = base_vocabulary_size
        self.stoi = {name: base_vocabulary_size + i for i, name in enumerate(names)}

    @property
    def vocab_size(self) -> int:
        return self.base_vocabulary_size + len(self.stoi)

    def is_special(self, token_id: int) -> bool:
        return token_id >= self.base_vocabulary_size and token_id < self.vocab_size

    def wrap(self, token_ids: Iterable[int]) -> list[int]:
        """``<bos>`` + ids + ``<eos>``; rejects content IDs that collide with controls."""
        ids = list(token_ids)
        for i in ids:
            if self.is_special(i):
                raise ConfigError(
                    f"content ID {i} is a reserved special ID; encode content with the base "
                    "vocabulary only"
                )
        return [self.stoi["<bos>"], *ids, self.stoi["<eos>"]]


class WordVocab:
    """Word -> ID map with an optional default index for unknown words."""

    def __init__(self, itos: Sequence[str], default_index: int | None = None) -> None:
        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.default_index = default_index

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def __getitem__(self, word: str) -> int:
        if word in self.stoi:
            return self.stoi[word]
        if self.default_index is None:
            raise UnknownTokenError(
                f"{word!r} is not in the vocabulary and no default index is set; call "
                "set_default_index(vocab['<unk>'])"
            )
        return self.default_index

    def set_default_index(self, index: int | None) -> None:
        if index is not None and not 0 <= index < len(self.itos):
            raise ConfigError(f"default index {index} is outside the vocabulary")
        self.default_index = index

    def lookup_indices(self, words: Iterable[str]) -> list[int]:
        return [self[w] for w in words]


def build_word_vocab(
    fit_texts: Iterable[str],
    *,
    tokenize: Callable[[str], Iterable[str]] = str.split,
    min_freq: int = 1,
    specials: Sequence[str] = ("<unk>",),
    default: str | None = "<unk>",
) -> WordVocab:
    """Count words in the *fit* split only, keep those seen ``min_freq`` times.

    Pass only training text: counting validation or test text would let held-out words
    enter the vocabulary and understate the unknown rate. Specials come
    first; other words by descending count, then alphabetically.
    """
    if min_freq < 1:
        raise ConfigError("min_freq must be >= 1")
    if isinstance(fit_texts, str):
        raise ConfigError("fit_texts must be an iterable of texts, not one string")
    counts: Counter[str] = Counter()
    for text in fit_texts:
        counts.update(tokenize(text))
    words = sorted(
        (w for w, c in counts.items() if c >= min_freq and w not in specials),
        key=lambda w: (-counts[w], w),
    )
    vocab = WordVocab([*specials, *words])
    if default is not None:
        if default not in vocab.stoi:
            raise ConfigError(f"default token {default!r} must be one of the specials")
        vocab.set_default_index(vocab.stoi[default])
    return vocab
