"""Hugging Face chat templates rendered so that content can never forge control tokens.

``transformers`` renders a template to one string and tokenizes it with every added token
recognized everywhere, so a user message holding ``<|eot_id|>`` becomes a real end of
turn. Here the template renders in a sandbox that tracks where each content string lands
(:mod:`tokenpact.chat.spans`); the whole string is then tokenized once, so
pre-tokenization flows across boundaries exactly as in ``transformers``, but control
tokens are recognized only outside content. Benign conversations get the IDs of
``apply_chat_template(..., tokenize=True)``; hostile ones get their spellings as text.

>>> template = ChatTemplate.from_hf("deepseek-v3/", tok)          # doctest: +SKIP
>>> conv = template.render([{"role": "user", "content": "The cat sleeps."}],
...                        add_generation_prompt=True)            # doctest: +SKIP
>>> conv.input_ids                                                # doctest: +SKIP
[0, 128803, 671, 7539, 114896, 16, 128804]
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import numpy as np

from ..contract import template_hash as _template_hash
from ..contract.declarations import template_declaration
from ..errors import TokenpactError
from . import _encode, render_core
from .columns import RenderedColumns
from .conversation import CONTROL, Conversation
from .deferred_render import PendingRender, prepare_plain
from .end_of_turn import end_of_turn_ids
from .errors import ChatTemplateError, UntrackedContentError
from .executors import executor_for, executor_name
from .hf_config import SPECIAL_TOKEN_NAMES, read_template, token_string
from .hf_inputs import Tracker, plain_data, wrap_documents, wrap_messages, wrap_tools
from .jinja_env import compile_template, has_generation_blocks
from .limits import DEFAULT_LIMITS, TemplateLimits
from .messages import as_messages, validate_messages, validate_plain
from .ownership import RenderedText, Tokens, owned_tokens, tokenize_rendered
from .record_errors import RenderedList, check_on_error, skip_failing
from .render_core import Settings
from .stop import StopPolicy
from .supervision import check_supervise
from .template_pass import (
    RENDER_OPTIONS,
    check_call,
    cut_at_tag,
    native_template,
    render_options,
    render_pass,
    tag_final_message,
)

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer


class ChatTemplate:
    """A Hugging Face chat template bound to a tokenizer; see the module docstring."""

    def __init__(
        self,
        template: str | Mapping[str, str] | Sequence[Mapping[str, str]],
        tokenizer: Tokenizer,
        *,
        special_tokens: Mapping[str, Any] | None = None,
        name: str = "chat_template",
        limits: TemplateLimits = DEFAULT_LIMITS,
        turn_markers: str | Collection[str] = "auto",
    ) -> None:
        if isinstance(template, str):
            sources = {"default": template}
        elif isinstance(template, Mapping):
            sources = {str(k): str(v) for k, v in template.items()}
        else:  # transformers' list form: [{"name": ..., "template": ...}]
            sources = {str(t["name"]): str(t["template"]) for t in template}
        if not sources:
            raise ChatTemplateError("no chat template given")
        self._sources = sources
        self._compiled: dict[str, tuple[jinja2.Template, dict[str, Any]]] = {}
        for key, src in sources.items():
            self._compiled[key] = (compile_template(src), {})
        # The native engine's compiled templates (None where it does not run one).
        self._native = {
            key: native_template(src, self._compiled[key][0]) for key, src in sources.items()
        }
        if not isinstance(limits, TemplateLimits):
            raise ChatTemplateError("limits must be a tokenpact.chat.TemplateLimits")
        self.limits = limits
        self.tokenizer = tokenizer
        self.name = name
        self.special_tokens = {
            key: text
            for key in SPECIAL_TOKEN_NAMES
            if (text := token_string((special_tokens or {}).get(key))) is not None
        }
        for compiled, context in self._compiled.values():
            context.update(compiled.globals)
            context.update(self.special_tokens)
        self.turn_markers = self._turn_markers(turn_markers)
        self._info = _encode.facts(tokenizer, self.turn_markers)
        # The identity covers every named template (transformers picks one per call).
        source = (
            next(iter(sources.values()))
            if len(sources) == 1
            else json.dumps(sources, sort_keys=True, ensure_ascii=False)
        )
        self.declaration = template_declaration(source, name=name, modes=("generation", "training"))
        self.template_hash = _template_hash(self.declaration)
        self._end_of_turn: tuple[int, ...] | None = None
        self._policies: dict[int, StopPolicy] = {}

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its sources, tokenizer (see ``tokenpact.core.pickling``), named
        special tokens, name and limits; the templates are compiled again on unpickling,
        so the template hash is the same."""
        rebuild = functools.partial(
            ChatTemplate,
            special_tokens=self.special_tokens,
            name=self.name,
            limits=self.limits,
            turn_markers=self.turn_markers,
        )
        return rebuild, (dict(self._sources), self.tokenizer)

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_hf(
        cls, config_or_dir: str | os.PathLike[str] | Mapping[str, Any], tokenizer: Tokenizer
    ) -> ChatTemplate:
        """Read the template and named special tokens of a Hugging Face model.

        ``config_or_dir`` is a directory (``chat_template.jinja`` wins over the
        ``chat_template`` of ``tokenizer_config.json``, as in transformers), a
        ``tokenizer_config.json`` or ``*.jinja`` path, or the config as a dict.
        """
        source, specials = read_template(config_or_dir)
        return cls(source, tokenizer, special_tokens=specials)

    @classmethod
    def from_tokenizer(cls, tokenizer: Tokenizer) -> ChatTemplate:
        """The template stored beside a tokenizer loaded by ``tp.Tokenizer.load``."""
        source = tokenizer.source
        if source.get("config_path"):
            return cls.from_hf(Path(source["config_path"]).parent, tokenizer)
        if source.get("chat_template"):
            return cls(source["chat_template"], tokenizer)
        raise ChatTemplateError(
            "this tokenizer was loaded without a tokenizer_config.json holding a chat "
            "template; use ChatTemplate.from_hf(config_or_dir, tokenizer)"
        )

    @property
    def has_generation_blocks(self) -> bool:
        """Whether ``assistant_mask`` comes from ``{% generation %}`` blocks (else from the
        assistant messages' spans and the stop token closing each)."""
        return any(has_generation_blocks(src) for src in self._sources.values())

    @property
    def source(self) -> str:
        """The default template's Jinja source."""
        return self._sources.get("default", next(iter(self._sources.values())))

    def _select(self, tools: Any) -> str:
        if len(self._sources) == 1:
            return next(iter(self._sources))
        if tools is not None and "tool_use" in self._sources:
            return "tool_use"
        if "default" in self._sources:
            return "default"
        raise ChatTemplateError(
            f"this template set has no 'default' template (names: {sorted(self._sources)}); "
            "pick one with ChatTemplate(template_set[name], tokenizer)"
        )

    # ------------------------------------------------------------------ rendering
    def render_text(
        self,
        messages: Sequence[Any],
        *,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tools: Sequence[Any] | None = None,
        documents: Sequence[Any] | None = None,
        **template_kwargs: Any,
    ) -> RenderedText:
        """Render to text with content spans (no tokenization); the string is exactly
        what ``apply_chat_template(..., tokenize=False)`` returns.

        ``template_kwargs`` are trusted application settings, as the named special
        tokens are: control spellings in them stay control tokens.
        """
        return self._render(
            messages,
            dict(
                add_generation_prompt=add_generation_prompt,
                continue_final_message=continue_final_message,
                tools=tools,
                documents=documents,
                **template_kwargs,
            ),
            defang=False,
        )

    def _render(
        self, messages: Sequence[Any], options: dict[str, Any], defang: bool, defer: bool = False
    ) -> RenderedText:
        """``render_text``; ``defang`` replaces control spellings in inputs with filler;
        ``defer`` returns a :class:`PendingRender` for a worker when the native engine
        takes the record (batches)."""
        add_generation_prompt = options.get("add_generation_prompt", False)
        continue_final_message = options.get("continue_final_message", False)
        tools = options.get("tools")
        documents = options.get("documents")
        extra = [k for k in options if k not in RENDER_OPTIONS]
        check_call(messages, add_generation_prompt, continue_final_message)
        key = self._select(tools)
        info = self._info
        filler = None
        if defang and info.spelling_re is not None:
            pattern = info.spelling_re
            filler = lambda s: pattern.sub(lambda m: "_" * len(m.group(0)), s)  # noqa: E731
        matcher = info.control_matcher
        # The template's globals and the named tokens are merged once per template, so
        # Jinja can use a copy of that dict as the context as is (``shared=True``).
        template, base = self._compiled[key]
        context = base.copy()
        if extra:
            context.update(plain_data({k: options[k] for k in extra}))
        native = self._native[key]
        if (
            defer
            and native is not None
            and tools is None
            and documents is None
            and not (continue_final_message or filler)
        ):
            redo = functools.partial(self._render, messages, options, defang)
            plain = prepare_plain(
                native, messages, context, add_generation_prompt, matcher, self.limits, redo
            )
            if plain is not None:
                return plain  # type: ignore[return-value]
        tracker = Tracker(
            info.find_control_spelling, filler, None if matcher is None else matcher.find_first
        )
        chat = wrap_messages(messages, tracker)
        context["messages"] = chat
        context["tools"] = None if tools is None else wrap_tools(tools, tracker)
        context["documents"] = None if documents is None else wrap_documents(documents, tracker)
        context["add_generation_prompt"] = add_generation_prompt
        final = (
            tag_final_message(chat, continue_final_message, self._sources[key])
            if continue_final_message
            else None
        )
        roles = tuple([str(m.get("role", "")) for m in chat])
        if defer and native is not None and final is None:
            pending = native.prepare(
                context, self.limits.max_loop_iterations, self.limits.max_output_chars
            )
            if type(pending) is not str:
                redo = functools.partial(self._render, messages, options, defang)
                return PendingRender(pending, tracker.owners, roles, tracker.found_control, redo)  # type: ignore[return-value]
        text, spans, generation = render_pass(native, template, context, self.limits)
        spans.sort()
        if final is not None:
            text, spans, generation = cut_at_tag(text, spans, generation, final)
        # Filled in one dict update: the frozen dataclass's __init__ would set its fields
        # one object.__setattr__ at a time (same fields, same values).
        rendered = object.__new__(RenderedText)
        rendered.__dict__.update(
            text=text,
            spans=spans,
            generation_spans=generation,
            owners=tracker.owners,
            roles=roles,
            control_in_input=tracker.found_control,
        )
        return rendered

    def prefix_texts(
        self, messages: Sequence[Any], options: dict[str, Any], cuts: Sequence[tuple[int, bool]]
    ) -> list[str]:
        """The rendered text of ``messages[:i]`` for each ``(i, add_generation_prompt)`` of
        ``cuts``, with ``options``' tools, documents and template settings: what
        ``render_text`` returns for each, with the inputs wrapped once for all of them
        (the supervision rule renders every assistant turn's history and turn). The
        native engine renders all of them in one call (plain messages wrapped there too);
        what it declines renders here, one cut at a time."""
        tools = options.get("tools")
        documents = options.get("documents")
        key = self._select(tools)
        template, base = self._compiled[key]
        native = self._native[key]
        info = self._info
        matcher = info.matcher
        tracker = Tracker(
            info.find_control_spelling, None, None if matcher is None else matcher.find_first
        )
        context = base.copy()
        extra = {k: options[k] for k in options if k not in RENDER_OPTIONS}
        if extra:
            context.update(plain_data(extra))
        context["tools"] = None if tools is None else wrap_tools(tools, tracker)
        context["documents"] = None if documents is None else wrap_documents(documents, tracker)
        chat = None
        if native is not None and all(i > 0 for i, _ in cuts):
            limits = (self.limits.max_loop_iterations, self.limits.max_output_chars)
            found = None
            if info.control_matcher is not None and type(messages) is list:
                found = native.prefix_texts(
                    messages, context, list(cuts), info.control_matcher, *limits
                )
            if found is None:  # not plain: wrapped here, converted there
                chat = wrap_messages(messages, tracker)
                found = native.prefix_texts(chat, context, list(cuts), None, *limits)
            if type(found) is list:
                return found
        if chat is None:
            chat = wrap_messages(messages, tracker)
        out = []
        for i, generation in cuts:
            check_call(chat[:i], generation, False)
            run = context.copy()
            run["messages"] = chat[:i]
            run["add_generation_prompt"] = generation
            out.append(render_pass(native, template, run, self.limits)[0])
        return out

    def render(
        self,
        messages: Sequence[Any],
        *,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tools: Sequence[Any] | None = None,
        documents: Sequence[Any] | None = None,
        add_special_tokens: bool = False,
        validate: bool = False,
        supervise: str = "turns",
        **template_kwargs: Any,
    ) -> Conversation:
        """Render and tokenize; options and errors mirror ``apply_chat_template``.

        ``add_special_tokens=True`` also applies the tokenizer's post-processor, except
        for markers the template already wrote (one owner per boundary).
        ``validate=True`` first checks role order and tool pairing of the messages.
        ``assistant_mask`` covers what the model generates for each assistant turn
        (everything after the generation prompt through the end-of-turn token, see
        :mod:`tokenpact.chat.supervision`); ``supervise="final"`` keeps only the final
        message's turn (for records made by ``expand_turns``).
        """
        check_supervise(supervise)
        mode, options = render_options(
            add_generation_prompt, continue_final_message, tools, documents, template_kwargs
        )
        settings = Settings(mode, validate, add_special_tokens, supervise)
        return render_core.conversation(
            self, render_core.render_one(self, messages, options, settings), mode
        )

    def _prepare(
        self,
        messages: Sequence[Any],
        options: dict[str, Any],
        mode: str,
        validate: bool,
        defer: bool = False,
    ) -> RenderedText:
        """``render`` up to the rendered text: validation and the template run (left to
        a worker with ``defer``, see :meth:`_render`)."""
        if validate and not validate_plain(messages, mode):
            validate_messages(as_messages(messages), mode=mode)
        return self._render(messages, options, defang=False, defer=defer)

    def render_batch(
        self,
        conversations: Sequence[Any],
        *,
        threads: int | None = None,
        executor: str = "threads",
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tools: Sequence[Any] | None = None,
        documents: Sequence[Any] | None = None,
        add_special_tokens: bool = False,
        validate: bool = False,
        processes: bool | None = None,
        supervise: str = "turns",
        on_error: str = "raise",
        **template_kwargs: Any,
    ) -> list[Conversation]:
        """:meth:`render` of each conversation, on ``threads`` threads (default: the CPUs
        available, at most 8); the result is identical to the serial loop, in order.

        A conversation is a list of messages or ``{"messages": [...], "tools": [...],
        "documents": [...]}``. ``executor`` says where the work runs
        (:mod:`tokenpact.chat.executors`): ``"threads"``, this thread prepares chunks of
        conversations while the native engine renders and encodes the previous chunk
        on ``threads - 1`` worker threads (and this one, when it has nothing left to
        prepare) without the GIL; ``"processes"``, ``threads - 1`` forked worker
        processes beside this thread, each rendering whole chunks (Jinja included)
        with its copy of this template (POSIX only). ``processes=True`` is the
        deprecated spelling of ``executor="processes"``.
        ``on_error="skip"`` leaves out the records that fail and returns a
        :class:`~tokenpact.chat.RenderedList` (``record_index``, ``skipped`` with each
        reason); the default raises the first failing record's error, naming it.
        """
        check_supervise(supervise)
        executor = executor_name(executor, processes)
        if check_on_error(on_error) == "skip":
            keywords = dict(
                threads=threads,
                add_generation_prompt=add_generation_prompt,
                continue_final_message=continue_final_message,
                tools=tools,
                documents=documents,
                add_special_tokens=add_special_tokens,
                validate=validate,
                executor=executor,
                supervise=supervise,
                **template_kwargs,
            )
            result, kept, skipped = skip_failing(
                lambda idx: self.render_batch([conversations[i] for i in idx], **keywords),
                len(conversations),
            )
            out = RenderedList(result)
            out.record_index, out.skipped = kept, tuple(skipped)
            return out
        mode, options = render_options(
            add_generation_prompt, continue_final_message, tools, documents, template_kwargs
        )
        settings = Settings(mode, validate, add_special_tokens, supervise)
        run = executor_for(executor, threads)
        return run.conversations(self, conversations, threads, options, settings)

    def render_columns(
        self,
        conversations: Sequence[Any],
        *,
        threads: int | None = None,
        executor: str = "threads",
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tools: Sequence[Any] | None = None,
        documents: Sequence[Any] | None = None,
        add_special_tokens: bool = False,
        validate: bool = False,
        processes: bool | None = None,
        supervise: str = "turns",
        on_error: str = "raise",
        **template_kwargs: Any,
    ) -> RenderedColumns:
        """:meth:`render_batch` as one :class:`~tokenpact.chat.RenderedColumns` of flat
        numpy arrays (IDs, offsets, masks, origin codes, message indices, boundaries):
        what writing shards or packing batches needs, without a Python list per token.
        Record ``i`` equals ``render`` of conversation ``i`` (``.conversation(i)``).
        ``executor``: ``"threads"`` or ``"processes"``, as for :meth:`render_batch`.
        ``on_error="skip"``: the failing records are left out (``record_index`` and
        ``skipped`` say which and why).
        """
        executor = executor_name(executor, processes)
        if check_on_error(on_error) == "skip":
            keywords = dict(
                threads=threads,
                add_generation_prompt=add_generation_prompt,
                continue_final_message=continue_final_message,
                tools=tools,
                documents=documents,
                add_special_tokens=add_special_tokens,
                validate=validate,
                executor=executor,
                supervise=supervise,
                **template_kwargs,
            )
            columns, kept, skipped = skip_failing(
                lambda idx: self.render_columns([conversations[i] for i in idx], **keywords),
                len(conversations),
            )
            return dataclasses.replace(
                columns, record_index=np.asarray(kept, dtype=np.int64), skipped=tuple(skipped)
            )
        mode, options = render_options(
            add_generation_prompt, continue_final_message, tools, documents, template_kwargs
        )
        check_supervise(supervise)
        settings = Settings(mode, validate, add_special_tokens, supervise)
        run = executor_for(executor, threads)
        return run.columns(self, conversations, threads, options, settings)

    def format(
        self,
        messages: Sequence[Any],
        *,
        mode: str = "generation",
        tools: Sequence[Any] | None = None,
        documents: Sequence[Any] | None = None,
        **template_kwargs: Any,
    ) -> Conversation:
        """Render in a named mode: ``training``, ``generation`` or ``prefill``."""
        from .messages import check_mode

        check_mode(mode)
        return self.render(
            messages,
            add_generation_prompt=mode == "generation",
            continue_final_message=mode == "prefill",
            tools=tools,
            documents=documents,
            **template_kwargs,
        )

    # ------------------------------------------------------------------ internals
    def _tokenize(self, rendered: RenderedText) -> Tokens:
        """Encode ``rendered`` and own its tokens: one native call when the engine is
        native (the span offsets, token ranges and trusted lists built there, as for a
        ``render_batch`` chunk), else :func:`tokenize_rendered`, which also raises the
        typed error of a text the engine refuses."""
        start = _encode.chunk_encoder(self.tokenizer, self._info)
        if start is not None:
            spans = rendered.spans
            owners = rendered.owners
            try:
                job = start(
                    [rendered.text],
                    [[x for a, b, _ in spans for x in (a, b)]],
                    [[owners[o].kind for _, _, o in spans]],
                    1,
                )
                (result,) = job.wait(lists=False)
            except (UnicodeEncodeError, TokenpactError):
                pass  # the path below raises the error that names the fix
            else:
                return owned_tokens(rendered, self._info, *result)
        return tokenize_rendered(self.tokenizer, self._info, rendered)

    def _check_untracked(
        self,
        rendered: RenderedText,
        tokens: Tokens,
        messages: Sequence[Any],
        options: dict[str, Any],
    ) -> None:
        """Fail closed when content holding a control spelling escaped the tracking.

        The inputs are rendered again with every control spelling replaced by filler of
        the same length; the template's own control tokens must be identical. An extra
        control token in the real render can only come from content.
        """
        clean = self._tokenize(self._render(messages, options, defang=True))
        ours = tokens.ids[tokens.kinds == CONTROL].tolist()
        reference = clean.ids[clean.kinds == CONTROL].tolist()
        if ours != reference:
            raise UntrackedContentError(
                self._untracked_message(rendered, messages, ours, reference)
            )

    def _untracked_message(
        self, rendered: RenderedText, messages: Sequence[Any], ours: list[int], reference: list[int]
    ) -> str:
        """Why a conversation is refused: where the spelling is, which cause fits this
        template, the fix, and the first control ID that differs."""
        spelling = rendered.control_in_input or ""
        where = next(
            (
                f"message {i} ({m.get('role')})"
                for i, m in enumerate(messages)
                if isinstance(m, Mapping) and spelling in json.dumps(m, ensure_ascii=False)
            ),
            "the tools or documents",
        )
        k = next(
            (j for j, (x, y) in enumerate(zip(ours, reference, strict=False)) if x != y),
            min(len(ours), len(reference)),
        )

        def show(ids: list[int]) -> str:
            near = ids[k : k + 4]
            names = " ".join(self.tokenizer.decode([i]) for i in near)
            return f"{near} ({names})" if near else "[] (the end)"

        source = "".join(self._sources.values())
        lit = re.escape(spelling)
        # The spelling as a method argument (split, replace, strip...), compared, or
        # tested with ``in``: the template's control flow depends on the content.
        branches = re.search(
            rf"(?:\(\s*|[=!]=\s*)(['\"]){lit}\1|(['\"]){lit}\2\s+(?:not\s+)?in\b", source
        )
        if branches:
            cause = (
                f"the template itself tests or splits content on {spelling!r}, so a render "
                "without the spelling takes another branch and tokenpact cannot prove which "
                "control tokens came from content"
            )
            if "reasoning_content" in source and "think" in spelling:
                fix = (
                    'pass the reasoning in the message\'s "reasoning_content" field instead of '
                    f"{spelling!r} in its content (the field this template reads)"
                )
            else:
                fix = f"remove {spelling!r} from the content"
        else:
            cause = (
                "the template passed content through an operation tokenpact cannot track "
                "(a filter such as format, indent, wordwrap or truncate on content)"
            )
            fix = f"remove {spelling!r} from the content, or simplify the template's filters"
        return (
            f"{where} holds the control spelling {spelling!r}; {cause}. Control token {k} "
            f"of the render is {show(ours)}, without the spelling {show(reference)}. "
            f"Refusing to guess which tokens are trusted: {fix}"
        )

    def _turn_markers(self, markers: str | Collection[str]) -> frozenset[str]:
        """The ordinary added tokens treated as control in content (see ``__init__``)."""
        if markers != "auto":
            if isinstance(markers, str):
                raise ChatTemplateError(
                    f'turn_markers takes "auto" or a set of spellings, not {markers!r}'
                )
            chosen = frozenset(markers)
            unknown = sorted(chosen - set(self.tokenizer.added_tokens))
            if unknown:
                raise ChatTemplateError(
                    f"turn_markers names {unknown}, which are not ordinary added tokens of "
                    "this tokenizer (special tokens are always control)"
                )
            return chosen

        def render(messages: list[dict[str, str]]) -> str:
            # Through render_pass: the probe runs under this template's own limits (a
            # bare Jinja render would inherit whatever budget the thread's last run left).
            out = []
            for key, (compiled, context) in self._compiled.items():
                variables = {**context, "messages": messages, "add_generation_prompt": False}
                out.append(render_pass(self._native[key], compiled, variables, self.limits)[0])
            return "".join(out)

        return _encode.turn_markers(self.tokenizer, render)

    def _stop_policy(self, boundary: int, stops: tuple[int, ...]) -> StopPolicy:
        """The (immutable) policy for a prompt length, shared between conversations."""
        policy = self._policies.get(boundary)
        if policy is None or policy.stop_ids != stops:
            policy = StopPolicy(boundary, stops)
            if len(self._policies) < 4096:
                self._policies[boundary] = policy
        return policy

    def _stop_ids(self) -> tuple[int, ...]:
        """EOS plus the control token that closes an assistant turn (probed once)."""
        if self._end_of_turn is None:
            self._end_of_turn = end_of_turn_ids(self)
        return self._end_of_turn

    def __repr__(self) -> str:
        return f"ChatTemplate(name={self.name!r}, templates={sorted(self._sources)})"
