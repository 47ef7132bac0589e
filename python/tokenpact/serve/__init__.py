"""``tokenpact serve``: a local web playground over a bounded JSON API.

>>> from tokenpact.serve import TokenizerRegistry, create_app     # doctest: +SKIP
>>> app = create_app(TokenizerRegistry([("mine", "my-tokenizer/")]))  # doctest: +SKIP

Needs the ``serve`` extra (``pip install 'tokenpact[serve]'``: Starlette and uvicorn).
"""

from __future__ import annotations

from .app import ServeLimits, create_app
from .registry import TokenizerRegistry, check_name

__all__ = ["ServeLimits", "TokenizerRegistry", "check_name", "create_app"]
