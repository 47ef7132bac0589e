"""``tokenpact stream``: a demo of the serving runtime on one text.

Input side: the text's UTF-8 bytes arrive in small transport chunks; for each chunk the
streaming encoder shows the IDs it commits and the provisional tail. Output side: the
same IDs are replayed as if a model generated them; for each ID the output stream shows
the text made visible, the text held back as a possible stop, and the stop decision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ._common import (
    echo_rows,
    escape_piece,
    load_tokenizer,
    read_text,
    text_input_options,
    tokenizer_option,
)


@click.command("stream")
@tokenizer_option
@text_input_options
@click.option(
    "--chunk-bytes",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Transport chunk size in bytes.",
)
@click.option("--stop", "stops", multiple=True, metavar="TEXT", help="A stop string (repeatable).")
@click.option(
    "--stop-id",
    "stop_ids",
    multiple=True,
    type=click.IntRange(min=0),
    help="A stop token ID (repeatable).",
)
@click.option(
    "--max-new-tokens", type=click.IntRange(min=1), default=None, help="Budget of generated IDs."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def stream(
    tokenizer_path: Path,
    text: str | None,
    file: Path | None,
    chunk_bytes: int,
    stops: tuple[str, ...],
    stop_ids: tuple[int, ...],
    max_new_tokens: int | None,
    as_json: bool,
) -> None:
    """Show committed/provisional IDs while TEXT streams in, then the stop decision
    while its IDs stream out.

    \b
    Example:
      tokenpact stream -t my-tok "Hello wörld. STOP here" --chunk-bytes 3 --stop STOP
    """
    from ..runtime import OutputStream, StopPolicy, StreamingEncoder

    tok = load_tokenizer(tokenizer_path)
    data = read_text(text, file).encode("utf-8")
    encoder = StreamingEncoder(tok, scan_step=0)  # a demo: commit as soon as final
    inbound: list[dict[str, Any]] = []
    for at in range(0, len(data), chunk_bytes):
        chunk = data[at : at + chunk_bytes]
        committed = encoder.push_bytes(chunk)
        inbound.append(
            {"chunk": chunk.hex(" "), "committed": committed, "provisional": encoder.provisional()}
        )
    final = encoder.finish()
    inbound.append({"chunk": "<end>", "committed": final, "provisional": []})
    ids = encoder.committed
    policy = StopPolicy(stop_token_ids=stop_ids, stop_strings=stops, max_new_tokens=max_new_tokens)
    out = OutputStream(tok, policy)
    outbound: list[dict[str, Any]] = []
    for token_id in ids:
        delta = out.push([token_id])
        outbound.append(
            {
                "id": token_id,
                "piece": escape_piece(tok.token_bytes(token_id)),
                "visible": delta.text,
                "held": out.held_text,
            }
        )
        if delta.finished:
            break
    if not out.finished:
        delta = out.finish()
        outbound.append({"id": None, "piece": "<end>", "visible": delta.text, "held": ""})
    result = {
        "rule": encoder.rule,
        "inbound": inbound,
        "ids": ids,
        "outbound": outbound,
        "visible_text": out.visible_text,
        "processed_ids": out.processed_ids,
        "finish_reason": out.finish_reason,
        "matched_stop": out.matched_stop,
    }
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False))
        return
    click.echo(f"input: {len(data)} bytes in chunks of {chunk_bytes} (commit rule: {encoder.rule})")
    for row in inbound:
        click.echo(
            f"  {row['chunk']:<{3 * chunk_bytes}}  committed={row['committed']}  "
            f"provisional={row['provisional']}"
        )
    click.echo(f"output: {len(ids)} IDs replayed one at a time")
    for row in outbound:
        click.echo(
            f"  {row['id']!s:>7} {row['piece']:<14} visible={row['visible']!r:<16} "
            f"held={row['held']!r}"
        )
    echo_rows(
        [
            ("visible text", repr(out.visible_text)),
            ("finish reason", str(out.finish_reason)),
            ("matched stop", repr(out.matched_stop)),
            ("processed IDs", str(len(out.processed_ids))),
        ],
        indent="",
    )
