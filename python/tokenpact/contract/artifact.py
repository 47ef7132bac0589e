"""Contract files beside a saved tokenizer: ``manifest.json`` and ``golden.json``.

``write_contract_files`` seals a saved tokenizer; ``check_contract_files`` is what
``Tokenizer.load`` runs when those files exist, and fails loudly on any drift.

Saving is a small journaled commit, so a crash at any point (even ``kill -9``) leaves a
consistent artifact:

1. every new file is written completely and fsynced as ``.NAME.staged``;
2. the commit record ``.tokenpact-commit.json`` is written atomically (the commit point);
3. staged files are renamed over the live ones, then the record is removed.

:func:`recover_interrupted_save` (run by ``Tokenizer.load`` before reading anything)
finishes step 3 when a commit record exists, and otherwise deletes stale staged files.
A crash before the commit point therefore leaves the previous artifact, and one after it
the new artifact: never a mix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_bytes
from ..errors import ArtifactError, ContractError
from .canonical import CanonicalError, canonical_bytes, loads, nesting_depth, pretty_text
from .golden import generate, verify
from .hashing import check_release_path
from .manifest import GOLDEN_FILE, MANIFEST_FILE, build_manifest, check_manifest
from .report import Report

if TYPE_CHECKING:
    from ..core import Tokenizer

TOKENIZER_FILE = "tokenpact.json"
JOURNAL_FILE = ".tokenpact-commit.json"
_STAGED = ".staged"
# Failures that mean "the artifact is damaged or incomplete" rather than "it drifted".
_STRUCTURAL = frozenset(
    {"artifact.manifest", "artifact.golden", "manifest.schema", "manifest.canonical_values",
     "golden.schema"}
)  # fmt: skip
_FIX = (
    "If the change is intended, re-save the tokenizer with tok.save(directory); "
    "to load it anyway, pass verify=False (command line: tokenpact --no-verify ...)."
)


def _staged_path(root: Path, name: str) -> Path:
    return root / f".{name}{_STAGED}"


def _fsync_dir(root: Path) -> None:
    try:
        fd = os.open(root, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _stage(root: Path, writes: Mapping[str, bytes]) -> None:
    for name, data in writes.items():
        atomic_write_bytes(_staged_path(root, name), data)


def _write_journal(root: Path, names: list[str], remove: list[str]) -> None:
    record: dict[str, Any] = {"kind": "tokenpact.commit", "version": 1, "files": sorted(names)}
    if remove:
        record["remove"] = sorted(remove)
    atomic_write_bytes(root / JOURNAL_FILE, canonical_bytes(record))


def _roll_forward(root: Path) -> None:
    try:
        record = loads((root / JOURNAL_FILE).read_bytes())
        names = [_plain_name(n) for n in record["files"]]
        remove = [_plain_name(n) for n in record.get("remove", [])]
    except (OSError, CanonicalError, ContractError, KeyError, TypeError, AttributeError) as exc:
        raise ArtifactError(
            f"the commit record {root / JOURNAL_FILE} is damaged ({exc}); delete it and "
            "re-save the tokenizer"
        ) from None
    for name in names:
        staged = _staged_path(root, name)
        if staged.exists():
            os.replace(staged, root / name)
    for name in remove:
        (root / name).unlink(missing_ok=True)
    _fsync_dir(root)
    (root / JOURNAL_FILE).unlink(missing_ok=True)
    _fsync_dir(root)


def recover_interrupted_save(directory: str | os.PathLike[str]) -> bool:
    """Finish or discard an interrupted save in ``directory``; True if one was finished.

    Call it before reading an artifact directory; it is cheap and safe at any time.
    """
    root = Path(directory)
    if not root.is_dir():
        return False
    if (root / JOURNAL_FILE).exists():
        try:
            _roll_forward(root)
        except PermissionError as exc:
            raise ArtifactError(
                f"{root} holds an interrupted save that cannot be finished ({exc}); "
                "make the directory writable and load again"
            ) from None
        return True
    # Staged files without a commit record belong to a save that never committed; the
    # temporary files are what a kill inside atomic_write_bytes leaves behind.
    patterns = (f".*{_STAGED}", f"..*{_STAGED}.*.tmp", f".{JOURNAL_FILE}.*.tmp")
    for pattern in patterns:
        for leftover in root.glob(pattern):
            leftover.unlink(missing_ok=True)
    return False


def _commit(root: Path, writes: Mapping[str, bytes], remove: list[str]) -> None:
    """Stage every file, write the commit record, then move the files into place and
    delete ``remove`` (the other kinds' stale files)."""
    root.mkdir(parents=True, exist_ok=True)
    recover_interrupted_save(root)
    remove = [name for name in remove if name not in writes and (root / name).exists()]
    try:
        _stage(root, writes)
        _write_journal(root, list(writes), remove)
    except BaseException:
        for name in writes:
            _staged_path(root, name).unlink(missing_ok=True)
        raise
    # Past the commit point an error is finished by the next recover_interrupted_save().
    _roll_forward(root)


def _plain_name(path: Any) -> str:
    name = check_release_path(path)
    if "/" in name:
        raise ArtifactError(f"release file {name!r} must be a plain name inside the directory")
    return name


def write_contract_files(
    tok: Tokenizer,
    directory: str | os.PathLike[str],
    *,
    release_files: Mapping[str, bytes] | None = None,
    golden_options: Mapping[str, Any] | None = None,
    remove: Sequence[str] = (),
) -> dict[str, Any]:
    """Write ``golden.json`` and ``manifest.json`` for ``tok`` and return the manifest.

    ``release_files`` maps relative paths to the bytes of the tokenizer files; they are
    written in the same commit (pass the native file here from ``Tokenizer.save``). When
    omitted, the existing ``tokenpact.json`` in ``directory`` is sealed as it is.
    ``remove`` names files deleted in the same commit (stale files of another kind).
    """
    root = Path(directory)
    if release_files is None:
        source = root / TOKENIZER_FILE
        if not source.is_file():
            raise ArtifactError(f"no {TOKENIZER_FILE} in {root}; save the tokenizer first")
        files = {TOKENIZER_FILE: source.read_bytes()}
        writes: dict[str, bytes] = {}
    else:
        files = {_plain_name(p): bytes(data) for p, data in release_files.items()}
        reserved = {MANIFEST_FILE, GOLDEN_FILE} & set(files)
        if reserved:
            raise ArtifactError(f"{sorted(reserved)} are written by the contract layer")
        writes = dict(files)
    golden = generate(tok, **dict(golden_options or {}))
    manifest = build_manifest(tok, files=files, golden=golden)
    writes[GOLDEN_FILE] = canonical_bytes(golden) + b"\n"
    writes[MANIFEST_FILE] = pretty_text(manifest).encode("utf-8")
    _commit(root, writes, [_plain_name(n) for n in remove])
    return manifest


_UNREADABLE = object()
# Contract files nest a dozen levels; checking a deeper one would recurse out of stack.
MAX_DOCUMENT_DEPTH = 64


def _read_document(path: Path, name: str, report: Report) -> Any:
    """The parsed document, or ``_UNREADABLE`` (with the failure reported). A document
    that is not a JSON object (``null``, a list, a number) fails too: it must never read
    as "nothing to check"."""
    try:
        document = loads(path.read_bytes())
    except FileNotFoundError:
        report.failed(name, f"{path.name} is missing from {path.parent}")
        return _UNREADABLE
    except (OSError, CanonicalError, ContractError) as exc:
        report.failed(name, f"cannot read {path.name}: {exc}")
        return _UNREADABLE
    except RecursionError:
        report.failed(name, f"cannot read {path.name}: nested too deeply")
        return _UNREADABLE
    if nesting_depth(document) > MAX_DOCUMENT_DEPTH:
        report.failed(
            name,
            f"{path.name} nests deeper than {MAX_DOCUMENT_DEPTH} levels; re-save the tokenizer",
        )
        return _UNREADABLE
    if not isinstance(document, dict):
        report.failed(
            name,
            f"{path.name} holds {type(document).__name__ if document is not None else 'null'} "
            "instead of a JSON object; re-save the tokenizer to rewrite it",
        )
        return _UNREADABLE
    return document


def inspect_contract_files(
    tok: Tokenizer, directory: str | os.PathLike[str], *, verify_golden: bool = True
) -> Report:
    """Check ``tok`` against the manifest and golden set in ``directory``; never raises
    for drift (see :func:`check_contract_files`)."""
    root = Path(directory)
    report = Report(f"contract files in {root}")
    if (root / JOURNAL_FILE).exists():
        report.failed(
            "artifact.manifest",
            "an interrupted save is pending; call recover_interrupted_save(directory) first",
        )
        return report
    if not (root / MANIFEST_FILE).exists():
        has_golden = (root / GOLDEN_FILE).exists()
        where = "golden.json has no manifest.json beside it" if has_golden else "no manifest.json"
        report.failed("artifact.manifest", f"{where}; re-save the tokenizer to write one")
        return report
    manifest = _read_document(root / MANIFEST_FILE, "artifact.manifest", report)
    if manifest is _UNREADABLE:
        return report
    golden = None
    tests = manifest.get("tests")
    golden_file = tests.get("golden_file") if isinstance(tests, dict) else None
    if isinstance(golden_file, str):
        try:
            golden_path = root / check_release_path(golden_file)
        except ContractError as exc:
            report.failed("artifact.golden", str(exc))
        else:
            golden = _read_document(golden_path, "artifact.golden", report)
            if golden is _UNREADABLE:
                golden = None
    elif (root / GOLDEN_FILE).exists():
        report.failed(
            "artifact.golden",
            f"{GOLDEN_FILE} exists but the manifest declares no golden file; re-save the tokenizer",
        )
    checked = check_manifest(manifest, config=tok, golden=golden, directory=root)
    report.extend(checked)
    if golden is not None and "manifest.schema" not in checked.failed_names:
        declared = manifest["tokenizer"]["semantic_hash"]
        report.expect(
            "golden.semantic_hash",
            isinstance(golden, dict) and golden.get("semantic_hash") == declared,
            "golden.json was generated for a different tokenizer than the manifest names",
        )
    if verify_golden and golden is not None:
        # The manifest check already compared the tokenizer's semantic hash; skip the
        # second (costly on large vocabularies) hash inside verify().
        report.extend(verify(tok, golden, check_hash=False))
    if not any(check.status == "pass" for check in report):
        # Fail closed: a report with nothing checked must never read as a pass.
        report.failed("artifact.manifest", "no contract check could run")
    return report


def check_contract_files(
    tok: Tokenizer, directory: str | os.PathLike[str], *, verify_golden: bool = True
) -> Report:
    """Verify ``tok`` against ``directory``'s manifest and golden set, or raise.

    Raises :class:`ArtifactError` when the contract files are missing or damaged, and
    :class:`ContractError` when they are intact but the tokenizer or its files drifted.
    """
    report = inspect_contract_files(tok, directory, verify_golden=verify_golden)
    if not report.ok:
        structural = bool(report.failed_names & _STRUCTURAL) or any(
            "is missing" in c.message for c in report.failures
        )
        error = ArtifactError if structural else ContractError
        raise error(f"{report.format()}\n{_FIX}")
    return report
