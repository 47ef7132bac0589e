"""Stop policy, fixed before generation begins: control IDs, exact ID sequences, text
stop strings and a budget of generated IDs. Matching starts at the prompt boundary:
prompt IDs never seed a matcher.

There is one stop-policy type: chat rendering returns it (``Conversation.stop_policy``)
and the runtime consumes it, so it lives with chat (the lower layer) and is re-exported
here.
"""

from __future__ import annotations

from ..chat.stop import StopPolicy, StopStringTies

__all__ = ["StopPolicy", "StopStringTies"]
