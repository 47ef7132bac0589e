"""The artifact directory: the tokenizer file(s), ``manifest.json`` and ``golden.json``.

The tokenizer file is ``tokenpact.json`` for native tokenizers (converted here to and
from the validated :class:`~tokenpact.formats.native.NativeArtifact`; ``native.py`` owns
that format), the exact ``tokenizer.json`` (+ ``tokenizer_config.json``) of a Hugging
Face tokenizer, or the exact ``tokenizer.model`` of a SentencePiece one. Those two
formats have no place for a training record, so a trained tokenizer also writes
``training.json`` (the full record: config, seed, stop reason, traces); it is a release
file, sealed by the manifest like the others.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.canonical import nesting_depth
from ..errors import ArtifactError
from ..special import SpecialToken
from . import native

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def to_artifact(tok: Tokenizer) -> native.NativeArtifact:
    """The native artifact describing ``tok`` (behaviour plus training record)."""
    specials = [
        native.NativeSpecialToken(id=i, content=c, role=tok.special_token_roles[c])
        for c, i in tok.special_tokens.items()
    ]
    common: dict[str, Any] = {
        "pattern": tok.pattern,
        "pattern_name": tok.pattern_name,
        "special_tokens": specials,
        "post_processor": tok.post_processor,
        "training": tok.training,
    }
    if tok.semantics == "merge_ranks":
        return native.NativeArtifact(
            semantics=native.MERGE_RANKS, merges=tok.merges, vocab=tok.vocab(), **common
        )
    return native.NativeArtifact(semantics=native.TIKTOKEN_RANKS, ranks=tok.vocab(), **common)


def from_artifact(cls: type[Tokenizer], a: native.NativeArtifact) -> Tokenizer:
    """Rebuild a Tokenizer from a validated artifact."""
    specials_by_id = sorted(a.special_tokens, key=lambda s: s.id)
    if a.semantics == native.MERGE_RANKS:
        base = 256 + len(a.merges)
        expected = list(range(base, base + len(specials_by_id)))
        if [s.id for s in specials_by_id] == expected:
            ordered = [SpecialToken(s.content, s.role) for s in specials_by_id]
            tok = cls.from_merges(
                a.merges, pattern=a.pattern, special_tokens=ordered, training=a.training
            )
        else:
            from .. import _native

            core = _native.BpeCore.from_merges(
                a.merges, a.pattern, a.pattern_name, [(s.content, s.id) for s in specials_by_id]
            )
            tok = cls(
                core,
                pattern=a.pattern,
                semantics="merge_ranks",
                special_tokens=[(SpecialToken(s.content, s.role), s.id) for s in specials_by_id],
                post_processor=a.post_processor,
                training=a.training,
            )
    else:
        tok = cls.from_ranks(
            a.ranks,
            pattern=a.pattern,
            special_tokens={s.content: s.id for s in specials_by_id},
            roles={s.content: s.role for s in specials_by_id},
        )
        tok._training = a.training
    tok._post_processor = a.post_processor
    return tok


SP_FILE = "tokenizer.model"
HF_FILE = "tokenizer.json"
TRAINING_FILE = "training.json"


def training_bytes(training: dict[str, Any]) -> bytes:
    """``training.json``: the training record as sorted, indented JSON."""
    try:
        text = json.dumps(
            native.json_safe(training),
            sort_keys=True,
            indent=1,
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        raise ArtifactError(
            f"the training record cannot be written as JSON ({exc}); keep its values to "
            "str, int, finite float, bool, None, lists and dicts"
        ) from None
    return text.encode("utf-8") + b"\n"


def read_training(root: Path) -> dict[str, Any] | None:
    """The training record saved beside a tokenizer file, or None when there is none."""
    path = root / TRAINING_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ArtifactError(f"{path}: cannot read the training record ({exc!r:.200})") from None
    if not isinstance(record, dict):
        raise ArtifactError(f"{path}: the training record must be a JSON object")
    if nesting_depth(record) > native.MAX_RECORD_DEPTH:
        raise ArtifactError(
            f"{path}: the training record nests deeper than {native.MAX_RECORD_DEPTH} levels; "
            "re-save the tokenizer"
        )
    return record


def _with_training(tok: Tokenizer, files: dict[str, bytes]) -> dict[str, bytes]:
    if tok.training is not None:
        files[TRAINING_FILE] = training_bytes(tok.training)
    return files


def release_files(tok: Tokenizer) -> dict[str, bytes]:
    """The tokenizer file(s) a save writes: ``tokenpact.json``, or the exact bytes of the
    ``tokenizer.json`` / ``tokenizer.model`` the tokenizer was built from (they are the
    artifact), plus ``training.json`` for those when there is a training record."""
    hf_semantics = ("merge_records", "hf_pipeline")
    if tok.semantics in hf_semantics and tok.source.get("format") == "hf_tokenizer_json":
        # The tokenizer.json (and tokenizer_config.json: roles, chat template) as loaded.
        return _with_training(tok, dict(tok._hf_files))
    if tok.semantics == "sentencepiece":
        return _with_training(tok, {SP_FILE: tok._sp_bytes})  # type: ignore[attr-defined]
    if tok.semantics in hf_semantics:
        raise ArtifactError(
            "this tokenizer was built from explicit merge records; saving it natively is not "
            "supported yet: save the records with your own code or load it from a file"
        )
    return {native.FILENAME: native.artifact_to_json(to_artifact(tok)).encode("utf-8")}


# Every tokenizer file a save of any kind writes. Saving one kind over a directory that
# holds another removes the other kind's files in the same commit, so no stale
# tokenpact.json / tokenizer.json is left for a later load (or another tool) to read.
TOKENIZER_FILES = (native.FILENAME, HF_FILE, "tokenizer_config.json", SP_FILE, TRAINING_FILE)


def save_tokenizer(tok: Tokenizer, directory: Path) -> Path:
    """Write the tokenizer file, ``manifest.json`` and ``golden.json`` as one commit."""
    from ..contract import write_contract_files

    files = release_files(tok)  # before touching the disk: a failure leaves nothing behind
    if directory.exists() and not directory.is_dir():
        raise ArtifactError(
            f"{directory} is a file; save into a directory (a new path, or an artifact "
            "directory to replace)"
        )
    created = not directory.exists()
    stale = [name for name in TOKENIZER_FILES if name not in files]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_contract_files(tok, directory, release_files=files, remove=stale)
    except OSError as exc:
        _remove_if_empty(directory, created)
        raise ArtifactError(
            f"cannot save into {directory}: {exc.strerror or exc}; check the path and its "
            "permissions"
        ) from None
    except BaseException:
        _remove_if_empty(directory, created)
        raise
    return directory


def _remove_if_empty(directory: Path, created: bool) -> None:
    if created:
        try:
            directory.rmdir()
        except OSError:
            pass


def load_any(cls: type[Tokenizer], path: Path, *, pattern: str | None, verify: bool) -> Tokenizer:
    """``Tokenizer.load``: pick the format from the path, load, verify the contract.

    A directory holds ``tokenpact.json``, else ``tokenizer.json``, else a SentencePiece
    ``tokenizer.model`` (tried in that order). A ``.model`` file is told apart from a
    tiktoken rank file (Llama 3 ships one named ``tokenizer.model``) by its content.
    """
    from .sentencepiece_model import looks_like_sentencepiece
    from .tekken import load_tekken, looks_like_tekken

    if not path.exists():
        raise ArtifactError(
            f"{path} does not exist; check the path (Tokenizer.load reads an artifact "
            "directory, tokenpact.json, tokenizer.json, *.tiktoken or a SentencePiece .model)"
        )
    if path.is_file() and path.suffix != ".json" and path.name != native.FILENAME:
        with open(path, "rb") as handle:
            head = handle.read(1)
        if looks_like_sentencepiece(head):
            return cls.from_sentencepiece(path)
        if path.suffix in (".tiktoken", ".model"):
            return cls.from_tiktoken(path, pattern=pattern or "gpt4")
    if path.is_dir() and not (path / native.FILENAME).exists():
        if (path / HF_FILE).exists():
            return _load_sealed(path, _load_hf, verify)
        if (path / SP_FILE).exists():
            return _load_sealed(path, _load_sp, verify)
    elif path.is_file() and path.name != native.FILENAME and path.suffix == ".json":
        with open(path, "rb") as handle:
            head = handle.read(4096)
        if looks_like_tekken(head):
            return load_tekken(path)
        if b'"tokenpact.tokenizer"' not in head:
            return _load_sealed(path.parent, lambda root: _load_hf(root, path), verify)
    return load_tokenizer(cls, path, verify=verify)


def _load_sealed(root: Path, load: Any, verify: bool) -> Tokenizer:
    """Finish an interrupted save, load, then check the manifest when there is one."""
    from ..contract import check_contract_files, recover_interrupted_save

    # A tokenpact save always writes manifest.json; golden.json or training.json without
    # it means the seal was removed, which must not read as "nothing to verify".
    sealed = any((root / name).exists() for name in ("manifest.json", "golden.json", TRAINING_FILE))
    if sealed:
        recover_interrupted_save(root)
    tok: Tokenizer = load(root)
    if verify and sealed:
        check_contract_files(tok, root)
    return tok


def _load_hf(root: Path, file: Path | None = None) -> Tokenizer:
    from .hf_json import load_hf_json

    tok = load_hf_json(file or root / HF_FILE)
    tok._training = read_training(root)
    return tok


def _load_sp(root: Path) -> Tokenizer:
    """A saved SentencePiece tokenizer; one trained by ``train_unigram`` gets its lattice
    methods back (``nbest``, ``sample``, ``log_likelihood``)."""
    from .sentencepiece_model import load_sentencepiece

    path = root / SP_FILE
    training = read_training(root)
    if training is not None and training.get("algorithm") == "unigram":
        from ..train.trained import UnigramTokenizer

        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ArtifactError(f"{path}: cannot read the SentencePiece model ({exc})") from None
        tok: Tokenizer = UnigramTokenizer.from_model_bytes(data, training=training, label=path)
        tok._source["path"] = str(path)
        return tok
    tok = load_sentencepiece(path)
    tok._training = training
    return tok


def load_tokenizer(cls: type[Tokenizer], path: Path, *, verify: bool = True) -> Tokenizer:
    """Load from an artifact directory or a ``tokenpact.json`` file; verify its contract."""
    from ..contract import check_contract_files, recover_interrupted_save

    target = native.native_path(path)
    root = target.parent
    if root.is_dir():
        recover_interrupted_save(root)
    tok = from_artifact(cls, native.read_native(target))
    if verify:
        # Fail closed: tok.save() always writes the contract files, so a tokenpact.json
        # without them is unverified (deleted, or never sealed): refused unless the caller
        # opts out with verify=False.
        check_contract_files(tok, root)
    return tok
