"""The doctor on every real tokenizer file the conformance tests load (tests/conformance/
peer_data.py). Findings on real files are facts about those files, listed in
docs/DOCTOR.md; this test checks the doctor reads each file and reports them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpact.doctor import diagnose

try:
    from conformance import peer_data
except ImportError:  # pragma: no cover - run from the repository root
    from tests.conformance import peer_data  # type: ignore[no-redef]


def real_tokenizers() -> dict[str, Path]:
    """Every real tokenizer file or folder the tests load, by a short name."""
    files = {
        "cl100k_base.tiktoken": peer_data.cl100k_tiktoken(),
        "llama-3.2 tokenizer.model (tiktoken ranks)": peer_data.llama3_tiktoken_model(),
        "llama-3.2 tokenizer.json + config": peer_data.llama3_hf_json().parent,
        "deepseek-v3 tokenizer.json + config": peer_data.deepseek_v3_files().tokenizer_json.parent,
        "all-MiniLM-L6-v2 tokenizer.json": peer_data.minilm_tokenizer_json(),
    }
    for path in peer_data.mistral_models():
        files[f"mistral {path.name}"] = path
    for path in peer_data.mistral_tekken_files():
        files[f"mistral {path.name}"] = path
    return files


# Known facts about these files (each one was checked by hand against the file).
EXPECTED = {
    "cl100k_base.tiktoken": {"digit-grouping", "partial-utf8-tokens"},
    "llama-3.2 tokenizer.json + config": {"digit-grouping", "partial-utf8-tokens"},
    "deepseek-v3 tokenizer.json + config": {"boundary-flag-twice", "pad-equals-eos"},
    "all-MiniLM-L6-v2 tokenizer.json": {
        "whitespace-collapse",
        "decode-not-normalized",
        "long-span-lost",
    },
}


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    return real_tokenizers()


def test_doctor_reads_every_real_tokenizer(files: dict[str, Path]) -> None:
    for name, path in files.items():
        report = diagnose([path])
        unfinished = [f for f in report.findings if "could not finish" in f.evidence]
        assert not unfinished, (name, unfinished)
        if "tekken" in name:
            # Tekken JSON is not a format tokenpact loads yet: reported, never raised.
            assert report.inspected[0].problem and report.exit_code == 1
            continue
        assert report.inspected[0].problem is None, (name, report.inspected)
        assert "tokenizer" in report.inspected[0].kinds
        assert EXPECTED.get(name, set()) <= set(report.codes()), (name, report.codes())
