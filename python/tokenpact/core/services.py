"""What the Tokenizer's file and hash methods need from the layers above the core.

Reading and writing tokenizer files is the job of :mod:`tokenpact.formats`, hashing and
sealing artifacts that of :mod:`tokenpact.contract`; both build on the core, so the core
may not import them (the layers contract in ``pyproject.toml`` forbids it, inside
functions too). Yet ``Tokenizer.load``, ``from_hf``, ``save``, ``export_*``,
``semantic_hash`` and ``manifest`` are public methods of the core's class. The core
therefore declares what it needs as the :class:`Services` protocol and asks
:func:`services` for the implementation at call time (dependency inversion).

Binding: :data:`PROVIDER` names the module that implements the protocol (one module at
the top of the package, beside the command line). :func:`services` imports it by name
on first use, and the provider calls :func:`bind` when imported. Naming the provider as
a string keeps the import graph layered: the core knows where its services are, not
what they import. A program may :func:`bind` another implementation first (a test
double); the latest binding wins.

A new file format does not go here: it plugs into ``tokenpact.formats.registry`` (see
docs/ARCHITECTURE.md), which ``Services.load`` consults.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .provenance import Provenance
    from .spec import TokenizerSpec
    from .tokenizer import Tokenizer

# The module that implements Services and binds it when imported.
PROVIDER = "tokenpact._services"


class Services(Protocol):
    """Readers, writers and hashes, implemented above the core (see the module doc)."""

    def load(
        self, cls: type[Tokenizer], path: Path, *, pattern: str | None, verify: bool
    ) -> Tokenizer:
        """``Tokenizer.load``: sniff the format, read, build ``cls`` (or the format's own
        class), verify the artifact's seal."""
        ...

    def read_hf(self, path: Path) -> tuple[TokenizerSpec, Provenance]:
        """A Hugging Face ``tokenizer.json`` file."""
        ...

    def read_sentencepiece(self, path: str | os.PathLike[str]) -> tuple[TokenizerSpec, Provenance]:
        """A SentencePiece ``.model`` file."""
        ...

    def read_tiktoken(
        self,
        path: str | os.PathLike[str],
        *,
        pattern: str | None,
        special_tokens: dict[str, int] | None,
        roles: dict[str, str] | None,
    ) -> tuple[TokenizerSpec, Provenance]:
        """A ``*.tiktoken`` rank file."""
        ...

    def document_spec(
        self, document: dict[str, Any], *, label: str, config: dict[str, Any] | None
    ) -> tuple[TokenizerSpec, Provenance]:
        """A ``tokenizer.json`` document in memory, validated like the file."""
        ...

    def document(self, tok: Tokenizer) -> dict[str, Any]:
        """The ``tokenizer.json`` document ``export_hf`` writes for ``tok``."""
        ...

    def save(self, tok: Tokenizer, directory: Path) -> Path:
        """``Tokenizer.save``: the sealed artifact directory."""
        ...

    def export_hf(self, tok: Tokenizer, path: str | os.PathLike[str]) -> Path: ...

    def pretrained_path(self, name_or_path: str | os.PathLike[str]) -> Path:
        """``Tokenizer.from_pretrained``: the local path of a directory, file or cached
        Hub model ID."""
        ...

    def save_pretrained(self, tok: Tokenizer, directory: Path) -> Path:
        """``Tokenizer.save_pretrained``: a directory transformers loads."""
        ...

    def export_sentencepiece(self, tok: Tokenizer, path: str | os.PathLike[str]) -> Path: ...

    def export_tiktoken(self, tok: Tokenizer, path: str | os.PathLike[str]) -> None: ...

    def semantic_hash(self, tok: Tokenizer) -> str: ...

    def release_hash(self, tok: Tokenizer) -> str: ...

    def manifest(self, tok: Tokenizer) -> dict[str, Any]: ...


_bound: Services | None = None


def bind(implementation: Services) -> None:
    """Make ``implementation`` the services every Tokenizer uses from now on."""
    global _bound
    _bound = implementation


def services() -> Services:
    """The bound services, importing :data:`PROVIDER` (which binds them) on first use."""
    if _bound is None:
        importlib.import_module(PROVIDER)
    if _bound is None:
        raise ImportError(f"{PROVIDER} was imported but bound no services")
    return _bound
