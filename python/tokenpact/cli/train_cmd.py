"""``tokenpact train``: train a tokenizer (byte-level BPE, Unigram, WordPiece or
character BPE) on text or JSONL files."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from ._common import echo_rows, fmt_seconds, progress_option, resolve_progress, threads_option

MODELS = ("bpe", "unigram", "wordpiece", "char-bpe")
# The options that belong to one or some models (the rest apply to every model).
OWNERS: dict[str, tuple[str, ...]] = {
    "pattern": ("bpe",),
    "max_token_length": ("bpe",),
    "tie_break": ("bpe", "char-bpe"),
    "min_frequency": ("bpe", "wordpiece", "char-bpe"),
    "byte_fallback": ("unigram",),
    "character_coverage": ("unigram",),
    "max_piece_length": ("unigram",),
    "normalization": ("unigram",),
    "remove_extra_whitespaces": ("unigram",),
    "split_by_unicode_script": ("unigram",),
    "lowercase": ("wordpiece", "char-bpe"),
    "continuing_subword_prefix": ("wordpiece",),
    "limit_alphabet": ("wordpiece", "char-bpe"),
    "initial_alphabet": ("char-bpe",),
    "normalizer": ("bpe",),
    "scoring": ("wordpiece",),
    "num_merges": ("char-bpe",),
    "end_of_word": ("char-bpe",),
}
# --normalizer choices for byte-level BPE: the normalizer nodes they stand for.
NORMALIZERS = {
    "nfc": ("NFC",),
    "nfkc": ("NFKC",),
    "lowercase": ("Lowercase",),
    "nfc-lowercase": ("NFC", "Lowercase"),
    "nfkc-lowercase": ("NFKC", "Lowercase"),
}
DESCRIPTIONS = {
    "bpe": "byte-level BPE",
    "unigram": "Unigram (SentencePiece)",
    "wordpiece": "WordPiece",
    "char-bpe": "character BPE",
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_owners(ctx: click.Context, model: str) -> None:
    """An option given for a model it does not apply to is a usage error naming the
    model(s) it belongs to."""
    for name, owners in OWNERS.items():
        source = ctx.get_parameter_source(name)
        if source is click.core.ParameterSource.COMMANDLINE and model not in owners:
            models = " or ".join(f"--model {m}" for m in owners)
            raise click.UsageError(f"{_flag(name)} applies to {models}, not --model {model}", ctx)


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
    "--model",
    type=click.Choice(MODELS),
    default="bpe",
    show_default=True,
    help="What to train: byte-level BPE, SentencePiece-style Unigram, WordPiece (BERT) or "
    "character BPE (Sennrich, </w>).",
)
@click.option(
    "--vocab-size",
    type=click.IntRange(min=1),
    default=None,
    help="Total vocabulary, special tokens included (required, except for --model "
    "char-bpe given --num-merges).",
)
@click.option(
    "--pattern",
    default="gpt4",
    show_default=True,
    help="[bpe] Pre-tokenizer: a built-in name (gpt2, gpt4, o200k, llama3) or a regex.",
)
@click.option(
    "--min-frequency",
    default=None,
    type=click.IntRange(min=1),
    help="[bpe, wordpiece, char-bpe] Stop when the best pair occurs fewer times than this "
    "(default 2; 1 for char-bpe).",
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
    help="[bpe] Never learn a token longer than this many bytes.",
)
@click.option(
    "--tie-break",
    type=click.Choice(["lowest_pair_ids", "subword_nmt", "smallest", "largest"]),
    default=None,
    help="[bpe: lowest_pair_ids (default) | subword_nmt; char-bpe: smallest (default) | "
    "largest] How equally frequent pairs are ordered.",
)
@click.option("--byte-fallback", is_flag=True, help="[unigram] Spell unknown characters as bytes.")
@click.option(
    "--character-coverage",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=None,
    help="[unigram] Share of characters the alphabet covers (default 0.9995).",
)
@click.option(
    "--max-piece-length",
    type=click.IntRange(min=1),
    default=None,
    help="[unigram] Longest piece, in characters (default 16).",
)
@click.option(
    "--normalization",
    default=None,
    help="[unigram] SentencePiece normalization rule: identity (default), nfkc, "
    "nmt_nfkc, nfkc_cf, nmt_nfkc_cf.",
)
@click.option(
    "--remove-extra-whitespaces/--keep-extra-whitespaces",
    "remove_extra_whitespaces",
    default=None,
    help="[unigram] Collapse runs of spaces and strip the ends, as SentencePiece does "
    "(the trainer's default; lossy for code and LLM data) or keep every space.",
)
@click.option(
    "--split-by-unicode-script/--no-split-by-unicode-script",
    "split_by_unicode_script",
    default=None,
    help="[unigram] Never join pieces across Unicode scripts (default: split).",
)
@click.option("--lowercase", is_flag=True, help="[wordpiece, char-bpe] Lowercase text first.")
@click.option(
    "--continuing-subword-prefix",
    default=None,
    help="[wordpiece] Prefix of word-internal pieces (default ##).",
)
@click.option(
    "--limit-alphabet",
    type=click.IntRange(min=1),
    default=None,
    help="[wordpiece, char-bpe] Keep at most this many initial characters (wordpiece "
    "default 1000; char-bpe default: all).",
)
@click.option(
    "--initial-alphabet",
    default=None,
    help="[char-bpe] Characters to keep in the alphabet even if the corpus lacks them.",
)
@click.option(
    "--normalizer",
    type=click.Choice(sorted(NORMALIZERS)),
    default=None,
    help="[bpe] Normalize text before pre-tokenization, in training and in encode.",
)
@click.option(
    "--scoring",
    type=click.Choice(["count", "likelihood"]),
    default=None,
    help="[wordpiece] Merge scoring: count (HF-like, default) or likelihood.",
)
@click.option(
    "--num-merges",
    type=click.IntRange(min=0),
    default=None,
    help="[char-bpe] Number of merges to learn (instead of --vocab-size).",
)
@click.option("--end-of-word", default=None, help="[char-bpe] End-of-word marker (default </w>).")
@click.option(
    "--no-special-tokens",
    is_flag=True,
    help="Do not reserve the model's default special tokens (<|bos|>, <|eos|>, <|pad|>, "
    "... for bpe; <unk>, <s>, </s> for unigram; [PAD], [UNK], ... for wordpiece).",
)
@progress_option
@click.pass_context
def train(
    ctx: click.Context,
    inputs: tuple[Path, ...],
    output: Path,
    model: str,
    vocab_size: int | None,
    text_field: str,
    threads: int | None,
    no_special_tokens: bool,
    progress: bool | None,
    **options: Any,
) -> None:
    """Train a tokenizer on INPUT files and save it to --output.

    INPUT files are plain text (one document per line), JSONL (*.jsonl, one object per
    line with the text in --text-field) or either one gzipped. Options marked [model]
    apply to that --model only.

    \b
    Examples:
      tokenpact train corpus.jsonl.gz --output my-tok --vocab-size 32000
      tokenpact train corpus.txt -o uni --model unigram --vocab-size 8000 --byte-fallback
      tokenpact train corpus.txt -o wp --model wordpiece --vocab-size 8000 --lowercase
      tokenpact train corpus.txt -o cb --model char-bpe --num-merges 1000
    """
    import tokenpact as tp

    _check_owners(ctx, model)
    if options["tie_break"] is not None:
        allowed = (
            ("smallest", "largest") if model == "char-bpe" else ("lowest_pair_ids", "subword_nmt")
        )
        if options["tie_break"] not in allowed:
            raise click.UsageError(
                f"--tie-break for --model {model} is one of {', '.join(allowed)}", ctx
            )
    if vocab_size is None and not (model == "char-bpe" and options["num_merges"] is not None):
        hint = " (or --num-merges N)" if model == "char-bpe" else ""
        raise click.UsageError(f"--model {model} needs --vocab-size N{hint}", ctx)
    kwargs = {k: v for k, v in options.items() if v is not None and model in OWNERS[k]}
    for flag in ("byte_fallback", "lowercase"):
        if kwargs.get(flag) is False:
            del kwargs[flag]  # the trainers' own defaults
    if no_special_tokens:
        kwargs["special_tokens"] = ()
    if "normalizer" in kwargs:
        from ..components import normalizers

        steps = [getattr(normalizers, n)() for n in NORMALIZERS[kwargs["normalizer"]]]
        kwargs["normalizer"] = steps[0] if len(steps) == 1 else normalizers.Sequence(steps)
    texts = tp.TextFiles([str(p) for p in inputs], text_field=text_field)
    start = time.perf_counter()
    tok = _train(tp, model, texts, vocab_size, threads, resolve_progress(progress), kwargs)
    elapsed = time.perf_counter() - start
    tok.save(output)
    training = tok.training or {}
    click.echo(f"trained a {DESCRIPTIONS[model]} tokenizer on {len(inputs)} file(s)")
    rows = [("stop reason", str(training.get("stop_reason", "unknown")))]
    if model == "bpe":
        merges = training.get("merges_learned", len(tok.merges))
        rows.append(("merges learned", f"{merges:,}"))
        rows.append(
            (
                "vocab size",
                f"{tok.vocab_size:,} (256 bytes + {len(tok.merges):,} merges + "
                f"{len(tok.special_tokens)} special)",
            )
        )
    else:
        rows.append(("vocab size", f"{tok.vocab_size:,} ({len(tok.special_tokens)} special)"))
    rows += [("elapsed", fmt_seconds(elapsed)), ("saved to", str(output))]
    echo_rows(rows)


def _train(
    tp: Any,
    model: str,
    texts: Any,
    vocab_size: int | None,
    threads: int | None,
    progress: bool,
    kwargs: dict[str, Any],
) -> Any:
    if model == "bpe":
        kwargs.setdefault("min_frequency", 2)
        kwargs.setdefault("special_tokens", tp.DEFAULT_SPECIAL_TOKENS)
        return tp.train_bpe(
            texts, vocab_size=vocab_size, threads=threads, progress=progress, **kwargs
        )
    if model == "unigram":
        return tp.train_unigram(texts, vocab_size=vocab_size, threads=threads, **kwargs)
    if model == "wordpiece":
        return tp.train_wordpiece(texts, vocab_size=vocab_size, threads=threads, **kwargs)
    return tp.train_char_bpe(texts, vocab_size=vocab_size, threads=threads, **kwargs)
