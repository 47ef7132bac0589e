"""``tokenpact encode``: print the token IDs of a text."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._common import (
    load_tokenizer,
    read_text,
    resolve_allowed_special,
    special_options,
    text_input_options,
    tokenizer_option,
)


@click.command("encode")
@tokenizer_option
@text_input_options
@special_options
@click.option("--json", "as_json", is_flag=True, help="Print the IDs as a JSON array.")
def encode(
    tokenizer_path: Path,
    text: str | None,
    file: Path | None,
    allowed_special: tuple[str, ...],
    add_special_tokens: bool,
    as_json: bool,
) -> None:
    """Encode TEXT (or --file, or stdin) and print its token IDs.

    Stdin and files are encoded exactly as read, including a final newline.

    \b
    Example:
      tokenpact encode -t my-tok "The cat sleeps."
    """
    tok = load_tokenizer(tokenizer_path)
    ids = tok.encode(
        read_text(text, file),
        allowed_special=resolve_allowed_special(allowed_special),
        add_special_tokens=add_special_tokens,
    )
    click.echo(json.dumps(list(ids)) if as_json else " ".join(map(str, ids)))
