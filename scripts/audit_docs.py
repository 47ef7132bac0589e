"""Regenerate the measured parts of docs/AUDIT.md: token premiums and the report screenshot.

1. Token premium of cl100k, Llama 3.2 and Qwen2.5 on ``../shared/corpus/parallel-gettext``
   (every item, relative to English): printed as a markdown table to paste into
   docs/AUDIT.md.
2. ``tokenpact audit`` on the first records of ``bench-mixed`` plus parallel-gettext with a
   small sweep, rendered headless in the system chromium (Playwright never downloads a
   browser) and saved as ``docs/audit-report.png``.

Run from the repository root: ``PYTHONPATH=python python scripts/audit_docs.py``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
CHROMIUM = "/usr/bin/chromium"
LANGUAGES = [
    "de",
    "fr",
    "es",
    "ru",
    "uk",
    "zh_CN",
    "ja",
    "ko",
    "ar",
    "he",
    "hi",
    "bn",
    "ta",
    "th",
    "ka",
    "el",
    "vi",
    "tr",
    "my",
    "am",
]


def premium_table() -> str:
    sys.path.insert(0, str(REPO / "tests"))
    import tokenpact as tp
    from conformance import peer_data
    from tokenpact.audit.premium import load_parallel, token_premium

    toks = {
        "cl100k": tp.Tokenizer.from_tiktoken(peer_data.cl100k_tiktoken(), pattern="cl100k"),
        "Llama 3.2": tp.Tokenizer.load(peer_data.llama3_hf_json()),
        "Qwen2.5": tp.Tokenizer.load(peer_data.offline_counter_files("qwen-2.5").tokenizer_json),
    }
    corpus = load_parallel(CORPUS / "parallel-gettext.jsonl.gz")
    results = {name: token_premium(tok, corpus, languages=LANGUAGES) for name, tok in toks.items()}
    head = "| language | items | " + " | ".join(f"{n} median / p95 / max" for n in toks) + " |"
    rows = [head, "|---|---:|" + "---:|" * len(toks)]
    for lang in LANGUAGES:
        stats = [r["languages"].get(lang) for r in results.values()]
        if stats[0] is None:
            continue
        cells = [
            f"{s['median']:.2f} / {s['p95']:.2f} / {s['max']:.1f}" if s else "-" for s in stats
        ]
        rows.append(f"| {lang} | {stats[0]['items']:,} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def screenshot(out_png: Path) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from playwright.sync_api import sync_playwright

    from conformance import peer_data

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "tokenpact.cli",
            "audit",
            "-t",
            f"cl100k={peer_data.cl100k_tiktoken()}",
            "--pattern",
            "cl100k",
            "-t",
            f"llama3.2={peer_data.llama3_hf_json()}",
            "-t",
            f"qwen2.5={peer_data.offline_counter_files('qwen-2.5').tokenizer_json}",
            "--corpus",
            str(CORPUS / "bench-mixed.jsonl.gz"),
            "--limit",
            "4000",
            "--slice-field",
            "slice",
            "--parallel",
            str(CORPUS / "parallel-gettext.jsonl.gz"),
            "--parallel-limit",
            "5000",
            "--sweep-sizes",
            "512,1024,2048,4096",
            "--sweep-fit-bytes",
            "1000000",
            "--out",
            tmp,
            "--no-progress",
        ]
        subprocess.run(cmd, check=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.goto((Path(tmp) / "report.html").as_uri())
            page.screenshot(path=str(out_png), full_page=True)
            browser.close()
    from PIL import Image

    # A 128-colour palette keeps the committed PNG small; the charts use few colours.
    Image.open(out_png).convert("RGB").quantize(colors=128).save(out_png, optimize=True)
    print(f"wrote {out_png}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-premium", action="store_true")
    parser.add_argument("--skip-screenshot", action="store_true")
    args = parser.parse_args()
    if not args.skip_premium:
        print(premium_table())
    if not args.skip_screenshot:
        screenshot(REPO / "docs" / "audit-report.png")


if __name__ == "__main__":
    main()
