"""``tokenpact chat render``: format a conversation and show where every token came from."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..chat import Conversation, SequenceCompiler, SequenceGrammar, truncate
from ..errors import InvalidInputError
from ._common import (
    EXIT_ERROR,
    InputPath,
    TokenpactGroup,
    decode_utf8,
    echo_rows,
    escape_piece,
    load_tokenizer,
    tokenizer_option,
)

if TYPE_CHECKING:
    from ..core import Tokenizer

# Colors of the origin view; control tokens are the only trusted ones, so they stand out.
_STYLE: dict[str, dict[str, Any]] = {
    "control": {"fg": "magenta", "bold": True},
    "template": {"fg": "blue"},
    "content": {"fg": "green"},
    "document": {"fg": "yellow"},
    "tools": {"fg": "cyan"},
}
_GRAMMARS = {"seed": SequenceGrammar, "llama3": SequenceGrammar.llama3}


def _read_conversation(path: Path) -> dict[str, Any]:
    """``{"messages": [...], "tools"?: [...], "documents"?: [...]}`` or a bare message list."""
    if str(path) == "-":
        raw = decode_utf8(sys.stdin.buffer.read(), "stdin")
    else:
        try:
            raw = decode_utf8(path.read_bytes(), str(path))
        except OSError as exc:
            raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidInputError(f"{path} is not JSON ({exc}); write a list of messages") from exc
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise InvalidInputError(
            f'{path} must hold a list of messages or {{"messages": [...], "tools": [...]}}'
        )
    return data


def _formatter(tok: Tokenizer, template: Path | None, grammar: str | None) -> Any:
    if grammar is not None:
        return SequenceCompiler(tok, _GRAMMARS[grammar]())
    from ..chat.hf_template import ChatTemplate

    if template is not None:
        return ChatTemplate.from_hf(template, tok)
    return ChatTemplate.from_tokenizer(tok)


def _tokenizer(conv: Conversation) -> Tokenizer:
    """The tokenizer a rendered conversation carries (the CLI renders every one it shows)."""
    if conv.tokenizer is None:
        raise InvalidInputError("this conversation carries no tokenizer to show its tokens")
    return conv.tokenizer


def _pieces(conv: Conversation) -> list[str]:
    tok = _tokenizer(conv)
    return [escape_piece(tok.token_bytes(i)) for i in conv.input_ids]


def _show_origins(conv: Conversation, color: bool | None) -> None:
    """The decoded text, each run of same-origin tokens in its color."""
    tok = _tokenizer(conv)
    n = len(conv.input_ids)
    out = []
    start = 0
    for t in range(1, n + 1):
        boundary = t in (conv.prompt_boundary,) and conv.mode == "training"
        same = (
            t < n
            and not boundary
            and (conv.origin[t], conv.assistant_mask[t])
            == (
                conv.origin[start],
                conv.assistant_mask[start],
            )
        )
        if same:
            continue
        text = tok.decode(conv.input_ids[start:t], errors="replace").replace("\n", "\\n\n")
        style = _STYLE[conv.origin[start]]
        out.append(click.style(text, underline=bool(conv.assistant_mask[start]), **style))
        if t == conv.prompt_boundary:
            out.append(click.style("|", reverse=True))
        start = t
    if n == 0 or conv.prompt_boundary == 0:
        out.insert(0, click.style("|", reverse=True))
    click.echo("".join(out), color=color)
    legend = " ".join(click.style(name, **style) for name, style in _STYLE.items())
    click.echo(f"\nlegend: {legend}; underlined = assistant_mask; | = prompt boundary", color=color)


def _show_table(conv: Conversation) -> None:
    pieces = _pieces(conv)
    click.echo("  pos      id  origin    mask  owner                         piece")
    for t, piece in enumerate(pieces):
        owner = conv.owner_index[t]
        label = conv.owners[owner] if owner >= 0 else "-"
        click.echo(
            f"{t:5d} {conv.input_ids[t]:7d}  {conv.origin[t]:<9} {conv.assistant_mask[t]:4d}  "
            f"{label[:28]:<28}  {piece}"
        )


@click.group("chat", cls=TokenpactGroup)
def chat() -> None:
    """Format conversations with trusted control tokens."""


@chat.command("render")
@tokenizer_option
@click.option(
    "--messages",
    "messages_path",
    required=True,
    type=click.Path(path_type=Path, allow_dash=True),
    help='JSON: a list of messages, or {"messages": [...], "tools": [...], "documents": [...]} '
    "('-' reads stdin).",
)
@click.option(
    "--mode",
    type=click.Choice(["generation", "training", "prefill"]),
    default="generation",
    show_default=True,
    help="generation appends the assistant header; prefill continues the final assistant "
    "message; training renders complete turns.",
)
@click.option(
    "--show",
    type=click.Choice(["ids", "pieces", "origins", "json"]),
    default="ids",
    show_default=True,
    help="ids: the IDs; pieces: one row per token; origins: colored text by origin; "
    "json: every aligned vector.",
)
@click.option(
    "--template",
    type=InputPath(path_type=Path, exists=True),
    default=None,
    help="Model directory, tokenizer_config.json or *.jinja with the chat template "
    "(default: the tokenizer_config.json beside the tokenizer).",
)
@click.option(
    "--grammar",
    type=click.Choice(sorted(_GRAMMARS)),
    default=None,
    help="Use a declared sequence grammar instead of a Hugging Face template.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="Truncate whole groups to fit."
)
@click.option("--strict", is_flag=True, help="Exit 1 when Conversation.validate() objects.")
@click.option("--color/--no-color", default=None, help="Force colors on or off.")
def render(
    tokenizer_path: Path,
    messages_path: Path,
    mode: str,
    show: str,
    template: Path | None,
    grammar: str | None,
    limit: int | None,
    strict: bool,
    color: bool | None,
) -> None:
    """Render a conversation and print its IDs with their provenance.

    \b
    Example:
      tokenpact chat render -t deepseek-v3/ --messages conv.json --show origins
    """
    if template is not None and grammar is not None:
        raise click.UsageError("pass --template or --grammar, not both")
    tok = load_tokenizer(tokenizer_path)
    data = _read_conversation(messages_path)
    formatter = _formatter(tok, template, grammar)
    options = {"tools": data.get("tools"), "documents": data.get("documents")}
    if limit is not None:
        result = truncate(formatter, data["messages"], limit=limit, mode=mode, **options)
        conv = result.conversation
        for group in result.dropped:
            click.echo(
                f"dropped messages {list(group.message_indices)} ({', '.join(group.roles)}): "
                f"{group.tokens} tokens",
                err=True,
            )
    else:
        conv = formatter.format(data["messages"], mode=mode, **options)
    problems = conv.problems()
    for problem in problems:
        click.echo(f"warning: {problem}", err=True)
    if show == "json":
        click.echo(json.dumps(conv.to_json(), ensure_ascii=False))
    elif show == "pieces":
        _show_table(conv)
    elif show == "origins":
        _show_origins(conv, color)
    else:
        click.echo(" ".join(map(str, conv.input_ids)))
    if show != "json":
        counts = conv.accounting()
        echo_rows(
            [
                ("tokens", str(len(conv))),
                ("prompt boundary", str(conv.prompt_boundary)),
                ("stop IDs", " ".join(map(str, conv.stop_policy.stop_ids)) or "-"),
                ("parts", ", ".join(f"{k[2:]} {v}" for k, v in counts.items() if k != "n_total")),
                ("tokenizer", conv.tokenizer_hash),
                ("template", conv.template_hash),
            ],
            indent="# ",
        )
    if strict and problems:
        raise click.exceptions.Exit(EXIT_ERROR)


@chat.command("encode")
@tokenizer_option
@click.option(
    "--conversations",
    "paths",
    required=True,
    multiple=True,
    type=InputPath(path_type=Path, exists=True, dir_okay=False),
    help='JSONL, one conversation per line: a list of messages or {"messages": [...], '
    '"tools": [...], "documents": [...], "id": "..."}. Repeat for several files.',
)
@click.option(
    "--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Output directory."
)
@click.option(
    "--template",
    type=InputPath(path_type=Path, exists=True),
    default=None,
    help="Model directory, tokenizer_config.json or *.jinja with the chat template "
    "(default: the tokenizer_config.json beside the tokenizer).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "megatron"]),
    default="parquet",
    show_default=True,
    help="Shard format (the IDs; a .mask file per shard holds the supervision).",
)
@click.option(
    "--supervise",
    type=click.Choice(["turns", "final"]),
    default="turns",
    show_default=True,
    help="turns: every assistant turn the template keeps as generated; final: only the last "
    "message (for conversations expanded with --expand-turns).",
)
@click.option(
    "--expand-turns",
    is_flag=True,
    help="One example per assistant turn, each rendered as the template renders it at that "
    "point (for templates that rewrite earlier turns, such as Qwen 3); implies --supervise final.",
)
@click.option(
    "--on-error",
    type=click.Choice(["raise", "skip"]),
    default="raise",
    show_default=True,
    help="raise: stop at the first conversation that does not render, naming it; skip: leave "
    "it out and list it (and why) in dataset.json and on stderr.",
)
@click.option("--records-per-shard", type=click.IntRange(min=1), default=100_000, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Rendering threads.")
@click.option("--overwrite", is_flag=True, help="Replace a dataset already in --out.")
def encode(
    tokenizer_path: Path,
    paths: tuple[Path, ...],
    out_dir: Path,
    template: Path | None,
    fmt: str,
    supervise: str,
    expand_turns: bool,
    on_error: str,
    records_per_shard: int,
    threads: int | None,
    overwrite: bool,
) -> None:
    """Render conversations into SFT training shards bound to the tokenizer and template.

    Each conversation is one record: the IDs transformers' apply_chat_template gives, and a
    mask of the tokens the model generates (everything after each assistant turn's
    generation prompt through its end-of-turn token). Read it back with
    tokenpact.data.open_dataset; its record_table() packs or pads with the mask as targets.

    \b
    Example:
      tokenpact chat encode -t qwen3/ --conversations chats.jsonl --out sft/ --on-error skip
    """
    from ..chat import ChatTemplateError
    from ..chat import expand_turns as expand
    from ..data.chat_shards import encode_conversations, read_conversations

    tok = load_tokenizer(tokenizer_path)
    formatter = _formatter(tok, template, None)
    pairs = read_conversations(list(paths))
    if expand_turns:
        supervise = "final"
        expanded = []
        for doc_id, whole in pairs:
            try:
                parts = expand(whole)
            except ChatTemplateError:
                parts = [whole]  # rendering reports it (raise or skip, as asked)
            expanded += [(f"{doc_id}/{k:04d}", record) for k, record in enumerate(parts)]
        pairs = expanded
    manifest = encode_conversations(
        pairs,
        formatter,
        out_dir,
        format=fmt,
        records_per_shard=records_per_shard,
        supervise=supervise,
        on_error=on_error,
        threads=threads,
        overwrite=overwrite,
    )
    for skipped in manifest["skipped"]:
        click.echo(
            f"skipped {skipped['doc_id']}: {skipped['error']}: {skipped['message']}", err=True
        )
    echo_rows(
        [
            ("records", str(manifest["records"])),
            ("skipped", str(len(manifest["skipped"]))),
            ("tokens", str(manifest["tokens"])),
            ("supervised tokens", str(manifest["supervision"]["supervised_tokens"])),
            ("shards", str(len(manifest["shards"]))),
            ("tokenizer", manifest["tokenizer_hash"]),
            ("template", manifest["template_hash"]),
        ],
        indent="# ",
    )
