"""manifest.json + golden.json beside a saved tokenizer: sealing, drift, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from contract_helpers import CORPUS, GOLDEN_OPTIONS

import tokenpact
from tokenpact.contract import (
    check_contract_files,
    inspect_contract_files,
    recover_interrupted_save,
    semantic_hash,
    write_contract_files,
)
from tokenpact.contract.artifact import JOURNAL_FILE
from tokenpact.contract.schema import manifest_errors
from tokenpact.errors import ArtifactError, ContractError

# Subprocesses must import the same tokenpact as this process (installed or in place).
PYTHON_SRC = Path(tokenpact.__file__).resolve().parent.parent


def load_checked(tp: ModuleType, directory: Path) -> Any:
    """Load as Tokenizer.load will once wired: recover, load, verify the contract files."""
    recover_interrupted_save(directory)
    tok = tp.Tokenizer.load(directory)
    check_contract_files(tok, directory)
    return tok


def _tokenizers(tp: ModuleType) -> dict[str, Any]:
    ranks = [bytes([i]) for i in range(256)] + [b"ab", b"abc"]
    return {
        "default specials": tp.train_bpe(CORPUS, vocab_size=320),
        "no specials": tp.train_bpe(CORPUS, vocab_size=300, special_tokens=()),
        "gpt2 pattern": tp.train_bpe(CORPUS, vocab_size=300, pattern="gpt2"),
        "tiktoken ranks": tp.Tokenizer.from_ranks(
            ranks, pattern="gpt4", special_tokens={"<|endoftext|>": 258, "<|fim|>": 259}
        ),
        "custom roles": tp.Tokenizer.from_merges(
            [(97, 98)], special_tokens=[tp.SpecialToken("<s>", "bos"), "<reserved_0>"]
        ),
    }


@pytest.mark.parametrize(
    "kind", ["default specials", "no specials", "gpt2 pattern", "tiktoken ranks", "custom roles"]
)
def test_every_written_manifest_validates(tp: ModuleType, tmp_path: Path, kind: str) -> None:
    tok = _tokenizers(tp)[kind]
    tok.save(tmp_path)
    manifest = write_contract_files(tok, tmp_path, golden_options=GOLDEN_OPTIONS)
    assert manifest_errors(manifest) == []
    assert manifest_errors(json.loads((tmp_path / "manifest.json").read_text())) == []
    assert manifest["tokenizer"]["semantic_hash"] == semantic_hash(tok)
    assert manifest["compatibility"]["required_rows"] == tok.vocab_size
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "golden.json",
        "manifest.json",
        "tokenpact.json",
    ]
    report = check_contract_files(load_checked(tp, tmp_path), tmp_path)
    assert report.ok, report.format()


def test_manifest_records_training(saved: Path, tok: Any) -> None:
    manifest = json.loads((saved / "manifest.json").read_text())
    training = manifest["training"]
    assert training["corpus"]["digest"] == tok.training["corpus"]["digest"]
    assert training["trainer_flags_and_seed"]["vocab_size"] == 320
    assert training["stop_reason"] == tok.training["stop_reason"]


def _edit_last_merge(path: Path) -> None:
    """Replace the last merge by another valid pair, keeping the file self-consistent."""
    data = json.loads(path.read_text(encoding="utf-8"))
    model = data["model"]
    taken = set(model["vocab"])
    left, right = next(
        (a, b) for a in range(97, 123) for b in range(97, 123) if bytes([a, b]).hex() not in taken
    )
    model["merges"][-1] = [left, right]
    model["vocab"][255 + len(model["merges"])] = bytes([left, right]).hex()
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def test_editing_one_merge_makes_load_fail(tp: ModuleType, saved: Path) -> None:
    _edit_last_merge(saved / "tokenpact.json")
    with pytest.raises(ContractError, match="manifest.semantic_hash") as info:
        load_checked(tp, saved)
    assert "merge ranks" in str(info.value) and "verify=False" in str(info.value)
    # Opting out still loads the edited tokenizer.
    assert tp.Tokenizer.load(saved, **_no_verify(tp)) is not None


def _no_verify(tp: ModuleType) -> dict[str, Any]:
    import inspect

    return {"verify": False} if "verify" in inspect.signature(tp.Tokenizer.load).parameters else {}


def test_reformatted_file_keeps_semantics_but_is_release_drift(tp: ModuleType, saved: Path) -> None:
    path = saved / "tokenpact.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=4, sort_keys=True))
    tok = tp.Tokenizer.load(saved, **_no_verify(tp))
    report = inspect_contract_files(tok, saved)
    assert report.failed_names == {"manifest.files"}
    with pytest.raises(ContractError, match="release-file drift"):
        check_contract_files(tok, saved)


def test_tampered_golden_set_fails(tp: ModuleType, saved: Path, tok: Any) -> None:
    path = saved / "golden.json"
    golden = json.loads(path.read_text())
    case = next(c for c in golden["cases"] if c["name"] == "ascii_sentence")
    case["ids"][0] += 1
    path.write_text(json.dumps(golden))
    report = inspect_contract_files(tok, saved)
    assert {"manifest.golden_hash", "golden.ascii_sentence"} == report.failed_names
    assert inspect_contract_files(tok, saved, verify_golden=False).failed_names == {
        "manifest.golden_hash"
    }


def test_missing_or_damaged_contract_files_are_artifact_errors(saved: Path, tok: Any) -> None:
    (saved / "golden.json").unlink()
    with pytest.raises(ArtifactError, match="golden.json is missing"):
        check_contract_files(tok, saved)
    (saved / "manifest.json").write_text('{"schema": 1.5}')
    with pytest.raises(ArtifactError, match="cannot read manifest.json"):
        check_contract_files(tok, saved)
    (saved / "manifest.json").unlink()
    with pytest.raises(ArtifactError, match="no manifest.json"):
        check_contract_files(tok, saved)


def test_release_files_are_committed_with_the_contract_files(tok: Any, tmp_path: Path) -> None:
    source = tmp_path / "src"
    tok.save(source)
    data = (source / "tokenpact.json").read_bytes()
    target = tmp_path / "dst"
    write_contract_files(
        tok, target, release_files={"tokenpact.json": data}, golden_options=GOLDEN_OPTIONS
    )
    assert (target / "tokenpact.json").read_bytes() == data
    assert check_contract_files(tok, target).ok
    with pytest.raises(ArtifactError, match="plain name"):
        write_contract_files(tok, target, release_files={"sub/tokenpact.json": data})
    with pytest.raises(ArtifactError, match="written by the contract layer"):
        write_contract_files(tok, target, release_files={"manifest.json": data})
    with pytest.raises(ArtifactError, match="save the tokenizer first"):
        write_contract_files(tok, tmp_path / "empty")


# ---------------------------------------------------------------- crash safety


@pytest.fixture()
def two_tokenizers(tp: ModuleType, tmp_path: Path) -> tuple[Path, Any, Path, Any]:
    """Artifact A saved in ``live``; tokenizer B saved separately (the save that crashes)."""
    tok_a = tp.train_bpe(CORPUS, vocab_size=300)
    tok_b = tp.train_bpe(CORPUS[:3], vocab_size=290, min_frequency=1)
    live, other = tmp_path / "live", tmp_path / "b"
    for tok, directory in ((tok_a, live), (tok_b, other)):
        tok.save(directory)
        write_contract_files(tok, directory, golden_options=GOLDEN_OPTIONS)
    return live, tok_a, other, tok_b


def _save_b(live: Path, tok_b: Any, other: Path) -> None:
    data = (other / "tokenpact.json").read_bytes()
    write_contract_files(
        tok_b, live, release_files={"tokenpact.json": data}, golden_options=GOLDEN_OPTIONS
    )


def _failing_replace(monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
    original = os.replace
    calls = {"n": 0}

    def replace(src: Any, dst: Any) -> None:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise OSError("simulated crash in os.replace")
        original(src, dst)

    monkeypatch.setattr(os, "replace", replace)


def test_failure_before_the_commit_point_keeps_the_previous_artifact(
    tp: ModuleType, two_tokenizers: tuple[Path, Any, Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    live, tok_a, other, tok_b = two_tokenizers
    before = {p.name: p.read_bytes() for p in live.iterdir()}
    _failing_replace(monkeypatch, fail_at=2)  # while staging the second file
    with pytest.raises(OSError, match="simulated"):
        _save_b(live, tok_b, other)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in live.iterdir()} == before  # nothing left behind
    assert semantic_hash(load_checked(tp, live)) == semantic_hash(tok_a)


def test_failure_after_the_commit_point_is_finished_by_recovery(
    tp: ModuleType, two_tokenizers: tuple[Path, Any, Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    live, _, other, tok_b = two_tokenizers
    # Calls 1-3 stage the files, 4 writes the commit record, 5 moves the first file.
    _failing_replace(monkeypatch, fail_at=6)
    with pytest.raises(OSError, match="simulated"):
        _save_b(live, tok_b, other)
    monkeypatch.undo()
    assert (live / JOURNAL_FILE).exists()
    pending = inspect_contract_files(tok_b, live)
    assert "interrupted save" in pending.failures[0].message
    assert semantic_hash(load_checked(tp, live)) == semantic_hash(tok_b)
    assert not (live / JOURNAL_FILE).exists()


_KILL_SCRIPT = """
import os, sys, time
from pathlib import Path
import tokenpact as tp
from tokenpact.contract import artifact

