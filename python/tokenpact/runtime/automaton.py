"""One Aho-Corasick automaton over a set of patterns (strings or ID tuples).

Stepping it symbol by symbol gives, after each symbol, (a) the longest pattern that
ends here, if any, and (b) the depth of the state: the length of the longest suffix of
the input that is still a prefix of some pattern. (b) is exactly the hold-back
``h(y)``: everything before those last ``depth`` symbols can never become part
of a match and is safe to release.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence


class Automaton:
    """Aho-Corasick over ``patterns`` (non-empty sequences of hashable symbols)."""

    def __init__(
        self, patterns: Sequence[Sequence[Hashable]], *, first_listed: bool = False
    ) -> None:
        self.patterns = [tuple(p) for p in patterns]
        self.goto: list[dict[Hashable, int]] = [{}]
        self.depth = [0]
        self.fail = [0]
        # The longest pattern (by index) ending at each state, following suffix links
        # (with first_listed: the lowest index instead).
        self.out: list[int] = [-1]
        for index, pattern in enumerate(self.patterns):
            state = 0
            for symbol in pattern:
                nxt = self.goto[state].get(symbol)
                if nxt is None:
                    nxt = len(self.goto)
                    self.goto[state][symbol] = nxt
                    self.goto.append({})
                    self.depth.append(self.depth[state] + 1)
                    self.fail.append(0)
                    self.out.append(-1)
                state = nxt
            if self.out[state] < 0:
                self.out[state] = index
        queue = deque(self.goto[0].values())
        while queue:
            state = queue.popleft()
            inherited = self.out[self.fail[state]]
            if self.out[state] < 0:
                # No pattern ends exactly here: the longest one is on the suffix chain.
                self.out[state] = inherited
            elif first_listed and 0 <= inherited < self.out[state]:
                # vLLM's tie rule: of the patterns ending here, the one listed first.
                self.out[state] = inherited
            for symbol, nxt in self.goto[state].items():
                queue.append(nxt)
                f = self.fail[state]
                while f and symbol not in self.goto[f]:
                    f = self.fail[f]
                target = self.goto[f].get(symbol, 0)
                self.fail[nxt] = target if target != nxt else 0
        self.longest = max((len(p) for p in self.patterns), default=0)

    def step(self, state: int, symbol: Hashable) -> int:
        """The state after reading ``symbol``."""
        goto, fail = self.goto, self.fail
        while True:
            nxt = goto[state].get(symbol)
            if nxt is not None:
                return nxt
            if state == 0:
                return 0
            state = fail[state]

    def match(self, state: int) -> int:
        """Index of the longest pattern ending at ``state`` (-1 when none)."""
        return self.out[state]
