"""The compiled request's aligned metadata (seed 000 0x0D: ``special_tokens_mask`` and
``sequence_ownership`` beside ``input_ids``) and the external finish reasons of an output
stream (cancellation, deadline)."""

from __future__ import annotations

import time

import pytest

from tokenpact.chat import assistant, user
from tokenpact.errors import ContractError, InvalidInputError
from tokenpact.runtime import CompiledRequest, OutputStream, StopPolicy, compile_request
from tokenpact.runtime.output import FINISH_REASONS
from tokenpact.runtime.output_reference import ReferenceOutputStream

from .seed_checkpoint import COMPILER, TOK
from .seed_checkpoint import checkpoint as _checkpoint
from .seed_vocab import output_vocab

IMPLS = pytest.mark.parametrize(
    "impl", [OutputStream, ReferenceOutputStream], ids=["rust", "python"]
)


def test_conversation_provenance_travels_with_the_ids() -> None:
    conv = COMPILER.compile(
        [user("Give the answer as JSON, ok?"), assistant('{answer:"')], mode="prefill"
    )
    req = compile_request(conv, TOK, _checkpoint())
    assert len(req.input_ids) == len(req.special_tokens_mask) == len(req.sequence_ownership)
    assert req.prompt_boundary == 60
    assert list(req.special_tokens_mask) == list(conv.special_tokens_mask)
    for k, (mask, owner) in enumerate(
        zip(req.special_tokens_mask, req.sequence_ownership, strict=True)
    ):
        origin = conv.origin[k]
        assert mask == (origin == "control")
        if origin in ("control", "template"):
            assert owner == origin
        else:
            assert owner == conv.owners[conv.owner_index[k]]
    owners = set(req.sequence_ownership)
    assert {"control", "messages[0].content", "messages[1].content"} <= owners
    # The user's text is owned by the user message, never by the grammar.
    pairs = zip(req.input_ids, req.sequence_ownership, strict=True)
    user_ids = [i for i, o in pairs if o.startswith("messages[0]")]
    spelled = bytes(b for i in user_ids for b in TOK.token_bytes(i))
    assert spelled == b"Give the answer as JSON, ok?"


def test_bare_ids_have_no_provenance_beyond_the_vocabulary() -> None:
    ids = [256, 72, 105, 260]
    req = compile_request(ids, TOK, _checkpoint(), template_hash=COMPILER.template_hash)
    assert req.special_tokens_mask == (1, 0, 0, 1)
    assert req.sequence_ownership == ("caller_ids",) * 4


def test_misaligned_metadata_is_refused() -> None:
    with pytest.raises(ContractError, match="one owner per ID"):
        CompiledRequest((1, 2), 2, StopPolicy(), "h", "t", None, (0, 0), ("a",))


OUT = output_vocab()
STOP = StopPolicy(stop_strings=["STOP"])


@IMPLS
def test_cancel_ends_the_stream_without_flushing_held_text(impl) -> None:
    out = impl(OUT, STOP)
    assert out.push([400, 403]).text == "OK "  # "ST" may start "STOP": held
    delta = out.cancel()
    assert delta.finished and delta.finish_reason == "cancelled" and delta.text == ""
    assert out.visible_text == "OK " and out.processed_ids == [400, 403]
    # Nothing after the signal is processed; the reason stays.
    assert out.push([79, 80]).consumed == 0
    assert out.finish().finish_reason == "cancelled"
    assert out.expire().finish_reason == "cancelled"


@IMPLS
def test_a_passed_deadline_finishes_before_processing(impl) -> None:
    out = impl(OUT, STOP, deadline=time.monotonic() - 1.0)
    delta = out.push([400, 65])
    assert delta.finish_reason == "deadline" and delta.consumed == 0
    assert out.processed_ids == [] and out.visible_text == ""
    # A stream that already stopped keeps its own reason.
    done = impl(OUT, STOP)
    done.push([400, 83, 84, 79, 80])
    assert done.finish_reason == "stop"
    assert done.expire().finish_reason == "stop"
    late = impl(OUT, STOP, deadline=time.monotonic() + 3600.0)
    assert late.push([400]).text == "OK "
    assert late.expire().finish_reason == "deadline"
    assert set(FINISH_REASONS) == {"stop", "length", "end", "cancelled", "deadline"}


@IMPLS
def test_bad_signals_are_typed_errors(impl) -> None:
    with pytest.raises(InvalidInputError):
        impl(OUT, STOP, deadline="soon")
    with pytest.raises(InvalidInputError):
        impl(OUT, STOP).interrupt("abort")
