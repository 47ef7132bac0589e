"""py3langid's own classifier: the oracle the langid step's native model is checked
against (the step itself runs :mod:`tokenpact.data.cleaning.langid_model`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def py3langid_identifier() -> Any:
    """py3langid's ``LanguageIdentifier`` over every label, probabilities normalized."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
