"""Regression tests for the serving defaults: special tokens in streamed text, a stop
ID's own text, the stop-string tie rule, and one stop-policy type from chat rendering to
the runtime."""

from __future__ import annotations

import pytest

import tokenpact as tp
from tokenpact.chat import user
from tokenpact.errors import ConfigError, InvalidInputError
from tokenpact.runtime import OutputStream, StopPolicy, compile_request
from tokenpact.runtime.output_reference import ReferenceOutputStream

from . import vllm_oracle
from .families import family
from .seed_checkpoint import COMPILER, TOK
from .seed_checkpoint import checkpoint as _checkpoint

STREAMS = [OutputStream, ReferenceOutputStream]


def _qwen():
    try:
        from conformance.shipped_files import shipped_tokenizer_jsons
    except ImportError:  # pragma: no cover - imported as tests.runtime
        from tests.conformance.shipped_files import shipped_tokenizer_jsons  # type: ignore

    return tp.Tokenizer.load(shipped_tokenizer_jsons()["qwen-3"])


def _text(stream_cls, tok, ids, policy, **kw) -> tuple[str, object, object]:
    out = stream_cls(tok, policy, **kw)
    text = out.push(ids).text
    if not out.finished:
        text += out.finish().text
    return text, out.finish_reason, out.matched_stop


@pytest.mark.parametrize("stream", STREAMS)
def test_stop_id_text_with_include_stop_in_output(stream) -> None:
    """Qwen 3 ``[9707, 1879, 151645]``: ``"Hello world"`` (vLLM's text) by default; the
    stop ID's spelling only when special tokens are printed."""
    tok = _qwen()
    ids = [9707, 1879, 151645]
    policy = StopPolicy(stop_token_ids=[151645], include_stop_in_output=True)
    assert _text(stream, tok, ids, policy) == ("Hello world", "stop", 151645)
    printed = _text(stream, tok, ids, policy, skip_special_tokens=False)
    assert printed == ("Hello world<|im_end|>", "stop", 151645)
    dropped = StopPolicy(stop_token_ids=[151645])
    assert _text(stream, tok, ids, dropped, skip_special_tokens=False)[0] == "Hello world"


@pytest.mark.parametrize("stream", STREAMS)
def test_special_tokens_are_skipped_by_default(stream) -> None:
    """A non-stop special ID adds no text (vLLM's ``skip_special_tokens=True``);
    ``skip_special_tokens=False`` keeps the old behaviour (its spelling)."""
    tok = _qwen()
    im_start = tok.token_id("<|im_start|>")
    ids = [9707, 1879, im_start, 9707, 1879]
    assert _text(stream, tok, ids, StopPolicy())[0] == "Hello worldHello world"
    raw = _text(stream, tok, ids, StopPolicy(), skip_special_tokens=False)[0]
    assert raw == "Hello world<|im_start|>Hello world"


@pytest.mark.parametrize("stream", STREAMS)
def test_tie_rule_option(stream) -> None:
    """Stop strings ending on the same character: the longest by default, the first
    listed with ``stop_string_ties="first_listed"`` (vLLM's ``check_stop_strings``)."""
    tok = family("llama3.2")
    ids = tok.encode("Say STOP now")
    stops = ["P", "OP", "STOP"]
    assert _text(stream, tok, ids, StopPolicy(stop_strings=stops)) == ("Say ", "stop", "STOP")
    vllm_rule = StopPolicy(stop_strings=stops, stop_string_ties="first_listed")
    assert _text(stream, tok, ids, vllm_rule) == ("Say STO", "stop", "P")
    check = vllm_oracle.detokenizer().check_stop_strings
    assert check("Say STOP", 8, stops, False) == ("P", 7)


def test_tie_rule_is_validated() -> None:
    with pytest.raises(ConfigError, match="first_listed"):
        StopPolicy(stop_strings=["a"], stop_string_ties="shortest")  # type: ignore[arg-type]


def test_one_stop_policy_from_render_to_runtime() -> None:
    """``compile_request`` takes what rendering returns: the conversation's stop policy
    is the runtime's type (it used to raise a raw AttributeError)."""
    assert tp.chat.StopPolicy is tp.runtime.StopPolicy
    conv = COMPILER.compile([user("Hi")], mode="generation")
    policy = conv.stop_policy
    req = compile_request(conv, TOK, _checkpoint(), policy)
    assert req.policy is policy and policy.stop_token_ids == frozenset(policy.stop_ids)
    assert compile_request(conv, TOK, _checkpoint()).policy is policy
    # A rendered policy extended with runtime fields drives an OutputStream.
    served = policy.replace(stop_strings=["STOP"], max_new_tokens=8)
    assert served.prompt_length == policy.prompt_length and served.stop_ids == policy.stop_ids
    out = OutputStream(TOK, served)
    assert out.push(TOK.encode("OK STOP!")).text == "OK "
    assert out.matched_stop == "STOP"
    # The chat-side ID matcher still works on the same object.
    assert served.find([65, *policy.stop_ids]) is not None
    with pytest.raises(InvalidInputError, match="StopPolicy"):
        compile_request(conv, TOK, _checkpoint(), {"stop_ids": [260]})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not both"):
        StopPolicy(stop_ids=(1,), stop_token_ids=[2])


def test_prompt_ids_and_boundary_are_exclusive() -> None:
    with pytest.raises(InvalidInputError, match="not both"):
        OutputStream(TOK, StopPolicy(), prompt_ids=[65], prompt_boundary=1)


def test_priming_arguments() -> None:
    """Prompt IDs: a list or a numpy array, not counted as consumed; bad IDs and text are
    typed errors; a strict decoder rejects a prompt that is not UTF-8 at once."""
    import numpy as np

    from tokenpact.errors import DecodeError, UnknownTokenError
    from tokenpact.runtime import IncrementalDecoder

    tok = family("llama3.2")
    ids = tok.encode("Hello world, again")
    for prompt in (ids[:2], np.array(ids[:2], dtype=np.int64)):
        dec = IncrementalDecoder(tok, prompt_ids=prompt)
        assert dec.consumed == 0
        assert dec.push(ids[2:]) + dec.finish() == tok.decode(ids)[len(tok.decode(ids[:2])) :]
    with pytest.raises(UnknownTokenError):
        IncrementalDecoder(tok, prompt_ids=[tok.vocab_size + 10])
    with pytest.raises(UnknownTokenError):
        IncrementalDecoder(tok, prompt_ids=[-1])
    with pytest.raises(InvalidInputError, match="not text"):
        IncrementalDecoder(tok, prompt_ids="Hello")  # type: ignore[arg-type]
    lone = next(i for i in range(tok.vocab_size) if tok.token_bytes(i) == b"\xa2")
    with pytest.raises(DecodeError):
        IncrementalDecoder(tok, errors="strict", prompt_ids=[lone, lone])
