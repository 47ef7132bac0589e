"""One registry of tokenizer file formats: sniff a path, read it into a spec and its
provenance, verify the artifact's contract, build the Tokenizer (``tp.load``); write a
tokenizer in a named format (``tp.save``, ``tp.export``, ``tokenpact convert``).

Each :class:`Format` says how to recognize its files (``sniff``), how to read one into
``(TokenizerSpec, Provenance)`` (``read``), whether a directory's contract files seal it,
and, where a writer exists, how to write a tokenizer in that format (``write``, offered
under ``export_name``). The first format whose ``sniff`` accepts the path wins, so the
table's order is the precedence: a directory with ``tokenpact.json`` is native even if it
also holds a ``tokenizer.json``. A new format is one entry here plus its reader module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..contract import check_contract_files, recover_interrupted_save
from ..core import Provenance, Tokenizer, TokenizerSpec
from ..errors import ArtifactError
from . import (
    artifact_dir,
    hf_export,
    hf_json,
    native,
    sentencepiece_model,
    sentencepiece_write,
    tekken,
    tiktoken_file,
    tiktoken_registry,
)
from .artifact_dir import HF_FILE, SP_FILE, TRAINING_FILE

# The contract files a tokenpact save writes beside the tokenizer file(s).
SEAL_FILES = ("manifest.json", "golden.json", TRAINING_FILE, artifact_dir.POLICY_FILE)


@dataclass(frozen=True)
class ReadOptions:
    """What a caller of ``tp.load`` may add to a file that lacks it."""

    pattern: str | None = None


@dataclass(frozen=True)
class Format:
    """One tokenizer file format.

    ``sniff(path)`` decides from the path and the file's first bytes; ``read(path,
    options)`` returns the spec and provenance; ``seal_root(path)`` is the directory whose
    contract files (``manifest.json``, ``golden.json``) seal the artifact, or None for a
    bare file format; ``fail_closed``: a missing seal is an error (a native artifact is
    always saved with one); ``tokenizer_class(cls, provenance)`` picks the class to build
    (a Tekken file builds a ``TekkenTokenizer`` whatever ``cls`` is); ``trained``: a
    model whose training record names an algorithm the caller maps to a class is built
    as that class (a saved ``train_unigram`` model gets its lattice methods back);
    ``write(tok, path)`` writes the format and returns the path written, and
    ``export_name`` is the name ``tp.export`` and ``tokenpact convert --to`` offer it under
    (formats that share a writer name it once).
    """

    name: str
    sniff: Callable[[Path], bool]
    read: Callable[[Path, ReadOptions], tuple[TokenizerSpec, Provenance]]
    seal_root: Callable[[Path], Path] | None = None
    fail_closed: bool = False
    tokenizer_class: Callable[[type[Tokenizer], Provenance], type[Tokenizer]] | None = None
    write: Callable[[Tokenizer, Path], Path] | None = None
    export_name: str | None = None
    trained: bool = False


def _head(path: Path, size: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read the file ({exc.strerror or exc})") from None


def _with_training(
    root: Path, spec_prov: tuple[TokenizerSpec, Provenance]
) -> tuple[TokenizerSpec, Provenance]:
    """A saved tokenizer's training record (``training.json`` beside its file), if any."""
    spec, provenance = spec_prov
    return spec, provenance.with_training(artifact_dir.read_training(root))


# ----------------------------------------------------------------------------- sniffing
def _is_bare_file(path: Path) -> bool:
    return path.is_file() and path.suffix != ".json" and path.name != native.FILENAME


def _sniff_sentencepiece_file(path: Path) -> bool:
    return _is_bare_file(path) and sentencepiece_model.looks_like_sentencepiece(_head(path, 1))


def _sniff_tiktoken_file(path: Path) -> bool:
    # After the SentencePiece check: Llama 3 ships a tiktoken file named tokenizer.model.
    return _is_bare_file(path) and path.suffix in (".tiktoken", ".model")


def _bare_dir(path: Path, name: str) -> bool:
    return path.is_dir() and not (path / native.FILENAME).exists() and (path / name).exists()


def _is_other_json(path: Path) -> bool:
    return path.is_file() and path.name != native.FILENAME and path.suffix == ".json"


def _sniff_tekken(path: Path) -> bool:
    return _is_other_json(path) and tekken.looks_like_tekken(_head(path, 4096))


def _sniff_hf_file(path: Path) -> bool:
    return _is_other_json(path) and b'"tokenpact.tokenizer"' not in _head(path, 4096)


