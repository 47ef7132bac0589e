"""``tokenpact encode-dataset`` and the ``tokenpact data`` group (dedup, split).

Corpus inputs are files read by :func:`tokenpact.data.read_documents` (text, JSON Lines
with ``.gz``/``.zst``, Parquet, Hugging Face Arrow directories).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ._common import (
    TokenpactGroup,
    load_tokenizer,
    progress_option,
    resolve_progress,
    threads_option,
    tokenizer_option,
)
from .clean_cmd import register as register_clean

F = TypeVar("F", bound=Callable[..., Any])


def _reader_options(func: F) -> F:
    for option in reversed(
        (
            click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path)),
            click.option("--text-field", default="text", show_default=True),
            click.option(
                "--id-field",
                default="id",
                show_default=True,
                help="'' derives IDs from content (replacing the field's values).",
            ),
            click.option(
                "--duplicate-ids",
                type=click.Choice(["error", "number"]),
                default="error",
                show_default=True,
                help="A repeated ID: refuse it, or rename the repeats ID#2, ID#3... "
                "(reading order).",
            ),
            click.option("--source-field", default=None, help="Column naming each source."),
            click.option("--group-field", default=None, help="Column naming each split group."),
            click.option(
                "--format", "input_format", default=None, help="Input format (default: sniffed)."
            ),
        )
    ):
        func = option(func)
    return func


def _engine_options(func: F) -> F:
    func = click.option(
        "--address",
        default=None,
        help="Ray cluster address (with --engine ray), e.g. ray://head:10001 or auto.",
    )(func)
    return click.option(
        "--engine",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where the work runs; results are identical.",
    )(func)


def _read(inputs: tuple[Path, ...], opts: dict[str, Any], progress: bool) -> list[Any]:
    from ..data import read_documents

    return list(
        read_documents(
            inputs,
            format=opts["input_format"],
            text_field=opts["text_field"],
            id_field=opts["id_field"] or None,
            source_field=opts["source_field"],
            group_field=opts["group_field"],
            duplicate_ids="number" if opts["duplicate_ids"] == "number" else "keep",
            keep_fields=True,
            progress=progress,
        )
    )


def _ray_options(engine: str, address: str | None) -> dict[str, Any] | None:
    return {"address": address} if engine == "ray" and address else None


@click.command("encode-dataset")
@tokenizer_option
@_reader_options
@click.option("--out", "-o", "out_dir", required=True, type=click.Path(path_type=Path))
@click.option(
    "--shard-format",
    type=click.Choice(["parquet", "megatron"]),
    default="parquet",
    show_default=True,
)
@click.option("--records-per-shard", type=click.IntRange(min=1), default=100_000, show_default=True)
@click.option("--max-length", type=click.IntRange(min=1), default=None, help="Truncate records.")
@click.option("--add-special-tokens", is_flag=True, help="Apply the post-processor (BOS/EOS).")
@click.option(
    "--append-eod",
    is_flag=True,
    help="End every document with the tokenizer's EOS ID (Megatron's --append-eod); "
    "boundary_policy becomes eos_separate_documents.",
)
@click.option("--add-bos", is_flag=True, help="Start every document with the tokenizer's BOS ID.")
@click.option(
    "--allow-special",
    "allow_special",
    multiple=True,
    metavar="SPELLING",
    help="Let this control spelling in the text through as its control ID (repeatable; "
    "'all' for every one). By default control spellings in text stay ordinary text.",
)
@click.option(
    "--compression",
    type=click.Choice(["none", "snappy", "zstd", "lz4", "gzip"]),
    default="none",
    show_default=True,
    help="Parquet shard compression.",
)
@click.option("--overwrite", is_flag=True, help="Replace a dataset already in --out.")
@_engine_options
@threads_option
@progress_option
def encode_dataset_cmd(
    tokenizer_path: Path,
    inputs: tuple[Path, ...],
    out_dir: Path,
    shard_format: str,
    records_per_shard: int,
    max_length: int | None,
    add_special_tokens: bool,
    append_eod: bool,
    add_bos: bool,
    allow_special: tuple[str, ...],
    compression: str,
    overwrite: bool,
    engine: str,
    address: str | None,
    threads: int | None,
    progress: bool | None,
    **reader: Any,
) -> None:
    """Encode corpus files into shards bound to the tokenizer (dataset.json + shards).

    \b
    Example:
      tokenpact encode-dataset -t my-tok corpus.jsonl.gz -o data/ --shard-format megatron
    """
    from ..data import encode_dataset

    show = resolve_progress(progress)
    tok = load_tokenizer(tokenizer_path)
    manifest = encode_dataset(
        _read(inputs, reader, show),
        tok,
        out_dir,
        format=shard_format,
        records_per_shard=records_per_shard,
        max_length=max_length,
        add_special_tokens=add_special_tokens,
        append_eod=append_eod,
        add_bos=add_bos,
        allowed_special="all" if "all" in allow_special else allow_special,
        compression=compression,
        engine=engine,
        threads=threads,
        ray_options=_ray_options(engine, address),
        overwrite=overwrite,
        progress=show,
    )
    click.echo(
        f"{manifest['records']} records, {manifest['tokens']} tokens, "
        f"{len(manifest['shards'])} {shard_format} shards ({manifest['dtype']}) in {out_dir}; "
        f"boundary_policy {manifest['boundary_policy']}"
    )


@click.group("data", cls=TokenpactGroup)
def data() -> None:
    """Corpus preparation: clean, deduplicate and split document collections."""


@data.command("dedup")
@_reader_options
@click.option("--out", "-o", "out_path", required=True, type=click.Path(path_type=Path))
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None)
@click.option("--near", type=click.FloatRange(0.0, 1.0), default=0.8, show_default=True)
@click.option("--no-near", is_flag=True, help="Exact deduplication only.")
@click.option("--shingle", type=click.Choice(["word", "char"]), default="word", show_default=True)
@click.option("--ngram", "n", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--num-perm", type=click.IntRange(1, 8192), default=128, show_default=True)
@click.option("--case", type=click.Choice(["keep", "lower", "fold"]), default="keep")
@click.option("--unicode-form", type=click.Choice(["none", "NFC", "NFKC"]), default="NFC")
@click.option(
    "--keep",
    "keep_rule",
    type=click.Choice(["doc_id", "quality", "license"]),
    default="doc_id",
    show_default=True,
    help="Which copy of each duplicate cluster survives.",
)
@click.option("--quality-field", default="quality", show_default=True, help="Score column.")
@click.option(
    "--license-field", default=None, help="Column naming each licence class (default: none)."
)
@click.option("--license-order", default="", help="Licence classes, best first, comma-separated.")
@click.option(
    "--allow-license",
    "allowed",
    multiple=True,
    help="Keep only documents of this licence class (repeatable); others are removed.",
)
@_engine_options
@threads_option
@progress_option
def dedup_cmd(
    inputs: tuple[Path, ...],
    out_path: Path,
    report_path: Path | None,
    near: float,
    no_near: bool,
    shingle: str,
    n: int,
    num_perm: int,
    case: str,
    unicode_form: str,
    keep_rule: str,
    quality_field: str,
    license_field: str | None,
    license_order: str,
    allowed: tuple[str, ...],
    engine: str,
    address: str | None,
    threads: int | None,
    progress: bool | None,
    **reader: Any,
) -> None:
    """Drop exact and near duplicates; write the kept documents as JSON Lines.

    \b
    Example:
      tokenpact data dedup corpus.jsonl.gz -o kept.jsonl --report dedup.json
      tokenpact data dedup corpus.jsonl -o kept.jsonl --keep quality --license-field license \
        --allow-license cc-by --allow-license public-domain
    """
    from ..data import Canonicalization, KeepPolicy, MinHashParams, deduplicate

    show = resolve_progress(progress)
    keep = None
    if keep_rule != "doc_id" or allowed or license_order or license_field:
        keep = KeepPolicy(
            prefer=keep_rule,
            license_order=tuple(c.strip() for c in license_order.split(",") if c.strip()),
            allowed_licenses=tuple(dict.fromkeys(allowed)) if allowed else None,
            quality_field=quality_field,
            license_field=license_field,
        )
    docs = _read(inputs, reader, show)
    outcome = deduplicate(
        docs,
        canonicalization=Canonicalization(unicode_form=unicode_form, case=case),
        near=None if no_near else near,
        params=MinHashParams(num_perm=num_perm, shingle=shingle, n=n),
        engine=engine,
        threads=threads,
        ray_options=_ray_options(engine, address),
        progress=show,
        keep=keep,
    )
    _write_jsonl(out_path, outcome.kept, reader)
    if report_path is not None:
        from ..data.corpus_manifest import write_json_atomic

        write_json_atomic(report_path, outcome.report.to_json())
    click.echo(outcome.report.to_markdown(max_clusters=10))


register_clean(data, _reader_options, _engine_options, _read)


@data.command("split")
@_reader_options
@click.option("--out-dir", "-o", required=True, type=click.Path(path_type=Path))
@click.option(
    "--role",
    "roles",
    multiple=True,
    required=True,
    help="NAME=FRACTION, repeatable, e.g. --role fit=0.9 --role test=0.1",
)
@click.option("--salt", default="tokenpact-split-v1", show_default=True)
@progress_option
def split_cmd(
    inputs: tuple[Path, ...],
    out_dir: Path,
    roles: tuple[str, ...],
    salt: str,
    progress: bool | None,
    **reader: Any,
) -> None:
    """Split documents by the hash of their group into ROLE.jsonl files."""
    from ..data import SplitSpec, split_documents

    spec_roles: dict[str, float] = {}
    for item in roles:
        name, sep, fraction = item.partition("=")
        try:
            spec_roles[name] = float(fraction) if sep else float("nan")
        except ValueError:
            raise click.BadParameter(
                f"{item!r} is not NAME=FRACTION", param_hint="--role"
            ) from None
    splits = split_documents(
        _read(inputs, reader, resolve_progress(progress)), SplitSpec(spec_roles, salt=salt)
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    for role, docs in splits.items():
        _write_jsonl(out_dir / f"{role}.jsonl", docs, reader)
        click.echo(f"{role}: {len(docs)} documents")


@data.command("leakage")
@_reader_options
@click.option("--fit-role", default="fit", show_default=True, help="The role a model fits on.")
@click.option(
    "--protected",
    default="validation,test",
    show_default=True,
    help="Comma-separated held-out roles the fit role must not share text with.",
)
@click.option("--near", type=click.FloatRange(0.0, 1.0), default=0.8, show_default=True)
@click.option("--no-near", is_flag=True, help="Exact and n-gram overlap only.")
@click.option("--ngram", type=click.IntRange(min=1), default=13, show_default=True)
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None)
@click.option(
    "--drop",
    "drop_out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the fit role without its leaked documents here (exit 0 once dropped).",
)
@threads_option
@progress_option
def leakage_cmd(
    inputs: tuple[Path, ...],
    fit_role: str,
    protected: str,
    near: float,
    no_near: bool,
    ngram: int,
    report_path: Path | None,
    drop_out: Path | None,
    threads: int | None,
    progress: bool | None,
    **reader: Any,
) -> None:
    """Check split files for text shared between roles (exact, near, n-gram).

    Each INPUT is one role, named by its file name (splits/fit.jsonl is role 'fit', as
    `data split` writes them). Exit 1 when the fit role shares text with a protected
    role, unless --drop writes the fit role without those documents.

    \b
    Example:
      tokenpact data leakage splits/fit.jsonl splits/test.jsonl --drop splits/fit.clean.jsonl
    """
    from ..data import check_leakage, drop_leaked

    show = resolve_progress(progress)
    splits: dict[str, list[Any]] = {}
    for path in inputs:
        role = path.name.split(".", 1)[0]
        if role in splits:
            raise click.BadParameter(f"two inputs are role {role!r}", param_hint="INPUTS")
        splits[role] = _read((path,), reader, show)
    if fit_role not in splits:
        raise click.BadParameter(
            f"no input is the fit role {fit_role!r} (roles: {', '.join(splits)})",
            param_hint="--fit-role",
        )
    held = [r for r in (p.strip() for p in protected.split(",")) if r in splits]
    report = check_leakage(
        splits, near_threshold=None if no_near else near, ngram=ngram, threads=threads
    )
    if report_path is not None:
        from ..data.corpus_manifest import write_json_atomic

        write_json_atomic(report_path, report.to_json())
    click.echo(report.to_markdown())
    leaked = sorted(report.leaked_ids(fit_role, held))
    click.echo(
        f"{len(leaked)} of {len(splits[fit_role])} {fit_role} documents share text "
        f"with {', '.join(held) or 'no protected role'}"
    )
    if drop_out is not None:
        kept, removed = drop_leaked(splits, report, fit_role=fit_role, protected=held)
        _write_jsonl(drop_out, kept[fit_role], reader)
        click.echo(
            f"dropped {len(removed)}; {len(kept[fit_role])} {fit_role} documents -> {drop_out}"
        )
        return
    if leaked:
        raise SystemExit(1)


def _write_jsonl(path: Path, docs: list[Any], reader: dict[str, Any]) -> None:
    """Write documents as JSON Lines, every input field passed through unchanged."""
    from ..data.corpus_manifest import write_jsonl_atomic
    from ..data.documents import output_record

    names = {
        "text_field": reader["text_field"],
        "id_field": reader["id_field"] or None,
        "source_field": reader["source_field"],
        "group_field": reader["group_field"],
    }
    write_jsonl_atomic(path, (output_record(d, **names) for d in docs), sort_keys=False)
