"""Text repair with ``ftfy``: mojibake, HTML entities, broken Unicode, as an explicit step.

ftfy (Speer 2019) undoes text decoded with the wrong codec (``Ã©`` back to ``é``),
HTML entities outside markup, C1 control characters, terminal escapes and similar
damage. It changes text, so it only runs when the step is named, and every
``ftfy.TextFixerConfig`` option it runs with is part of this step's configuration hash.
The defaults are ftfy's own, except ``uncurl_quotes`` and ``fix_character_width``, which
are off: they rewrite correct typography and full-width CJK punctuation, which a
tokenizer should see as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from .step import Outcome, StepConfig, check_choice

NORMALIZATIONS = ("NFC", "NFKC", "NFD", "NFKD", "none")


@dataclass(frozen=True)
class RepairConfig(StepConfig):
    """The ``ftfy.TextFixerConfig`` options (same names; ``normalization="none"`` = None)."""

    NAME = "repair"
    LIBRARY = "ftfy"
    STEP_VERSION = 1

    unescape_html: str = "auto"
    remove_terminal_escapes: bool = True
    fix_encoding: bool = True
    restore_byte_a0: bool = True
    replace_lossy_sequences: bool = True
    decode_inconsistent_utf8: bool = True
    fix_c1_controls: bool = True
    fix_latin_ligatures: bool = True
    fix_character_width: bool = False
    uncurl_quotes: bool = False
    fix_line_breaks: bool = True
    fix_surrogates: bool = True
    remove_control_chars: bool = True
    normalization: str = "NFC"

    def __post_init__(self) -> None:
        if self.unescape_html not in ("auto", True, False):
            raise ConfigError(
                f"unescape_html must be 'auto', true or false, got {self.unescape_html!r}"
            )
        check_choice(self.normalization, NORMALIZATIONS, "normalization")
        for name, value in self.to_json().items():
            if name not in ("unescape_html", "normalization") and not isinstance(value, bool):
                raise ConfigError(f"{name} must be true or false, got {value!r}")

    def prepare(self) -> RepairWorker:
        return RepairWorker(self)


class RepairWorker:
    def __init__(self, config: RepairConfig) -> None:
        self.c = config
        self._fixer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"c": self.c, "_fixer": None}

    def fixer(self) -> Any:
        if self._fixer is None:
            try:
                import ftfy
            except ImportError:
                raise ConfigError(
                    "the repair step needs ftfy; pip install 'tokenpact[clean]'"
                ) from None
            options = self.c.to_json()
            if options["normalization"] == "none":
                options["normalization"] = None
            self._fixer = ftfy.TextFixerConfig(explain=False, **options)
        return self._fixer

    def __call__(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        import ftfy

        fixed = ftfy.fix_text(text, config=self.fixer())
        if fixed == text:
            return Outcome(text)
        return Outcome(fixed, ("repair.changed",), {}, {"changed": 1})
