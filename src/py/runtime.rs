//! Bindings for the serving runtime engines (`crate::runtime`): conversion and errors only.

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use rustc_hash::FxHashSet;

use super::engine::PyEngine;
use super::special::PySpecialMatcher;
use super::to_py;
use crate::engine::Engine;
use crate::error::CoreError;
use crate::pretok::builtin::Builtin;
use crate::runtime::block_keys::{tokenpact_chain, vllm_chain};
use crate::runtime::decode::{DecodeFailure, IncrementalDecoder};
use crate::runtime::output::{EngineSpec, Finish, OutputEngine};
use crate::runtime::stops::StopScanner;
use crate::runtime::stream_encode::{CutRule, StreamEncoder, DEFAULT_SCAN_STEP};
use crate::runtime::utf8::InvalidUtf8;

fn decode_error(py: Python<'_>, e: &InvalidUtf8) -> PyErr {
    let msg = format!(
        "the IDs decode to bytes that are not valid UTF-8 (byte {}: {:?}); a token boundary \
         may split a character. Use errors='replace' for display, or decode_bytes() for the \
         raw bytes.",
        e.offset,
        PyBytes::new(py, &e.bytes)
    );
    match py
        .import("tokenpact.errors")
        .and_then(|m| m.getattr("DecodeError"))
    {
        Ok(cls) => PyErr::from_type(cls.cast_into().expect("error class is a type"), msg),
        Err(_) => PyRuntimeError::new_err(msg),
    }
}

fn failure(py: Python<'_>, f: DecodeFailure) -> PyErr {
    match f {
        DecodeFailure::UnknownId(e) => to_py(py, e),
        DecodeFailure::Invalid(e) => decode_error(py, &e),
    }
}

fn source(core: &Bound<'_, PyAny>) -> PyResult<Engine> {
    match core.cast::<PyEngine>() {
        Ok(c) => Ok(c.get().engine.clone()),
        Err(_) => Err(PyRuntimeError::new_err(
            "incremental decoding needs a tokenpact engine (tokenpact._native.Engine, the \
             `engine` of a Tokenizer)",
        )),
    }
}

/// The incremental decoder engine; `tokenpact.runtime.IncrementalDecoder` wraps it.
#[pyclass(module = "tokenpact._native")]
struct IncrementalDecoderCore {
    inner: IncrementalDecoder,
    /// Set after an error: the stream is no longer consistent with the batch decoder.
    failed: bool,
}

impl IncrementalDecoderCore {
    fn guard(&self) -> PyResult<()> {
        if self.failed {
            return Err(PyRuntimeError::new_err(
                "this decoder stream failed earlier; start a new IncrementalDecoder",
            ));
        }
        Ok(())
    }

    fn step(&mut self, py: Python<'_>, ids: &[u32], finish: bool) -> PyResult<String> {
        self.guard()?;
        let mut out = String::new();
        let r = if finish {
            self.inner
                .push(ids, &mut out)
                .and_then(|()| self.inner.finish(&mut out))
        } else {
            self.inner.push(ids, &mut out)
        };
        r.map_err(|f| {
            self.failed = true;
            failure(py, f)
        })?;
        Ok(out)
    }
}

#[pymethods]
impl IncrementalDecoderCore {
    #[new]
    #[pyo3(signature = (core, strict, skip_ids, prompt = Vec::new()))]
    fn new(
        py: Python<'_>,
        core: &Bound<'_, PyAny>,
        strict: bool,
        skip_ids: Vec<u32>,
        prompt: Vec<u32>,
    ) -> PyResult<Self> {
        let skip: FxHashSet<u32> = skip_ids.into_iter().collect();
        let mut inner = IncrementalDecoder::new(source(core)?, strict, skip);
        if !prompt.is_empty() {
            inner.prime(&prompt).map_err(|f| failure(py, f))?;
        }
        Ok(IncrementalDecoderCore {
            inner,
            failed: false,
        })
    }

