"""``Provenance``: where a tokenizer came from, kept apart from what it does.

The source format and path, the exact bytes of the source files (a Hugging Face
``tokenizer.json`` and ``tokenizer_config.json``, a SentencePiece ``.model``: they are
the release artifact ``save`` writes back unchanged) and the training record. Nothing
here changes an encoding, so nothing here is in the semantic hash; the files and the
training record are in the release hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .pickling import Reduced, reduce_frozen


@dataclass(frozen=True, eq=False)
class TrainedSpellings:
    """How a trainer spells its pieces and merges (a character BPE's ``low</w>``): the
    pieces by model ID, the merges in training order and the end-of-word marker. A
    record of the training, not behaviour: the engine runs the spec."""

    pieces: tuple[str, ...]
    merges: tuple[tuple[str, str], ...]
    end_of_word: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "pieces", tuple(self.pieces))
        object.__setattr__(self, "merges", tuple((a, b) for a, b in self.merges))

    def __reduce__(self) -> Reduced:
        return reduce_frozen(self)


@dataclass(frozen=True, eq=False)
class Provenance:
    """Origin of a tokenizer.

    ``format`` names the reader (``"hf_tokenizer_json"``, ``"sentencepiece_model"``,
    ``"tekken"``, ...; None for a tokenizer built in memory); ``source`` is the public
    record ``Tokenizer.source`` returns (format, path and the flags of the file, as the
    reader describes them); ``files`` the exact source bytes by file name; ``training``
    the training record of a trained tokenizer; ``label`` names the origin in errors;
    ``spellings`` the trainer's spellings of pieces and merges, where they differ from
    the engine's (:class:`TrainedSpellings`).
    """

    format: str | None = None
    source: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)
    training: Mapping[str, Any] | None = None
    label: str | None = None
    spellings: TrainedSpellings | None = None

    def __post_init__(self) -> None:
        freeze = object.__setattr__
        freeze(self, "source", MappingProxyType(dict(self.source)))
        freeze(self, "files", MappingProxyType(dict(self.files)))

    def __reduce__(self) -> Reduced:
        """Pickle as the constructor's arguments (the read-only views as dicts)."""
        return reduce_frozen(self)

    def with_training(self, training: Mapping[str, Any] | None) -> Provenance:
        return replace(self, training=training)

    def with_spellings(self, spellings: TrainedSpellings | None) -> Provenance:
        return replace(self, spellings=spellings)

    def with_source(self, **entries: Any) -> Provenance:
        """The same provenance with ``source`` entries added or replaced (a path)."""
        return replace(self, source={**self.source, **entries})

    @property
    def path(self) -> str | None:
        path = self.source.get("path")
        return None if path is None else str(path)


BUILT_IN_MEMORY = Provenance()
