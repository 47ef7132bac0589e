"""``tokenpact quickstart``: the main job, end to end on text found on this machine.

Harvest the built-in corpus (stdlib sources, docstrings, gettext catalogs), train a
byte-level BPE, save it, reload it, and prove the artifact is faithful: every document
round-trips exactly and the reloaded tokenizer gives the trained one's IDs.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import numpy as np

from ._common import (
    echo_rows,
    fail,
    fmt_bytes,
    fmt_seconds,
    progress_bar,
    progress_option,
    resolve_progress,
    threads_option,
)

if TYPE_CHECKING:
    from ..corpus import Document

DEFAULT_MAX_BYTES = 40_000_000
# Sources of failing documents listed in the error message.
MAX_REPORTED = 5


def _harvest(max_bytes: int) -> tuple[list[Document], dict[str, Any]]:
    from ..corpus import SLICES, builtin_corpus, corpus_digest

    docs = builtin_corpus(max_bytes=max_bytes)
    digest = corpus_digest(docs)
    per_slice: dict[str, list[int]] = {name: [0, 0] for name in SLICES}
    for doc in docs:
        counts = per_slice.setdefault(doc.slice, [0, 0])
        counts[0] += 1
        counts[1] += len(doc.text.encode("utf-8"))
    total = sum(size for _, size in per_slice.values())
    click.echo(
        f"harvested {len(docs):,} documents, {fmt_bytes(total)} from this Python installation:"
    )
    echo_rows(
        [
            (name, f"{n:>6,} docs  {fmt_bytes(size):>9}" + ("  (none found)" if not n else ""))
            for name, (n, size) in per_slice.items()
        ]
    )
    return docs, digest


@click.command("quickstart")
@click.option(
    "--vocab-size",
    default=8192,
    show_default=True,
    type=click.IntRange(min=1),
    help="Total vocabulary: 256 bytes + merges + 5 special tokens.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to save the artifact (default: a temporary directory, removed at the end).",
)
@click.option(
    "--max-bytes",
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    type=click.IntRange(min=1),
    help="Cap on the harvested corpus size in UTF-8 bytes.",
)
@threads_option
@progress_option
def quickstart(
    vocab_size: int,
    output: Path | None,
    max_bytes: int,
    threads: int | None,
    progress: bool | None,
) -> None:
    """Train, save, reload and verify a tokenizer on the built-in corpus.

    The corpus is harvested at run time from the Python installation (standard library
    sources and docstrings) and the system's gettext catalogs, in a deterministic order.
    Exits 1 if any document fails to round-trip or the reloaded tokenizer disagrees.
    """
    show = resolve_progress(progress)
    if output is not None:
        _run(vocab_size, output, max_bytes, threads, show, kept=True)
        return
    # Without --output the artifact only proves the round trip: nothing is left behind.
    with tempfile.TemporaryDirectory(prefix="tokenpact-quickstart-") as scratch:
        _run(vocab_size, Path(scratch) / "artifact", max_bytes, threads, show, kept=False)


def _run(
    vocab_size: int, out_dir: Path, max_bytes: int, threads: int | None, show: bool, *, kept: bool
) -> None:
    import tokenpact as tp

    start = time.perf_counter()
    # Harvesting reads thousands of files for a few seconds: say so before it starts.
    click.echo("harvesting the built-in corpus (stdlib sources, docstrings, gettext) ...")
    docs, digest = _harvest(max_bytes)
    texts = [doc.text for doc in docs]

    click.echo(f"training byte-level BPE: vocab size {vocab_size:,}, pattern gpt4, min frequency 2")
    t0 = time.perf_counter()
    tok = tp.train_bpe(
        texts,
        vocab_size=vocab_size,
        pattern="gpt4",
        min_frequency=2,
        special_tokens=tp.DEFAULT_SPECIAL_TOKENS,
        threads=threads,
        progress=show,
    )
    train_s = time.perf_counter() - t0

    tok.save(out_dir)
    loaded = tp.Tokenizer.load(out_dir)
    click.echo(f"saved to {out_dir} and reloaded" if kept else "saved and reloaded")

    # Flat batch output avoids a Python int per token, so this measures the encoder.
    t0 = time.perf_counter()
    ids, offsets = loaded.encode_batch_flat(texts, threads=threads)
    encode_s = time.perf_counter() - t0
    trained_ids, trained_offsets = tok.encode_batch_flat(texts, threads=threads)
    same_ids = np.array_equal(offsets, trained_offsets) and np.array_equal(ids, trained_ids)

    round_trip_bad: list[str] = []
    reload_bad: list[str] = []
    tokens_per_slice: dict[str, int] = defaultdict(int)
    bytes_per_slice: dict[str, int] = defaultdict(int)
    for i in progress_bar(range(len(docs)), total=len(docs), desc="verify", enabled=show):
        doc, lo, hi = docs[i], offsets[i], offsets[i + 1]
        if loaded.decode(ids[lo:hi]) != doc.text:
            round_trip_bad.append(doc.source)
        # Only a failed whole-array comparison needs the per-document search.
        if not same_ids and not np.array_equal(
            ids[lo:hi], trained_ids[trained_offsets[i] : trained_offsets[i + 1]]
        ):
            reload_bad.append(doc.source)
        tokens_per_slice[doc.slice] += int(hi - lo)
        bytes_per_slice[doc.slice] += len(doc.text.encode("utf-8"))
    same_model = (
        loaded.merges == tok.merges
        and loaded.special_tokens == tok.special_tokens
        and loaded.vocab_size == tok.vocab_size
    )

    training = tok.training or {}
    # The trainer records the digest of what it read; it must be the harvested corpus.
    recorded = training.get("corpus")
    digest_ok = recorded is None or recorded == digest
    total_bytes = sum(bytes_per_slice.values())
    total_tokens = sum(tokens_per_slice.values())
    n = len(docs)
    rows = [
        (
            "vocab size",
            f"{tok.vocab_size:,} (256 bytes + {len(tok.merges):,} merges + "
            f"{len(tok.special_tokens)} special)",
        ),
        ("merges", f"{training.get('merges_learned', len(tok.merges)):,}"),
        ("stop reason", str(training.get("stop_reason", "unknown"))),
        ("corpus", f"{n:,} documents, {fmt_bytes(total_bytes)}"),
        ("corpus digest", str(digest["digest"])),
        (
            "training record",
            "not recorded"
            if recorded is None
            else ("digest matches" if digest_ok else f"DIGEST DIFFERS: {recorded}"),
        ),
    ]
    for name, size in bytes_per_slice.items():
        rows.append((f"bytes/token {name}", f"{size / max(tokens_per_slice[name], 1):.2f}"))
    rows += [
        ("bytes/token all", f"{total_bytes / max(total_tokens, 1):.2f}"),
        ("training time", fmt_seconds(train_s)),
        (
            "encode throughput",
            f"{total_bytes / 1e6 / max(encode_s, 1e-9):.1f} MB/s "
            f"(encode_batch_flat, {threads or 'all'} threads)",
        ),
        ("round trip", _verdict(n, round_trip_bad)),
        ("reload identical", _verdict(n, reload_bad) + ("" if same_model else ", MODEL DIFFERS")),
        ("artifact", str(out_dir) if kept else "removed (pass --output DIR to keep it)"),
        ("total time", fmt_seconds(time.perf_counter() - start)),
    ]
    click.echo("summary")
    echo_rows(rows)

    problems = []
    if round_trip_bad:
        problems.append(
            f"{len(round_trip_bad)} documents did not round-trip (first: "
            f"{', '.join(round_trip_bad[:MAX_REPORTED])})"
        )
    if reload_bad or not same_model:
        problems.append(
            f"the reloaded tokenizer differs from the trained one on {len(reload_bad)} documents"
            + ("" if same_model else " and in its merges or special tokens")
            + (f" (first: {', '.join(reload_bad[:MAX_REPORTED])})" if reload_bad else "")
        )
    if not digest_ok:
        problems.append("the training record's corpus digest differs from the harvested corpus")
    if problems:
        fail("verification failed: " + "; ".join(problems) + "; please report this as a bug")


def _verdict(total: int, bad: list[str]) -> str:
    if bad:
        return f"FAILED on {len(bad):,} of {total:,} documents"
    return f"ok ({total:,}/{total:,} documents)"
