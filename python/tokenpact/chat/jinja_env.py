"""The sandboxed Jinja environment for Hugging Face chat templates, with content tracking.

It provides what ``transformers`` gives templates (``raise_exception``, ``strftime_now``,
``tojson`` with its options, loop controls, ``namespace``, ``dict``, ``{% generation %}``)
and keeps the ownership spans of :class:`~tokenpact.chat.spans.SpanStr` values through
Jinja's own joins: every render buffer is joined by ``environment.concat`` (replaced
here), ``~`` is compiled to a span-keeping join, and ``tojson`` and ``join`` locate the
content they print.

Speed without giving up the sandbox. Jinja's sandbox decides on every attribute access
whether the attribute is safe, through a chain of ``isinstance`` checks (against ABCs
for the mutability rule); for a template reading ``message['role']``, ``ns.flag`` and
``loop.last`` per message, those checks cost more than the rendering. The decision only
depends on the object's type and the attribute name, so :class:`SpanEnvironment` caches
it per ``(type, name)`` (dropping the cache whenever an ABC registration could change an
``isinstance`` answer) and asks the unchanged sandbox rules on a miss. Templates compile
once per source (:func:`compile_template` is cached) in one shared environment.

Bounds (:mod:`tokenpact.chat.limits`): every ``{% for %}`` iterable is compiled through
a counting filter (iterations are counted), ``+``, ``*``, ``**``, ``~``,
buffers and the padding filters check sizes, and ``range`` beyond the sandbox's maximum
raises a typed error instead of ``OverflowError``.
"""

from __future__ import annotations

import abc
import functools
import json
import re
import types
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.filters import make_attrgetter
from jinja2.runtime import LoopContext, Macro, missing
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment
from markupsafe import soft_str

from . import limits
from .errors import ChatTemplateError
from .limits import TemplateLimitError, check_size, check_width
from .spans import SpanStr, concat, make, spans_of, str_join

_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")

GENERATION_OWNER = -2
"""Owner of the spans that mark ``{% generation %}`` output (assistant-mask source)."""


# The filter every loop's iterable is compiled through (Jinja allows no custom nodes).
_BOUNDED_ITER = "tokenpact_bounded_iter"


@jinja2.pass_context  # a context filter is never constant-folded at compile time
def _bounded_iter(context: Any, value: Any) -> Any:
    """A loop's iterable, its iterations charged to the render's budget."""
    if type(value) in (list, tuple, dict, str, range, SpanStr):
        limits.charge_iterations(len(value))
        return value
    return limits.counted(value)


