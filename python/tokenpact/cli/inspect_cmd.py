"""``tokenpact inspect``: the debug print set for one text.

Looking only at the decoded string hides most tokenizer bugs, so this prints every
layer: the exact text, the IDs, each token's bytes, which IDs are control tokens,
the decoded text and whether it round-trips, and the special-token IDs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..special import SINGLE_ROLES
from ._common import (
    echo_rows,
    escape_piece,
    load_tokenizer,
    read_text,
    resolve_allowed_special,
    special_options,
    text_input_options,
    tokenizer_option,
)

if TYPE_CHECKING:
    from ..core import Tokenizer

# Roles whose IDs generation may stop on.
STOP_ROLES = ("eos", "eot")
LABEL_WIDTH = len("bytes/token")


def build_report(tok: Tokenizer, text: str, ids: list[int]) -> dict[str, Any]:
    """Everything ``inspect`` shows, as JSON-able values."""
    specials: dict[str, int] = dict(tok.special_tokens)
    roles: dict[str, str] = dict(tok.special_token_roles)
    content_of = {token_id: content for content, token_id in specials.items()}
    tokens = []
    for index, token_id in enumerate(ids):
        special = token_id in content_of
        # A special ID stands for its spelling; token_bytes need not cover it.
        piece = content_of[token_id].encode("utf-8") if special else tok.token_bytes(token_id)
        tokens.append(
            {
                "index": index,
                "id": token_id,
                "hex": piece.hex(),
                "piece": escape_piece(piece),
                "special": special,
            }
        )
    decoded = tok.decode(ids, errors="replace")
    n_bytes = len(text.encode("utf-8"))
    # One ID per single role; marker roles (document, role, tool, modality) have several.
    by_role = {roles[c]: specials[c] for c in specials if roles.get(c) in SINGLE_ROLES}
    return {
        "text": text,
        "characters": len(text),
        "bytes": n_bytes,
        "ids": ids,
        "tokens": tokens,
        "decoded": decoded,
        "round_trip": decoded == text,
        "token_count": len(ids),
        "bytes_per_token": round(n_bytes / len(ids), 4) if ids else None,
        "vocab_size": tok.vocab_size,
        "special_tokens": specials,
        "special_ids_by_role": by_role,
        "stop_ids": [by_role[r] for r in STOP_ROLES if r in by_role],
    }


def _print_report(report: dict[str, Any], *, added_specials: bool) -> None:
    echo_rows(
        [
            ("text", repr(report["text"])),
            ("", f"{report['characters']:,} characters, {report['bytes']:,} UTF-8 bytes"),
            ("ids", str(report["ids"])),
        ],
        indent="",
        width=LABEL_WIDTH,
    )
    tokens = report["tokens"]
    if tokens:
        id_width = max(len("id"), *(len(str(t["id"])) for t in tokens))
        hex_width = max(len("hex"), *(len(t["hex"]) for t in tokens))
        idx_width = max(len("index"), len(str(len(tokens) - 1)))
        click.echo(
            f"  {'index'.rjust(idx_width)}  {'id'.rjust(id_width)}  special  "
            f"{'hex'.ljust(hex_width)}  piece"
        )
        for t in tokens:
            click.echo(
                f"  {str(t['index']).rjust(idx_width)}  {str(t['id']).rjust(id_width)}  "
                f"{('yes' if t['special'] else '-').ljust(7)}  {t['hex'].ljust(hex_width)}  "
                f"'{t['piece']}'"
            )
    if report["round_trip"]:
        round_trip = "yes"
    elif added_specials:
        round_trip = "no (expected: --add-special-tokens inserted control tokens)"
    else:
        round_trip = "NO: the decoded text differs from the input"
    bpt = report["bytes_per_token"]
    by_role = report["special_ids_by_role"]
    echo_rows(
        [
            ("decoded", repr(report["decoded"])),
            ("round trip", round_trip),
            ("tokens", f"{report['token_count']:,}"),
            ("bytes/token", "n/a" if bpt is None else f"{bpt:.2f}"),
            ("vocab size", f"{report['vocab_size']:,}"),
            ("special ids", " ".join(f"{r}={i}" for r, i in by_role.items()) or "none"),
            ("stop ids", str(report["stop_ids"])),
        ],
        indent="",
        width=LABEL_WIDTH,
    )


@click.command("inspect")
@tokenizer_option
@text_input_options
@special_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def inspect(
    tokenizer_path: Path,
    text: str | None,
    file: Path | None,
    allowed_special: tuple[str, ...],
    add_special_tokens: bool,
    as_json: bool,
) -> None:
    """Show how TEXT (or --file, or stdin) is tokenized, token by token.

    Prints the text, its IDs, a table of tokens (id, whether it is a control token,
    piece bytes as hex and as escaped text), the decoded text and whether it
    round-trips, bytes per token, and the special-token IDs by role.

    \b
    Example:
      tokenpact inspect -t my-tok "naïve café €5"
    """
    tok = load_tokenizer(tokenizer_path)
    source = read_text(text, file)
    ids = list(
        tok.encode(
            source,
            allowed_special=resolve_allowed_special(allowed_special),
            add_special_tokens=add_special_tokens,
        )
    )
    report = build_report(tok, source, ids)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        _print_report(report, added_specials=add_special_tokens)
