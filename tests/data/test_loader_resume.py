"""A loader process killed mid-epoch resumes from its last saved state, bit for bit."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.data import Document, TokenLoader, encode_dataset

_CHILD = """
import hashlib, json, os, sys, time
from tokenpact.data import TokenLoader
path, log = sys.argv[1], sys.argv[2]
loader = TokenLoader([path], seq_len=16, batch_size=2, seed=11, world_size=2, rank=1)
with open(log, "a") as out:
    for batch in loader:
        line = {"digest": hashlib.sha256(batch.tokens.tobytes()).hexdigest(),
                "state": loader.state_dict()}
        out.write(json.dumps(line) + "\\n")
        out.flush()
        os.fsync(out.fileno())
        time.sleep(0.05)
"""


def _digest(batch: object) -> str:
    return hashlib.sha256(batch.tokens.tobytes()).hexdigest()  # type: ignore[attr-defined]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killed_loader_resumes_exactly(tmp_path: Path, real_docs: list[Document]) -> None:
    tok = tp.train_bpe([d.text for d in real_docs], vocab_size=400)
    encode_dataset(real_docs[:200], tok, tmp_path / "ds", format="megatron", records_per_shard=40)

    def make() -> TokenLoader:
        return TokenLoader(
            [tmp_path / "ds"], seq_len=16, batch_size=2, seed=11, world_size=2, rank=1
        )

    reference = [_digest(b) for b in make()]
    assert len(reference) > 20
    log = tmp_path / "log.jsonl"
    env = dict(os.environ)
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path / "ds"), str(log)], env=env
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            lines = log.read_text().splitlines() if log.exists() else []
            if len(lines) >= 6 or child.poll() is not None:
                break
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL, "the loader finished before it was killed"
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.endswith("}")]
    done = len(lines)
    assert 6 <= done < len(reference)
    assert [x["digest"] for x in lines] == reference[:done]
    resumed = make()
    resumed.load_state_dict(lines[-1]["state"])
    assert [_digest(b) for b in resumed] == reference[done:]
    # Elastic: the same state on a single rank holding both halves covers the rest.
    whole = TokenLoader([tmp_path / "ds"], seq_len=16, batch_size=4, seed=11)
    whole.load_state_dict(lines[-1]["state"])
    rest = [p for b in whole for p in range(*b.provenance.positions)]
    assert rest == list(range(lines[-1]["state"]["cursor"], len(rest) + rest[0]))
