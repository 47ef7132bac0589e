"""Read a safetensors header under the ``safetensors`` library's own rules.

A safetensors file is an 8-byte little-endian header length ``n``, ``n`` bytes of JSON
mapping tensor names to ``{dtype, shape, data_offsets}`` (offsets relative to the end of
the header), and the raw tensor bytes. We parse the header ourselves (no tensor library
is needed to read row counts or to copy byte ranges), so we must refuse exactly what the
library refuses, or a checkpoint the library cannot load would pass through our tools
and come out as a clean file (an embedding read from overlapping bytes, for instance).

The library's rules (``safetensors`` 0.8, ``SafeTensors::read_metadata``/``validate``):

- the file holds at least the 8 length bytes; ``n`` is at most 100,000,000 and
  ``8 + n`` fits the file;
- the header is UTF-8 JSON (no lone surrogate escapes, no NaN/Infinity, nesting below
  the parser's recursion limit): an object whose optional ``__metadata__`` is ``null`` or
  an object of strings, and whose other entries are objects with a known ``dtype``, a
  ``shape`` of unsigned integers and ``data_offsets`` of exactly two unsigned integers
  (other fields are ignored);
- sorted by offsets, the byte ranges tile the data section exactly: the first starts at
  0, each starts where the previous ended (no overlap, no gap, no shared storage), and
  the last ends at the end of the file (no trailing bytes);
- each range holds exactly ``prod(shape) * bits(dtype) / 8`` bytes, computed without
  overflowing 64 bits, on a byte boundary.

One rule is stricter than the library: a tensor name written twice in the header is
refused (the library silently keeps the last entry, so the file means two things).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from .canonical import DuplicateKeyError, unique_object

# safetensors' MAX_HEADER_SIZE.
MAX_HEADER_BYTES = 100_000_000
# serde_json's recursion limit: deeper headers are refused by the library. A valid
# header nests 3 levels (header, tensor entry, shape list).
MAX_DEPTH = 127
_U64 = 1 << 64
# Bits per element of every dtype the library knows (its ``Dtype`` enum).
DTYPE_BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64,
    "F64": 64, "I64": 64, "U64": 64,
}  # fmt: skip
# Whole bytes per element, for the dtypes that have one.
DTYPE_BYTES = {name: bits // 8 for name, bits in DTYPE_BITS.items() if bits % 8 == 0}


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor's bytes live: file and absolute byte range."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path
    begin: int
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    """A validated header: the tensors by name and the ``__metadata__`` strings."""

    tensors: dict[str, TensorInfo]
    metadata: dict[str, str] | None


def _bad(path: Path, problem: str) -> ArtifactError:
    return ArtifactError(f"{path} is not a valid safetensors file: {problem}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_values(path: Path, header: dict[str, Any]) -> None:
    """Every string encodes as UTF-8 (no lone surrogate escape) and nesting stays below
    MAX_DEPTH: what serde_json refuses. Iterative, so depth cannot exhaust the stack."""
    stack: list[tuple[Any, int]] = [(header, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _bad(path, f"the header nests deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            _utf8(path, value)
        elif isinstance(value, dict):
            for key, item in value.items():
                _utf8(path, key)
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def _utf8(path: Path, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _bad(path, "the header holds a lone surrogate escape") from None


def _parse(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(
            raw.decode("utf-8"), object_pairs_hook=unique_object, parse_constant=_no_constant
        )
    except DuplicateKeyError as dup:
        raise _bad(path, f"the header names {dup.key!r} twice") from None
    except RecursionError:
        raise _bad(path, f"the header nests deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(path, f"header is not UTF-8 JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _bad(path, "header is not a JSON object")
    _check_values(path, header)
    return header


def _uint(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _U64


def _metadata(path: Path, value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _bad(path, "__metadata__ must be an object of strings")
    return dict(value)


def _entry(path: Path, name: str, entry: Any) -> tuple[str, tuple[int, ...], int, int]:
    if not isinstance(entry, dict):
        raise _bad(path, f"entry {name!r} is not an object")
    for key in ("dtype", "shape", "data_offsets"):
        if key not in entry:
            raise _bad(path, f"tensor {name!r} has no {key}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise _bad(path, f"tensor {name!r} has unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_uint(d) for d in shape):
        raise _bad(path, f"tensor {name!r} has shape {shape!r}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_uint(o) for o in offsets):
        raise _bad(path, f"tensor {name!r} has data_offsets {offsets!r}")
    return dtype, tuple(shape), offsets[0], offsets[1]


def _byte_length(path: Path, name: str, dtype: str, shape: tuple[int, ...]) -> int:
    """``prod(shape) * bits / 8`` with the library's overflow and byte-boundary checks."""
    count = 1
    for dim in shape:
        count *= dim
        if count >= _U64:
            raise _bad(path, f"tensor {name!r} has a shape whose size overflows 64 bits")
    bits = count * DTYPE_BITS[dtype]
    if bits >= _U64:
        raise _bad(path, f"tensor {name!r} has a shape whose size overflows 64 bits")
    if bits % 8:
        raise _bad(path, f"tensor {name!r} ({dtype} {list(shape)}) does not end on a byte")
    return bits // 8