class _SpanCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a join that keeps spans (Jinja's ``str_join`` drops them), and
    a chain ``a + b + c`` to one call over its terms (see :meth:`SpanEnvironment.span_add`)
    instead of one sandboxed ``call_binop`` per ``+``."""

    @optimizeconst
    def visit_Add(self, node: jinja2.nodes.BinExpr, frame: Frame) -> None:
        terms: list[jinja2.nodes.Expr] = []
        left: jinja2.nodes.Expr = node
        while isinstance(left, jinja2.nodes.Add):  # ((a + b) + c) + d: left-nested
            terms.append(left.right)
            left = left.left
        terms.append(left)
        self.write("environment.span_add((")
        for term in reversed(terms):
            self.visit(term, frame)
            self.write(", ")
        self.write("))")

    @optimizeconst
    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Frame) -> None:
        self.write("environment.span_str_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class GenerationExtension(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: marks the assistant-generated output."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_mark_generation")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _mark_generation(self, caller: Callable[[], str]) -> str:
        text = caller()
        if not text:
            return text
        return make(text, (*spans_of(text), (0, len(text), GENERATION_OWNER)))


_object_attribute = object.__getattribute__
_NAMESPACE_DICT = "_Namespace__attrs"


def _attributes_of(namespace: jinja2.utils.Namespace) -> dict[str, Any]:
    # object.__getattribute__ skips Namespace's Python-level __getattribute__.
    return object.__getattribute__(namespace, "_Namespace__attrs")  # type: ignore[no-any-return]


class _TemplateNamespace(jinja2.utils.Namespace):
    """``namespace()`` that refuses underscore attributes (no path to CPython internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - Jinja's signature trick
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs) if rest else kwargs
        for name in attrs:
            if type(name) is not str or name[:1] == "_":
                _TemplateNamespace._check_name(name)
        # Namespace.__init__ stores a copy of ``attrs``; ``attrs`` is already this call's
        # own dict (a new kwargs dict, or the dict built above), so it is stored as is.
        object.__setattr__(self, "_Namespace__attrs", attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        if type(name) is not str or name[:1] == "_":
            _TemplateNamespace._check_name(name)
        _object_attribute(self, _NAMESPACE_DICT)[name] = value  # _attributes_of, inlined

    def attributes(self) -> dict[str, Any]:
        """The namespace's attributes (the sandbox reads them without ``__getattribute__``)."""
        return _attributes_of(self)

    @staticmethod
    def _check_name(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"chat templates cannot store underscore attributes on a namespace ({name!r})"
            )


class _TemplateDict:
    """``dict(...)`` for templates without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _trim(value: Any, chars: str | None = None) -> str:
    """Jinja's ``trim`` filter (``soft_str(value).strip(chars)``), with a str taken as is."""
    if isinstance(value, str):
        return value.strip(chars)
    return soft_str(value).strip(chars)


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _string_leaves(value: Any, sort_keys: bool) -> Iterable[str]:
    """Strings of ``value`` in the order ``json.dumps`` writes them (keys, then values)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        items = sorted(value.items()) if sort_keys else value.items()
        for key, item in items:
            if isinstance(key, str):
                yield key
            yield from _string_leaves(item, sort_keys)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _string_leaves(item, sort_keys)


def _has_spans(value: Any) -> bool:
    if type(value) is SpanStr:
        return True
    if isinstance(value, Mapping):
        return any(_has_spans(k) or _has_spans(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_spans(v) for v in value)
    return False


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``transformers``' ``tojson`` (no HTML escaping), locating tracked strings in the output.

    Each string is found in the order ``json.dumps`` writes it; only structure, numbers and
    literals lie between two strings, so the search cannot match anything else. A tracked
    string's escaped body is owned as a whole by its first owner, because escaping moves
    characters.
    """
    text = json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )
    if not _has_spans(value):
        return text
    spans = []
    cursor = 0
    for leaf in _string_leaves(value, sort_keys):
        encoded = json.dumps(leaf, ensure_ascii=ensure_ascii)
        at = text.find(encoded, cursor)
        if at < 0:
            # Unreachable for JSON-able input; fail safe by owning the whole output.
            owner = next((o for x in _string_leaves(value, sort_keys) for *_, o in spans_of(x)), -1)
            return make(text, ((0, len(text), owner),) if owner >= 0 else ())
        owners = [o for _, _, o in spans_of(leaf) if o >= 0]
        if owners and len(encoded) > 2:
            spans.append((at + 1, at + len(encoded) - 1, owners[0]))
        cursor = at + len(encoded)
    return make(text, spans)


@jinja2.pass_environment
def _join(
    environment: jinja2.Environment,
    value: Iterable[Any],
    d: str = "",
    attribute: str | int | None = None,
) -> str:
    """Jinja's ``join`` filter, keeping spans."""
    if attribute is not None:
        value = map(make_attrgetter(environment, attribute), value)
    out: list[str] = []
    for k, item in enumerate(value):
        if k:
            out.append(str(d))
        out.append(str(item))
    return concat(out)


def _bounded_range(*args: int) -> range:
    """The sandbox's ``range`` with a typed error (Jinja raises ``OverflowError``)."""
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise TemplateLimitError(
            f"the chat template asks for range{args} ({len(rng):,} numbers); the sandbox "
            f"allows at most {MAX_RANGE:,}, the template is broken or hostile"
        )
    return rng


def _width_checked(name: str, fn: Callable[..., Any], width: tuple[str, int] | None) -> Any:
    """A filter whose width argument (``center``'s ``width`` ...) and result must fit."""

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if width is not None:
            keyword, position = width
            value = args[position] if len(args) > position else kwargs.get(keyword)
            check_width(value, f"a {name} width")
        return check_size(fn(*args, **kwargs), f"a {name} result")

    return checked


# Filters that can build output much larger than their input: (width keyword, position).
_WIDTH_FILTERS: dict[str, tuple[str, int] | None] = {
    "center": ("width", 1),
    "indent": ("width", 1),
    "tojson": ("indent", 2),
    "batch": ("linecount", 1),
    "format": None,
    "replace": None,
    "join": None,
}
# str methods a template can call that pad to an integer width.
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})
_BUILTIN_METHOD = types.BuiltinMethodType
# Only these can be str.format / str.format_map methods, which the sandbox wraps.
_METHOD_TYPES = (types.BuiltinMethodType, types.MethodType)
_SAFE_CACHE_SIZE = 4096
# Attributes of dict itself: ``d.items`` is the method, any other name is a key lookup.
_DICT_ATTRIBUTES = frozenset(dir(dict))
# Public str methods except format/format_map (which the sandbox wraps): on a str or a
# SpanStr the sandbox always allows them (no underscore, not internal, str is immutable).
_PLAIN_STR = frozenset(
    n for n in dir(str) if not n.startswith("_") and n not in ("format", "format_map")
)
# Loop variables a template reads (``loop.index0``, ``loop.first``): plain values,
# which the sandbox allows (no underscore, not internal, not a str.format method).
_LOOP_VALUES = frozenset(
    {"index", "index0", "first", "last", "revindex", "revindex0", "depth", "depth0", "length"}
)


