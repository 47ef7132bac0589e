"""``tokenpact migrate`` and ``tokenpact release`` end to end on a tiny checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import tiny_lm
import tokenpact as tp
from tokenpact.cli.main import cli
from tokenpact.contract import DatasetDeclaration

TEXTS = ["the cat sat on the mat", "a dog ran far away"] * 4


def _resealed(bundle: dict) -> dict:
    """A hand-edited bundle, sealed again (as a user re-sealing a wrong bundle would)."""
    from tokenpact.migrate.release import bundle_seal

    return {**bundle, "seal": bundle_seal(bundle)}


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


def _dataset(path: Path, tok: tp.Tokenizer) -> Path:
    ids = tok.encode_batch(TEXTS)
    decl = DatasetDeclaration(
        "sha256:" + "cd" * 32,
        tok.semantic_hash,
        tp.contract.template_hash(None),
        len(ids),
        max(max(x) for x in ids),
    )
    path.write_text(json.dumps(decl.to_json()))
    return path


def test_extend_plan_apply_seal_promote_rollback(tmp_path: Path) -> None:
    old = tp.train_bpe(TEXTS, vocab_size=275)
    old.save(tmp_path / "tok1")
    corpus = tmp_path / "more.txt"
    corpus.write_text("error terror mirror\n" * 20)
    code, out = run(
        "migrate",
        "extend",
        "-t",
        tmp_path / "tok1",
        "--corpus",
        corpus,
        "--add-merges",
        "3",
        "-o",
        tmp_path / "tok2",
    )
    assert code == 0, out
    assert tp.Tokenizer.load(tmp_path / "tok2").vocab_size == old.vocab_size + 3
    tiny_lm.build(tmp_path / "ckpt1", rows=old.vocab_size, tied=False, optimizer=True)
    config = json.loads((tmp_path / "ckpt1" / "config.json").read_text())
    ids = old.special_tokens
    config.update(
        bos_token_id=ids["<|bos|>"],
        pad_token_id=ids["<|pad|>"],
        eos_token_id=[ids["<|eos|>"], ids["<|eot|>"]],
        tokenpact={"tokenizer_semantic_hash": old.semantic_hash},
    )
    (tmp_path / "ckpt1" / "config.json").write_text(json.dumps(config))

    code, out = run(
        "migrate",
        "plan",
        "--old",
        tmp_path / "tok1",
        "--new",
        tmp_path / "tok2",
        "--corpus",
        corpus,
        "--checkpoint",
        tmp_path / "ckpt1",
        "--json",
    )
    assert code == 0, out
    plan = json.loads(out)
    assert plan["transition"] == "append-only" and plan["prefix_proof"]["holds"]
    assert plan["resize"]["added_parameters"] == 3 * 16 * 2 + 3
    code, out = run(
        "migrate",
        "apply",
        "--old",
        tmp_path / "tok1",
        "--new",
        tmp_path / "tok2",
        "--checkpoint",
        tmp_path / "ckpt1",
        "-o",
        tmp_path / "ckpt2",
    )
    assert code == 0, out
    assert tiny_lm.load(tmp_path / "ckpt2")[tiny_lm.HEAD].shape[0] == old.vocab_size + 3

    canary = tmp_path / "canary.jsonl"
    canary.write_text(json.dumps({"slice": "prose", "text": "the error of the cat"}) + "\n")
    new = tp.Tokenizer.load(tmp_path / "tok2")
    for k, tok in ((1, old), (2, new)):
        args = [
            "release",
            "seal",
            "--name",
            f"v{k}",
            "--tokenizer",
            tmp_path / f"tok{k}",
            "--dataset",
            _dataset(tmp_path / f"data{k}.json", tok),
            "--checkpoint",
            tmp_path / f"ckpt{k}",
            "--canary",
            canary,
            "--max-token-ratio",
            "default=1.0",
            "-o",
            tmp_path / f"v{k}.bundle.json",
        ]
        if k == 2:
            args += ["--previous", tmp_path / "v1.bundle.json"]
        code, out = run(*args)
        assert code == 0, out
    pointer = tmp_path / "current.json"
    code, out = run("release", "promote", tmp_path / "v1.bundle.json", "--pointer", pointer)
    assert code == 0, out
    code, out = run("release", "check", tmp_path / "v2.bundle.json", "--pointer", pointer)
    assert code == 0, out
    assert "canary.prose" in out and "transition.prefix_proof" in out
    code, out = run("release", "promote", tmp_path / "v2.bundle.json", "--pointer", pointer)
    assert code == 0, out
    code, out = run("release", "rollback", "--pointer", pointer)
    assert code == 0 and "v1" in out, out
    # A tokenizer released without its migrated checkpoint is refused with exit 1.
    bundle = json.loads((tmp_path / "v2.bundle.json").read_text())
    bundle["checkpoint"]["path"] = "ckpt1"
    (tmp_path / "bad.bundle.json").write_text(json.dumps(_resealed(bundle)))
    code, out = run("release", "promote", tmp_path / "bad.bundle.json", "--pointer", pointer)
    assert code == 1 and "FAIL" in out


def test_apply_refuses_a_non_append_only_change(tmp_path: Path) -> None:
    old = tp.train_bpe(TEXTS, vocab_size=275)
    other = tp.train_bpe(["completely different words here"] * 5, vocab_size=280)
    old.save(tmp_path / "a")
    other.save(tmp_path / "b")
    tiny_lm.build(tmp_path / "ckpt", rows=old.vocab_size)
    code, out = run(
        "migrate",
        "apply",
        "--old",
        tmp_path / "a",
        "--new",
        tmp_path / "b",
        "--checkpoint",
        tmp_path / "ckpt",
        "-o",
        tmp_path / "out",
    )
    assert code == 1 and "append-only" in out
    assert not (tmp_path / "out").exists()


def test_plan_without_a_corpus_says_not_measured(tmp_path: Path) -> None:
    old = tp.train_bpe(TEXTS, vocab_size=275)
    old.save(tmp_path / "tok1")
    tp.migrate.extend_bpe(old, ["error terror mirror"] * 20, add_merges=3).save(tmp_path / "tok2")
    code, out = run("migrate", "plan", "--old", tmp_path / "tok1", "--new", tmp_path / "tok2")
    assert code == 0, out
    assert "not measured" in out and "0 of 0" not in out and "0.00%" not in out
    code, out = run(
        "migrate", "plan", "--old", tmp_path / "tok1", "--new", tmp_path / "tok2", "--json"
    )
    plan = json.loads(out)
    assert plan["corpus"]["measured"] is False and plan["unseen_ids"] == plan["unreachable_ids"]
