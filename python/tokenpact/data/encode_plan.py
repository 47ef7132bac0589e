"""What one ``encode_dataset`` run does, decided before anything is encoded.

An :class:`EncodePlan` joins a chunk source (:mod:`tokenpact.data.chunk_source`: where
encoded chunks come from, locally or on Ray) and the shard sink
(:mod:`tokenpact.data.shard_sink`: the shard files and, beside them, the corpus
manifest). It holds the documents in ``doc_id`` order, the shard bounds, the options
every chunk is encoded with and where the files go; :meth:`EncodePlan.chunk_bounds`
cuts the shards into chunks, a function of the shard's texts only, so every source
cuts the same chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .chunk_encoding import EncodeOptions
from .documents import Document
from .shard_writer import chunk_bounds

if TYPE_CHECKING:
    from ..contract import CorpusManifest
    from ..core import Tokenizer

CORPUS_NAME = "corpus.json"


def shard_name(index: int) -> str:
    return f"shard-{index:05d}"


@dataclass(frozen=True, eq=False)
class EncodePlan:
    """The documents, their shards and the options of one encode run.

    ``bounds[k]`` is shard ``k``'s ``(start, stop)`` in the ``doc_id``-ordered
    ``docs`` (``texts`` and ``doc_ids`` are their columns). ``source_digests``: the
    chunk source can hash each text while encoding it (see :attr:`text_digests`).
    """

    tokenizer: Tokenizer
    out: Path
    docs: Sequence[Document]
    texts: list[str]
    doc_ids: list[str]
    bounds: list[tuple[int, int]]
    options: EncodeOptions
    corpus: CorpusManifest | None = None
    corpus_revision: str = "unversioned"
    roles: Mapping[str, str] | None = None
    source_digests: bool = False

    @property
    def text_digests(self) -> bool:
        """Whether the source hashes each text while encoding it and its chunks carry
        the digests, from which the sink writes the corpus manifest: when the source
        can, the manifest is built from these documents (no ``corpus`` given) and no
        special tokens are added. Else the sink reads the texts itself; the files are
        the same either way."""
        return (
            self.source_digests
            and self.options.digests_possible
            and self.corpus is None
            and bool(self.docs)
        )

    def chunk_bounds(self) -> Iterator[tuple[int, int, int]]:
        """``(shard, start, stop)`` of every chunk, in shard order."""
        chunk_chars = self.options.chunk_chars
        for k, (a, b) in enumerate(self.bounds):
            for c0, c1 in chunk_bounds(self.texts[a:b], chunk_chars):
                yield k, a + c0, a + c1
