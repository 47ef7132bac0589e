//! Python bindings: type conversion, GIL release around work that grows with input, and
//! mapping `CoreError` onto `tokenpact.errors`. No tokenizer logic lives here; one
//! submodule per engine area, each with a `register` function.

use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::error::CoreError;

mod bpe;
mod bpe_train;
mod chat_encode;
mod chat_messages;
mod chat_template;
mod data;
mod data_blocks;
mod data_clean;
mod dropout;
mod engine;
mod packed_rows;
mod parquet_shard;
mod pipeline;
mod runtime;
mod sentencepiece;
mod special;
mod trainers;

pub(crate) fn to_py(py: Python<'_>, err: CoreError) -> PyErr {
    let name = match err {
        CoreError::Config(_) => "ConfigError",
        CoreError::InvalidInput(_) | CoreError::Io(_) => "InvalidInputError",
        CoreError::Training(_) => "TrainingError",
        CoreError::UnknownToken(_) => "UnknownTokenError",
        CoreError::Artifact(_) => "ArtifactError",
    };
    match py.import("tokenpact.errors").and_then(|m| m.getattr(name)) {
        Ok(cls) => PyErr::from_type(
            cls.cast_into().expect("error class is a type"),
            err.to_string(),
        ),
        Err(_) => PyRuntimeError::new_err(err.to_string()),
    }
}

/// The most workers a pool may have: the global pool's size (one per core unless
/// `RAYON_NUM_THREADS` says otherwise). More threads than cores only add overhead, and
/// an unchecked count from a caller (`threads=10**6`) would start that many OS threads.
pub(crate) fn max_threads() -> usize {
    rayon::current_num_threads().max(1)
}

/// The pools of this process by size. A forked child inherits the parent's entries but
/// not their threads (`crate::fork_guard`), so they are forgotten there, never dropped:
/// dropping a pool signals threads that do not exist, through locks they may have held.
struct Pools {
    owner: u32,
    pools: Vec<(usize, Arc<rayon::ThreadPool>)>,
}

fn pool(n: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    let n = n.min(max_threads());
    let pid = std::process::id();
    static POOLS: OnceLock<Mutex<Pools>> = OnceLock::new();
    let mut registry = POOLS
        .get_or_init(|| {
            Mutex::new(Pools {
                owner: pid,
                pools: Vec::new(),
            })
        })
        .lock()
        .map_err(|_| PyRuntimeError::new_err("thread pool registry poisoned"))?;
    if registry.owner != pid {
        for inherited in registry.pools.drain(..) {
            std::mem::forget(inherited);
        }
        registry.owner = pid;
    }
    if let Some((_, p)) = registry.pools.iter().find(|(k, _)| *k == n) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
    );
    registry.pools.push((n, p.clone()));
    Ok(p)
}

/// The pool that runs work asked for on `threads` workers: None for rayon's global pool
/// (`threads` None or 0), except in a forked child, where the global pool has no threads
/// and a pool of this process stands in for it.
fn pool_for(threads: Option<usize>) -> PyResult<Option<Arc<rayon::ThreadPool>>> {
    match threads {
        Some(n) if n > 0 => pool(n).map(Some),
        _ if crate::fork_guard::global_pool_unusable() => pool(max_threads()).map(Some),
        _ => Ok(None),
    }
}

/// Runs `f` in a rayon pool of `threads` workers (the global pool when None or 0; see
/// `pool_for`).
pub(crate) fn in_pool<R: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    Ok(match pool_for(threads)? {
        Some(p) => p.install(f),
        None => f(),
    })
}

/// Queues `job` on the pool of `threads` workers (the global pool when None or 0; see
/// `pool_for`).
pub(crate) fn spawn_in_pool(
    threads: Option<usize>,
    job: impl FnOnce() + Send + 'static,
) -> PyResult<()> {
    match pool_for(threads)? {
        Some(p) => p.spawn(job),
        None => rayon::spawn(job),
    }
    Ok(())
}

