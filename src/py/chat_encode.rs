//! Binding for `crate::chat_encode`: a chunk of rendered chat texts encoded on worker
//! threads while the caller keeps the GIL for rendering the next chunk.
//!
//! `ChatChunkEncoder(engine, allowed, is_control, kinds)` holds what every chunk of one
//! template shares; `start` copies a chunk's texts, queues `threads - 1` helpers on a
//! long-lived pool and returns at once; `ChatEncodeJob.wait` releases the GIL, encodes the
//! records no helper has claimed yet on the calling thread, waits for the rest and
//! returns them in input order, with the conversation's `input_ids`,
//! `special_tokens_mask` and `origin` lists. Helpers never
//! touch Python objects, so the GIL changes hands once per chunk instead of twice per
//! conversation.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use super::chat_template::{PyNativeRenderInput, RenderInput};
use super::engine::PyEngine;
use super::special::PySpecialMatcher;
use super::untrack_atomic;
use super::{max_threads, spawn_in_pool, to_py};
use crate::chat_encode::{
    encode_rendered, encode_rendered_bytes, token_kinds, RenderedEncoding, CONTROL,
};
use crate::chat_template::Rendered;
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::special::SpecialMatcher;

/// What every chunk of one template shares.
struct Shared {
    engine: Engine,
    matcher: Option<Arc<SpecialMatcher>>,
    is_control: Vec<bool>,
}

/// One record's encoding and the kind code of each of its tokens.
type Encoded = (RenderedEncoding, Vec<u8>);

/// What a worker made of one record.
enum Outcome {
    /// A text rendered by the caller, encoded.
    Encoded(Encoded),
    /// Rendered here by the native template engine, then encoded.
    Rendered(Encoded, Rendered),
    /// The native engine declined: the caller renders this record with Jinja.
    Declined,
}

struct Chunk {
    shared: Arc<Shared>,
    texts: Vec<String>,
    spans: Vec<Vec<usize>>,
    /// Per record, the kind code of each content span (a rendered text) or of each
    /// owner (a record the native engine renders here).
    span_kinds: Vec<Vec<u8>>,
    /// Per record, the native render to run first (records the caller rendered: None).
    renders: Vec<Mutex<Option<RenderInput>>>,
    helpers: usize,
    next: AtomicUsize,
    results: Mutex<Vec<Option<CoreResult<Outcome>>>>,
    finished: Mutex<usize>,
    all_done: Condvar,
}

impl Chunk {
    /// Claims and encodes records until none is left (helpers and the waiting caller).
    fn work(&self) {
        while self.work_one() {}
    }