    /// Text that no later ID can change, after decoding `ids`.
    fn push(&mut self, py: Python<'_>, ids: Vec<u32>) -> PyResult<String> {
        if ids.len() > 4096 {
            let mut out = String::new();
            self.guard()?;
            let inner = &mut self.inner;
            let r = py.detach(|| inner.push(&ids, &mut out));
            r.map_err(|f| {
                self.failed = true;
                failure(py, f)
            })?;
            return Ok(out);
        }
        self.step(py, &ids, false)
    }

    /// `push` of a numpy uint32 array (no per-element conversion).
    fn push_array(&mut self, py: Python<'_>, ids: PyReadonlyArray1<'_, u32>) -> PyResult<String> {
        let ids = ids.as_slice()?.to_vec();
        self.push(py, ids)
    }

    /// `push` of one ID.
    fn push_one(&mut self, py: Python<'_>, id: u32) -> PyResult<String> {
        self.step(py, &[id], false)
    }

    /// The rest of the text; the stream ends.
    fn finish(&mut self, py: Python<'_>) -> PyResult<String> {
        self.step(py, &[], true)
    }

    /// Bytes held back right now.
    fn held(&self) -> usize {
        self.inner.held()
    }

    /// IDs consumed so far.
    fn count(&self) -> usize {
        self.inner.count
    }
}

/// The output-transport engine; `tokenpact.runtime.OutputStream` wraps it.
#[pyclass(module = "tokenpact._native")]
struct OutputEngineCore {
    inner: OutputEngine,
}

/// None while running, else (kind, index or ID) (see `OutputEngineCore::finish_state`).
type FinishState = Option<(&'static str, i64)>;

impl OutputEngineCore {
    fn state(&self) -> FinishState {
        self.inner.finish.as_ref().map(|f| match f {
            Finish::StopId(id) => ("stop_id", i64::from(*id)),
            Finish::StopSequence(i) => ("sequence", *i as i64),
            Finish::StopString(i) => ("string", *i as i64),
            Finish::Length => ("length", -1),
            Finish::End => ("end", -1),
        })
    }
}

#[pymethods]
impl OutputEngineCore {
    #[new]
    #[pyo3(signature = (
        core, stop_ids, sequences, strings, budget, include, prompt_boundary,
        prompt = Vec::new(), skip_ids = Vec::new(), first_listed = false, window = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        core: &Bound<'_, PyAny>,
        stop_ids: Vec<u32>,
        sequences: Vec<Vec<u32>>,
        strings: Vec<String>,
        budget: Option<usize>,
        include: bool,
        prompt_boundary: usize,
        prompt: Vec<u32>,
        skip_ids: Vec<u32>,
        first_listed: bool,
        window: Option<usize>,
    ) -> PyResult<Self> {
        let spec = EngineSpec {
            stop_ids,
            sequences,
            strings,
            budget,
            include,
            prompt_boundary,
            prompt,
            skip: skip_ids,
            first_listed,
            window,
        };
        Ok(OutputEngineCore {
            inner: OutputEngine::new(source(core)?, spec).map_err(|f| failure(py, f))?,
        })
    }

    /// (newly visible text, IDs consumed).
    fn push(&mut self, py: Python<'_>, ids: Vec<u32>) -> PyResult<(String, usize)> {
        let mut out = String::new();
        let n = self
            .inner
            .push(&ids, &mut out)
            .map_err(|f| failure(py, f))?;
        Ok((out, n))
    }

    /// (newly visible text, IDs consumed, `finish_state()`): one call per generated ID,
    /// so the per-token path does not call back for the finish state.
    fn push_one(&mut self, py: Python<'_>, id: u32) -> PyResult<(String, usize, FinishState)> {
        let mut out = String::new();
        let n = self
            .inner
            .push(&[id], &mut out)
            .map_err(|f| failure(py, f))?;
        Ok((out, n, self.state()))
    }

    /// The source ran out: the rest of the visible text.
    fn end(&mut self, py: Python<'_>) -> PyResult<String> {
        let mut out = String::new();
        self.inner.end(&mut out).map_err(|f| failure(py, f))?;
        Ok(out)
    }

    /// None while running, else (kind, index or ID): kind is "stop_id", "sequence",
    /// "string", "length" or "end".
    fn finish_state(&self) -> FinishState {
        self.state()
    }

    fn processed(&self) -> Vec<u32> {
        self.inner.processed.clone()
    }

    fn held(&self) -> String {
        self.inner.held().to_owned()
    }
}

