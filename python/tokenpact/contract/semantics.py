"""What a tokenizer config means to the contract.

A tokenizer config (``tok.to_config()``, or the native artifact without ``training``) is a
set of typed components. This module decides which parts are behaviour (and therefore
hashed), checks that every component is either ``null`` or a complete typed object, and
derives the facts other artifacts bind to: the ID range and the special-ID policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ..errors import ContractError

# Every stage of Encode = I . S . P . N, then T, plus the decoder. A future stage is added
# here; its key then becomes mandatory (``null`` for "none") in configs that declare it.
COMPONENTS = ("normalizer", "pre_tokenizer", "model", "special_tokens", "post_processor", "decoder")
# Native format v1 predates the normalizer stage, so its absence means "no normalizer".
# Listing it here (rather than requiring it) keeps old artifacts' semantic hashes stable
# when configs start writing ``"normalizer": null`` explicitly.
ABSENT_MEANS_NULL = frozenset({"normalizer"})
# Keys that describe the file or its history, not how text becomes IDs.
NON_BEHAVIOUR_KEYS = frozenset({"format", "format_version", "training"})
# Plain encode(text) treats special-token spellings as ordinary text (docs/ARCHITECTURE.md).
LITERAL_TEXT_POLICY = "ordinary"
SPECIAL_ROLES = ("bos", "eos", "pad", "unk", "eot")
STOP_ROLES = ("eos", "eot")
# Keys under ``model`` that hold the ordered ID -> piece map, by model family.
_ID_MAP_KEYS = ("vocab", "ranks", "pieces")
# Keys under ``model`` that hold merge priorities or scores, by model family.
_RANK_KEYS = ("merges", "ranks", "scores")


@runtime_checkable
class HasConfig(Protocol):
    """Anything with ``to_config()`` (a Tokenizer, a pipeline component)."""

    def to_config(self) -> Mapping[str, Any]: ...


def config_of(tok_or_config: HasConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Return the config dict of a tokenizer, or a copy of a config mapping."""
    if isinstance(tok_or_config, Mapping):
        return dict(tok_or_config)
    to_config = getattr(tok_or_config, "to_config", None)
    if callable(to_config):
        config = to_config()
        if isinstance(config, Mapping):
            return dict(config)
    raise ContractError(
        f"cannot read a tokenizer config from {type(tok_or_config).__name__}; "
        "pass a Tokenizer or the dict returned by tok.to_config()"
    )


def _component_problem(name: str, value: Any) -> str | None:
    if value is None:
        if name in ("model", "special_tokens"):
            return f"component {name!r} is null; a tokenizer needs one"
        return None
    if name == "special_tokens":
        ok = isinstance(value, list)
        return None if ok else f"'special_tokens' must be a list, not {value!r}"
    if not isinstance(value, Mapping):
        return f"component {name!r} must be null or an object, not {type(value).__name__}"
    kind = value.get("type")
    if not isinstance(kind, str) or not kind:
        return (
            f"component {name!r} is {dict(value)!r} without a 'type'; an empty object is not "
            f"'no {name}': write null, or a complete typed object"
        )
    return None


def special_token_problems(tokens: Any) -> list[str]:
    """Return problems with a special-token list (ids, spellings, roles, duplicates)."""
    if not isinstance(tokens, list):
        return ["'special_tokens' must be a list of {id, content, role} objects"]
    problems: list[str] = []
    ids: dict[int, str] = {}
    contents: set[str] = set()
    roles: dict[str, int] = {}
    for index, token in enumerate(tokens):
        where = f"special_tokens[{index}]"
        if not isinstance(token, Mapping):
            problems.append(f"{where} must be an object with id, content and role")
            continue
        raw_id, content, role = token.get("id"), token.get("content"), token.get("role")
        if not isinstance(raw_id, int) or isinstance(raw_id, bool) or raw_id < 0:
            problems.append(f"{where} has id {raw_id!r}; IDs are non-negative integers")
            continue
        tid = raw_id
        if not isinstance(content, str) or not content:
            problems.append(f"{where} (id {tid}) needs a non-empty string 'content'")
            continue
        if not isinstance(role, str) or not role:
            problems.append(f"{where} ({content!r}) needs a string 'role'")
            continue
        if tid in ids:
            problems.append(f"special tokens {ids[tid]!r} and {content!r} share ID {tid}")
        if content in contents:
            problems.append(f"special token {content!r} is declared twice")
        if role in SPECIAL_ROLES and role in roles:
            problems.append(f"role {role!r} is given to IDs {roles[role]} and {tid}")
        ids[tid] = content
        contents.add(content)
        roles.setdefault(role, tid)
    return problems


def component_problems(tok_or_config: HasConfig | Mapping[str, Any]) -> list[str]:
    """Return every structural problem of a config's components (empty when valid)."""
    config = config_of(tok_or_config)
    problems: list[str] = []
    for name in COMPONENTS:
        if name not in config:
            if name not in ABSENT_MEANS_NULL:
                problems.append(f"component {name!r} is missing; write null for 'no {name}'")
            continue
        problem = _component_problem(name, config[name])
        if problem:
            problems.append(problem)
    if isinstance(config.get("special_tokens"), list):
        problems.extend(special_token_problems(config["special_tokens"]))
    if isinstance(config.get("model"), Mapping) and _id_map(config["model"]) is None:
        problems.append(
            f"model type {config['model'].get('type')!r} lists no ID map "
            f"(one of {', '.join(_ID_MAP_KEYS)})"
        )
    return problems


