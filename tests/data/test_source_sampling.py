"""Source-weighted sampling of a tokenizer's training corpus: per-source probabilities,
the realized shares, and the policy in the training record and manifest.

Real multilingual slices (German and French manual pages, English and German fortunes,
Python code) from the shared corpus are written to a temporary JSONL file and read back
with the ordinary reader, as a user's corpus would be.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.data import (
    Document,
    SourceSampling,
    expected_token_shares,
    read_documents,
    sample_sources,
)
from tokenpact.data import train_bpe as data_train_bpe
from tokenpact.errors import ConfigError

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "bench-mixed.jsonl.gz"
PER_SLICE = {"man-de": 40, "man-fr": 40, "fortune-en": 150, "fortune-de": 150, "code-py": 20}
POLICY = {"man-de": 0.2, "man-fr": 0.1, "fortune-en": 0.3, "fortune-de": 0.3, "code-py": 0.1}


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SHARED.is_file():
        pytest.skip(f"the shared corpus is not at {SHARED} (it sits beside the checkout)")
    wanted = dict(PER_SLICE)
    rows = []
    with gzip.open(SHARED, "rt", encoding="utf-8") as handle:
        for line in itertools.islice(handle, 6000):
            record = json.loads(line)
            if wanted.get(record["slice"], 0) > 0:
                wanted[record["slice"]] -= 1
                record["text"] = record["text"][:4000]  # keep training fast
                rows.append(record)
    if any(wanted.values()):
        pytest.skip(f"the shared corpus lacks records for {wanted}")
    path = tmp_path_factory.mktemp("sampling") / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def docs(corpus_file: Path) -> list[Document]:
    return list(read_documents([corpus_file], source_field="slice"))


def test_realized_document_shares_follow_the_policy(docs: list[Document]) -> None:
    policy = SourceSampling(POLICY, documents=200, seed=7)
    sample = sample_sources(docs, policy)
    realized = sample.realized
    assert realized["documents"] == {
        "code-py": 20,
        "fortune-de": 60,
        "fortune-en": 60,
        "man-de": 40,
        "man-fr": 20,
    }
    assert len(sample) == 200
    for source, q in POLICY.items():
        assert realized["document_share"][source] == pytest.approx(q, abs=1 / 200)
    # Byte shares are measured, not assumed: manual pages are long, fortunes short.
    assert realized["byte_share"]["man-de"] > realized["document_share"]["man-de"]
    assert realized["byte_share"]["fortune-en"] < realized["document_share"]["fortune-en"]
    assert sum(realized["bytes"].values()) == sum(d.n_bytes for d in sample.documents)
    assert {d.source for d in sample.documents} == set(POLICY)


def test_sampling_is_deterministic_in_the_seed(docs: list[Document]) -> None:
    policy = SourceSampling(POLICY, documents=150, seed=3)
    first = [d.doc_id for d in sample_sources(docs, policy).documents]
    shuffled = list(docs)
    random.Random(0).shuffle(shuffled)
    assert [d.doc_id for d in sample_sources(shuffled, policy).documents] == first
    other = SourceSampling(POLICY, documents=150, seed=4)
    assert [d.doc_id for d in sample_sources(docs, other).documents] != first


def test_a_small_source_is_repeated_to_its_quota(docs: list[Document]) -> None:
    policy = SourceSampling({"code-py": 0.5, "fortune-en": 0.5}, documents=100, seed=1)
    sample = sample_sources(docs, policy)
    code = [d.doc_id for d in sample.documents if d.source == "code-py"]
    assert len(code) == 50 and len(set(code)) == 20  # 20 documents: 2 full passes + 10
    assert sample.realized["distinct"]["code-py"] == 20


def test_policy_is_recorded_and_round_trips(docs: list[Document], tmp_path: Path) -> None:
    sample = sample_sources(docs, SourceSampling(POLICY, documents=120, seed=11))
    tok = data_train_bpe(sample, vocab_size=400, special_tokens=["<|endoftext|>"])
    record = tok.training["sampling"]
    assert record["scheme"] == "source-weighted-v1"
    assert record["seed"] == 11 and record["documents"] == 120
    assert record["probabilities"] == pytest.approx(POLICY)
    assert record["realized"] == sample.realized
    assert tok.training["corpus"]["documents"] == 120
    assert tok.manifest["training"]["sampling"]["seed"] == 11
    back = tp.Tokenizer.load(tok.save(tmp_path / "art"))
    assert back.training["sampling"] == record
    assert back.manifest["training"] == tok.manifest["training"]
    # The realized token shares against the seed's formula with measured means.
    shares = sample.token_shares(tok)
    assert sum(shares.values()) == pytest.approx(1.0)
    counts = {s: 0 for s in POLICY}
    lengths = {s: 0 for s in POLICY}
    for d in sample.documents:
        counts[d.source] += 1
        lengths[d.source] += len(tok.encode(d.text))
    q = {s: counts[s] / len(sample) for s in POLICY}
    mean = {s: lengths[s] / counts[s] for s in POLICY}
    assert shares == pytest.approx(expected_token_shares(q, mean))


def test_bad_policies_are_config_errors(docs: list[Document]) -> None:
    with pytest.raises(ConfigError, match="negative"):
        SourceSampling({"a": -1.0}, documents=3)
    with pytest.raises(ConfigError, match="sum to zero"):
        SourceSampling({"a": 0.0}, documents=3)
    with pytest.raises(ConfigError, match="documents must be >= 1"):
        SourceSampling({"a": 1.0}, documents=0)
    with pytest.raises(ConfigError, match="no documents from"):
        sample_sources(docs, SourceSampling({"man-xx": 1.0}, documents=3))
