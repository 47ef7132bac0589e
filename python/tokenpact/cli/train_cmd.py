"""``tokenpact train``: train a byte-level BPE tokenizer on text or JSONL files."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ._common import echo_rows, fmt_seconds, progress_option, resolve_progress, threads_option


@click.command("train")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to save the tokenizer artifact in (created if needed).",
)
@click.option(
    "--vocab-size",
    required=True,
    type=click.IntRange(min=1),
    help="Total vocabulary: 256 bytes + merges + special tokens.",
)
@click.option(
    "--pattern",
    default="gpt4",
    show_default=True,
    help="Pre-tokenizer: a built-in name (gpt2, gpt4, o200k, llama3) or a regex.",
)
@click.option(
    "--min-frequency",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="Stop when the best pair occurs fewer times than this.",
)
@click.option(
    "--text-field",
    default="text",
    show_default=True,
    help="Field holding the text in JSONL inputs.",
)
@threads_option
@click.option(
    "--max-token-length",
    type=click.IntRange(min=1),
    default=None,
    help="Never learn a token longer than this many bytes.",
)
@click.option(
    "--tie-break",
    type=click.Choice(["lowest_pair_ids", "subword_nmt"]),
    default="lowest_pair_ids",
    show_default=True,
    help="How equally frequent pairs are ordered.",
)
@click.option(
    "--no-special-tokens",
    is_flag=True,
    help="Do not reserve the default special tokens (<|bos|>, <|eos|>, <|pad|>, ...).",
)
@progress_option
def train(
    inputs: tuple[Path, ...],
    output: Path,
    vocab_size: int,
    pattern: str,
    min_frequency: int,
    text_field: str,
    threads: int | None,
    max_token_length: int | None,
    tie_break: str,
    no_special_tokens: bool,
    progress: bool | None,
) -> None:
    """Train a byte-level BPE tokenizer on INPUT files and save it to --output.

    INPUT files are plain text (one document per line), JSONL (*.jsonl, one object per
    line with the text in --text-field) or either one gzipped.

    \b
    Example:
      tokenpact train corpus.jsonl.gz --output my-tok --vocab-size 32000
    """
    import tokenpact as tp

    start = time.perf_counter()
    texts = tp.TextFiles([str(p) for p in inputs], text_field=text_field)
    tok = tp.train_bpe(
        texts,
        vocab_size=vocab_size,
        pattern=pattern,
        min_frequency=min_frequency,
        special_tokens=() if no_special_tokens else tp.DEFAULT_SPECIAL_TOKENS,
        max_token_length=max_token_length,
        tie_break=tie_break,
        threads=threads,
        progress=resolve_progress(progress),
    )
    elapsed = time.perf_counter() - start
    tok.save(output)
    training = tok.training or {}
    merges = training.get("merges_learned", len(tok.merges))
    click.echo(f"trained a byte-level BPE tokenizer on {len(inputs)} file(s)")
    echo_rows(
        [
            ("stop reason", str(training.get("stop_reason", "unknown"))),
            ("merges learned", f"{merges:,}"),
            (
                "vocab size",
                f"{tok.vocab_size:,} (256 bytes + {len(tok.merges):,} merges + "
                f"{len(tok.special_tokens)} special)",
            ),
            ("elapsed", fmt_seconds(elapsed)),
            ("saved to", str(output)),
        ]
    )
