//! Binding for `crate::chat_encode`: a chunk of rendered chat texts encoded on worker
//! threads while the caller keeps the GIL for rendering the next chunk.
//!
//! `chat_encode_start` copies the texts, queues `threads - 1` helpers on a long-lived
//! pool and returns at once; `ChatEncodeJob.wait` releases the GIL, encodes the records
//! no helper has claimed yet on the calling thread, waits for the rest and returns them
//! in input order. Helpers never touch Python objects, so the GIL changes hands once per
//! chunk instead of twice per conversation.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use numpy::IntoPyArray;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::engine::PyEngine;
use super::special::PySpecialMatcher;
use super::{max_threads, spawn_in_pool, to_py};
use crate::chat_encode::{encode_rendered, RenderedEncoding};
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::special::SpecialMatcher;

struct Chunk {
    engine: Engine,
    matcher: Option<Arc<SpecialMatcher>>,
    texts: Vec<String>,
    spans: Vec<Vec<usize>>,
    next: AtomicUsize,
    results: Mutex<Vec<Option<CoreResult<RenderedEncoding>>>>,
    finished: Mutex<usize>,
    all_done: Condvar,
}

impl Chunk {
    /// Claims and encodes records until none is left (helpers and the waiting caller).
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.texts.len() {
                return;
            }
            // A panic must not leave the waiter counting forever, nor reach Python.
            let result = catch_unwind(AssertUnwindSafe(|| {
                encode_rendered(
                    &self.engine,
                    &self.texts[i],
                    self.matcher.as_deref(),
                    &self.spans[i],
                )
            }))
            .unwrap_or_else(|_| {
                Err(CoreError::InvalidInput(format!(
                    "encoding rendered conversation {i} of a chunk failed inside the engine; \
                     render it alone with ChatTemplate.render to see the error"
                )))
            });
            if let Ok(mut results) = self.results.lock() {
                results[i] = Some(result);
            }
            if let Ok(mut finished) = self.finished.lock() {
                *finished += 1;
                if *finished == self.texts.len() {
                    self.all_done.notify_all();
                }
            }
        }
    }

    fn wait_all(&self) {
        let Ok(mut finished) = self.finished.lock() else {
            return;
        };
        while *finished < self.texts.len() {
            finished = match self.all_done.wait(finished) {
                Ok(guard) => guard,
                Err(_) => return,
            };
        }
    }
}

/// A chunk of rendered texts being encoded; `wait()` returns the records in order.
#[pyclass(frozen, module = "tokenpact._native", name = "ChatEncodeJob")]
pub(crate) struct PyChatEncodeJob {
    chunk: Arc<Chunk>,
}

#[pymethods]
impl PyChatEncodeJob {
    /// Per text, in input order: ``(ids, starts, ends, span_bytes, span_lo, span_hi)``;
    /// the IDs and UTF-8 byte offsets as uint32 arrays, the content spans in UTF-8 bytes
    /// (flat) and the token range overlapping each span. Raises the first record's error.
    fn wait<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let chunk = self.chunk.clone();
        py.detach(|| {
            chunk.work();
            chunk.wait_all();
        });
        let results = {
            let mut guard = self
                .chunk
                .results
                .lock()
                .map_err(|_| PyRuntimeError::new_err("chat encode results poisoned"))?;
            std::mem::take(&mut *guard)
        };
        if results.len() != self.chunk.texts.len() {
            return Err(to_py(
                py,
                CoreError::Config(
                    "ChatEncodeJob.wait() was already called; each job is collected once"
                        .to_string(),
                ),
            ));
        }
        let out = PyList::empty(py);
        for result in results {
            let record = result
                .ok_or_else(|| PyRuntimeError::new_err("a chat encode worker stopped"))?
                .map_err(|e| to_py(py, e))?;
            let item = PyTuple::new(
                py,
                [
                    record.ids.into_pyarray(py).into_any(),
                    record.starts.into_pyarray(py).into_any(),
                    record.ends.into_pyarray(py).into_any(),
                    PyList::new(py, record.span_bytes)?.into_any(),
                    PyList::new(py, record.span_lo)?.into_any(),
                    PyList::new(py, record.span_hi)?.into_any(),
                ],
            )?;
            out.append(item)?;
        }
        Ok(out)
    }

    /// Number of texts in the chunk.
    fn __len__(&self) -> usize {
        self.chunk.texts.len()
    }
}

/// Starts encoding `texts` (rendered chat templates) with the control spellings of
/// `allowed` recognized outside the codepoint spans `spans[i]` (flat `[start0, end0,
/// ...]`) of each text, on `threads` threads counting the caller of `wait()`.
#[pyfunction]
#[pyo3(signature = (engine, texts, allowed, spans, threads))]
fn chat_encode_start(
    py: Python<'_>,
    engine: &PyEngine,
    texts: Vec<String>,
    allowed: Option<&PySpecialMatcher>,
    spans: Vec<Vec<usize>>,
    threads: usize,
) -> PyResult<PyChatEncodeJob> {
    if spans.len() != texts.len() {
        return Err(to_py(
            py,
            CoreError::Config(format!(
                "{} span lists for {} texts; give one (possibly empty) list per text",
                spans.len(),
                texts.len()
            )),
        ));
    }
    if let Some(bad) = spans.iter().position(|s| s.len() % 2 != 0) {
        return Err(to_py(
            py,
            CoreError::Config(format!(
                "span list {bad} has an odd length; give flat [start, end, ...] pairs"
            )),
        ));
    }
    let n = texts.len();
    let chunk = Arc::new(Chunk {
        engine: engine.engine.clone(),
        matcher: allowed.map(|m| m.inner.clone()),
        texts,
        spans,
        next: AtomicUsize::new(0),
        results: Mutex::new((0..n).map(|_| None).collect()),
        finished: Mutex::new(0),
        all_done: Condvar::new(),
    });
    let helpers = threads.clamp(1, max_threads()).saturating_sub(1).min(n);
    for _ in 0..helpers {
        let chunk = chunk.clone();
        spawn_in_pool(Some(helpers.max(1)), move || chunk.work())?;
    }
    Ok(PyChatEncodeJob { chunk })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyChatEncodeJob>()?;
    m.add_function(wrap_pyfunction!(chat_encode_start, m)?)
}
