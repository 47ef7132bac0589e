"""Hash stability and sensitivity (hypothesis).

Random key order and whitespace never change a hash; any single semantic edit of a
tokenizer config always does.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from tokenpact.contract.canonical import MAX_SAFE_INTEGER, canonical_bytes, loads, reference_text
from tokenpact.contract.hashing import framed_hash, release_hash, semantic_hash

# Text without lone surrogates (the profile rejects them).
TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
SAFE_INT = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
JSON = st.recursive(
    st.none() | st.booleans() | SAFE_INT | TEXT,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(TEXT, children, max_size=5),
    max_leaves=30,
)


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = [(k, _shuffled(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@given(
    JSON, st.randoms(use_true_random=False), st.sampled_from([None, 0, 1, 4, "\t"]), st.booleans()
)
def test_key_order_and_whitespace_never_change_a_hash(
    value: Any, rng: random.Random, indent: Any, ascii_only: bool
) -> None:
    text = json.dumps(_shuffled(value, rng), indent=indent, ensure_ascii=ascii_only)
    assert framed_hash("corpus-v1", loads(text)) == framed_hash("corpus-v1", value)


@given(JSON)
def test_fast_serializer_equals_the_reference_writer(value: Any) -> None:
    assert canonical_bytes(value) == reference_text(value).encode("utf-8")
    assert loads(canonical_bytes(value)) == value


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """A structurally valid byte-BPE config with distinct pieces and special tokens."""
    pieces = draw(st.lists(st.binary(min_size=1, max_size=4), min_size=3, max_size=12, unique=True))
    n = len(pieces)
    merges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6))
    roles = draw(
        st.lists(st.sampled_from(["bos", "eos", "pad", "unk", "eot"]), unique=True, max_size=4)
    )
    specials = [
        {"id": n + i, "content": f"<|{role}|>", "role": role} for i, role in enumerate(roles)
    ]
    return {
        "format": "tokenpact.tokenizer",
        "format_version": 1,
        "normalizer": draw(st.none() | st.just({"type": "nfc", "lowercase": False})),
        "pre_tokenizer": {
            "type": "regex_split",
            "name": None,
            "pattern": draw(st.sampled_from([r"\S+|\s+", r"\w+|\W"])),
        },
        "model": {
            "type": "byte_bpe",
            "semantics": "merge_ranks",
            "merges": [list(m) for m in merges],
            "vocab": [p.hex() for p in pieces],
        },
        "special_tokens": specials,
        "post_processor": draw(st.none() | st.just({"type": "prepend_bos", "token": "<|bos|>"})),
        "decoder": {"type": "byte_level"},
    }


def _edits(config: dict[str, Any]) -> list[str]:
    edits = ["swap_ids", "pattern", "decoder", "normalizer_flag", "add_merge"]
    if len(config["model"]["merges"]) >= 2 and len(set(map(tuple, config["model"]["merges"]))) >= 2:
        edits.append("merge_rank")
    if config["special_tokens"]:
        edits += ["role", "spelling", "special_id"]
    return edits


def _apply(config: dict[str, Any], edit: str, rng: random.Random) -> None:
    model = config["model"]
    if edit == "swap_ids":
        i, j = rng.sample(range(len(model["vocab"])), 2)
        model["vocab"][i], model["vocab"][j] = model["vocab"][j], model["vocab"][i]
    elif edit == "pattern":
        config["pre_tokenizer"]["pattern"] += "|x"
    elif edit == "decoder":
        config["decoder"] = None
    elif edit == "normalizer_flag":
        current = config["normalizer"]
        config["normalizer"] = (
            {"type": "nfc", "lowercase": True} if current else {"type": "nfc", "lowercase": False}
        )
    elif edit == "add_merge":
        model["merges"].append([0, 1])
    elif edit == "merge_rank":
        merges = model["merges"]
        i, j = next(
            (i, j)
            for i in range(len(merges))
            for j in range(i + 1, len(merges))
            if merges[i] != merges[j]
        )
        merges[i], merges[j] = merges[j], merges[i]
    elif edit == "role":
        token = rng.choice(config["special_tokens"])
        token["role"] = "reserved"
    elif edit == "spelling":
        rng.choice(config["special_tokens"])["content"] += "!"
    elif edit == "special_id":
        token = rng.choice(config["special_tokens"])
        token["id"] += 1000


@given(configs(), st.randoms(use_true_random=False), st.data())
def test_any_single_semantic_edit_changes_the_semantic_hash(
    config: dict[str, Any], rng: random.Random, data: st.DataObject
) -> None:
    edit = data.draw(st.sampled_from(_edits(config)))
    changed = copy.deepcopy(config)
    _apply(changed, edit, rng)
    assume(changed != config)
    assert semantic_hash(changed) != semantic_hash(config), edit


@given(configs(), st.randoms(use_true_random=False))
def test_reformatting_a_config_never_changes_the_semantic_hash(
    config: dict[str, Any], rng: random.Random
) -> None:
    reformatted = loads(json.dumps(_shuffled(config, rng), indent=rng.choice([None, 2])))
    reformatted["special_tokens"].reverse()  # a set keyed by ID: order is not meaning
    reformatted["training"] = {"note": "history is not behaviour"}
    assert semantic_hash(reformatted) == semantic_hash(config)


DIGEST = st.text("0123456789abcdef", min_size=64, max_size=64)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,8}(\.json)?", fullmatch=True), DIGEST, min_size=1, max_size=5
    ),
    st.randoms(use_true_random=False),
    st.data(),
)
def test_release_hash_ignores_file_order_and_binds_every_digest(
    files: dict[str, str], rng: random.Random, data: st.DataObject
) -> None:
    semantic = "sha256:" + "1" * 64
    items = list(files.items())
    rng.shuffle(items)
    assert release_hash(semantic, dict(items)) == release_hash(semantic, files)
    path = data.draw(st.sampled_from(sorted(files)))
    changed = data.draw(DIGEST.filter(lambda d: d != files[path]))
    assert release_hash(semantic, {**files, path: changed}) != release_hash(semantic, files)