def require_valid(tok_or_config: HasConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Return the config, or raise :class:`ContractError` listing every problem."""
    config = config_of(tok_or_config)
    problems = component_problems(config)
    if problems:
        raise ContractError("invalid tokenizer config: " + "; ".join(problems))
    return config


def semantic_payload(
    tok_or_config: HasConfig | Mapping[str, Any],
    *,
    literal_text_policy: str | None = None,
) -> dict[str, Any]:
    """Return the value the semantic hash covers: behaviour components plus policies.

    Every config key except the file-description keys is included, so components added
    later (added tokens with flags, truncation) are covered without changing this code.
    Special tokens are a set keyed by ID and are sealed in ID order.
    """
    config = require_valid(tok_or_config)
    components = {k: v for k, v in config.items() if k not in NON_BEHAVIOUR_KEYS}
    for name in ABSENT_MEANS_NULL:
        components.setdefault(name, None)
    components["special_tokens"] = sorted(components["special_tokens"], key=lambda t: t["id"])
    if literal_text_policy is None:
        literal_text_policy = literal_text_mode(config)
    return {
        "components": components,
        "policies": {"literal_special_text": literal_text_policy},
    }


def literal_text_mode(tok_or_config: HasConfig | Mapping[str, Any]) -> str:
    """The literal-text policy's mode a config declares (``ordinary`` when it lists
    none: the default is not written, so default artifacts keep their hash)."""
    node = config_of(tok_or_config).get("literal_text")
    if isinstance(node, Mapping) and isinstance(node.get("mode"), str):
        return str(node["mode"])
    return LITERAL_TEXT_POLICY


def _id_map(model: Mapping[str, Any]) -> list[Any] | None:
    for key in _ID_MAP_KEYS:
        value = model.get(key)
        if isinstance(value, list):
            return value
    return None


def model_size(tok_or_config: HasConfig | Mapping[str, Any]) -> int:
    """Return how many IDs the model itself assigns (``0 .. n - 1``)."""
    config = require_valid(tok_or_config)
    return len(_id_map(config["model"]) or ())


def max_id(tok_or_config: HasConfig | Mapping[str, Any]) -> int:
    """Return the largest ID the tokenizer can emit (model pieces, special or added tokens)."""
    config = require_valid(tok_or_config)
    ids = [t["id"] for t in config["special_tokens"]]
    # Non-special added tokens (Qwen3's <think>, ...) may lie beyond the model vocabulary.
    added = config.get("added_tokens") or []
    ids += [t["id"] for t in added if isinstance(t, Mapping) and isinstance(t.get("id"), int)]
    return max([model_size(config) - 1, *ids])


def required_rows(tok_or_config: HasConfig | Mapping[str, Any]) -> int:
    """Return ``V_required = 1 + max_id``: the embedding rows every checkpoint must have."""
    return 1 + max_id(tok_or_config)


def special_policy(tok_or_config: HasConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Return role IDs (``bos``, ``eos``, ``pad``, ``unk``, ``eot``; None when absent) and
    ``stop``: the IDs that end generation (eos and eot roles), ascending."""
    config = require_valid(tok_or_config)
    by_role = {t["role"]: t["id"] for t in config["special_tokens"]}
    policy: dict[str, Any] = {role: by_role.get(role) for role in SPECIAL_ROLES}
    policy["stop"] = sorted(by_role[r] for r in STOP_ROLES if r in by_role)
    return policy


def vocabulary_payload(tok_or_config: HasConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Return the ordered ID map: model pieces by ID plus special tokens by ID."""
    config = require_valid(tok_or_config)
    specials = sorted(config["special_tokens"], key=lambda t: t["id"])
    return {
        "model": _id_map(config["model"]),
        "special_tokens": [[t["id"], t["content"]] for t in specials],
    }


def ranks_payload(tok_or_config: HasConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Return the merge priorities or scores, in model order (they are model state)."""
    config = require_valid(tok_or_config)
    model = config["model"]
    for key in _RANK_KEYS:
        if key in model:
            return {"semantics": model.get("semantics"), key: model[key]}
    return {"semantics": model.get("semantics")}


def automatic_insertions(tok_or_config: HasConfig | Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the ordered tokens the post-processor inserts when asked to."""
    config = require_valid(tok_or_config)
    post = config.get("post_processor")
    if post is None:
        return []
    ids = {t["content"]: t["id"] for t in config["special_tokens"]}
    token = post.get("token")
    if post.get("type") == "prepend_bos" and isinstance(token, str):
        return [
            {
                "position": "start",
                "token": token,
                "id": ids.get(token),
                "when": "add_special_tokens",
            }
        ]
    # Unknown post-processors are described by their own config.
    return [{"position": "component", "config": dict(post), "when": "add_special_tokens"}]
