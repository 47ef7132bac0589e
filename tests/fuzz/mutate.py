"""A seeded mutator for the fuzz suite: structure-aware for JSON documents, byte- and
line-level for binary and text files. Same seed, same mutants."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

# Values that broke loaders before (issue 13): wrong types, huge and negative IDs,
# non-finite numbers, empty and control strings, deep nesting.
HOSTILE_VALUES: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    1,
    255,
    2**31,
    2**32,
    4_000_000_000,
    100_000_000,
    2**63,
    -(2**63),
    10**30,
    1.5,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    " ",
    "\x00",
    "\ud800",
    "<|endoftext|>",
    "[CLS]",
    "Ġ",
    "a" * 10_000,
    "(?:",
    ".*" * 40,
    "Sequence",
    "BPE",
    "Regex",
    [],
    [[]],
    [None],
    ["a", "b"],
    {},
    {"type": "Sequence"},
    {"type": None},
    {"Regex": "(?"},
    {"String": ""},
)


def _paths(node: Any, prefix: tuple[Any, ...], out: list[tuple[Any, ...]], limit: int) -> None:
    """Paths of (a sample of) the nodes under ``node``; big containers are sampled."""
    out.append(prefix)
    if len(out) >= limit:
        return
    if isinstance(node, dict):
        keys = list(node)
        if len(keys) > 24:
            keys = keys[:8] + keys[-8:] + random.Random(len(keys)).sample(keys, 8)
        for key in keys:
            _paths(node[key], (*prefix, key), out, limit)
    elif isinstance(node, list):
        indices = list(range(len(node)))
        if len(indices) > 24:
            indices = indices[:8] + indices[-8:] + random.Random(len(node)).sample(indices, 8)
        for i in indices:
            _paths(node[i], (*prefix, i), out, limit)


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _nested(depth: int) -> Any:
    # One child per level (a node shared twice per level would serialize to 2**depth).
    value: Any = "x"
    for level in range(depth):
        key = ("normalizers", "pretokenizers", "decoders", "processors")[level % 4]
        value = {"type": "Sequence", key: [value]}
    return value


def mutate_json(doc: Any, rng: random.Random, *, edits: int = 0) -> Any:
    """A copy of ``doc`` with 1-3 structural edits (or ``edits``)."""
    doc = copy.deepcopy(doc)
    paths: list[tuple[Any, ...]] = []
    _paths(doc, (), paths, 4000)
    for _ in range(edits or rng.choice((1, 1, 1, 2, 3))):
        path = rng.choice(paths)
        if not path:
            if rng.random() < 0.2:
                return rng.choice(HOSTILE_VALUES)
            continue
        key = path[-1]
        try:  # an earlier edit may have replaced part of the path
            parent = _get(doc, path[:-1])
            current = parent[key]
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, dict | list):
            continue
        op = rng.randrange(9)
        if op <= 2:
            parent[key] = rng.choice(HOSTILE_VALUES)
        elif op == 3 and isinstance(parent, dict):
            del parent[key]
        elif op == 3 and isinstance(parent, list):
            parent.pop(key)
        elif op == 4 and isinstance(current, int) and not isinstance(current, bool):
            parent[key] = current + rng.choice((-1, 1, 2, 1000, 10**6, 10**9, -(10**9)))
        elif op == 5 and isinstance(parent, list) and parent:
            parent.append(rng.choice(parent))  # a duplicate entry (shared: never edited again)
        elif op == 6 and isinstance(current, str):
            parent[key] = rng.choice(
                (current[::-1], current * 2, current[:-1], current + "\ud800", current.upper())
            )
        elif op == 7:
            parent[key] = _nested(rng.choice((3, 20, 60, 150)))
        elif op == 8 and isinstance(parent, dict):
            parent[rng.choice(("type", "vocab", "merges", "id", "extra", "content"))] = current
        else:
            parent[key] = rng.choice(HOSTILE_VALUES)
    return doc


def dump_json(doc: Any, rng: random.Random) -> bytes:
    """JSON text of a mutant; sometimes with a raw-byte edit on top."""
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)  # NaN/Infinity stay as written
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.02:
        # Deeper than json's recursion limit: built as text, json.dumps cannot write it.
        depth = rng.choice((1_000, 100_000))
        data = b'{"model": ' + b"[" * depth + b"]" * depth + b", " + data[1:]
    if rng.random() < 0.1:
        data = mutate_bytes(data, rng, edits=1)
    return data


def mutate_bytes(data: bytes, rng: random.Random, *, edits: int = 0) -> bytes:
    """Bit flips, byte overwrites, truncation, duplication and insertion."""
    buf = bytearray(data)
    for _ in range(edits or rng.choice((1, 1, 2, 4, 8))):
        if not buf:
            buf.extend(rng.randbytes(4))
            continue
        i = rng.randrange(len(buf))
        op = rng.randrange(7)
        if op == 0:
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[i] = rng.choice((0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        elif op == 2:
            del buf[i:]
        elif op == 3:
            j = min(len(buf), i + rng.randrange(1, 64))
            buf[i:i] = buf[i:j]
        elif op == 4:
            buf[i:i] = rng.randbytes(rng.randrange(1, 16))
        elif op == 5:
            # A varint-sized field set huge (protobuf length prefixes, counts).
            buf[i : i + 5] = bytes((0xFF, 0xFF, 0xFF, 0xFF, 0x0F))
        else:
            j = min(len(buf), i + rng.randrange(1, 64))
            del buf[i:j]
    return bytes(buf)


def mutate_lines(data: bytes, rng: random.Random) -> bytes:
    """Line-level edits of a text file (tiktoken ranks): drop, duplicate, swap, corrupt."""
    lines = data.split(b"\n")
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            lines.pop(i)
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            token = lines[i].split(b" ")[0]
            lines[i] = token + b" " + str(rng.choice((-1, 2**32, 10**9, 10**40))).encode()
        elif op == 4:
            lines[i] = rng.choice((b"", b"!!!! 3", b"QQ==", b"QQ== 1 2", b"\xff\xfe 7"))
        else:
            lines[i] = mutate_bytes(lines[i], rng, edits=1)
    if rng.random() < 0.1:
        return mutate_bytes(b"\n".join(lines), rng)
    return b"\n".join(lines)
