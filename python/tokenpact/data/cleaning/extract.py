"""Main-content extraction: HTML to the text people read, with ``trafilatura``.

trafilatura (Barbaresi 2021) parses the page with lxml, removes navigation, menus,
footers, comment threads and boilerplate, and falls back to readability/jusText on hard
pages. A document counts as HTML when ``input="html"``, or with ``input="auto"`` when its
first non-blank characters open an HTML document (``<!doctype html``, ``<html``,
``<head>``, ``<body>``); anything else passes through unchanged. The document keeps its
``doc_id``; the page's canonical URL and title (from its metadata) are added as ``url``
and ``title`` annotations. trafilatura's own cross-document deduplication is always off:
its cache depends on processing order, which would make engines disagree (deduplicate
with :func:`tokenpact.data.deduplicate` instead).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from .step import Outcome, StepConfig, check_choice

INPUT_KINDS = ("auto", "html", "text")
_HTML_START = re.compile(
    r"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S
)


def looks_like_html(text: str) -> bool:
    return bool(_HTML_START.match(text[:4096]))


@dataclass(frozen=True)
class ExtractConfig(StepConfig):
    """trafilatura options; ``input`` says which documents are HTML (see module doc)."""

    NAME = "extract"
    LIBRARY = "trafilatura"
    STEP_VERSION = 1

    input: str = "auto"
    include_comments: bool = False
    include_tables: bool = True
    favor_precision: bool = False
    favor_recall: bool = False

    def __post_init__(self) -> None:
        check_choice(self.input, INPUT_KINDS, "extract input")
        for name in ("include_comments", "include_tables", "favor_precision", "favor_recall"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.favor_precision and self.favor_recall:
            raise ConfigError("choose favor_precision or favor_recall, not both")

    def prepare(self) -> ExtractWorker:
        return ExtractWorker(self)


class ExtractWorker:
    def __init__(self, config: ExtractConfig) -> None:
        self.c = config

    def __call__(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        c = self.c
        if c.input == "text" or (c.input == "auto" and not looks_like_html(text)):
            return Outcome(text, (), {"format": "text"}, {"passed_through": 1})
        try:
            import trafilatura
        except ImportError:
            raise ConfigError(
                "the extract step needs trafilatura; pip install 'tokenpact[clean]'"
            ) from None
        result = trafilatura.bare_extraction(
            text,
            include_comments=c.include_comments,
            include_tables=c.include_tables,
            favor_precision=c.favor_precision,
            favor_recall=c.favor_recall,
            deduplicate=False,
            with_metadata=True,
        )
        body = getattr(result, "text", None) if result is not None else None
        annotations: dict[str, Any] = {"format": "html"}
        if result is not None:
            for key in ("url", "title"):
                value = getattr(result, key, None)
                if isinstance(value, str) and value:
                    annotations[key] = value
        if not body or not body.strip():
            return Outcome(None, ("extract.no_main_text",), annotations, {"html": 1})
        return Outcome(body, (), annotations, {"html": 1})