/// A Python list of `ids` (untracked: [`untrack_atomic`]), reusing the cached int
/// objects of a tokenizer's ID range (building ints one by one dominated short
/// encodes); IDs outside it are made fresh.
///
/// The int objects of a large vocabulary are spread over megabytes, and taking a
/// reference writes to each: when another thread's encoding has pushed them out of the
/// cache, every ID waited on memory. The loop prefetches the table slot and the object
/// of IDs a few places ahead, so those loads overlap.
#[inline]
pub(crate) fn cached_id_list<'py>(
    py: Python<'py>,
    ints: &[Py<pyo3::types::PyInt>],
    ids: &[u32],
) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    const OBJECT_AHEAD: usize = 8;
    const SLOT_AHEAD: usize = 16;
    let list = pyo3::types::PyList::new(
        py,
        ids.iter().enumerate().map(|(k, &i)| {
            if let Some(&ahead) = ids.get(k + SLOT_AHEAD) {
                if let Some(slot) = ints.get(ahead as usize) {
                    prefetch(std::ptr::from_ref(slot).cast());
                }
            }
            if let Some(&ahead) = ids.get(k + OBJECT_AHEAD) {
                if let Some(obj) = ints.get(ahead as usize) {
                    prefetch(obj.as_ptr().cast());
                }
            }
            match ints.get(i as usize) {
                Some(obj) => obj.bind(py).clone().into_any(),
                None => i.into_pyobject(py).expect("int").into_any(),
            }
        }),
    )?;
    Ok(untrack_atomic(list))
}

/// `list`, no longer tracked by the cyclic collector: its items are all ints or strs,
/// so it can be in no reference cycle, and the collector would otherwise visit every
/// item at each collection that finds the list young (a chat batch's ID lists, built
/// while later records render, are hundreds of thousands of visits per batch). CPython
/// untracks tuples and dicts of such items the same way; a caller that later stores a
/// container in the list makes a cycle through it uncollectable, never unsafe.
pub(crate) fn untrack_atomic(
    list: Bound<'_, pyo3::types::PyList>,
) -> Bound<'_, pyo3::types::PyList> {
    // SAFETY: `list` is a live, tracked list object (fresh from PyList_New) and the GIL
    // is held; untracking only takes it off the collector's generation lists.
    unsafe { pyo3::ffi::PyObject_GC_UnTrack(list.as_ptr().cast()) };
    list
}

/// A hint to load the cache line at `at` (no effect on what the program computes).
#[inline(always)]
fn prefetch(at: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults or changes memory, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Per-text ID lists as one flat ID array and `len + 1` offsets into it.
pub(crate) fn flatten(lists: &[Vec<u32>]) -> (Vec<u32>, Vec<i64>) {
    let mut ids = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    let mut offsets = Vec::with_capacity(lists.len() + 1);
    offsets.push(0i64);
    for l in lists {
        ids.extend_from_slice(l);
        offsets.push(ids.len() as i64);
    }
    (ids, offsets)
}

/// The largest useful `threads` value (the global pool's size).
#[pyfunction]
#[pyo3(name = "max_threads")]
fn max_threads_py() -> usize {
    max_threads()
}

/// The largest ID space (`max_id + 1`) allowed for `entries` IDs (docs/SECURITY.md).
#[pyfunction]
fn id_space_limit(entries: usize) -> usize {
    crate::id_space::limit(entries)
}

#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::fork_guard::claim_global_pool();
    bpe::register(m)?;
    bpe_train::register(m)?;
    chat_encode::register(m)?;
    chat_template::register(m)?;
    data::register(m)?;
    data_blocks::register(m)?;
    packed_rows::register(m)?;
    data_clean::register(m)?;
    dropout::register(m)?;
    engine::register(m)?;
    special::register(m)?;
    sentencepiece::register(m)?;
    parquet_shard::register(m)?;
    pipeline::register(m)?;
    runtime::register(m)?;
    trainers::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(max_threads_py, m)?)?;
    m.add_function(wrap_pyfunction!(id_space_limit, m)?)?;
    Ok(())
}
