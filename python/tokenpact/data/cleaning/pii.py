"""Personal data: e-mail addresses, IP addresses, phone, card and IBAN numbers.

Each match is replaced by a typed placeholder (``placeholder.format(type=...)``, default
``<EMAIL>``, ``<IPV4>``...) and counted per type. ``policy`` decides what a match does to
the document: ``replace`` (default) rewrites it, ``flag`` keeps the text unchanged and
marks the document, ``drop`` removes the document. The patterns trade recall for
precision where text is full of look-alikes:

* ``EMAIL``: ``local@domain.tld`` with a 2+ letter top-level domain;
* ``IPV4``: four dotted octets 0-255 not inside a longer dotted number (so version
  strings such as ``1.2.3.4.5`` are left alone); ``IPV6``: candidates with at least three
  groups, checked by :mod:`ipaddress` (so ``12:30:45`` times and ``0::`` never match);
* ``PHONE``: a ``+``-prefixed international number, or a national number with a
  parenthesized area code or the ``NNN-NNN-NNNN`` form, 7-15 digits in all; ISO dates and
  bare digit runs are not phone numbers;
* ``CREDIT_CARD``: 13-19 digits (spaces or dashes allowed) passing the Luhn check;
* ``IBAN`` (off by default): country code, check digits and up to 30 characters passing
  the ISO 13616 mod-97 check.

Types are applied in a fixed order (e-mail first, so an address's digits are not read
as a phone number), each on the text the previous one produced.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from .step import Outcome, StepConfig, check_choice, check_strings

PII_TYPES = ("EMAIL", "IPV4", "IPV6", "CREDIT_CARD", "IBAN", "PHONE")
DEFAULT_TYPES = ("EMAIL", "IPV4", "IPV6", "CREDIT_CARD", "PHONE")
POLICIES = ("replace", "flag", "drop")

# The local part may hold roff-escaped hyphens (``debian\-l10n\-french@...`` in manual
# pages), which is how addresses appear in real man-page corpora.
_EMAIL = re.compile(
    r"(?<![\w.+\\-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]|\\-)*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}(?![\w-])"
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.\d)")
_IPV6_CANDIDATE = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?!\w)")
_PHONE = re.compile(
    r"(?<![\w+])(?:"
    r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}"
    r"|\(\d{2,4}\)[ .-]?\d{3,4}[ .-]?\d{3,4}"
    r"|\d{3}[-. ]\d{3}[-. ]\d{4}"
    r")(?![\w])"
)


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check that payment card numbers satisfy."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(text: str) -> bool:
    """ISO 13616: move the first four characters to the end, letters to 10..35, mod 97."""
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def _is_ipv6(candidate: str) -> bool:
    colons = candidate.count(":")
    digits_only = not any(c.isalpha() for c in candidate)
    groups = sum(1 for g in candidate.split(":") if g)
    if colons < 2 or groups < 3 or (digits_only and "::" not in candidate and colons < 7):
        # Short all-digit groups without "::" are times and ratios (12:30:45); fewer than
        # three groups ("0::", "::1") are prefixes and loopback, not a person's address.
        return False
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


_CHECKS: dict[str, tuple[re.Pattern[str], Callable[[str], bool]]] = {
    "EMAIL": (_EMAIL, lambda m: True),
    "IPV4": (_IPV4, lambda m: True),
    "IPV6": (_IPV6_CANDIDATE, _is_ipv6),
    "CREDIT_CARD": (_CARD, lambda m: 13 <= len(_digits(m)) <= 19 and luhn_valid(_digits(m))),
    "IBAN": (_IBAN, iban_valid),
    "PHONE": (_PHONE, lambda m: 7 <= len(_digits(m)) <= 15),
}


@dataclass(frozen=True)
class PiiConfig(StepConfig):
    """Which personal-data ``types`` to find, the ``policy`` for a document with matches
    and the ``placeholder`` format (``{type}`` is replaced by the type name)."""

    NAME = "pii"
    LIBRARY = None
    STEP_VERSION = 1

    types: tuple[str, ...] = DEFAULT_TYPES
    policy: str = "replace"
    placeholder: str = "<{type}>"

    def __post_init__(self) -> None:
        check_strings(self.types, "types")
        unknown = sorted(set(self.types) - set(PII_TYPES))
        if unknown:
            raise ConfigError(f"unknown personal-data types {unknown}; use some of {PII_TYPES}")
        check_choice(self.policy, POLICIES, "pii policy")
        if not isinstance(self.placeholder, str) or "{type}" not in self.placeholder:
            raise ConfigError(
                f"placeholder must contain '{{type}}' (e.g. '<{{type}}>'), got {self.placeholder!r}"
            )

    def prepare(self) -> PiiWorker:
        return PiiWorker(self)


class PiiWorker:
    def __init__(self, config: PiiConfig) -> None:
        self.c = config
        self.order = [t for t in PII_TYPES if t in config.types]

    def scrub(self, text: str) -> tuple[str, Counter[str]]:
        """``text`` with every match replaced, and the number of matches per type."""
        counts: Counter[str] = Counter()
        for kind in self.order:
            pattern, valid = _CHECKS[kind]
            replacement = self.c.placeholder.format(type=kind)

            def substitute(
                m: re.Match[str],
                kind: str = kind,
                repl: str = replacement,
                valid: Callable[[str], bool] = valid,
            ) -> str:
                if not valid(m.group(0)):
                    return m.group(0)
                counts[kind] += 1
                return repl

            text = pattern.sub(substitute, text)
        return text, counts

    def __call__(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        scrubbed, counts = self.scrub(text)
        if not counts:
            return Outcome(text)
        reasons = tuple(f"pii.{kind}" for kind in sorted(counts))
        annotations = {"pii": dict(sorted(counts.items()))}
        if self.c.policy == "drop":
            return Outcome(None, reasons, annotations, counts)
        if self.c.policy == "flag":
            return Outcome(text, reasons, annotations, counts)
        return Outcome(scrubbed, reasons, annotations, counts)
