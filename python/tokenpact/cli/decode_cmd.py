"""``tokenpact decode``: turn token IDs back into text."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

import click

from ._common import decode_utf8, load_tokenizer, tokenizer_option


def _ids_from_stdin() -> list[int]:
    """Accept what ``tokenpact encode`` prints: space-separated IDs or a JSON array."""
    raw = decode_utf8(sys.stdin.buffer.read(), "stdin").strip()
    try:
        values = json.loads(raw) if raw.startswith("[") else [int(v) for v in raw.split()]
    except ValueError as exc:
        raise click.UsageError(f"cannot read token IDs from stdin ({exc})") from exc
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise click.UsageError("stdin must hold integer token IDs (space-separated or JSON)")
    return values


@click.command("decode")
@tokenizer_option
@click.argument("ids", nargs=-1, type=click.IntRange(min=0))
@click.option(
    "--errors",
    type=click.Choice(["strict", "replace"]),
    default="strict",
    show_default=True,
    help="Invalid UTF-8 in the decoded bytes: fail (strict) or insert U+FFFD (replace).",
)
@click.option("-n", "--no-newline", is_flag=True, help="Do not print a final newline.")
def decode(
    tokenizer_path: Path,
    ids: tuple[int, ...],
    errors: Literal["strict", "replace"],
    no_newline: bool,
) -> None:
    """Decode token IDS (or IDs read from stdin) and print the text.

    \b
    Example:
      tokenpact decode -t my-tok 791 8415 57911 13
      tokenpact encode -t my-tok --file a.txt | tokenpact decode -t my-tok -n
    """
    tok = load_tokenizer(tokenizer_path)
    id_list = list(ids) if ids else _ids_from_stdin()
    click.echo(tok.decode(id_list, errors=errors), nl=not no_newline)