    /// Claims and encodes one record; false when none was left to claim.
    fn work_one(&self) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        if i >= self.texts.len() {
            return false;
        }
        self.process(i);
        true
    }

    fn is_done(&self) -> bool {
        self.finished
            .lock()
            .map(|finished| *finished >= self.texts.len())
            .unwrap_or(true)
    }

    /// Encodes record `i` (claimed by this thread) and stores its result.
    fn process(&self, i: usize) {
        // A panic must not leave the waiter counting forever, nor reach Python.
        let render = self
            .renders
            .get(i)
            .and_then(|slot| slot.lock().ok()?.take());
        let result = catch_unwind(AssertUnwindSafe(|| match render {
            None => self
                .encode(&self.texts[i], &self.spans[i], &self.span_kinds[i])
                .map(Outcome::Encoded),
            Some(input) => self.render_and_encode(input, &self.span_kinds[i]),
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

    fn encode(&self, text: &str, spans: &[usize], span_kinds: &[u8]) -> CoreResult<Encoded> {
        let shared = &self.shared;
        let record = encode_rendered(&shared.engine, text, shared.matcher.as_deref(), spans)?;
        Ok(self.with_kinds(record, span_kinds))
    }

    /// The record and the kind code of each of its tokens.
    fn with_kinds(&self, record: RenderedEncoding, span_kinds: &[u8]) -> Encoded {
        let shared = &self.shared;
        let kinds = token_kinds(
            &record.ids,
            &record.span_lo,
            &record.span_hi,
            span_kinds,
            &shared.is_control,
        );
        (record, kinds)
    }

    /// Renders natively, then encodes with the content spans the render reports, their
    /// kinds looked up by owner (a decline, or an owner without a kind, is `Declined`).
    fn render_and_encode(&self, input: RenderInput, owner_kinds: &[u8]) -> CoreResult<Outcome> {
        let Ok(rendered) = input.run() else {
            return Ok(Outcome::Declined);
        };
        if !rendered.generation.is_empty() {
            // (never prepared: `prepare` declines templates with generation blocks)
            return Ok(Outcome::Declined);
        }
        let mut flat = Vec::with_capacity(2 * rendered.byte_spans.len());
        let mut kinds = Vec::with_capacity(rendered.byte_spans.len());
        for &(a, b, owner) in &rendered.byte_spans {
            let Some(&kind) = usize::try_from(owner).ok().and_then(|o| owner_kinds.get(o)) else {
                return Ok(Outcome::Declined);
            };
            flat.extend([a as usize, b as usize]);
            kinds.push(kind);
        }
        let shared = &self.shared;
        let matcher = shared.matcher.as_deref();
        let record = encode_rendered_bytes(&shared.engine, &rendered.text, matcher, flat)?;
        Ok(Outcome::Rendered(self.with_kinds(record, &kinds), rendered))
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
    encoder: Py<PyChatChunkEncoder>,
}

#[pymethods]
impl PyChatEncodeJob {
    /// Per text, in input order: ``((ids, starts, ends, span_bytes, span_lo, span_hi),
    /// (input_ids, special_tokens_mask, origin))``: the IDs and UTF-8 byte offsets as
    /// uint32 arrays, the content spans in UTF-8 bytes (flat), the token range
    /// overlapping each span, and the conversation's three trusted lists. Raises the
    /// first failing record's error. `help=False` leaves the encoding to the workers
    /// (when there are any): benchmarks use it to measure the serial part alone.
    /// `lists=False` gives each token's kind code as one uint8 array instead of the
    /// three lists (the columnar `render_batch`, which builds no per-token objects).
    /// A record the native template engine rendered here also brings its text and its
    /// code-point spans; a declined one is None.
    #[pyo3(signature = (help=true, lists=true))]
    fn wait<'py>(&self, py: Python<'py>, help: bool, lists: bool) -> PyResult<Bound<'py, PyList>> {
        let chunk = self.chunk.clone();
        let encoder = self.encoder.get();
        // Chunks started after this one: while a worker finishes this chunk's last
        // records, the caller encodes theirs instead of sleeping (a long record is
        // hundreds of microseconds, once per chunk).
        let later = if help {
            encoder.later_than(&chunk)
        } else {
            Vec::new()
        };
        py.detach(|| {
            if help || chunk.helpers == 0 {
                chunk.work();
                while !chunk.is_done() && later.iter().any(|c| c.work_one()) {}
            }
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
        let kinds: Vec<Bound<'py, PyString>> =
            encoder.kinds.iter().map(|k| k.bind(py).clone()).collect();
        let out = PyList::empty(py);
        for result in results {
            let outcome = result
                .ok_or_else(|| PyRuntimeError::new_err("a chat encode worker stopped"))?
                .map_err(|e| to_py(py, e))?;
            let ((record, codes), rendered) = match outcome {
                Outcome::Declined => {
                    out.append(py.None())?;
                    continue;
                }
                Outcome::Encoded(encoded) => (encoded, None),
                Outcome::Rendered(encoded, rendered) => (encoded, Some(rendered)),
            };
            let columns = if lists {
                trusted_lists(py, &record.ids, &codes, &kinds, Some(encoder.ints.get()))?.into_any()
            } else {
                codes.into_pyarray(py).into_any()
            };
            let encoded = PyTuple::new(
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
            let item = match rendered {
                None => PyTuple::new(py, [encoded.into_any(), columns])?,
                Some(r) => {
                    let text = PyString::new(py, &r.text).into_any();
                    let spans = PyList::new(py, r.spans)?.into_any();
                    PyTuple::new(py, [encoded.into_any(), columns, text, spans])?
                }
            };
            out.append(item)?;
        }
        Ok(out)
    }

    /// Whether every record of the chunk is encoded (``wait`` would not block). The
    /// pipeline's calling thread polls it to do its own GIL work while workers encode.
    fn done(&self) -> bool {
        self.chunk.is_done()
    }

    /// Number of texts in the chunk.
    fn __len__(&self) -> usize {
        self.chunk.texts.len()
    }
}

/// The chunk encoder of one template: `engine` and its `allowed` control spellings,
/// `is_control[id]` (the control IDs), and the five origin labels by kind code.
#[pyclass(frozen, module = "tokenpact._native", name = "ChatChunkEncoder")]
pub(crate) struct PyChatChunkEncoder {
    shared: Arc<Shared>,
    kinds: Vec<Py<PyString>>,
    /// The engine whose cached int objects make the ID lists of `wait(lists=True)`.
    ints: Py<PyEngine>,
    /// The chunks started and not yet finished, oldest first.
    active: Mutex<Vec<Weak<Chunk>>>,
}

impl PyChatChunkEncoder {
    /// The unfinished chunks started after `chunk`.
    fn later_than(&self, chunk: &Arc<Chunk>) -> Vec<Arc<Chunk>> {
        let Ok(active) = self.active.lock() else {
            return Vec::new();
        };
        let all: Vec<Arc<Chunk>> = active.iter().filter_map(Weak::upgrade).collect();
        match all.iter().position(|c| Arc::ptr_eq(c, chunk)) {
            Some(at) => all[at + 1..].to_vec(),
            None => Vec::new(),
        }
    }
}

#[pymethods]
impl PyChatChunkEncoder {
    #[new]
    fn new(
        py: Python<'_>,
        engine: Bound<'_, PyEngine>,
        allowed: Option<&PySpecialMatcher>,
        is_control: PyReadonlyArray1<'_, bool>,
        kinds: Vec<Py<PyString>>,
    ) -> PyResult<Self> {
        if kinds.len() != 5 {
            return Err(to_py(
                py,
                CoreError::Config(format!(
                    "{} origin labels; give the five of tokenpact.chat.conversation.KINDS",
                    kinds.len()
                )),
            ));
        }
        let shared = Arc::new(Shared {
            engine: engine.get().engine.clone(),
            matcher: allowed.map(|m| m.inner.clone()),
            is_control: is_control.as_slice()?.to_vec(),
        });
        Ok(PyChatChunkEncoder {
            shared,
            kinds,
            ints: engine.unbind(),
            active: Mutex::new(Vec::new()),
        })
    }

    /// Starts encoding `texts` (rendered chat templates) with the control spellings
    /// recognized outside the codepoint spans `spans[i]` (flat `[start0, end0, ...]`)
    /// of each text, whose kind codes are `span_kinds[i]`, on `threads` threads counting
    /// the caller of `wait()`. A record with `renders[i]` (a `NativeRenderInput`) is
    /// rendered by the native template engine first: its text and spans are ignored and
    /// `span_kinds[i]` gives the kind code of each owner; `wait()` then also returns its
    /// text and spans, or None when the engine declined it.
    #[pyo3(signature = (texts, spans, span_kinds, threads, renders=None))]
    fn start(
        slf: &Bound<'_, Self>,
        texts: Vec<String>,
        spans: Vec<Vec<usize>>,
        span_kinds: Vec<Vec<u8>>,
        threads: usize,
        renders: Option<Vec<Option<PyRef<'_, PyNativeRenderInput>>>>,
    ) -> PyResult<PyChatEncodeJob> {
        let py = slf.py();
        if spans.len() != texts.len() || span_kinds.len() != texts.len() {
            return Err(to_py(
                py,
                CoreError::Config(format!(
                    "{} span lists and {} kind lists for {} texts; give one (possibly empty) \
                     list of each per text",
                    spans.len(),
                    span_kinds.len(),
                    texts.len()
                )),
            ));
        }
        let renders: Vec<Option<RenderInput>> = match renders {
            None => Vec::new(),
            Some(r) if r.len() == texts.len() => r
                .iter()
                .map(|x| x.as_ref().and_then(|input| input.take()))
                .collect(),
            Some(r) => {
                return Err(to_py(
                    py,
                    CoreError::Config(format!("{} renders for {} texts", r.len(), texts.len())),
                ))
            }
        };
        let rendered_here = |i: usize| renders.get(i).is_some_and(Option::is_some);
        let bad = spans
            .iter()
            .zip(&span_kinds)
            .enumerate()
            .position(|(i, (s, k))| {
                (!rendered_here(i) && s.len() != 2 * k.len()) || k.iter().any(|&c| c > 4)
            });
        if let Some(bad) = bad {
            return Err(to_py(
                py,
                CoreError::Config(format!(
                    "text {bad}: give flat [start, end, ...] span pairs and one kind code \
                     (0-4) per span"
                )),
            ));
        }
        let n = texts.len();
        // One thread (`render`): no helper, and no look at the global pool's size, which
        // would start rayon's global pool in a process that never asked for one.
        let helpers = if threads <= 1 {
            0
        } else {
            threads.clamp(1, max_threads()).saturating_sub(1).min(n)
        };
        let chunk = Arc::new(Chunk {
            shared: slf.get().shared.clone(),
            texts,
            spans,
            span_kinds,
            renders: renders.into_iter().map(Mutex::new).collect(),
            helpers,
            next: AtomicUsize::new(0),
            results: Mutex::new((0..n).map(|_| None).collect()),
            finished: Mutex::new(0),
            all_done: Condvar::new(),
        });
        if let Ok(mut active) = slf.get().active.lock() {
            active.retain(|c| c.upgrade().is_some_and(|c| !c.is_done()));
            active.push(Arc::downgrade(&chunk));
        }
        for _ in 0..helpers {
            let chunk = chunk.clone();
            spawn_in_pool(Some(helpers.max(1)), move || chunk.work())?;
        }
        Ok(PyChatEncodeJob {
            chunk,
            encoder: slf.clone().unbind(),
        })
    }
}

/// ``(input_ids, special_tokens_mask, origin)`` of a rendered conversation from its IDs
/// and each token's kind code: what ``wait(lists=True)`` returns, built on a
/// conversation's first read of a lazy list (one call instead of three numpy
/// conversions). ``kinds`` are the origin labels by kind code; a code without a label is
/// an error. ``engine``, when given, lends its cached int objects to the ID list.
#[pyfunction]
#[pyo3(signature = (ids, codes, kinds, engine=None))]
fn chat_token_lists<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, u32>,
    codes: PyReadonlyArray1<'py, u8>,
    kinds: Vec<Bound<'py, PyString>>,
    engine: Option<PyRef<'py, PyEngine>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let ids = ids.as_slice()?;
    let codes = codes.as_slice()?;
    if ids.len() != codes.len() {
        return Err(to_py(
            py,
            CoreError::Config(format!(
                "chat_token_lists: {} IDs but {} kind codes",
                ids.len(),
                codes.len()
            )),
        ));
    }
    if let Some(&bad) = codes.iter().find(|&&c| c as usize >= kinds.len()) {
        return Err(to_py(
            py,
            CoreError::Config(format!(
                "chat_token_lists: kind code {bad} has no label ({} labels)",
                kinds.len()
            )),
        ));
    }
    trusted_lists(py, ids, codes, &kinds, engine.as_deref())
}

/// The three trusted lists from IDs and kind codes (every code below `kinds.len()`).
/// The IDs are the cached ints of `ints` when given (a reference each, where fresh ints
/// cost an allocation to make and a free when the list goes: 4,300 IDs took 21 us
/// instead of 65), else fresh ints; 0/1 and the five labels are shared objects.
fn trusted_lists<'py>(
    py: Python<'py>,
    ids: &[u32],
    codes: &[u8],
    kinds: &[Bound<'py, PyString>],
    ints: Option<&PyEngine>,
) -> PyResult<Bound<'py, PyTuple>> {
    let id_list = match ints {
        Some(engine) => engine.id_list(py, ids)?,
        None => untrack_atomic(PyList::new(py, ids)?),
    };
    let special = PyList::new(py, codes.iter().map(|&c| u32::from(c == CONTROL)))?;
    let origin = PyList::new(py, codes.iter().map(|&c| kinds[c as usize].clone()))?;
    PyTuple::new(
        py,
        [
            id_list.into_any(),
            untrack_atomic(special).into_any(),
            untrack_atomic(origin).into_any(),
        ],
    )
}

/// The assistant mask of `length` tokens as a Python list, 1 on the token `ranges`
/// (each `lo <= hi <= length`), left untracked by the cyclic collector (see
/// [`untrack_atomic`]: it holds only ints).
#[pyfunction]
fn chat_mask_list(
    py: Python<'_>,
    length: usize,
    ranges: Vec<(usize, usize)>,
) -> PyResult<Bound<'_, PyList>> {
    for &(lo, hi) in &ranges {
        if lo > hi || hi > length {
            return Err(to_py(
                py,
                CoreError::Config(format!(
                    "chat_mask_list: range {lo}..{hi} outside {length} tokens"
                )),
            ));
        }
    }
    // `[0] * length` and `mask[lo:hi] = [1] * (hi - lo)` through the list type's own
    // repeat and slice assignment (a bulk copy each), not an item call per token.
    let list = PyList::new(py, [0u32])?
        .as_sequence()
        .repeat(length)?
        .into_any()
        .cast_into::<PyList>()?;
    for &(lo, hi) in &ranges {
        if hi > lo {
            let ones = PyList::new(py, [1u32])?.as_sequence().repeat(hi - lo)?;
            list.set_slice(lo, hi, ones.as_any())?;
        }
    }
    Ok(untrack_atomic(list))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(chat_token_lists, m)?)?;
    m.add_function(wrap_pyfunction!(chat_mask_list, m)?)?;
    m.add_class::<PyChatEncodeJob>()?;
    m.add_class::<PyChatChunkEncoder>()
}
