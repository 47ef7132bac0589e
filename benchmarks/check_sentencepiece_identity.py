"""Identical IDs against ``sentencepiece`` on whole corpora, per Unigram model and language.

The Unigram encoder memoizes segment segmentations where the vocabulary proves the
lattice splits (src/sentencepiece/segment_cuts.rs); this script is the wide check that
nothing changes: every ``bench-mixed`` document and every ``parallel-gettext`` message
of the listed languages (plus the same messages joined into long documents, so that
segments recur at large running scores and past sentencepiece's score re-centring),
with several models:

* the 32,000-piece ``nmt_nfkc`` model ``bench_sentencepiece.py`` uses;
* models trained here by ``sentencepiece`` on a gettext mix with different options:
  defaults (``nmt_nfkc``), byte fallback + split digits + ``identity``,
  ``split_by_whitespace=false`` (pieces with inner ``▁``: the cache must switch off),
  ``treat_whitespace_as_suffix``, ``split_by_unicode_script=false``.

    python benchmarks/check_sentencepiece_identity.py [--bench-mb 52] [--vocab-size 8000]

Exits 1 when any text differs.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

LANGUAGES: tuple[str, ...] = ("ja", "zh_CN", "ko", "ru", "uk", "ar", "hi", "ta", "th", "el")
LANGUAGES += ("ka", "vi", "de", "en", "fr", "es", "pl", "tr")
TRAIN_LANGUAGES = ("ja", "zh_CN", "ko", "ru", "ar", "hi", "de", "en", "fr")
VARIANTS: dict[str, dict[str, Any]] = {
    "nmt_nfkc": {},
    "identity+bytes+digits": {
        "normalization_rule_name": "identity",
        "byte_fallback": True,
        "split_digits": True,
    },
    "no split_by_whitespace": {"split_by_whitespace": False},
    "whitespace suffix": {"treat_whitespace_as_suffix": True},
    "no split_by_unicode_script": {
        "split_by_unicode_script": False,
        "remove_extra_whitespaces": False,
    },
}


def gettext_messages() -> dict[str, list[str]]:
    path = common.corpus_path("parallel-gettext.jsonl.gz")
    out: dict[str, list[str]] = {lang: [] for lang in LANGUAGES}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            for lang in LANGUAGES:
                text = record.get(lang)
                if text:
                    out[lang].append(text)
    return out


def long_documents(messages: list[str], per_document: int = 400) -> list[str]:
    """Messages joined into documents of ``per_document`` messages each."""
    return [" ".join(messages[i : i + per_document]) for i in range(0, len(messages), per_document)]


def train(lines: list[str], vocab: int, options: dict[str, Any]) -> bytes:
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab,
        character_coverage=0.9995,
        input_sentence_size=200_000,
        shuffle_input_sentence=False,
        max_sentence_length=1 << 16,
        num_threads=2,
        minloglevel=2,
        **options,
    )
    return model.getvalue()


def differing(ours: Any, peer: Any, texts: list[str]) -> int:
    return sum(ours.encode(t) != peer.encode(t) for t in texts)


def check(
    name: str, model_path: Path, corpora: dict[str, list[str]], rows: list[list[object]]
) -> int:
    import sentencepiece as spm

    import tokenpact as tp

    ours = tp.Tokenizer.load(model_path)
    peer = spm.SentencePieceProcessor(model_file=str(model_path))
    bad = 0
    for corpus, texts in tqdm(corpora.items(), desc=name, leave=False):
        n = differing(ours, peer, texts)
        bad += n
        rows.append([name, corpus, len(texts), common.utf8_bytes(texts), n])
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench-mb", type=float, default=None, help="bench-mixed text")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/tokenpact-identity"))
    args = parser.parse_args(argv)
    common.use_repo_tests()
    from bench_sentencepiece import unigram_model

    limit = int(args.bench_mb * common.MB) if args.bench_mb else None
    bench = common.load_texts(common.corpus_path(), limit_bytes=limit)
    messages = gettext_messages()
    corpora: dict[str, list[str]] = {}
    for lang, texts in messages.items():
        corpora[lang] = texts
        corpora[f"{lang} (joined)"] = long_documents(texts)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[list[object]] = []
    bad = check(
        "bench 32k nmt_nfkc",
        unigram_model(common.corpus_path(), 12),
        {"bench-mixed": bench, **corpora},
        rows,
    )
    train_lines: list[str] = []
    for lang in TRAIN_LANGUAGES:
        train_lines += messages[lang][::2][:20_000]
    for variant, options in tqdm(VARIANTS.items(), desc="variants"):
        path = args.out / (variant.replace(" ", "_").replace("+", "_") + ".model")
        path.write_bytes(train(train_lines, args.vocab_size, options))
        sample = {
            "bench-mixed (first 4 MB)": common.load_texts(common.corpus_path(), 4 * common.MB)
        }
        bad += check(variant, path, {**sample, **corpora}, rows)
    headers = ["model", "texts", "count", "bytes", "differing"]
    print(common.markdown_table(headers, rows))
    print(f"differing texts in total: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
