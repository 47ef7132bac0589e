"""``tokenpact migrate extend|plan|apply``: vocabulary extension and checkpoint resizing.

Exit codes: 0 success, 1 a tokenpact error (e.g. the change is not append-only), 2 usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ._common import TokenpactGroup, echo_rows, load_tokenizer, progress_option, resolve_progress

_PATH = click.Path(path_type=Path)


@click.group("migrate", cls=TokenpactGroup)
def migrate_group() -> None:
    """Change a tokenizer that a checkpoint depends on, with evidence."""


def _texts(paths: tuple[Path, ...]) -> Any:
    from ..corpus import TextFiles

    return TextFiles([str(p) for p in paths]) if paths else []


@migrate_group.command("extend")
@click.option("--tokenizer", "-t", "tokenizer_path", required=True, type=_PATH)
@click.option(
    "--corpus",
    "corpus",
    multiple=True,
    required=True,
    type=_PATH,
    help="Text (one document a line) or JSONL files; repeat for more.",
)
@click.option("--add-merges", type=int, required=True, help="At most this many new merges.")
@click.option("--min-frequency", type=int, default=2, show_default=True)
@click.option(
    "--first-new-id",
    type=int,
    default=None,
    help="Reserve IDs up to this one (unused padding) before the new merges.",
)
@click.option("--out", "-o", required=True, type=_PATH, help="Artifact directory to write.")
@progress_option
def extend_cmd(
    tokenizer_path: Path,
    corpus: tuple[Path, ...],
    add_merges: int,
    min_frequency: int,
    first_new_id: int | None,
    out: Path,
    progress: bool | None,
) -> None:
    """Continue BPE training: old IDs, merge ranks and special IDs are kept."""
    from ..migrate import extend_bpe

    old = load_tokenizer(tokenizer_path)
    new = extend_bpe(
        old,
        _texts(corpus),
        add_merges=add_merges,
        min_frequency=min_frequency,
        first_new_id=first_new_id,
        progress=resolve_progress(progress),
    )
    new.save(out)
    echo_rows(
        [
            ("old IDs", str(old.vocab_size)),
            ("new IDs", str(new.vocab_size)),
            ("merges added", str(len(new.merges) - len(old.merges))),
            ("written", str(out)),
        ]
    )


@migrate_group.command("plan")
@click.option("--old", "old_path", required=True, type=_PATH, help="The tokenizer in use.")
@click.option("--new", "new_path", required=True, type=_PATH, help="The candidate tokenizer.")
@click.option("--corpus", multiple=True, type=_PATH, help="Documents to measure the change on.")
@click.option("--checkpoint", type=_PATH, default=None, help="Also plan the checkpoint resize.")
@click.option(
    "--init",
    default="fvt",
    show_default=True,
    type=click.Choice(["fvt", "mean", "normal", "mean_cov"]),
)
@click.option("--pad-to-multiple-of", type=int, default=None)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_cmd(
    old_path: Path,
    new_path: Path,
    corpus: tuple[Path, ...],
    checkpoint: Path | None,
    init: str,
    pad_to_multiple_of: int | None,
    as_json: bool,
) -> None:
    """Classify the transition, prove the prefix, measure it; optionally plan a resize."""
    from ..migrate import diff, plan_resize

    old, new = load_tokenizer(old_path), load_tokenizer(new_path)
    report = diff(old, new, list(_texts(corpus)))
    result: dict[str, Any] = report.to_dict()
    if checkpoint is not None:
        result["resize"] = plan_resize(
            checkpoint, old, new, init=init, pad_to_multiple_of=pad_to_multiple_of
        ).to_dict()
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    corpus_stats = result["corpus"]
    rows = [
        ("transition", report.transition),
        (
            "prefix proof",
            "holds"
            if report.prefix_proof["holds"]
            else "fails: " + "; ".join(report.prefix_proof["problems"][:3]),
        ),
        ("IDs", f"{report.prefix_proof['old_ids']} -> {report.prefix_proof['new_ids']}"),
        ("golden cases changed", str(len(report.golden_differences))),
    ]
    if report.measured:
        rows += [
            ("documents changed", f"{report.changed_documents} of {report.documents}"),
            ("compression gain", f"{corpus_stats['compression_gain']:.2%}"),
            ("new IDs unseen in the corpus", str(len(report.unseen_ids))),
        ]
    else:
        rows += [("corpus figures", "not measured (pass --corpus FILE)")]
    if "resize" in result:
        r = result["resize"]
        rows += [
            ("rows", f"{r['old_rows']} -> {r['new_rows']}"),
            ("tied head", f"{r['tied_output_head']} ({r['tie_evidence']})"),
            ("tensors resized", str(len(r["tensors"]))),
            ("new trainable values", str(r["added_parameters"])),
            ("Adam slot values", str(r["adam_slot_values"])),
        ]
    echo_rows(rows)


@migrate_group.command("apply")
@click.option("--old", "old_path", required=True, type=_PATH)
@click.option("--new", "new_path", required=True, type=_PATH)
@click.option("--checkpoint", required=True, type=_PATH, help="Source checkpoint directory.")
@click.option("--out", "-o", required=True, type=_PATH, help="New checkpoint directory.")
@click.option(
    "--init",
    default="fvt",
    show_default=True,
    type=click.Choice(["fvt", "mean", "normal", "mean_cov"]),
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--bias-init", default="zero", show_default=True, type=click.Choice(["zero", "mean"]))
@click.option("--pad-to-multiple-of", type=int, default=None)
@click.option("--tied/--untied", default=None, help="Override the tie detection.")
@click.option("--adapter", type=_PATH, default=None, help="A LoRA adapter trained on it.")
@click.option("--adapter-out", type=_PATH, default=None, help="Where the resized adapter goes.")
@click.option(
    "--fsync/--no-fsync",
    "durable",
    default=True,
    show_default=True,
    help="Flush every file to disk before renaming it (--no-fsync: leave it to the kernel).",
)
@click.option("--json", "as_json", is_flag=True)
@progress_option
def apply_cmd(
    old_path: Path,
    new_path: Path,
    checkpoint: Path,
    out: Path,
    init: str,
    seed: int,
    bias_init: str,
    pad_to_multiple_of: int | None,
    tied: bool | None,
    adapter: Path | None,
    adapter_out: Path | None,
    durable: bool,
    as_json: bool,
    progress: bool | None,
) -> None:
    """Write a resized copy of a safetensors checkpoint (old rows bit-identical), and of
    a LoRA adapter trained on it (``--adapter``), so the adapter keeps loading."""
    from ..migrate import resize_adapter, resize_checkpoint

    if (adapter is None) != (adapter_out is None):
        raise click.UsageError("--adapter and --adapter-out go together")
    old, new = load_tokenizer(old_path), load_tokenizer(new_path)
    plan = resize_checkpoint(
        checkpoint,
        out,
        old,
        new,
        init=init,
        seed=seed,
        bias_init=bias_init,
        pad_to_multiple_of=pad_to_multiple_of,
        tied=tied,
        progress=resolve_progress(progress),
        durable=durable,
    )
    adapter_shapes = {}
    if adapter is not None and adapter_out is not None:
        adapter_shapes = resize_adapter(
            adapter, adapter_out, old, new, rows=plan.new_rows, init=init, seed=seed
        )
    if as_json:
        click.echo(json.dumps({**plan.to_dict(), "adapter_shapes": adapter_shapes}, indent=2))
        return
    echo_rows(
        [
            ("rows", f"{plan.old_rows} -> {plan.new_rows}"),
            ("tied head", str(plan.tied)),
            ("tensors resized", ", ".join(plan.shapes)),
            ("new trainable values", str(plan.added_parameters)),
            ("adapter tensors resized", str(len(adapter_shapes))),
            ("written", str(out)),
        ]
    )
