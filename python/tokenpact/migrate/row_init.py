"""How new vocabulary rows are initialized.

Every policy reads the old rows in bounded blocks and returns only the new rows, in
float32 (float64 for F64 tables); the caller casts them to the table's dtype. Each is
deterministic for a ``seed``.

- ``fvt``: mean of the rows of the token's decomposition under the old tokenizer (Fast
  Vocabulary Transfer; e.g. ``E[268] = mean(E[101], E[114])`` for a token that
  the old tokenizer splits into IDs 101 and 114).
- ``mean``: the mean of all old-ID rows.
- ``normal``: N(0, sigma^2) with sigma the standard deviation of the old-ID rows.
- ``mean_cov``: a sample of N(mu, 1e-9 * Sigma) from the old rows' mean and covariance,
  the rule of ``transformers`` >= 4.46 ``resize_token_embeddings(mean_resizing=True)``;
  the mean when Sigma is not positive definite, as there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..contract.checkpoint_reader import TensorInfo
from ..errors import ConfigError
from .safetensors_stream import iter_row_blocks, read_row_set

POLICIES = ("fvt", "mean", "normal", "mean_cov")
COVARIANCE_SCALE = 1e-9


def check_policy(init: str) -> str:
    if init not in POLICIES:
        raise ConfigError(f"unknown init {init!r}; use one of {POLICIES}")
    return init


def mean_row(info: TensorInfo, rows: int) -> np.ndarray:
    """The float64 mean of rows ``0:rows`` of table ``info``, read in bounded blocks."""
    width = int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else 1
    total = np.zeros(width, dtype=np.float64)
    for block in iter_row_blocks(info, rows):
        total += block.sum(axis=0, dtype=np.float64)
    return total / max(rows, 1)


def _moments(info: TensorInfo, rows: int, *, covariance: bool) -> tuple[np.ndarray, ...]:
    """Mean, sigma (over all entries) and optionally the covariance of rows ``0:rows``."""
    width = int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else 1
    mean = mean_row(info, rows)
    square = 0.0
    cov = np.zeros((width, width), dtype=np.float64) if covariance else None
    for block in iter_row_blocks(info, rows):
        centered = block.astype(np.float64) - mean
        square += float((block.astype(np.float64) ** 2).sum())
        if cov is not None:
            cov += centered.T @ centered
    sigma = np.sqrt(max(square / max(rows * width, 1) - float((mean**2).mean()), 0.0))
    if cov is not None:
        cov /= max(rows, 1)
        return mean, np.array(sigma), cov
    return mean, np.array(sigma)


def _float(info: TensorInfo) -> type:
    return np.float64 if info.dtype == "F64" else np.float32


def init_rows(
    info: TensorInfo,
    *,
    old_ids: int,
    decompositions: Sequence[Sequence[int]],
    init: str,
    seed: int,
) -> np.ndarray:
    """New rows ``[len(decompositions), row]`` for table ``info`` (rows ``0:old_ids`` old)."""
    count = len(decompositions)
    width = int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else 1
    dtype = _float(info)
    if count == 0:
        return np.zeros((0, width), dtype=dtype)
    if init == "fvt":
        for k, source in enumerate(decompositions):
            if not source or max(source) >= old_ids or min(source) < 0:
                raise ConfigError(
                    f"new row {k}: decomposition {list(source)} is not made of old IDs "
                    f"0..{old_ids - 1}; use init='mean' for tokens without one"
                )
        # Each distinct source row is read once (new tokens share pieces), with one open.
        wanted = sorted({i for source in decompositions for i in source})
        where = {i: k for k, i in enumerate(wanted)}
        table = read_row_set(info, wanted).astype(np.float64)
        out = np.empty((count, width), dtype=np.float64)
        for k, source in enumerate(decompositions):
            # Summed in float64 so a bf16 table gets the correctly rounded mean.
            out[k] = table[[where[i] for i in source]].mean(axis=0)
        return out.astype(dtype)
    rng = np.random.default_rng(seed)
    if init == "mean":
        mean, _ = _moments(info, old_ids, covariance=False)
        return np.repeat(mean[None, :], count, axis=0).astype(dtype)
    if init == "normal":
        _, sigma = _moments(info, old_ids, covariance=False)
        return rng.normal(0.0, float(sigma), size=(count, width)).astype(dtype)
    mean, _, cov = _moments(info, old_ids, covariance=True)
    try:
        chol = np.linalg.cholesky(COVARIANCE_SCALE * cov)
    except np.linalg.LinAlgError:
        return np.repeat(mean[None, :], count, axis=0).astype(dtype)
    draws = rng.standard_normal(size=(count, width))
    return (mean + draws @ chol.T).astype(dtype)


def init_new_rows(
    info: TensorInfo,
    *,
    old_ids: int,
    decompositions: Sequence[Sequence[int]],
    init: str,
    seed: int,
) -> np.ndarray:
    """``init_rows`` for a mix of tokens: under ``fvt`` a token without an old
    decomposition (a control token, a reserved ID) gets the mean row instead."""
    count = len(decompositions)
    if init != "fvt":
        return init_rows(info, old_ids=old_ids, decompositions=[[]] * count, init=init, seed=seed)
    width = int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else 1
    rows = np.empty((count, width), dtype=np.float64)
    have = [k for k, d in enumerate(decompositions) if d]
    lack = [k for k, d in enumerate(decompositions) if not d]
    if have:
        rows[have] = init_rows(
            info,
            old_ids=old_ids,
            decompositions=[decompositions[k] for k in have],
            init="fvt",
            seed=seed,
        )
    if lack:
        rows[lack] = init_rows(
            info, old_ids=old_ids, decompositions=[[]] * len(lack), init="mean", seed=seed
        )
    return rows.astype(_float(info))
