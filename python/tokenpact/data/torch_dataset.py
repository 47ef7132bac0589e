"""A :class:`TokenLoader` as a PyTorch ``IterableDataset`` (torch stays optional).

Each ``DataLoader`` worker builds the steps ``s = worker (mod num_workers)`` of its
rank (``get_worker_info()``), and ``DataLoader`` hands workers' batches back round
robin, so the stream equals the in-process one for any worker count. Batches come
already collated: use ``DataLoader(ds, batch_size=None, num_workers=k)``.

``state_dict()``/``load_state_dict()`` follow torchdata's ``StatefulDataLoader``
protocol: each worker's state is its epoch, the cursor its iteration started from and
its next step. To resume under another world size or worker count, load the
``StatefulDataLoader``'s state (or ``loader.state_after(batch)``: the batch's provenance
names the cursor once every rank has taken it) into a fresh :class:`TokenLoader` with
``TokenLoader.load_state_dict`` and wrap that in a new data loader.

>>> ds = TokenLoader(paths, seq_len=4096, batch_size=8).torch_dataset()  # doctest: +SKIP
>>> for batch in DataLoader(ds, batch_size=None, num_workers=4): ...  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ContractError

if TYPE_CHECKING:  # the loader imports this module when asked for a torch dataset
    from .loader import PackedBatch, TokenLoader


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ConfigError(
            "TokenLoader.torch_dataset() needs PyTorch; pip install torch (the loader itself "
            "works without it)"
        ) from None
    return torch


def batch_to_torch(batch: PackedBatch) -> dict[str, Any]:
    """Model inputs as tensors (int64 IDs and labels, int32 ``cu_seqlens``) plus the
    batch's provenance as a JSON-ready dict."""
    torch = _torch()
    return {
        "input_ids": torch.from_numpy(batch.input_ids.astype("int64")),
        "labels": torch.from_numpy(batch.labels),
        "position_ids": torch.from_numpy(batch.position_ids),
        "cu_seqlens": torch.from_numpy(batch.cu_seqlens),
        "provenance": batch.provenance.as_json(),
    }


def make_torch_dataset(loader: TokenLoader) -> Any:
    """Wrap ``loader`` in a ``torch.utils.data.IterableDataset`` subclass instance."""
    torch = _torch()

    class TokenIterableDataset(torch.utils.data.IterableDataset):  # type: ignore[misc, name-defined]
        def __init__(self, inner: TokenLoader) -> None:
            super().__init__()
            self.loader = inner
            self._resume: dict[str, Any] | None = None
            self._progress: dict[str, Any] = {}

        def _check_distributed(self) -> None:
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                rank, world = dist.get_rank(), dist.get_world_size()
                if (rank, world) != (self.loader.rank, self.loader.world_size):
                    raise ConfigError(
                        f"the TokenLoader is rank {self.loader.rank} of "
                        f"{self.loader.world_size} but torch.distributed says {rank} of "
                        f"{world}; build it with rank=dist.get_rank(), "
                        "world_size=dist.get_world_size()"
                    )

        def __iter__(self) -> Iterator[dict[str, Any]]:
            self._check_distributed()
            info = torch.utils.data.get_worker_info()
            worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
            inner = self.loader
            start = 0
            if self._resume is not None:
                state, self._resume = self._resume, None
                if state.get("num_workers") != workers:
                    raise ContractError(
                        f"this worker state was saved with {state.get('num_workers')} workers, "
                        f"not {workers}; load the data loader's state into a fresh "
                        "TokenLoader (TokenLoader.load_state_dict) and wrap that instead"
                    )
                inner.epoch, inner.cursor = int(state["epoch"]), int(state["base"])
                start = int(state["next_step"])
            epoch, base = inner.epoch, inner.cursor
            for batch in inner.iter_batches(worker=worker, num_workers=workers, start_step=start):
                self._progress = {
                    "epoch": epoch,
                    "base": base,
                    "next_step": batch.provenance.step + workers,
                    "num_workers": workers,
                    "loader": inner.state_after(batch),
                }
                yield batch_to_torch(batch)

        def state_dict(self) -> dict[str, Any]:
            if self._progress:
                return dict(self._progress)
            return {"loader": self.loader.state_dict()}

        def load_state_dict(self, state: dict[str, Any]) -> None:
            self.loader.load_state_dict(state["loader"])
            self._resume = state if "next_step" in state else None

    return TokenIterableDataset(loader)
