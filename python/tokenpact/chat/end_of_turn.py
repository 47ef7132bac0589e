"""The IDs that end an assistant turn: EOS plus the control token a template writes right
after an assistant message, found by rendering a two-message probe once per template.
"""

from __future__ import annotations

from typing import Any

from .conversation import CONTROL


def end_of_turn_ids(template: Any) -> tuple[int, ...]:
    """EOS plus the control token that closes an assistant turn of ``template`` (a
    ``ChatTemplate``), without repeats; only EOS when the template rejects the probe."""
    found: list[int] = []
    eos = template.special_tokens.get("eos_token")
    if eos is not None:
        i = template.tokenizer.special_tokens.get(eos)
        if i is not None:
            found.append(int(i))
    try:
        probe = template.render_text(
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        )
        tokens = template._tokenize(probe)
        answer = [
            t
            for t, o in enumerate(tokens.owner.tolist())
            if o >= 0 and probe.owners[o].message_index == 1
        ]
        after = answer[-1] + 1 if answer else len(tokens.ids)
        if after < len(tokens.ids) and tokens.kinds[after] == CONTROL:
            found.append(int(tokens.ids[after]))
    except Exception:  # noqa: BLE001 - best effort: a template may reject the probe
        pass  # then only EOS stops generation
    return tuple(dict.fromkeys(found))
