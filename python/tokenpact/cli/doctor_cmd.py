"""``tokenpact doctor PATH...``: report the tokenizer failure classes found in artifacts.

Exit codes: 0 clean (``info`` notes allowed), 1 findings or an unreadable path, 2 usage.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..doctor import DETECTORS, diagnose


@click.command("doctor")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--eos-id", type=int, default=None, help="EOS ID for batch checks (default: the tokenizer's)."
)
@click.option(
    "--pad-id", type=int, default=None, help="PAD ID for batch checks without attention_mask."
)
@click.option(
    "--ignore-index",
    type=int,
    default=-100,
    show_default=True,
    help="Label value that means 'no loss'.",
)
@click.option(
    "--only",
    multiple=True,
    type=click.Choice(sorted(DETECTORS)),
    help="Run only these detectors (repeatable).",
)
@click.option("--list", "list_detectors", is_flag=True, help="List the detectors and exit.")
def doctor(
    paths: tuple[Path, ...],
    as_json: bool,
    eos_id: int | None,
    pad_id: int | None,
    ignore_index: int,
    only: tuple[str, ...],
    list_detectors: bool,
) -> None:
    """Inspect tokenizers, chat templates, batch files (.npz/Parquet), safetensors
    checkpoints or declarations and dataset manifests for known tokenizer failures.

    Pass several paths to check them against each other (a batch against its tokenizer,
    a checkpoint against its vocabulary). Every finding has evidence and a fix.
    """
    if list_detectors:
        for det in DETECTORS.values():
            click.echo(f"{det.code:32} {det.severity:8} {'+'.join(det.needs):22} {det.failure}")
        return
    if not paths:
        raise click.UsageError("pass at least one path to inspect (or --list)")
    report = diagnose(paths, eos_id=eos_id, pad_id=pad_id, ignore_index=ignore_index, only=only)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.render())
    raise click.exceptions.Exit(report.exit_code)