phase, live, other, ready = sys.argv[1:5]
tok = tp.Tokenizer.load(other)
data = (Path(other) / "tokenpact.json").read_bytes()

def hold(fn):
    def wrapper(*args, **kwargs):
        Path(ready).write_text("ready")
        time.sleep(120)
        return fn(*args, **kwargs)
    return wrapper

if phase == "moving":
    original_replace, original_journal = os.replace, artifact._write_journal
    state = {"committed": False, "moves": 0}
    def journal(*args):
        original_journal(*args)
        state["committed"] = True
    def replace(src, dst):
        if state["committed"]:
            state["moves"] += 1
            if state["moves"] == 2:
                hold(lambda: None)()
        original_replace(src, dst)
    artifact._write_journal = journal
    os.replace = replace
else:
    name = {"compute": "generate", "staged": "_write_journal", "committed": "_roll_forward"}[phase]
    setattr(artifact, name, hold(getattr(artifact, name)))
artifact.write_contract_files(
    tok, live, release_files={"tokenpact.json": data},
    golden_options={"long_span_chars": 300, "long_input_chars": 1200},
)
"""


@pytest.mark.parametrize(
    ("phase", "survivor"),
    [("compute", "a"), ("staged", "a"), ("committed", "b"), ("moving", "b")],
)
def test_killed_save_leaves_a_consistent_loadable_artifact(
    tp: ModuleType,
    two_tokenizers: tuple[Path, Any, Path, Any],
    tmp_path: Path,
    phase: str,
    survivor: str,
) -> None:
    live, tok_a, other, tok_b = two_tokenizers
    ready = tmp_path / "ready"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(PYTHON_SRC), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, phase, str(live), str(other), str(ready)], env=env
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, "the saving process exited before the kill point"
            assert time.monotonic() < deadline, "the saving process never reached the kill point"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    expected = tok_a if survivor == "a" else tok_b
    assert semantic_hash(load_checked(tp, live)) == semantic_hash(expected)
    assert not list(live.glob(".*.staged")) and not (live / JOURNAL_FILE).exists()


def test_recovery_removes_leftovers_of_an_uncommitted_save(saved: Path, tok: Any) -> None:
    leftovers = [
        saved / ".manifest.json.staged",
        saved / "..golden.json.staged.k2j4.tmp",
        saved / f".{JOURNAL_FILE}.x9z.tmp",
    ]
    for path in leftovers:
        path.write_bytes(b"partial")
    assert recover_interrupted_save(saved) is False
    assert not any(p.exists() for p in leftovers)
    assert check_contract_files(tok, saved).ok
    assert recover_interrupted_save(saved / "missing") is False