_STR_TYPES = frozenset({str, SpanStr})
# This thread's budget, read directly on the hot paths (limits.max_chars() returns the same).
_BUDGET = limits._BUDGET


def _bounded_add(left: Any, right: Any) -> Any:
    """``left + right``, its size bounded when it builds a string or a list."""
    out = left + right
    if type(out) is not int and isinstance(out, (str, list, tuple)):
        if len(out) > _BUDGET.max_chars:
            raise limits.too_large(len(out), "a string or list")
    return out


_PLAIN_ARGS = "_tokenpact_plain_args"


def _plain_macro_args(macro: Macro) -> int:
    """How many positional arguments (no keywords) ``macro`` takes when a call needs none
    of ``Macro.__call__``'s binding (no caller, no catch-all arguments, no autoescaping,
    no async), else -1.

    The answer is fixed when the macro is defined; it is kept on the macro, which a
    render calls again and again.
    """
    plain = (
        not macro.caller
        and not macro.explicit_caller
        and not macro.catch_kwargs
        and not macro.catch_varargs
        and not macro._default_autoescape
        and not macro._environment.is_async
    )
    most: int = macro._argument_count if plain else -1
    macro.__dict__[_PLAIN_ARGS] = most
    return most


class SpanEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox ``transformers`` uses, with span-keeping joins, cached safety decisions
    and execution bounds (see the module docstring)."""

    code_generator_class = _SpanCodeGenerator
    intercepted_binops = frozenset({"+", "*", "**"})

    def __init__(self) -> None:
        super().__init__(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[GenerationExtension, jinja2.ext.loopcontrols],
        )
        self.filters["tojson"] = tojson
        self.filters["join"] = _join
        self.filters["trim"] = _trim
        self.filters[_BOUNDED_ITER] = _bounded_iter
        for name, width in _WIDTH_FILTERS.items():
            self.filters[name] = _width_checked(name, self.filters[name], width)
        self.globals["raise_exception"] = _raise_exception
        self.globals["strftime_now"] = _strftime_now
        self.globals["dict"] = _TemplateDict()
        self.globals["namespace"] = _TemplateNamespace
        self.globals["range"] = _bounded_range
        self._safe: dict[tuple[type, str], bool] = {}
        self._abc_token = abc.get_cache_token()

    # Compiled templates call these through the module global ``environment``.
    @staticmethod
    def concat(pieces: Iterable[object]) -> str:  # type: ignore[override]
        out = concat(pieces)
        if len(out) > _BUDGET.max_chars:
            raise limits.too_large(len(out), "a string")
        return out

    @staticmethod
    def span_add(terms: tuple[Any, ...]) -> Any:
        """``terms[0] + terms[1] + ...`` (a left fold, as Jinja evaluates it), each step
        bounded in size. Strings only (the common case: ``'<|user|>' + content + '\n'``)
        are joined in one pass, which gives the same text and spans as the fold."""
        if len(terms) == 2:  # one ``+``: SpanStr's own operators are the fast path
            return _bounded_add(*terms)
        # (issuperset over the types: no set built; concat takes the tuple as is)
        if _STR_TYPES.issuperset(map(type, terms)):
            out = concat(terms)
            if len(out) > _BUDGET.max_chars:
                raise limits.too_large(len(out), "a string or list")
            return out
        out = terms[0]
        for term in terms[1:]:
            out = _bounded_add(out, term)
        return out

    @staticmethod
    def span_str_join(values: Iterable[object]) -> str:
        return check_size(str_join(values))  # type: ignore[no-any-return]

    def _parse(self, source: str, name: str | None, filename: str | None) -> jinja2.nodes.Template:
        """Parse, then route every loop's iterable through the iteration budget."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(jinja2.nodes.For):
            it = loop.iter
            loop.iter = jinja2.nodes.Filter(it, _BOUNDED_ITER, [], [], None, None, lineno=it.lineno)
        return tree

    # ------------------------------------------------------------------ sandbox
    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """The sandbox's rule, cached: it depends only on ``type(obj)`` and ``attr``
        (``isinstance`` checks and the name), never on ``value``."""
        token = abc.get_cache_token()
        if token != self._abc_token:  # an ABC registration may change isinstance()
            self._safe.clear()
            self._abc_token = token
        key = (type(obj), attr)
        safe = self._safe.get(key)
        if safe is None:
            safe = super().is_safe_attribute(obj, attr, value)
            if len(self._safe) < _SAFE_CACHE_SIZE:
                self._safe[key] = safe
        return safe

    def getitem(self, obj: Any, argument: Any) -> Any:
        # ``message['tools'] is defined`` on a plain dict: the sandbox answers a missing
        # key by raising and catching KeyError, then AttributeError from getattr(dict,
        # name), then builds the undefined (GLM-4 does this twice per message). A dict
        # lookup gives the same answer without the two exceptions; dict attributes
        # (``d['items']``), unhashable keys and other types keep the sandbox's path.
        if type(obj) is dict:
            try:
                value = obj.get(argument, missing)
            except TypeError:
                return super().getitem(obj, argument)
            if value is not missing:
                return value
            if type(argument) is str and argument not in _DICT_ATTRIBUTES:
                return self.undefined(obj=obj, name=argument)
        return super().getitem(obj, argument)

    def getattr(self, obj: Any, attribute: str) -> Any:
        # Template data are plain dicts: ``message.role`` is a key lookup unless the name
        # is a dict attribute. Same result as the sandbox, without raising AttributeError.
        kind = type(obj)
        if kind is dict and type(attribute) is str and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        if (kind is SpanStr or kind is str) and type(attribute) is str and attribute in _PLAIN_STR:
            # ``content.startswith``: the sandbox's lookup and checks give this same value.
            return getattr(obj, attribute)
        if kind is LoopContext and type(attribute) is str and attribute in _LOOP_VALUES:
            try:
                return getattr(obj, attribute)
            except AttributeError:
                pass  # the sandbox's own fallback, below
        if kind is _TemplateNamespace and type(attribute) is str and attribute[:1] != "_":
            # ``ns.flag``: a namespace holds no methods, its attributes are a dict; the
            # sandbox would allow any name without an underscore.
            try:
                value = _object_attribute(obj, _NAMESPACE_DICT)[attribute]  # _attributes_of
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
            if type(value) in _METHOD_TYPES:
                fmt = self.wrap_str_format(value)
                return value if fmt is None else fmt
            return value
        return super().getattr(obj, attribute)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        # These callables cannot carry the ``unsafe_callable``/``alters_data``
        # marks the sandbox looks for, nor Jinja's ``pass_context`` marks: builtin bound
        # methods (``content.startswith``), SpanStr's own methods, template macros and
        # ``namespace``.
        # For them the sandbox check always passes and Context.call reduces to a plain
        # call (with its StopIteration rule), so they are called directly.
        kind = type(__obj)
        if (
            kind is _BUILTIN_METHOD
            or kind is Macro
            or __obj is _TemplateNamespace
            or (kind is types.MethodType and type(__obj.__self__) is SpanStr)
        ):
            if kwargs:  # the compiler passes the active loop/block variables
                kwargs.pop("_block_vars", None)
                kwargs.pop("_loop_vars", None)
            if kind is Macro:
                most = __obj.__dict__.get(_PLAIN_ARGS)
                if most is None:
                    most = _plain_macro_args(__obj)
                if not kwargs and len(args) <= most:
                    # Macro.__call__ binds arguments by name for callers, keyword
                    # arguments and defaults; a plain positional call reduces to this
                    # (missing trailing arguments take their defaults inside the body).
                    if len(args) < most:
                        args = (*args, *([missing] * (most - len(args))))
                    __obj = __obj._func
            elif kind is _BUILTIN_METHOD and __obj.__name__ in _WIDTH_METHODS:
                for value in (*args, *kwargs.values()):
                    check_width(value, f"a str.{__obj.__name__} width")
            try:
                return __obj(*args, **kwargs)
            except StopIteration:
                return __self.undefined(
                    "value was undefined because a callable raised a StopIteration exception"
                )
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "+":
            return _bounded_add(left, right)
        if operator == "*":
            seq, count = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
            if isinstance(seq, (str, list, tuple)) and isinstance(count, int):
                check_width(len(seq) * count, "a repeated string or list")
            return left * right
        if operator == "**":
            limits.check_power(left, right)
        return super().call_binop(context, operator, left, right)