/// The stop-string automaton; `tokenpact.runtime.OutputStream` drives it.
#[pyclass(module = "tokenpact._native")]
struct StopScannerCore {
    inner: StopScanner,
}

#[pymethods]
impl StopScannerCore {
    #[new]
    #[pyo3(signature = (patterns, first_listed = false))]
    fn new(patterns: Vec<String>, first_listed: bool) -> Self {
        StopScannerCore {
            inner: StopScanner::new(&patterns, first_listed),
        }
    }

    /// Feeds text; (characters consumed through the match, pattern index) on a stop.
    fn feed(&mut self, text: &str) -> Option<(usize, usize)> {
        self.inner.feed(text)
    }

    /// Characters of the live stop prefix at the end of the text fed so far.
    fn depth(&self) -> usize {
        self.inner.depth()
    }
}

/// tokenpact's block-key chain: 32-byte keys of the complete blocks, concatenated.
#[pyfunction]
fn block_keys_tokenpact<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, u32>,
    block_size: usize,
    namespace: Vec<u8>,
) -> PyResult<Bound<'py, PyBytes>> {
    let ids = ids.as_slice()?;
    let namespace: [u8; 32] = namespace
        .try_into()
        .map_err(|_| PyRuntimeError::new_err("the namespace digest must be 32 bytes"))?;
    let keys = py
        .detach(|| tokenpact_chain(ids, block_size, &namespace))
        .map_err(|e| to_py(py, e))?;
    Ok(PyBytes::new(py, &keys))
}

/// vLLM's `hash_block_tokens` chain with `sha256_cbor` (extra keys pre-encoded as CBOR).
#[pyfunction]
fn block_keys_vllm<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, u32>,
    block_size: usize,
    none_hash: Vec<u8>,
    extra_first: Vec<u8>,
    extra_rest: Vec<u8>,
) -> PyResult<Bound<'py, PyBytes>> {
    let ids = ids.as_slice()?;
    let keys = py
        .detach(|| vllm_chain(ids, block_size, &none_hash, &extra_first, &extra_rest))
        .map_err(|e| to_py(py, e))?;
    Ok(PyBytes::new(py, &keys))
}

/// Characters of `text` covered by pre-tokens of the named built-in pattern that no
/// continuation can change (`Builtin::final_prefix`); None for other patterns.
#[pyfunction]
fn final_pretoken_prefix(py: Python<'_>, text: &str, name: &str) -> Option<usize> {
    let builtin = Builtin::from_name(name)?;
    let bytes = if text.len() > 4096 {
        py.detach(|| builtin.final_prefix(text))
    } else {
        builtin.final_prefix(text)
    };
    Some(text[..bytes].chars().count())
}

// `StreamingCore.__new__`'s literal default is the core's.
const _: () = assert!(DEFAULT_SCAN_STEP == 256);

/// Pushes this large (bytes, with the undecided text) release the GIL while scanned.
const DETACH_BYTES: usize = 1 << 16;

/// `StreamingEncoder`'s whole push path for the rules Rust runs (byte-level BPE behind
/// a built-in pattern, WordPiece's whitespace cut, Metaspace's space cut), with or
/// without recognized special spellings: one call per push returns the newly committed
/// IDs.
#[pyclass(module = "tokenpact._native")]
struct StreamingCore {
    engine: Py<PyEngine>,
    inner: StreamEncoder,
    /// The IDs of the current call (kept to reuse its allocation).
    out: Vec<u32>,
}

