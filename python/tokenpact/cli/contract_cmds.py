"""``tokenpact hash``, ``tokenpact verify`` and ``tokenpact reconcile``.

Exit codes: 0 when every check passed, 1 when a check failed or an input could not be
read, 2 for usage errors (click's convention).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..contract import hashing
from ..contract.artifact import TOKENIZER_FILE, inspect_contract_files
from ..contract.canonical import CanonicalError, loads
from ..contract.checkpoint_reader import checkpoint_from_safetensors
from ..contract.corpus_sidecar import expand_corpus_manifest, is_compact
from ..contract.dataset_files import DATASET_MANIFEST, is_shard_file, read_dataset
from ..contract.manifest import GOLDEN_FILE, MANIFEST_FILE
from ..contract.reconcile import check_checkpoint, check_dataset, derive_hashes, reconcile
from ..contract.replay import replay
from ..contract.report import Report
from ..contract.schema import declaration_errors, kind_of
from ..contract.semantics import max_id, special_policy
from ..errors import TokenpactError
from ._common import InputPath

if TYPE_CHECKING:
    from ..core import Tokenizer

_KIND_HASHES = {
    "corpus": hashing.corpus_hash,
    "template": hashing.template_hash,
    "golden": hashing.golden_hash,
    "dataset": hashing.dataset_hash,
    "checkpoint": hashing.checkpoint_hash,
}


def _load_tokenizer(path: Path) -> Any:
    """Load a tokenizer without contract verification (verify reports drift itself)."""
    import inspect

    import tokenpact

    load: Any = tokenpact.Tokenizer.load
    if "verify" in inspect.signature(load).parameters:
        return load(path, verify=False)
    return load(path)


def _read_json(path: Path) -> Any:
    try:
        return loads(path.read_bytes())
    except (OSError, CanonicalError) as exc:
        raise click.ClickException(f"cannot read {path}: {exc}") from None


def _emit(report: Report, as_json: bool, verbose: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(report.format(verbose=verbose))
    if not report.ok:
        raise SystemExit(1)


def _read_plain_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot read {path}: {exc}") from None


def _native_identities(file: Path) -> dict[str, str]:
    """Identities of a native tokenizer file, computed from its content without the engine.

    The semantic hash ignores file-description keys such as "training", so the file's
    content hashes exactly like ``tok.to_config()``.
    """
    directory = file.parent
    semantic = hashing.semantic_hash(_read_plain_json(file))
    paths = [file.name]
    if file.name == TOKENIZER_FILE and (directory / MANIFEST_FILE).is_file():
        manifest = _read_json(directory / MANIFEST_FILE)
        paths = [f["path"] for f in manifest.get("tokenizer", {}).get("files", [])] or paths
    digests = hashing.directory_digests(directory, paths)
    result = {
        "semantic_hash": semantic,
        "release_hash": hashing.release_hash(semantic, digests),
        "tokenizer_id": hashing.short_id(semantic),
    }
    if file.name == TOKENIZER_FILE and (directory / GOLDEN_FILE).is_file():
        result["golden_hash"] = hashing.golden_hash(_read_json(directory / GOLDEN_FILE))
    result.update({f"file {p}": d for p, d in sorted(digests.items())})
    return result


def identities(path: Path) -> dict[str, str]:
    """Return the named identities of a path: tokenizer artifact, declaration or file."""
    if path.is_dir():
        if (path / TOKENIZER_FILE).is_file():
            return _native_identities(path / TOKENIZER_FILE)
        if (path / DATASET_MANIFEST).is_file():
            return _dataset_identities(path)
        return _engine_identities(path)
    if is_shard_file(path) or path.name == DATASET_MANIFEST:
        return _dataset_identities(path)
    if path.suffix == ".json":
        document = _read_plain_json(path)
        kind = kind_of(document)
        if kind is not None:
            strict = _read_json(path)
            if kind == "corpus" and is_compact(strict):
                strict = expand_corpus_manifest(strict, path)  # sidecar checked here
            errors = declaration_errors(strict, kind)
            if errors:
                raise click.ClickException(f"{path} is not a valid {kind}: " + "; ".join(errors))
            if kind == "bundle":
                return derive_hashes(strict)
            return {f"{kind}_hash": _KIND_HASHES[kind](strict)}
        if isinstance(document, dict) and document.get("format") == "tokenpact.tokenizer":
            return _native_identities(path)
    # Other files (a *.tiktoken rank file needs a pattern to mean anything) get their digest.
    return {f"file {path.name}": hashing.file_sha256(path)}


def _dataset_identities(path: Path) -> dict[str, str]:
    found = read_dataset(path)
    errors = declaration_errors(found.declaration, "dataset")
    if errors:
        raise click.ClickException(f"{found.path} is not a valid dataset: " + "; ".join(errors))
    return {"dataset_hash": hashing.dataset_hash(found.declaration)}


def _engine_identities(path: Path) -> dict[str, str]:
    tok = _load_tokenizer(path)
    semantic = hashing.semantic_hash(tok)
    return {"semantic_hash": semantic, "tokenizer_id": hashing.short_id(semantic)}


@click.command("hash")
@click.argument("path", type=InputPath(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def hash_cmd(path: Path, as_json: bool) -> None:
    """Print the identities of PATH.

    PATH is a saved tokenizer directory (semantic, release and golden hashes), a
    tokenizer file, a declaration (corpus, template, golden, dataset, checkpoint,
    bundle JSON) or any other file (its SHA-256).
    """
    try:
        result = identities(path)
    except TokenpactError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    width = max(len(k) for k in result)
    for key, value in result.items():
        click.echo(f"{key:<{width}}  {value}")


def _checkpoint_document(path: Path) -> Any:
    if path.suffix == ".json" and not path.name.endswith(".index.json"):
        return _read_json(path)
    try:
        return checkpoint_from_safetensors(path).to_json()
    except TokenpactError as exc:
        raise click.ClickException(str(exc)) from None


def _declaration(report: Report, document: Any, kind: str) -> bool:
    errors = declaration_errors(document, kind)
    for error in errors:
        report.failed(f"{kind}.schema", error)
    return not errors


@click.command("verify")
@click.argument("directory", type=InputPath(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--dataset", type=InputPath(exists=True, path_type=Path),
    help="Encoded dataset (its directory, dataset.json or a shard file) or a dataset "
    "declaration (JSON) that must be bound to this tokenizer; shard digests and the "
    "document boundaries are checked too.",
)  # fmt: skip
@click.option(
    "--checkpoint", type=InputPath(exists=True, path_type=Path),
    help="Checkpoint declaration (JSON), .safetensors file, sharded index or model directory.",
)  # fmt: skip
@click.option(
    "--template", type=InputPath(exists=True, dir_okay=False, path_type=Path),
    help="Template declaration the dataset and checkpoint must be bound to.",
)  # fmt: skip
@click.option("--replay", "do_replay", is_flag=True, help="Retrain from --corpus and compare.")
@click.option(
    "--corpus", multiple=True, type=InputPath(exists=True, dir_okay=False, path_type=Path),
    help="Training file for --replay (repeat, in the original order).",
)  # fmt: skip
@click.option("--text-field", default="text", show_default=True, help="JSONL text field.")
@click.option("--no-golden", is_flag=True, help="Skip replaying the golden vectors.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="List passing checks too.")
def verify_cmd(
    directory: Path,
    dataset: Path | None,
    checkpoint: Path | None,
    template: Path | None,
    do_replay: bool,
    corpus: tuple[Path, ...],
    text_field: str,
    no_golden: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Verify the saved tokenizer in DIRECTORY against its manifest and golden vectors,
    and optionally a dataset, a checkpoint and a replayed training run.

    DIRECTORY may also be a Hugging Face tokenizer directory (tokenizer.json, no
    tokenpact manifest): its identity is derived from the files and the dataset and
    checkpoint bindings are checked against it (no conversion needed)."""
    if do_replay and not corpus:
        raise click.UsageError("--replay needs the training files: --corpus FILE [--corpus ...]")
    try:
        tok = _load_tokenizer(directory)
    except TokenpactError as exc:
        raise click.ClickException(f"cannot load the tokenizer in {directory}: {exc}") from None
    report = Report(f"verify {directory}")
    if _foreign(directory):
        # A Hugging Face (or SentencePiece, tiktoken) directory carries no tokenpact
        # manifest to check drift against; its identity is derived from the files, and
        # the dataset and checkpoint bindings are checked against that identity.
        report.passed(
            "artifact.foreign",
            f"no tokenpact manifest (a foreign tokenizer directory); semantic hash "
            f"{hashing.semantic_hash(tok)} derived from its files",
        )
    else:
        report.extend(inspect_contract_files(tok, directory, verify_golden=not no_golden))
    semantic, top, policy = hashing.semantic_hash(tok), max_id(tok), special_policy(tok)
    bound_template = None
    if template is not None:
        document = _read_json(template)
        if _declaration(report, document, "template"):
            bound_template = hashing.template_hash(document)
    if dataset is not None:
        _verify_dataset(report, dataset, tok, semantic, top, bound_template)
    if checkpoint is not None:
        document = _checkpoint_document(checkpoint)
        if _declaration(report, document, "checkpoint"):
            check_checkpoint(
                report,
                document,
                semantic=semantic,
                template=bound_template,
                policy=policy,
                top_id=top,
                require_bindings=False,
            )
    if do_replay:
        import tokenpact

        texts = tokenpact.TextFiles([str(p) for p in corpus], text_field=text_field)  # type: ignore[attr-defined]
        report.extend(replay(tok, texts))
    _emit(report, as_json, verbose)