@functools.lru_cache(maxsize=1)
def _environment() -> SpanEnvironment:
    return SpanEnvironment()


@functools.lru_cache(maxsize=64)
def compile_template(source: str) -> jinja2.Template:
    """Compile a chat template in the span-tracking sandbox (cached per source)."""
    if not isinstance(source, str) or not source:
        raise ChatTemplateError("the chat template must be a non-empty string of Jinja source")
    try:
        return _environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ChatTemplateError(
            f"the chat template does not compile (line {exc.lineno}: {exc.message}); "
            "fix the template source"
        ) from exc
    except AssertionError as exc:
        # jinja2's code generator asserts on some valid-looking sources (a set block's
        # filter argument read nowhere else: "Tried to resolve a name to a reference that
        # was unknown to the frame"); transformers meets the same assertion.
        raise ChatTemplateError(
            f"Jinja cannot compile this chat template ({exc}); simplify the template "
            "(e.g. assign a filter's argument to a variable first)"
        ) from exc


_GLOBALS_KEYS = "_tokenpact_globals_keys"


def render_context(template: jinja2.Template, variables: dict[str, Any]) -> jinja2.runtime.Context:
    """``template.new_context(variables, shared=True)``, with the set of the template's
    global names built once per template: Jinja rebuilds it on every render by iterating
    the template's ``globals`` ChainMap (a Python-level loop over every global)."""
    keys = template.__dict__.get(_GLOBALS_KEYS)
    if keys is None:
        keys = template.__dict__[_GLOBALS_KEYS] = frozenset(template.globals)
    env = template.environment
    context = env.context_class(env, variables, template.name, template.blocks)
    context.globals_keys = set(keys)
    return context


def has_generation_blocks(source: str) -> bool:
    """Whether the template marks assistant output with ``{% generation %}``."""
    return _GENERATION_TAG.search(source) is not None
