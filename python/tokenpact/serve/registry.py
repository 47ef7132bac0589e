"""The tokenizers a playground may load: named on the command line, nothing else.

The API refers to tokenizers by name only. A name is looked up in a table built at
start-up from ``--tokenizer NAME=PATH`` and the entries of each ``--dir``; a name is
never joined onto a path, so ``../x`` or an absolute path in a request cannot reach
the file system. Entries of a ``--dir`` that resolve outside it (symlinks) are skipped,
and nothing inside such an entry is read through a link that leads out of the entry (a
``chat_template.jinja`` linking to ``/etc/passwd``): the entry is refused instead.
Tokenizers load on first use and stay cached; loading only reads files.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from ..chat import ChatTemplate
    from ..core import Tokenizer

# Letters, digits, '.', '_', '-'; no separators, no leading dot (so no '..').
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Files inside a tokenizer directory that hold its chat template.
TEMPLATE_FILES = ("chat_template.jinja", "tokenizer_config.json")
# What Tokenizer.load reads: a directory holding one of these, or such a file itself.
TOKENIZER_FILES = ("tokenpact.json", "tokenizer.json")
TOKENIZER_SUFFIXES = (".json", ".tiktoken", ".model")


class UnknownTokenizerName(InvalidInputError):
    """A request named a tokenizer that the server was not started with."""


def check_name(name: object) -> str:
    """``name`` if it is a well-formed tokenizer name, else :class:`InvalidInputError`."""
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None or ".." in name:
        raise InvalidInputError(
            f"invalid tokenizer name {str(name)[:80]!r}: names are letters, digits, '.', '_'"
            " and '-' (no path separators); GET /api/tokenizers lists them"
        )
    return name


# Files and directories walked to check an entry for links that lead out of it.
MAX_ENTRY_FILES = 10_000


class EscapingLinkError(ConfigError):
    """A served directory holds a link whose target is outside it."""


@dataclass(frozen=True)
class Entry:
    name: str
    path: Path
    # An entry found in a --dir: no file is read through a link leading out of it.
    confined: bool = False

    @property
    def directory(self) -> Path:
        return self.path if self.path.is_dir() else self.path.parent

    def check_confined(self, *names: str) -> None:
        """Refuse an entry with a link leading outside it: ``names`` inside the entry,
        or (none given) everything in it."""
        if not self.confined or not self.path.is_dir():
            return
        root = os.path.realpath(self.path)
        paths = [self.path / n for n in names] if names else _walk(self.path)
        for path in paths:
            real = os.path.realpath(path)
            if real != root and not real.startswith(root + os.sep):
                raise EscapingLinkError(
                    f"tokenizer {self.name!r}: {path.relative_to(self.path)} links outside "
                    "its directory; the playground does not read files outside the entries "
                    "it serves (copy the file in, or serve it with --tokenizer NAME=PATH)"
                )

    @property
    def has_chat_template(self) -> bool:
        # A bare file (a .tiktoken, a .model) carries no template; only directories do,
        # in chat_template.jinja or as the "chat_template" of tokenizer_config.json (a
        # config without one offers no Chat tab).
        if not self.path.is_dir():
            return False
        try:
            self.check_confined(*TEMPLATE_FILES)
        except EscapingLinkError:
            return False
        if (self.path / "chat_template.jinja").is_file():
            return True
        return _config_has_template(self.path / "tokenizer_config.json")


def _walk(root: Path) -> list[Path]:
    """Every path under ``root`` (links not followed), at most MAX_ENTRY_FILES."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        found.extend(Path(folder) / n for n in (*dirs, *files))
        if len(found) > MAX_ENTRY_FILES:
            raise ConfigError(
                f"{root} holds more than {MAX_ENTRY_FILES} files; serve the tokenizer "
                "directory itself (--tokenizer NAME=PATH)"
            )
    return found


def _config_has_template(config: Path) -> bool:
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and bool(data.get("chat_template"))


def _is_tokenizer(path: Path) -> bool:
    if path.is_dir():
        return any((path / f).is_file() for f in TOKENIZER_FILES)
    if not path.is_file() or path.suffix not in TOKENIZER_SUFFIXES:
        return False
    # Of JSON files only tokenizers, not the configs and manifests that sit beside them.
    return path.suffix != ".json" or path.name.endswith(TOKENIZER_FILES)


class TokenizerRegistry:
    """Name -> path table plus a cache of loaded tokenizers and chat templates."""

    def __init__(
        self, entries: Iterable[tuple[str, str | Path]] = (), *, dirs: Iterable[str | Path] = ()
    ):
        self._entries: dict[str, Entry] = {}
        for name, path in entries:
            self._add(check_name(name), Path(path).resolve())
        for directory in dirs:
            self._scan(Path(directory).resolve())
        self._lock = threading.Lock()
        self._tokenizers: dict[str, Tokenizer] = {}
        self._templates: dict[str, ChatTemplate] = {}

    def _add(self, name: str, path: Path) -> None:
        if name in self._entries:
            raise ConfigError(f"tokenizer name {name!r} is given twice; rename one (NAME=PATH)")
        if not path.exists():
            raise ConfigError(f"tokenizer {name!r}: {path} does not exist")
        self._entries[name] = Entry(name, path)

    def _scan(self, directory: Path) -> None:
        if not directory.is_dir():
            raise ConfigError(f"--dir {directory} is not a directory")
        for child in sorted(directory.iterdir()):
            resolved = child.resolve()
            if directory not in resolved.parents or not _is_tokenizer(resolved):
                continue
            name = child.name if child.is_dir() else child.stem
            if NAME_RE.fullmatch(name) and ".." not in name and name not in self._entries:
                self._entries[name] = Entry(name, resolved, confined=True)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: object) -> Entry:
        checked = check_name(name)
        try:
            return self._entries[checked]
        except KeyError:
            raise UnknownTokenizerName(
                f"unknown tokenizer {checked!r}; this server has: {', '.join(self.names)}"
            ) from None

    def tokenizer(self, name: object) -> Tokenizer:
        entry = self.entry(name)
        with self._lock:
            tok = self._tokenizers.get(entry.name)
            if tok is None:
                from ..core import Tokenizer

                entry.check_confined()
                tok = self._tokenizers[entry.name] = Tokenizer.load(entry.path)
            return tok

    def chat_template(self, name: object) -> ChatTemplate | None:
        """The tokenizer's chat template, or None when its directory has none."""
        entry = self.entry(name)
        if not entry.has_chat_template:
            return None
        tok = self.tokenizer(entry.name)
        with self._lock:
            template = self._templates.get(entry.name)
            if template is None:
                from ..chat import ChatTemplate

                entry.check_confined()
                template = self._templates[entry.name] = ChatTemplate.from_hf(entry.path, tok)
            return template

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "name": e.name,
                "kind": "directory" if e.path.is_dir() else e.path.suffix.lstrip("."),
                "chat_template": e.has_chat_template,
                "loaded": e.name in self._tokenizers,
            }
            for e in (self._entries[n] for n in self.names)
        ]
