//! Fork safety of the worker pools.
//!
//! A process forked after the engine loaded (`datasets.map(num_proc=N)`, a
//! `multiprocessing` pool with the fork start method, a DataLoader worker) inherits the
//! bookkeeping of every thread pool but none of their threads: work queued on them waits
//! forever. Rayon's global pool cannot be rebuilt, so a forked child never uses it; the
//! pools built here are owned by the process that built them, and a forked child builds
//! its own (see `py::pool`). Hugging Face `tokenizers` instead disables parallelism
//! after a fork; here the child keeps its threads.

use std::sync::atomic::{AtomicU32, Ordering};

/// The process that loaded the engine (0: not recorded yet).
static LOADER: AtomicU32 = AtomicU32::new(0);

/// Records this process as the owner of rayon's global pool (called when the engine
/// loads, before any pool starts; later calls keep the first owner).
pub fn claim_global_pool() {
    let _ = LOADER.compare_exchange(0, std::process::id(), Ordering::AcqRel, Ordering::Acquire);
}

/// Whether rayon's global pool may have no threads in this process: it was forked from
/// the process that loaded the engine, whose pool threads it does not have.
pub fn global_pool_unusable() -> bool {
    let owner = LOADER.load(Ordering::Acquire);
    owner != 0 && owner != std::process::id()
}

/// Whether parallel iterators may run here: on a worker of some pool (they run on that
/// pool), or on any thread of a process whose global pool has its threads.
pub fn parallel_ok() -> bool {
    rayon::current_thread_index().is_some() || !global_pool_unusable()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loading_process_may_use_the_global_pool() {
        claim_global_pool();
        assert!(!global_pool_unusable());
        assert!(parallel_ok());
        claim_global_pool(); // idempotent
        assert_eq!(LOADER.load(Ordering::Acquire), std::process::id());
    }
}
