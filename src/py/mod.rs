//! Python bindings: type conversion, GIL release around work that grows with input, and
//! mapping `CoreError` onto `tokenpact.errors`. No tokenizer logic lives here; one
//! submodule per engine area, each with a `register` function.

use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::error::CoreError;

mod bpe;

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

/// Runs `f` in a rayon pool of `threads` workers (the global pool when None or 0).
pub(crate) fn in_pool<R: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    let n = match threads {
        None | Some(0) => return Ok(f()),
        Some(n) => n,
    };
    type Pools = Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>;
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let pool = {
        let mut pools = POOLS
            .get_or_init(|| Mutex::new(Vec::new()))
            .lock()
            .map_err(|_| PyRuntimeError::new_err("thread pool registry poisoned"))?;
        match pools.iter().find(|(k, _)| *k == n) {
            Some((_, p)) => p.clone(),
            None => {
                let p = Arc::new(
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(n)
                        .build()
                        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
                );
                pools.push((n, p.clone()));
                p
            }
        }
    };
    Ok(pool.install(f))
}

#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    bpe::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
