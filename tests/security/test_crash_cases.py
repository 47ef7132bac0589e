"""Issue 13 section 1: crafted files that used to kill the process now fail with a typed
error before anything large is allocated. Each case runs in a child interpreter under a
memory limit, so a regression shows up as a failed test, not a dead test run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .hostile import added_token, byte_level_bpe, run_isolated, wordpiece, write_json

CHILD = """
import json, sys
import tokenpact as tp
from tokenpact.errors import TokenpactError
try:
    tok = tp.Tokenizer.load(sys.argv[1] if len(sys.argv) > 1 else {path!r}, verify={verify})
    tok.encode("hello <x> world", allowed_special="all")
    print("LOADED")
except TokenpactError as exc:
    print("TYPED", type(exc).__name__, str(exc)[:300])
"""


def _load_in_child(path: Path, *, verify: bool = True) -> str:
    proc = run_isolated(CHILD.format(path=str(path), verify=verify))
    assert proc.returncode == 0, f"child died ({proc.returncode}): {proc.stderr[-2000:]}"
    return proc.stdout


def test_vocabulary_id_of_four_billion_is_refused_before_allocation(tmp_path: Path) -> None:
    data = byte_level_bpe()
    data["model"]["vocab"]["hello"] = 4_000_000_000
    out = _load_in_child(write_json(tmp_path / "tokenizer.json", data))
    assert out.startswith("TYPED ArtifactError") and "4000000000" in out


def test_added_token_id_of_four_billion_gets_tokenizers_id(tmp_path: Path) -> None:
    # tokenizers ignores the written ID and gives the token the next free one; so do we,
    # and nothing is ever sized by the written ID.
    data = byte_level_bpe()
    data["added_tokens"] = [{"id": 4_000_000_000, "content": "<x>", "special": True}]
    out = _load_in_child(write_json(tmp_path / "tokenizer.json", data))
    assert out.startswith("LOADED")


def test_added_token_id_beyond_uint32_is_typed(tmp_path: Path) -> None:
    data = byte_level_bpe()
    data["added_tokens"] = [{"id": 2**40, "content": "<x>", "special": True}]
    out = _load_in_child(write_json(tmp_path / "tokenizer.json", data))
    assert out.startswith("TYPED ArtifactError") and "added_tokens[0].id" in out


def test_special_token_id_of_two_to_the_31_in_tokenpact_json(tmp_path: Path) -> None:
    import tokenpact as tp

    tok = tp.Tokenizer.from_merges([(104, 101)], special_tokens=["<|bos|>"])
    tok.save(tmp_path / "art")
    path = tmp_path / "art" / "tokenpact.json"
    doc = json.loads(path.read_text())
    doc["special_tokens"][0]["id"] = 2**31
    path.write_text(json.dumps(doc))
    out = _load_in_child(tmp_path / "art", verify=False)
    assert out.startswith("TYPED ArtifactError") and "special_tokens" in out


def test_wordpiece_id_of_1e8_is_refused_quickly(tmp_path: Path) -> None:
    data = wordpiece()
    data["model"]["vocab"]["far"] = 100_000_000
    out = _load_in_child(write_json(tmp_path / "tokenizer.json", data))
    assert out.startswith("TYPED ArtifactError") and "100000000" in out


def test_small_gaps_are_tolerated(tmp_path: Path) -> None:
    # Dense up to a bounded number of holes: cl100k_base leaves IDs 100256 and
    # 100261..100275 unused, and saved artifacts may reserve a block before their specials.
    import tokenpact as tp

    tok = tp.Tokenizer.from_merges([(104, 101)], special_tokens=["<|bos|>"])
    tok.save(tmp_path / "art")
    path = tmp_path / "art" / "tokenpact.json"
    doc = json.loads(path.read_text())
    doc["special_tokens"][0]["id"] = 257 + 60_000
    path.write_text(json.dumps(doc))
    out = _load_in_child(tmp_path / "art", verify=False)
    assert out.startswith("LOADED")


def test_written_added_token_gap_loads_with_tokenizers_ids(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    import tokenpact as tp
    from tokenpact.errors import AddedTokenIdWarning

    data = wordpiece()
    data["added_tokens"].append(added_token(500, "[MASK]"))
    path = write_json(tmp_path / "tokenizer.json", data)
    with pytest.warns(AddedTokenIdWarning, match="gets 7"):
        tok = tp.Tokenizer.load(path)
    peer = tokenizers.Tokenizer.from_file(str(path))
    text = "un [MASK] wanted"
    expected = peer.encode(text, add_special_tokens=False).ids
    assert tok.encode(text, allowed_special="all") == expected
    assert tok.special_tokens["[MASK]"] == peer.token_to_id("[MASK]") == 7


@pytest.mark.parametrize("threads", [0, -1, 1.5, "4", True])
def test_nonsense_thread_counts_are_config_errors(threads: object) -> None:
    import tokenpact as tp
    from tokenpact.errors import ConfigError

    tok = tp.Tokenizer.from_merges([(104, 101)])
    with pytest.raises(ConfigError, match="threads"):
        tok.encode_batch(["hello"], threads=threads)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="threads"):
        tok.encode_batch_flat(["hello"], threads=threads)  # type: ignore[arg-type]


def test_a_million_threads_is_capped_at_the_pool_size() -> None:
    proc = run_isolated(
        """
        import threading
        import tokenpact as tp
        from tokenpact import _native
        tok = tp.Tokenizer.from_merges([(104, 101)])
        texts = ["hello world"] * 2000
        assert tok.encode_batch(texts, threads=10**6) == tok.encode_batch(texts)
        ids, offsets = tok.encode_batch_flat(texts, threads=10**6)
        print("OK", _native.max_threads())
        """,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("OK")