def read_safetensors(path: str | os.PathLike[str]) -> SafetensorsHeader:
    """Validate the header of a safetensors file (see the module docstring for the rules)
    and return its tensors and metadata, without reading tensor bytes."""
    file = Path(path)
    try:
        with open(file, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8)
            if len(head) < 8:
                raise _bad(file, "shorter than the 8-byte header length")
            length = int.from_bytes(head, "little")
            if length > MAX_HEADER_BYTES or 8 + length > size:
                raise _bad(file, f"header length {length} does not fit the file ({size} bytes)")
            raw = handle.read(length)
    except OSError as exc:
        raise ArtifactError(f"cannot read {file}: {exc.strerror or exc}") from None
    header = _parse(file, raw)
    metadata = _metadata(file, header.pop("__metadata__", None))
    base = 8 + length
    entries = [(name, *_entry(file, name, entry)) for name, entry in header.items()]
    # The library's tiling check: sorted by (begin, end), each range starts where the
    # previous one ended, and the last ends at the end of the file.
    entries.sort(key=lambda e: (e[3], e[4], e[0]))
    position = 0
    tensors: dict[str, TensorInfo] = {}
    for name, dtype, shape, begin, end in entries:
        if begin != position or end < begin:
            raise _bad(
                file,
                f"tensor {name!r} has data_offsets [{begin}, {end}]; byte ranges must follow "
                f"each other without gap or overlap (expected to start at {position})",
            )
        if end - begin != _byte_length(file, name, dtype, shape):
            raise _bad(file, f"tensor {name!r} ({dtype} {list(shape)}) has the wrong byte length")
        position = end
        tensors[name] = TensorInfo(name, dtype, shape, file, base + begin, base + end)
    if base + position != size:
        raise _bad(
            file,
            f"the tensors cover {position} data bytes but the file holds {size - base} "
            "(trailing bytes, or a truncated file)",
        )
    return SafetensorsHeader(tensors, metadata)


def read_safetensors_header(path: str | os.PathLike[str]) -> dict[str, TensorInfo]:
    """Return ``{name: TensorInfo}`` from a safetensors file without loading tensors."""
    return read_safetensors(path).tensors


def read_shard_index(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``weight_map`` (tensor name -> shard file name) of a sharded checkpoint's
    ``*.safetensors.index.json``. Shard names must be plain file names in the index's own
    directory: an index cannot point a reader at a file elsewhere."""
    file = Path(path)
    try:
        doc = json.loads(
            file.read_text(encoding="utf-8"),
            object_pairs_hook=unique_object,
            parse_constant=_no_constant,
        )
    except DuplicateKeyError as dup:
        raise ArtifactError(
            f"{file} is not a safetensors index: it names {dup.key!r} twice"
        ) from None
    except (OSError, ValueError, RecursionError) as exc:
        raise ArtifactError(f"{file} is not a safetensors index ({type(exc).__name__})") from None
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(shard, str) for shard in weight_map.values()
    ):
        raise ArtifactError(f"{file} is not a safetensors index: no weight_map of file names")
    for shard in set(weight_map.values()):
        if shard in ("", ".", "..") or "/" in shard or "\\" in shard or "\0" in shard:
            raise ArtifactError(
                f"{file} names shard {shard!r}; shards must be files beside the index"
            )
    return dict(weight_map)


def read_sharded(path: str | os.PathLike[str]) -> dict[str, TensorInfo]:
    """Every tensor of the shards a ``*.safetensors.index.json`` names, checked against
    the index: each tensor is in the shard the index says, and in only one shard."""
    index = Path(path)
    weight_map = read_shard_index(index)
    tensors: dict[str, TensorInfo] = {}
    for shard in sorted(set(weight_map.values())):
        for name, info in read_safetensors_header(index.parent / shard).items():
            if name in tensors:
                raise ArtifactError(f"tensor {name!r} is stored in two shards; keep one copy")
            tensors[name] = info
    for name, shard in weight_map.items():
        if name not in tensors or tensors[name].file.name != shard:
            raise ArtifactError(f"{index} puts tensor {name!r} in {shard}, which does not hold it")
    return tensors
