"""Cleaning-step speed (tokenpact.data.cleaning) next to the libraries it wraps.

Run from the repository root::

    PYTHONPATH=python python benchmarks/bench_clean.py           # full run, updates docs
    PYTHONPATH=python python benchmarks/bench_clean.py --quick   # small sample, no docs

Documents: one ``bench-mixed`` sample (prose, code, man pages, fortunes) and, for
extraction, the prose documents wrapped in an HTML page with a menu and a footer.

1. Each step alone, as the pipeline runs it (worker call, annotations, counts) against
   the bare library call on the same texts: ``trafilatura.bare_extraction``,
   ``ftfy.fix_text`` and py3langid ``classify``. The difference is the step's own work
   (script detection in langid) and bookkeeping. Quality, PII and decontamination are
   tokenpact's own code: no peer.
2. The default pipeline end to end, local against Ray on 2 CPUs (Ray start-up reported
   separately), with the output checked to be identical.

Asserts nothing about time; prints markdown and updates docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from tokenpact.data import Document  # noqa: E402
from tokenpact.data.cleaning import (  # noqa: E402
    DecontamConfig,
    ExtractConfig,
    LangIdConfig,
    PiiConfig,
    QualityConfig,
    RepairConfig,
    StepConfig,
    clean,
)

PAGE = (
    "<!DOCTYPE html><html><head><title>{title}</title></head><body>"
    "<nav><ul><li><a href='/'>Home</a></li><li><a href='/docs'>Docs</a></li></ul></nav>"
    "<main><article><h1>{title}</h1>{body}</article></main>"
    "<footer><p>Copyright 2024 Example. All rights reserved.</p></footer></body></html>"
)


def sample(limit_bytes: int) -> list[Document]:
    records = _common.load_records(_common.corpus_path(), limit_bytes)
    unique = {r["id"]: r for r in records}  # the corpus repeats a few IDs (same text)
    return [Document(r["id"], r["text"], r["slice"]) for r in unique.values()]


def pages(docs: list[Document]) -> list[Document]:
    out = []
    for d in docs:
        if d.source != "prose-en":
            continue
        body = "".join(f"<p>{p}</p>" for p in d.text.split("\n\n") if p.strip())
        out.append(Document(d.doc_id + ".html", PAGE.format(title=d.doc_id, body=body), "web"))
    return out


def run_worker(config: StepConfig, docs: list[Document]) -> Callable[[], Any]:
    """The step as the pipeline runs it: blocks of 256 documents, ``batch`` where the
    step has one (langid and quality run natively a block per call)."""
    worker = config.prepare()
    batch = getattr(worker, "batch", None)
    blocks = [docs[i : i + 256] for i in range(0, len(docs), 256)]

    def go() -> list[Any]:
        if batch is None:
            return [worker(d.text, {}) for d in docs]
        return [o for b in blocks for o in batch([d.text for d in b], [{} for _ in b])]

    return go


def peers() -> dict[str, Callable[[list[Document]], Callable[[], Any]]]:
    import ftfy
    import trafilatura
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    fixer = ftfy.TextFixerConfig(uncurl_quotes=False, fix_character_width=False, explain=False)
    return {
        "extract": lambda docs: (
            lambda: [
                trafilatura.bare_extraction(d.text, with_metadata=True, include_comments=False)
                for d in docs
            ]
        ),
        "repair": lambda docs: lambda: [ftfy.fix_text(d.text, config=fixer) for d in docs],
        "langid": lambda docs: lambda: [ident.classify(d.text[:10_000]) for d in docs],
    }


def step_table(docs: list[Document], html: list[Document], eval_path: Path) -> str:
    configs: list[tuple[StepConfig, list[Document], str]] = [
        (ExtractConfig(), html, "trafilatura " + _common.package_version("trafilatura")),
        (RepairConfig(), docs, "ftfy " + _common.package_version("ftfy")),
        (LangIdConfig(), docs, "py3langid " + _common.package_version("py3langid")),
        (QualityConfig(), docs, "-"),
        (PiiConfig(), docs, "-"),
        (DecontamConfig(eval_sets=(str(eval_path),)), docs, "-"),
    ]
    bare = peers()
    rows = []
    for config, texts, library in configs:
        nbytes = _common.utf8_bytes(d.text for d in texts)
        t_ours, _ = _common.timed(run_worker(config, texts), repeat=2)
        peer = bare.get(config.NAME)
        t_peer = _common.timed(peer(texts), repeat=2)[0] if peer else None
        rows.append(
            [
                config.NAME,
                library,
                len(texts),
                _common.fmt(_common.mb_per_s(nbytes, t_ours)),
                _common.fmt(len(texts) / t_ours, 0),
                _common.fmt(_common.mb_per_s(nbytes, t_peer)) if t_peer else "-",
                _common.fmt(t_peer / t_ours, 2) + "x" if t_peer else "-",
            ]
        )
    return _common.markdown_table(
        ["step", "library", "docs", "MB/s", "docs/s", "bare library MB/s", "of bare speed"], rows
    )


def engine_table(docs: list[Document]) -> str:
    import ray

    steps = ["extract", "langid", "quality", "pii"]
    nbytes = _common.utf8_bytes(d.text for d in docs)
    t_local, local = _common.timed(lambda: clean(docs, steps=steps))
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    t_start = time.perf_counter() - start
    try:
        clean(docs[:8], steps=steps, engine="ray")  # workers import tokenpact once
        t_ray, remote = _common.timed(
            lambda: clean(docs, steps=steps, engine="ray", ray_options={"block_docs": 128})
        )
    finally:
        ray.shutdown()
    same = local.output_records() == remote.output_records() and local.report() == remote.report()
    rows = [
        [
            "local (1 process)",
            _common.fmt(_common.mb_per_s(nbytes, t_local)),
            _common.fmt(t_local),
            "-",
        ],
        [
            "Ray, 2 CPUs",
            _common.fmt(_common.mb_per_s(nbytes, t_ray)),
            _common.fmt(t_ray),
            "yes" if same else "NO",
        ],
    ]
    table = _common.markdown_table(["engine", "MB/s", "seconds", "output identical"], rows)
    return table + f"\n\nRay start-up (not included): {t_start:.1f} s."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sample, do not update docs")
    args = parser.parse_args()
    docs = sample(600_000 if args.quick else 4_000_000)
    html = pages(docs)
    with tempfile.TemporaryDirectory() as tmp:
        eval_path = Path(tmp) / "eval.jsonl"
        held = [d for d in docs if d.source == "prose-en"][:20]
        eval_path.write_text("".join(json.dumps({"text": d.text}) + "\n" for d in held), "utf-8")
        steps = step_table(docs, html, eval_path)
    engines = engine_table(docs)
    nbytes = _common.utf8_bytes(d.text for d in docs)
    markdown = (
        "## Cleaning steps (`benchmarks/bench_clean.py`)\n\n"
        f"Machine: {_common.machine_info()}; shared with other agents while measured, so "
        f"figures are indicative. Sample: {len(docs)} bench-mixed documents "
        f"({nbytes / _common.MB:.1f} MB); extraction on {len(html)} prose documents wrapped "
        "in HTML pages.\n\n"
        "Each step as the pipeline runs it, against the bare library call on the same texts "
        "(langid adds script detection over the same characters):\n\n"
        f"{steps}\n\n"
        "The default pipeline (extract, langid, quality, pii) end to end:\n\n"
        f"{engines}\n"
    )
    print(markdown)
    if not args.quick:
        _common.update_performance_section("bench_clean", markdown)


if __name__ == "__main__":
    main()