/// The `out` argument of the `*_into` methods: a Python `list` (typed error otherwise,
/// raised before the stream moves, so a wrong sink changes nothing).
fn sink<'a, 'py>(py: Python<'py>, out: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyList>> {
    out.cast::<PyList>().map_err(|_| {
        let kind = out
            .get_type()
            .name()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        to_py(
            py,
            CoreError::InvalidInput(format!(
                "out must be a list that receives the committed IDs, not {kind}; pass a \
                 list (e.g. out = [])"
            )),
        )
    })
}

impl StreamingCore {
    /// Runs one step into `self.out` (cleared first); on error `self.out` is not read.
    fn step(
        &mut self,
        py: Python<'_>,
        size: usize,
        step: impl FnOnce(&mut StreamEncoder, &mut Vec<u32>) -> crate::error::CoreResult<()> + Send,
    ) -> PyResult<()> {
        let (inner, out) = (&mut self.inner, &mut self.out);
        out.clear();
        let result = if size + inner.pending_text().len() < DETACH_BYTES {
            step(inner, out)
        } else {
            py.detach(|| step(inner, out))
        };
        result.map_err(|e| to_py(py, e))
    }

    fn run<'py>(
        &mut self,
        py: Python<'py>,
        size: usize,
        step: impl FnOnce(&mut StreamEncoder, &mut Vec<u32>) -> crate::error::CoreResult<()> + Send,
    ) -> PyResult<Bound<'py, PyList>> {
        self.step(py, size, step)?;
        if self.out.is_empty() {
            // Most pushes between two scans commit nothing: skip the ID table.
            return Ok(PyList::empty(py));
        }
        self.engine.get().id_list(py, &self.out)
    }

    /// `run`, appending the IDs to the caller's list instead of returning a new one (no
    /// temporary list to build, copy from and free per push); returns how many.
    fn run_into(
        &mut self,
        py: Python<'_>,
        out: &Bound<'_, PyAny>,
        size: usize,
        step: impl FnOnce(&mut StreamEncoder, &mut Vec<u32>) -> crate::error::CoreResult<()> + Send,
    ) -> PyResult<usize> {
        let list = sink(py, out)?;
        self.step(py, size, step)?;
        if !self.out.is_empty() {
            self.engine.get().extend_id_list(py, list, &self.out)?;
        }
        Ok(self.out.len())
    }

    /// `data` as bytes (anything `bytes()` accepts), except text: a `str` is a typed
    /// error naming `method` and the text method `instead` (not `bytes()`'s TypeError).
    fn bytes_arg<'py>(
        data: &Bound<'py, PyAny>,
        method: &str,
        instead: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if data.is_instance_of::<PyString>() {
            return Err(to_py(
                data.py(),
                CoreError::InvalidInput(format!(
                    "{method}() takes bytes (raw UTF-8), not str; use {instead}() for text"
                )),
            ));
        }
        if let Ok(b) = data.cast::<PyBytes>() {
            return Ok(b.clone());
        }
        // Only buffer objects: `bytes()` would turn an int into that many NUL bytes
        // (`push_bytes(10**10)` allocating 10 GB) and give None a bare TypeError.
        if pyo3::types::PyMemoryView::from(data).is_err() {
            let kind = data
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "object".to_string());
            return Err(to_py(
                data.py(),
                CoreError::InvalidInput(format!(
                    "{method}() takes a bytes-like object (raw UTF-8), not {kind}"
                )),
            ));
        }
        match data.cast::<PyBytes>() {
            Ok(b) => Ok(b.clone()),
            Err(_) => data
                .py()
                .get_type::<PyBytes>()
                .call1((data,))?
                .cast_into::<PyBytes>()
                .map_err(Into::into),
        }
    }
}