def _foreign(directory: Path) -> bool:
    """A tokenizer directory tokenpact did not save (no tokenpact.json, manifest or
    golden set): verify checks bindings against its derived identity."""
    ours = (TOKENIZER_FILE, MANIFEST_FILE, GOLDEN_FILE)
    return not any((directory / name).exists() for name in ours)


def _verify_dataset(
    report: Report, path: Path, tok: Tokenizer, semantic: str, top: int | None, template: str | None
) -> None:
    try:
        found = read_dataset(path)
    except TokenpactError as exc:
        report.failed("dataset.read", str(exc))
        return
    if not _declaration(report, found.declaration, "dataset"):
        return
    check_dataset(report, found.declaration, semantic=semantic, top_id=top, template=template)
    if found.manifest is None or found.root is None:
        return
    from ..data.dataset import dataset_problems

    for name, problems in dataset_problems(found.root, found.manifest, tok).items():
        report.expect(f"dataset.{name}", not problems, "; ".join(problems[:5]))


@click.command("bind")
@click.argument("checkpoint", type=InputPath(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--tokenizer", "-t", "tokenizer_path", required=True,
    type=InputPath(exists=True, path_type=Path),
    help="The tokenizer the checkpoint was trained with (artifact or Hugging Face directory).",
)  # fmt: skip
@click.option(
    "--template", type=InputPath(exists=True, dir_okay=False, path_type=Path),
    help="Template declaration the checkpoint was trained with.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def bind_cmd(checkpoint: Path, tokenizer_path: Path, template: Path | None, as_json: bool) -> None:
    """Bind an existing CHECKPOINT directory to its tokenizer (and template).

    The checkpoint is checked against the tokenizer first (rows cover every ID, special
    IDs agree, tied head); only if every check passes are the hashes written to its
    config.json under "tokenpact" (tokenizer_semantic_hash, template_hash), atomically.
    Every other key of config.json is kept as it was.
    """
    from ..contract.bindings import bind_checkpoint

    try:
        tok = _load_tokenizer(tokenizer_path)
    except TokenpactError as exc:
        raise click.ClickException(f"cannot load the tokenizer {tokenizer_path}: {exc}") from None
    template_doc = _read_json(template) if template is not None else None
    report = bind_checkpoint(checkpoint, tok, template=template_doc)
    if report.ok and not as_json:
        click.echo(f"bound {checkpoint}/config.json to {hashing.semantic_hash(tok)}")
    _emit(report, as_json, verbose=False)


@click.command("reconcile")
@click.argument("bundle", type=InputPath(exists=True, path_type=Path))
@click.option(
    "--root", type=InputPath(exists=True, file_okay=False, path_type=Path),
    help="Directory holding the released tokenizer files; their bytes are re-hashed.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="List passing checks too.")
def reconcile_cmd(bundle: Path, root: Path | None, as_json: bool, verbose: bool) -> None:
    """Check a bundle (corpus, tokenizer, template, golden, dataset, checkpoint): every
    hash is re-derived and every binding compared; all failures are listed.

    BUNDLE may also be a release bundle (the release admission checks run) or an encoded
    dataset (its directory, dataset.json or a shard file: the checks that need no
    tokenizer run; bind it to one with `tokenpact verify TOKENIZER --dataset PATH`)."""
    if bundle.is_dir() or is_shard_file(bundle) or bundle.name == DATASET_MANIFEST:
        _emit(_reconcile_dataset(bundle), as_json, verbose)
        return
    if _plain_kind(bundle) == "tokenpact.release":
        from ..migrate.release import check_release

        _emit(check_release(bundle), as_json, verbose)
        return
    try:
        document = loads(bundle.read_bytes())
    except (OSError, CanonicalError) as exc:
        report = Report("reconcile")
        report.failed("structure.json", f"cannot read {bundle}: {exc}")
        _emit(report, as_json, verbose)
        return
    _emit(reconcile(document, root=root), as_json, verbose)


def _plain_kind(path: Path) -> Any:
    """The ``kind`` of a JSON document read leniently (release bundles sealed before
    their ratios became strings hold floats), or None."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document.get("kind") if isinstance(document, dict) else None


def _reconcile_dataset(path: Path) -> Report:
    report = Report("reconcile")
    try:
        found = read_dataset(path)
    except TokenpactError as exc:
        report.failed("dataset.read", str(exc))
        return report
    if not _declaration(report, found.declaration, "dataset"):
        return report
    report.passed("dataset.schema")
    if found.manifest is None or found.root is None:
        return report
    from ..data.dataset import dataset_problems

    for name, problems in dataset_problems(found.root, found.manifest, None).items():
        report.expect(f"dataset.{name}", not problems, "; ".join(problems[:5]))
    return report
