"""``tokenpact convert``: write a tokenizer in another format.

The formats offered are the registry's writers (``tp.files.export_formats()``), each
written by ``tp.export``; a registered plug-in format with a writer appears here too.
"""

from __future__ import annotations

from pathlib import Path

import click

from .. import files
from ._common import load_tokenizer


@click.command("convert")
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("target", type=click.Path(path_type=Path))
@click.option(
    "--to",
    "fmt",
    type=click.Choice(list(files.export_formats())),
    required=True,
    help="native: artifact directory (the tokenizer file + manifest + golden); hf: "
    "tokenizer.json; tiktoken: a *.tiktoken rank file; sentencepiece: a .model file "
    "(SentencePiece-backed tokenizers: .model files, tp.train_unigram).",
)
@click.option(
    "--pattern",
    default=None,
    help="Pre-tokenizer pattern for a *.tiktoken SOURCE (name or regex; default gpt4).",
)
def convert(source: Path, target: Path, fmt: str, pattern: str | None) -> None:
    """Load SOURCE (artifact dir, tokenizer.json, *.tiktoken, .model) and write TARGET.

    \b
    Example:
      tokenpact convert my-tok my-tok.json --to hf
      tokenpact convert cl100k_base.tiktoken cl100k-art --to native --pattern gpt4
      tokenpact convert tokenizer.model sp-tok.json --to hf
    """
    if source.suffix in (".tiktoken", ".model") and pattern is not None:
        tok = files.from_tiktoken(source, pattern=pattern)
    else:
        tok = load_tokenizer(source)
    written = files.export(tok, fmt, target)
    click.echo(f"wrote {written} ({fmt}); semantic hash {tok.semantic_hash}")