#[pymethods]
impl StreamingCore {
    /// `rule`: "pretokens" or "normalized" (with `pattern`, a built-in pattern name),
    /// "whitespace", "metaspace", "specials" or "sentencepiece" (a SentencePiece engine). `allowed`: the spellings `encode` recognizes (a plain matcher).
    /// `scan_step`: new bytes between scans (0: every push; default `DEFAULT_SCAN_STEP`).
    #[new]
    // A literal default, so the text signature (and stubtest) shows it.
    #[pyo3(signature = (engine, rule, pattern=None, allowed=None, through_spellings=true, scan_step=256))]
    fn new(
        py: Python<'_>,
        engine: Py<PyEngine>,
        rule: &str,
        pattern: Option<&str>,
        allowed: Option<PyRef<'_, PySpecialMatcher>>,
        through_spellings: bool,
        scan_step: usize,
    ) -> PyResult<Self> {
        let rule = CutRule::from_name(rule, pattern).map_err(|e| to_py(py, e))?;
        let matcher = allowed.map(|m| m.inner.clone());
        let source = &engine.get().engine;
        let inner = StreamEncoder::new(source, rule, matcher, through_spellings, scan_step)
            .map_err(|e| to_py(py, e))?;
        Ok(StreamingCore {
            engine,
            inner,
            out: Vec::new(),
        })
    }

    /// Takes `bytes`, or anything `bytes()` accepts (bytearray, memoryview).
    fn push_bytes<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        if let Ok(b) = data.cast::<PyBytes>() {
            // The common case: read the bytes object in place (no reference taken).
            let data = b.as_bytes();
            return self.run(py, data.len(), |s, out| s.push_bytes(data, out));
        }
        let data = Self::bytes_arg(data, "push_bytes", "push")?;
        let data = data.as_bytes();
        self.run(py, data.len(), |s, out| s.push_bytes(data, out))
    }

    /// `push_bytes`, appending the committed IDs to `out` (a list); returns how many.
    fn push_bytes_into(
        &mut self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        if let Ok(b) = data.cast::<PyBytes>() {
            let data = b.as_bytes();
            return self.run_into(py, out, data.len(), |s, ids| s.push_bytes(data, ids));
        }
        sink(py, out)?;
        let data = Self::bytes_arg(data, "push_bytes_into", "push_into")?;
        let data = data.as_bytes();
        self.run_into(py, out, data.len(), |s, ids| s.push_bytes(data, ids))
    }

    fn push<'py>(&mut self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        self.run(py, text.len(), |s, out| s.push_str(text, out))
    }

    /// `push`, appending the committed IDs to `out` (a list); returns how many.
    fn push_into(&mut self, py: Python<'_>, text: &str, out: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.run_into(py, out, text.len(), |s, ids| s.push_str(text, ids))
    }

    fn provisional<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, 0, |s, out| s.provisional(out))
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, 0, |s, out| s.finish(out))
    }

    /// `finish`, appending the rest of the IDs to `out` (a list); returns how many.
    fn finish_into(&mut self, py: Python<'_>, out: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.run_into(py, out, 0, |s, ids| s.finish(ids))
    }

    fn reset(&mut self) {
        self.inner.reset();
    }

    #[getter]
    fn pending_text(&self) -> &str {
        self.inner.pending_text()
    }

    #[getter]
    fn mid_character(&self) -> bool {
        self.inner.mid_character()
    }

    #[getter]
    fn committed<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.engine.get().id_list(py, &self.inner.committed())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The Python wrapper's default reads this, so the two cannot drift apart.
    m.add("DEFAULT_SCAN_STEP", DEFAULT_SCAN_STEP)?;
    m.add_class::<StreamingCore>()?;
    m.add_class::<IncrementalDecoderCore>()?;
    m.add_class::<StopScannerCore>()?;
    m.add_class::<OutputEngineCore>()?;
    m.add_function(wrap_pyfunction!(final_pretoken_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(block_keys_tokenpact, m)?)?;
    m.add_function(wrap_pyfunction!(block_keys_vllm, m)?)
}
