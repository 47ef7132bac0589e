"""What every cleaning step is: a frozen, hashable configuration and a per-document worker.

A step's configuration is a frozen dataclass. Its identity is the canonical JSON of
``{"step", "step_version", "config"}`` hashed under the ``clean-step-config-v1`` domain
(:func:`tokenpact.contract.framed_hash`), so two runs with the same hash made the same
decisions, and any changed threshold changes the hash the corpus manifest records.
Canonical JSON has no floats (their text form is not unique across writers), so a float
threshold enters the hash as its shortest round-trip text (``repr``), e.g. ``"0.3"``.

``prepare()`` turns the configuration into a picklable worker: a callable
``worker(text, meta) -> Outcome`` that is a pure function of its inputs. The local and the
Ray engines call the same worker on the same documents, which is why their output is
identical.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...contract import framed_hash
from ...errors import ConfigError

CONFIG_DOMAIN = "clean-step-config-v1"


@dataclass(frozen=True)
class Outcome:
    """What a step decided about one document.

    ``text`` is the new text, or ``None`` when the document is dropped; ``reasons`` names
    the rules that fired (the drop reasons, or flags on a kept document); ``meta`` holds
    annotations later steps and the output see (language, scripts, URL); ``counts`` adds
    to the step's counters (for example replacements per personal-data type).
    """

    text: str | None
    reasons: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)


Worker = Callable[[str, Mapping[str, Any]], Outcome]


def hashable_json(value: Any) -> Any:
    """``value`` with floats as their ``repr`` text and tuples as lists (canonical JSON)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): hashable_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [hashable_json(v) for v in value]
    return value


def library_version(distribution: str | None) -> str:
    """The installed version of ``distribution``; tokenpact's own for ``None`` (its rules
    change only with a new ``STEP_VERSION``, which the configuration hash covers)."""
    if distribution is None:
        import tokenpact

        return str(tokenpact.__version__)
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"this cleaning step needs {distribution}; pip install 'tokenpact[clean]'"
        ) from None


class StepConfig:
    """Base of the step configurations (each a ``@dataclass(frozen=True)`` subclass).

    Subclasses set ``NAME`` (the step's name in reports and manifests), ``LIBRARY`` (the
    distribution doing the work, ``None`` for tokenpact's own rules) and ``STEP_VERSION``
    (bumped whenever the step's code changes a decision for the same configuration).
    """

    NAME: ClassVar[str]
    LIBRARY: ClassVar[str | None] = None
    STEP_VERSION: ClassVar[int] = 1

    def to_json(self) -> dict[str, Any]:
        """The configuration as plain JSON (what a ``--config`` file holds for this step)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def identity(self) -> dict[str, Any]:
        """What the configuration hash covers; steps that read files add their digests."""
        return self.to_json()

    @property
    def config_hash(self) -> str:
        payload = {
            "step": self.NAME,
            "step_version": self.STEP_VERSION,
            "config": hashable_json(self.identity()),
        }
        return framed_hash(CONFIG_DOMAIN, payload)

    @property
    def library_version(self) -> str:
        return library_version(self.LIBRARY)

    def prepare(self) -> Worker:
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: Any) -> Any:
        """Build the configuration from JSON; unknown keys and bad values are errors."""
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"the {cls.NAME} configuration must be a JSON object, got {type(data).__name__}"
            )
        names = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ConfigError(
                f"unknown {cls.NAME} option(s) {unknown}; the options are {sorted(names)}"
            )
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**values)


def check_choice(value: Any, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ConfigError(f"{what} must be one of {list(allowed)}, got {value!r}")


def check_range(value: Any, what: str, *, low: float, high: float | None = None) -> None:
    """``value`` must be a number in ``[low, high]`` (bools are not numbers here)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and (value < low or (high is not None and value > high)):
        ok = False
    if not ok:
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ConfigError(f"{what} must be a number in {bound}, got {value!r}")


def check_optional_range(value: Any, what: str, *, low: float, high: float | None = None) -> None:
    if value is not None:
        check_range(value, what, low=low, high=high)


def check_strings(value: Any, what: str) -> None:
    if not isinstance(value, tuple) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{what} must be a list of non-empty strings, got {value!r}")
