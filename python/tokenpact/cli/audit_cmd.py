"""``tokenpact audit``: metrics per slice, premium, vocabulary audit, sweep and selection."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from ._common import (
    fail,
    load_tokenizer,
    progress_option,
    resolve_progress,
    threads_option,
)


def _parse_tokenizer(spec: str) -> tuple[str, Path]:
    name, sep, path = spec.partition("=")
    if not sep:
        p = Path(spec)
        return (p.stem if p.is_file() else p.name) or spec, p
    return name, Path(path)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def auto_sweep_sizes(vocab_sizes: list[int]) -> list[int]:
    """Four sizes doubling up to the power of two nearest the candidates' median
    vocabulary (clipped to 4096..65536, at least 1024): 8k-150k candidates give
    8192..65536; small candidates keep 1024..4096."""
    ordered = sorted(vocab_sizes) or [4096]
    median = min(max(ordered[len(ordered) // 2], 4096), 65536)
    top = 1 << round(math.log2(median))
    return sorted({max(1024, top // d) for d in (8, 4, 2, 1)})


def _sizes(value: str, toks: dict[str, Any] | None = None) -> list[int]:
    if value.strip() == "auto":
        return auto_sweep_sizes([int(t.vocab_size) for t in (toks or {}).values()])
    if not value.strip():
        return []
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


@click.command("audit")
@click.option(
    "--tokenizer",
    "-t",
    "tokenizer_specs",
    multiple=True,
    required=True,
    help="[NAME=]PATH of a tokenizer (repeat). The first is the amplification "
    "reference unless --reference. *.tiktoken files use --pattern.",
)
@click.option(
    "--pattern",
    default="gpt4",
    show_default=True,
    help="Pre-tokenizer pattern for *.tiktoken rank files.",
)
@click.option(
    "--corpus",
    "corpus_path",
    required=True,
    type=click.Path(path_type=Path),
    help="JSONL(.gz) records (or .txt, one text a line).",
)
@click.option("--text-field", default="text", show_default=True)
@click.option(
    "--slice-field",
    default=None,
    help="Record field that defines slices, or a built-in slice computed from the text: "
    "@code, @numbers, @urls, @emoji, @scripts, @length, @quality.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="Audit only the first N records."
)
@click.option(
    "--parallel",
    "parallel_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Parallel JSONL(.gz) (language -> text) for token premium.",
)
@click.option("--parallel-reference", default="en", show_default=True)
@click.option("--parallel-limit", type=click.IntRange(min=1), default=None)
@click.option("--reference", default=None, help="Name of the amplification baseline.")
@click.option("--context-length", type=click.IntRange(min=1), default=8192, show_default=True)
@click.option("--d-model", type=click.IntRange(min=1), default=4096, show_default=True)
@click.option("--tied/--untied", default=False, show_default=True)
@click.option("--bias/--no-bias", default=False, show_default=True)
@click.option("--dtype", default="bf16", show_default=True)
@click.option(
    "--group-field",
    default=None,
    help="Records sharing this field's value share one split (default: the record).",
)
@click.option("--max-vocab-params", type=click.IntRange(min=1), default=None)
@click.option("--min-exposure", type=click.IntRange(min=0), default=1, show_default=True)
@click.option("--max-underexposed-rows", type=click.IntRange(min=0), default=None)
@click.option("--max-slice-amplification", type=float, default=None)
@click.option(
    "--sweep-sizes",
    default="auto",
    show_default=True,
    help="Nested BPE sizes to train on the fit split ('' to skip). 'auto': four sizes "
    "doubling up to the candidates' median vocabulary (clipped to 4096..65536), so the "
    "sweep reaches the sizes being compared.",
)
@click.option("--sweep-fit-bytes", type=click.IntRange(min=1), default=2_000_000, show_default=True)
@click.option("--no-select", is_flag=True, help="Skip the sweep and the selection protocol.")
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path))
@threads_option
@progress_option
def audit(**kw: Any) -> None:
    """Audit tokenizers on a corpus; write OUT/report.json and a self-contained report.html.

    Exit code 0 when a candidate passes every gate, 1 on an error or when none passes.
    """
    import tokenpact as tp
    from tokenpact.audit.corpus import load_corpus
    from tokenpact.audit.premium import load_parallel
    from tokenpact.audit.report import write_report
    from tokenpact.audit.run import AuditOptions, SelectionConfig, build_report
    from tokenpact.audit.selection import Gates, ModelShape

    toks: dict[str, Any] = {}
    for spec in kw["tokenizer_specs"]:
        name, path = _parse_tokenizer(spec)
        if name in toks:
            raise click.BadParameter(f"two tokenizers are named {name!r}; use NAME=PATH")
        if path.suffix == ".tiktoken":
            toks[name] = tp.Tokenizer.from_tiktoken(path, pattern=kw["pattern"])
        else:
            toks[name] = load_tokenizer(path)
    corpus = load_corpus(kw["corpus_path"], text_field=kw["text_field"], limit=kw["limit"])
    parallel = None
    if kw["parallel_path"] is not None:
        parallel = load_parallel(
            kw["parallel_path"], reference=kw["parallel_reference"], limit=kw["parallel_limit"]
        )
    selection = None
    if not kw["no_select"]:
        selection = SelectionConfig(
            shape=ModelShape(
                d_model=kw["d_model"], tied=kw["tied"], bias=kw["bias"], dtype=kw["dtype"]
            ),
            gates=Gates(
                max_vocab_params=kw["max_vocab_params"],
                min_exposure=kw["min_exposure"],
                max_underexposed_rows=kw["max_underexposed_rows"],
                max_slice_amplification=kw["max_slice_amplification"],
            ),
            group_field=kw["group_field"],
            sweep_sizes=_sizes(kw["sweep_sizes"], toks),
            sweep_fit_bytes=kw["sweep_fit_bytes"],
        )
    options = AuditOptions(
        slice_field=kw["slice_field"],
        context_length=kw["context_length"],
        reference=kw["reference"],
        threads=kw["threads"],
        selection=selection,
        progress=resolve_progress(kw["progress"]),
    )
    report = build_report(toks, corpus, options=options, parallel=parallel)
    json_path, html_path = write_report(report, kw["out_dir"])
    for name, t in report["tokenizers"].items():
        m = t["metrics"]["overall"]
        click.echo(
            f"{name}: {m['tokens']:,} tokens, {_fmt(m['bytes_per_token'])} bytes/token, "
            f"fertility {_fmt(m['fertility'])}"
        )
    sel = report.get("selection") or {}
    click.echo(f"wrote {json_path} and {html_path}")
    if sel and sel["selection"]["winner"] is None:
        fail(sel["selection"]["error"])
    if sel:
        click.echo(
            f"winner: {sel['selection']['winner']} "
            f"(test split: {sel['test']['positions']:,} positions)"
        )