# ----------------------------------------------------------------------------- reading
def _read_native(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    return native.read_native(native.native_path(path))


def _read_hf_dir(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    return _with_training(path, hf_json.read_hf_json(path / HF_FILE))


# Files that sit beside a tokenizer but hold no vocabulary, and what to load instead.
_COMPANIONS = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
    "generation_config.json",
    *SEAL_FILES,
)


def _companion_error(path: Path) -> ArtifactError:
    beside = [n for n in (HF_FILE, SP_FILE, native.FILENAME) if (path.parent / n).exists()]
    if beside:
        meant = f"{path.parent / beside[0]} or the directory {path.parent}"
    else:
        meant = f"the tokenizer.json (or the model directory) that {path.name} goes with"
    return ArtifactError(
        f"{path} is a {path.name}, not a tokenizer (it holds no vocabulary); did you mean {meant}?"
    )


def _read_hf_file(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    if path.name in _COMPANIONS:
        raise _companion_error(path)
    return _with_training(path.parent, hf_json.read_hf_json(path))


def _read_sp_dir(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    return _with_training(path, sentencepiece_model.read_sentencepiece(path / SP_FILE))


def _read_sp_file(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    return sentencepiece_model.read_sentencepiece(path)


def _read_tiktoken(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    return tiktoken_registry.read_tiktoken_spec(path, pattern=options.pattern)


def _read_tekken(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    return tekken.read_tekken_spec(path)


def _read_tekken_dir(path: Path, options: ReadOptions) -> tuple[TokenizerSpec, Provenance]:
    return tekken.read_tekken_spec(path / tekken.TEKKEN_FILE)


# ----------------------------------------------------------------------------- classes
def _plain(cls: type[Tokenizer], provenance: Provenance) -> type[Tokenizer]:
    return Tokenizer


def _same(cls: type[Tokenizer], provenance: Provenance) -> type[Tokenizer]:
    return cls


def _tekken_class(cls: type[Tokenizer], provenance: Provenance) -> type[Tokenizer]:
    return tekken.TekkenTokenizer


# ----------------------------------------------------------------------------- writing
def _write_native(tok: Tokenizer, path: Path) -> Path:
    # The native format is the sealed artifact directory (tokenpact.json or the exact
    # source file, manifest.json, golden.json): what ``tp.save`` writes.
    tekken.check_saveable(tok)
    return artifact_dir.save_tokenizer(tok, path)


def _write_hf(tok: Tokenizer, path: Path) -> Path:
    # Tekken's special IDs sit below its ranks, in the vocabulary: its own document.
    if tekken.special_count(tok.spec):
        return tekken.export_tekken_hf(tok, path)
    return hf_export.export_hf(tok, path)


def _write_sentencepiece(tok: Tokenizer, path: Path) -> Path:
    return sentencepiece_write.export_sentencepiece(tok, path)


def _write_tiktoken(tok: Tokenizer, path: Path) -> Path:
    tiktoken_file.check_exact_tiktoken(tok)
    tiktoken_file.write_tiktoken(path, tok.vocab())
    return path


def _parent(path: Path) -> Path:
    return path.parent


def _itself(path: Path) -> Path:
    return path


def _native_root(path: Path) -> Path:
    return native.native_path(path).parent


FORMATS: tuple[Format, ...] = (
    Format(
        "sentencepiece_model",
        _sniff_sentencepiece_file,
        _read_sp_file,
        tokenizer_class=_plain,
        write=_write_sentencepiece,
        export_name="sentencepiece",
    ),
    Format(
        "tiktoken",
        _sniff_tiktoken_file,
        _read_tiktoken,
        tokenizer_class=_same,
        write=_write_tiktoken,
        export_name="tiktoken",
    ),
    Format(
        "hf_tokenizer_json_dir",
        lambda p: _bare_dir(p, HF_FILE),
        _read_hf_dir,
        seal_root=_itself,
        tokenizer_class=_plain,
        write=_write_hf,
    ),
    Format(
        "sentencepiece_model_dir",
        lambda p: _bare_dir(p, SP_FILE),
        _read_sp_dir,
        seal_root=_itself,
        tokenizer_class=_plain,
        write=_write_sentencepiece,
        trained=True,
    ),
    Format("tekken", _sniff_tekken, _read_tekken, tokenizer_class=_tekken_class),
    # A saved Tekken artifact: the exact tekken.json with the manifest and golden vectors.
    Format(
        "tekken_dir",
        lambda p: _bare_dir(p, tekken.TEKKEN_FILE),
        _read_tekken_dir,
        seal_root=_itself,
        tokenizer_class=_tekken_class,
        write=_write_native,
    ),
    Format(
        "hf_tokenizer_json",
        _sniff_hf_file,
        _read_hf_file,
        seal_root=_parent,
        tokenizer_class=_plain,
        write=_write_hf,
        export_name="hf",
    ),
    # Last: anything else is a native artifact directory or tokenpact.json (whose reader
    # names what is missing).
    Format(
        "tokenpact_json",
        lambda p: True,
        _read_native,
        seal_root=_native_root,
        fail_closed=True,
        tokenizer_class=_same,
        write=_write_native,
        export_name="native",
    ),
)


_registered: list[Format] = list(FORMATS)


def register(fmt: Format) -> None:
    """Add a format, tried before the built-in ones (a plug-in's files win over the
    native fallback); a format of the same name is replaced."""
    _registered[:] = [fmt, *(f for f in _registered if f.name != fmt.name)]


def unregister(name: str) -> None:
    """Remove a registered format (built-in ones included)."""
    _registered[:] = [f for f in _registered if f.name != name]


def formats() -> tuple[Format, ...]:
    """The registered formats in the order they are tried."""
    return tuple(_registered)


def format_of(path: Path) -> Format:
    """The first registered format that recognizes ``path``."""
    if not path.exists():
        raise ArtifactError(
            f"{path} does not exist; check the path (tp.load reads an artifact "
            "directory, tokenpact.json, tokenizer.json, *.tiktoken or a SentencePiece .model)"
        )
    for fmt in _registered:
        if fmt.sniff(path):
            return fmt
    raise ArtifactError(f"{path}: no registered format reads it")


def format_named(name: str) -> Format:
    for f in _registered:
        if f.name == name:
            return f
    known = ", ".join(f.name for f in _registered)
    raise ArtifactError(f"unknown format {name!r}; known: {known}")


def export_names() -> tuple[str, ...]:
    """The names ``exporter`` accepts, in registration order."""
    return tuple(dict.fromkeys(f.export_name for f in _registered if f.export_name))


def exporter(name: str) -> Format:
    """The registered format that writes under ``name`` (``"hf"``, ``"native"``, ...)."""
    for f in _registered:
        if f.export_name == name and f.write is not None:
            return f
    known = ", ".join(export_names())
    raise ArtifactError(f"no format writes {name!r}; known: {known}")


def write(tok: Tokenizer, name: str, path: Path) -> Path:
    """Write ``tok`` at ``path`` with the writer registered under ``name``."""
    fmt = exporter(name)
    assert fmt.write is not None  # exporter() returns writers only
    return fmt.write(tok, path)


def read(path: Path, *, pattern: str | None = None) -> tuple[TokenizerSpec, Provenance]:
    """Sniff ``path`` and read it (no contract check: see :func:`load`)."""
    return format_of(path).read(path, ReadOptions(pattern=pattern))


def load(
    cls: type[Tokenizer],
    path: Path,
    *,
    pattern: str | None,
    verify: bool,
    trained_classes: Mapping[str, type[Tokenizer]] | None = None,
) -> Tokenizer:
    """``tp.load``: sniff, finish an interrupted save, read, build, then check the
    manifest and golden vectors (``verify``). ``trained_classes`` maps a training
    algorithm to the class a format marked ``trained`` builds for it."""
    fmt = format_of(path)
    root = None if fmt.seal_root is None else fmt.seal_root(path)
    sealed = False
    if root is not None and root.is_dir():
        # A tokenpact save always writes manifest.json; golden.json or training.json
        # without it means the seal was removed, which must not read as "nothing to verify".
        sealed = fmt.fail_closed or any((root / name).exists() for name in SEAL_FILES)
        if sealed:
            recover_interrupted_save(root)
    spec, provenance = fmt.read(path, ReadOptions(pattern=pattern))
    if root is not None and root.is_dir():
        spec = artifact_dir.read_policy(root, spec)
    tokenizer_class = cls if fmt.tokenizer_class is None else fmt.tokenizer_class(cls, provenance)
    algorithm = (provenance.training or {}).get("algorithm")
    if fmt.trained and trained_classes and isinstance(algorithm, str):
        tokenizer_class = trained_classes.get(algorithm, tokenizer_class)
    tok = tokenizer_class(spec, provenance=provenance)
    if verify and sealed and root is not None:
        # Fail closed for native artifacts: tok.save() always writes the contract files,
        # so a tokenpact.json without them is unverified (deleted, or never sealed).
        check_contract_files(tok, root)
    return tok
