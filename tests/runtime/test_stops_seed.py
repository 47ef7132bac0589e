"""Seed 000 0x0D output cases, exactly, for every way of pushing the IDs."""

from __future__ import annotations

import itertools

import pytest

from tokenpact.errors import ConfigError
from tokenpact.runtime import OutputStream, StopPolicy
from tokenpact.runtime.output_reference import ReferenceOutputStream

from .seed_vocab import output_vocab

TOK = output_vocab()
IMPLS = pytest.mark.parametrize(
    "impl", [OutputStream, ReferenceOutputStream], ids=["rust", "python"]
)


def _chunkings(n: int):
    """Every composition of n into parts of 1..8 (all re-chunkings of a short stream)."""
    for cuts in itertools.product([False, True], repeat=max(0, n - 1)):
        sizes, size = [], 1
        for cut in cuts:
            if cut:
                sizes.append(size)
                size = 1
            else:
                size += 1
        sizes.append(size)
        if max(sizes) <= 8:
            yield sizes


def _run(policy: StopPolicy, ids: list[int], sizes: list[int], impl=OutputStream):
    out = impl(TOK, policy)
    text, at = "", 0
    for n in itertools.cycle(sizes):
        if at >= len(ids):
            break
        delta = out.push(ids[at : at + n])
        text += delta.text
        at += n
        if delta.finished:
            break
    if not out.finished:
        text += out.finish().text
    assert text == out.visible_text
    return text, out.processed_ids, out.finish_reason, out.matched_stop


CASES = [
    # (policy, ids, visible text, processed IDs, finish reason, matched stop)
    (
        StopPolicy(stop_token_ids=[260]),
        [400, 401, 402, 260],
        "OK €",
        [400, 401, 402, 260],
        "stop",
        260,
    ),
    (
        StopPolicy(stop_sequences=[[83, 84, 79, 80]]),
        [400, 83, 84, 79, 80, 33],
        "OK ",
        [400, 83, 84, 79, 80],
        "stop",
        (83, 84, 79, 80),
    ),
    # The alternate segmentation: the ID stop misses it, the text stop catches it.
    (
        StopPolicy(stop_sequences=[[83, 84, 79, 80]]),
        [400, 403, 79, 80, 33],
        "OK STOP!",
        [400, 403, 79, 80, 33],
        "end",
        None,
    ),
    (
        StopPolicy(stop_sequences=[[83, 84, 79, 80]], stop_strings=["STOP"]),
        [400, 403, 79, 80, 33],
        "OK ",
        [400, 403, 79, 80],
        "stop",
        "STOP",
    ),
    (StopPolicy(max_new_tokens=3), [400, 65, 66, 67], "OK AB", [400, 65, 66], "length", None),
    (
        StopPolicy(stop_token_ids=[260], stop_strings=["STOP"]),
        [400, 33],
        "OK !",
        [400, 33],
        "end",
        None,
    ),
]


@IMPLS
@pytest.mark.parametrize("case", CASES, ids=[str(c[1]) for c in CASES])
def test_seed_output_cases(case, impl) -> None:
    policy, ids, text, processed, reason, matched = case
    for sizes in _chunkings(len(ids)):
        assert _run(policy, ids, sizes, impl) == (text, processed, reason, matched), sizes


@IMPLS
def test_hold_back_is_the_live_prefix_only(impl) -> None:
    """Seed table: S, ST, STO are held (h = 1, 2, 3); STOP is stripped."""
    out = impl(TOK, StopPolicy(stop_strings=["STOP"]))
    assert out.push([400]).text == "OK "
    for token_id, held in zip([83, 84, 79], ["S", "ST", "STO"], strict=True):
        assert out.push([token_id]).text == ""
        assert out.held_text == held
    delta = out.push([80])
    assert (delta.text, delta.finished, delta.matched_stop) == ("", True, "STOP")
    # Not a fixed max_len - 1 window: text that cannot start a stop is released at once.
    out = impl(TOK, StopPolicy(stop_strings=["STOP", "XYZW"]))
    assert out.push([400, 65, 83, 65]).text == "OK ASA"


@IMPLS
def test_split_utf8_is_never_visible_half_done(impl) -> None:
    out = impl(TOK, StopPolicy(stop_token_ids=[260]))
    assert out.push([400, 401]).text == "OK "
    assert out.push([402]).text == "€"


@IMPLS
def test_prompt_never_seeds_the_matcher(impl) -> None:
    """A stop-looking prompt (text, ID sequence and control ID) does not stop generation."""
    policy = StopPolicy(
        stop_token_ids=[260], stop_sequences=[[83, 84, 79, 80]], stop_strings=["STOP"]
    )
    prompt = [83, 84, 79, 80, 403, 79, 260, 83, 84]
    out = impl(TOK, policy, prompt_boundary=len(prompt))
    delta = out.push(prompt + [79, 65])
    assert (delta.text, delta.finished) == ("OA", False)  # "O" after prompt "ST" is not STOP
    assert out.processed_ids == [79, 65]


@IMPLS
def test_include_stop_in_output(impl) -> None:
    policy = StopPolicy(stop_strings=["STOP"], include_stop_in_output=True)
    assert _run(policy, [400, 403, 79, 80, 33], [1], impl)[0] == "OK STOP"
    policy = StopPolicy(stop_sequences=[[83, 84, 79, 80]], include_stop_in_output=True)
    assert _run(policy, [400, 83, 84, 79, 80, 33], [2], impl)[0] == "OK STOP"


@IMPLS
def test_earliest_completion_wins_ties_go_to_the_longest(impl) -> None:
    policy = StopPolicy(stop_strings=["STOPX", "TO", "OK S"])
    assert _run(policy, [400, 83, 84, 79], [1], impl)[2:] == ("stop", "OK S")
    policy = StopPolicy(stop_strings=["P", "OP", "STOP"])
    assert _run(policy, [400, 403, 79, 80], [1], impl)[0::3] == ("OK ", "STOP")


@pytest.mark.parametrize(
    "options",
    [
        {"stop_sequences": [[]]},
        {"stop_strings": [""]},
        {"stop_strings": "STOP"},
        {"stop_token_ids": [-1]},
        {"max_new_tokens": 0},
    ],
)
def test_bad_policy_is_a_config_error(options) -> None:
    with pytest.raises(ConfigError):
        StopPolicy(**options)
