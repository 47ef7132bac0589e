//! The one Python class over `crate::engine::Engine` (both tokenizer runtimes). Methods
//! convert types, release the GIL around work that grows with the input and map errors;
//! which runtime answers is decided in `crate::engine`, and what differs between them is
//! declared by `capabilities`. Constructors: `Engine.from_merges` / `from_records` /
//! `from_ranks` here (also reachable as `BpeCore.*`), `SentencePieceCore(...)` in
//! `sentencepiece.rs`, `pipeline_core(...)` in `pipeline.rs`.

use std::sync::{mpsc, Arc, OnceLock};

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyFrozenSet, PyInt, PyList, PyString};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::special::PySpecialMatcher;
use super::{cached_id_list, flatten, in_pool, spawn_in_pool, to_py};
use crate::bpe::model::BpeModel;
use crate::engine::Engine;
use crate::error::CoreError;
use crate::pretok::chain::{PretokChain, StepSpec};
use crate::pretok::Pretokenizer;
use crate::special::{SpecialMatcher, Untrusted};
use crate::tokenizer::CoreTokenizer;
use crate::unigram::Draws;

/// Below this many UTF-8 bytes, `encode` keeps the GIL: releasing and re-taking it
/// costs more than the encode.
const DETACH_BYTES: usize = 4096;

#[pyclass(frozen, module = "tokenpact._native", name = "Engine")]
pub(crate) struct PyEngine {
    pub(crate) engine: Engine,
    /// One Python int per ID, made once: returning a list of IDs then costs a reference
    /// count per token instead of allocating an int object per token.
    ints: OnceLock<Vec<Py<PyInt>>>,
    /// One Python str per ID (its bytes decoded with U+FFFD for partial characters),
    /// for the `tokens` field of structured encodings.
    strs: OnceLock<Vec<Py<PyString>>>,
}

impl From<Engine> for PyEngine {
    fn from(engine: Engine) -> PyEngine {
        PyEngine {
            engine,
            ints: OnceLock::new(),
            strs: OnceLock::new(),
        }
    }
}

/// The pre-tokenizer: the built-in scanner `name` / regex `pattern`, or explicit split
/// steps (regex source, built-in name, behaviour, invert) when given.
pub(crate) fn build_chain(
    name: Option<&str>,
    pattern: &str,
    steps: Option<Vec<StepSpec>>,
) -> Result<PretokChain, CoreError> {
    let Some(steps) = steps else {
        return Ok(PretokChain::single(Pretokenizer::new(name, pattern)?));
    };
    PretokChain::from_specs(steps)
}

/// How a byte-level engine decodes its added tokens: Hugging Face's `ByteLevel`
/// decoder maps their spellings through the byte alphabet (`tokenizer.json` files);
/// tiktoken and tokenpact's own merge models decode a special token as its spelling.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AddedDecode {
    ByteAlphabet,
    Spelling,
}

fn byte_level(
    model: Result<BpeModel, CoreError>,
    name: Option<&str>,
    pattern: &str,
    specials: Vec<(String, u32)>,
    steps: Option<Vec<StepSpec>>,
    controls: &[u32],
    added: AddedDecode,
) -> Result<PyEngine, CoreError> {
    let pretok = build_chain(name, pattern, steps)?;
    let mut core = CoreTokenizer::new(model?, pretok, specials)?.forbid_controls(controls);
    if added == AddedDecode::Spelling {
        core.special_decoded.clear();
    }
    Ok(Engine::from(core).into())
}

fn matcher(allowed: Option<&PySpecialMatcher>) -> Option<&SpecialMatcher> {
    allowed.map(|m| &*m.inner)
}

fn untrusted_spans(py: Python<'_>, spans: Option<Vec<(usize, usize)>>) -> PyResult<Untrusted> {
    match spans {
        None => Ok(Untrusted::none()),
        Some(s) => Untrusted::new(s).map_err(|e| to_py(py, e)),
    }
}

impl PyEngine {
    fn ints(&self, py: Python<'_>) -> &Vec<Py<PyInt>> {
        self.ints.get_or_init(|| {
            (0..self.engine.id_space())
                .map(|i| i.into_pyobject(py).map(|b| b.unbind()).expect("int"))
                .collect()
        })
    }

    /// A Python list of `ids` built from the cached ints.
    pub(crate) fn id_list<'py>(
        &self,
        py: Python<'py>,
        ids: &[u32],
    ) -> PyResult<Bound<'py, PyList>> {
        cached_id_list(py, self.ints(py), ids)
    }

    /// Appends `ids` to `list` as the cached ints (no temporary list).
    pub(crate) fn extend_id_list(
        &self,
        py: Python<'_>,
        list: &Bound<'_, PyList>,
        ids: &[u32],
    ) -> PyResult<()> {
        let ints = self.ints(py);
        for &i in ids {
            match ints.get(i as usize) {
                Some(obj) => {
                    // The C call without PyO3's per-item wrapper (a third of the cost
                    // per ID; callgrind). SAFETY: both pointers are live objects for the
                    // whole call (the list is borrowed, the int is held by the engine's
                    // table) and the GIL is held; PyList_Append takes its own reference.
                    if unsafe { pyo3::ffi::PyList_Append(list.as_ptr(), obj.as_ptr()) } != 0 {
                        return Err(PyErr::fetch(py));
                    }
                }
                None => list.append(i)?,
            }
        }
        Ok(())
    }

    fn encode_all(
        &self,
        py: Python<'_>,
        texts: &[PyBackedStr],
        allowed: Option<&PySpecialMatcher>,
        threads: Option<usize>,
    ) -> PyResult<Vec<Vec<u32>>> {
        let m = matcher(allowed);
        let result = py.detach(|| {
            in_pool(threads, || {
                texts
                    .par_iter()
                    .map(|t| {
                        let mut out = Vec::with_capacity(t.len() / 3 + 1);
                        self.engine.encode(t, m, &mut out).map(|_| out)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
        })?;
        result.map_err(|e| to_py(py, e))
    }

    /// IDs and byte offsets of `text` (untrusted ranges normalized by the trust gate).
    #[allow(clippy::type_complexity)]
    fn offsets(
        &self,
        py: Python<'_>,
        text: &str,
        allowed: Option<&PySpecialMatcher>,
        untrusted: Option<Vec<(usize, usize)>>,
        codepoints: bool,
    ) -> PyResult<(Vec<u32>, Vec<(u32, u32)>)> {
        let m = matcher(allowed);
        let untrusted = untrusted_spans(py, untrusted)?;
        let (mut ids, mut offs) = (Vec::new(), Vec::new());
        py.detach(|| {
            let r = self
                .engine
                .encode_with_offsets(text, m, &untrusted, &mut ids, &mut offs);
            if r.is_ok() && codepoints {
                crate::offsets::bytes_to_chars(text, &mut offs);
            }
            r
        })
        .map_err(|e| to_py(py, e))?;
        Ok((ids, offs))
    }
}

#[pymethods]
impl PyEngine {
    /// Byte-level BPE from merge pairs (merge `r` makes ID `256 + r`).
    #[staticmethod]
    #[pyo3(signature = (merges, pattern, name, specials, steps=None, controls=Vec::new()))]
    fn from_merges(
        py: Python<'_>,
        merges: Vec<(u32, u32)>,
        pattern: &str,
        name: Option<&str>,
        specials: Vec<(String, u32)>,
        steps: Option<Vec<StepSpec>>,
        controls: Vec<u32>,
    ) -> PyResult<Self> {
        let model = py.detach(|| BpeModel::from_merges(&merges));
        byte_level(
            model,
            name,
            pattern,
            specials,
            steps,
            &controls,
            AddedDecode::Spelling,
        )
        .map_err(|e| to_py(py, e))
    }

    /// Byte-level BPE from pieces and (left, right, result) merge records.
    #[staticmethod]
    #[pyo3(signature = (
        vocab, records, pattern, name, specials, steps=None, ignore_merges=false,
        controls=Vec::new()
    ))]
    #[allow(clippy::too_many_arguments)]
    fn from_records(
        py: Python<'_>,
        vocab: Vec<Bound<'_, PyBytes>>,
        records: Vec<(u32, u32, u32)>,
        pattern: &str,
        name: Option<&str>,
        specials: Vec<(String, u32)>,
        steps: Option<Vec<StepSpec>>,
        ignore_merges: bool,
        controls: Vec<u32>,
    ) -> PyResult<Self> {
        let vocab: Vec<Vec<u8>> = vocab.iter().map(|b| b.as_bytes().to_vec()).collect();
        let model = py.detach(|| BpeModel::from_records(vocab, &records, ignore_merges));
        byte_level(
            model,
            name,
            pattern,
            specials,
            steps,
            &controls,
            AddedDecode::ByteAlphabet,
        )
        .map_err(|e| to_py(py, e))
    }

    /// Byte-level BPE from tiktoken ranks (rank `r` is ID `id_offset + r`).
    #[staticmethod]
    #[pyo3(signature = (ranks, pattern, name, specials, steps=None, id_offset=0, controls=Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn from_ranks(
        py: Python<'_>,
        ranks: Vec<Bound<'_, PyBytes>>,
        pattern: &str,
        name: Option<&str>,
        specials: Vec<(String, u32)>,
        steps: Option<Vec<StepSpec>>,
        id_offset: u32,
        controls: Vec<u32>,
    ) -> PyResult<Self> {
        let ranks: Vec<Vec<u8>> = ranks.iter().map(|b| b.as_bytes().to_vec()).collect();
        // IDs below the offset are the special tokens' own rows (their spellings).
        let mut reserved = vec![Vec::new(); id_offset as usize];
        for (content, id) in &specials {
            if let Some(row) = reserved.get_mut(*id as usize) {
                *row = content.as_bytes().to_vec();
            }
        }
        let model = py.detach(|| BpeModel::from_ranks_after(reserved, ranks));
        byte_level(
            model,
            name,
            pattern,
            specials,
            steps,
            &controls,
            AddedDecode::Spelling,
        )
        .map_err(|e| to_py(py, e))
    }

    /// The runtime: "pipeline" or "sentencepiece".
    #[getter]
    fn kind(&self) -> &'static str {
        self.engine.kind()
    }

    /// The segmentation model ("bpe", "hf_bpe", "wordpiece", "wordlevel", "unigram").
    #[getter]
    fn model_kind(&self) -> &'static str {
        self.engine.model_kind()
    }

    /// What this engine can do beyond encoding, decoding and vocabulary lookups.
    #[getter]
    fn capabilities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        let names: Vec<&str> = self
            .engine
            .capabilities()
            .iter()
            .map(|c| c.name())
            .collect();
        PyFrozenSet::new(py, &names)
    }

    #[pyo3(signature = (text, allowed=None))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Option<&PySpecialMatcher>,
    ) -> PyResult<Bound<'py, PyList>> {
        let m = matcher(allowed);
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let result = if text.len() < DETACH_BYTES {
            self.engine.encode(text, m, &mut out)
        } else {
            py.detach(|| self.engine.encode(text, m, &mut out))
        };
        result.map_err(|e| to_py(py, e))?;
        self.id_list(py, &out)
    }

    /// The single-threaded definition of ordinary encoding (a test hook: long inputs
    /// take a parallel path in `encode` that must give exactly these IDs).
    fn encode_serial(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        let mut out = Vec::new();
        py.detach(|| self.engine.encode_ordinary_serial(text, &mut out))
            .map_err(|e| to_py(py, e))?;
        Ok(out)
    }

    /// Lists of IDs per text. With more than one worker, workers encode chunks without
    /// the GIL while this thread turns finished chunks into Python lists, in order:
    /// building Python ints is the one serial step, so it overlaps the parallel work.
    #[pyo3(signature = (texts, allowed=None, threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed: Option<&PySpecialMatcher>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let n = texts.len();
        let workers = threads
            .unwrap_or_else(rayon::current_num_threads)
            .clamp(1, super::max_threads());
        if workers == 1 || n < 2 {
            let lists = self.encode_all(py, &texts, allowed, threads)?;
            let out = PyList::empty(py);
            for ids in &lists {
                out.append(self.id_list(py, ids)?)?;
            }
            return Ok(out);
        }
        let chunk = (n / (workers * 16)).clamp(1, 256);
        let n_chunks = n.div_ceil(chunk);
        let texts = Arc::new(texts);
        let (tx, rx) = mpsc::channel::<(usize, Result<Vec<Vec<u32>>, CoreError>)>();
        for c in 0..n_chunks {
            let (texts, engine, tx) = (texts.clone(), self.engine.clone(), tx.clone());
            let matcher = allowed.map(|m| m.inner.clone());
            let job = move || {
                let range = c * chunk..((c + 1) * chunk).min(texts.len());
                let result = range
                    .map(|i| {
                        let mut out = Vec::with_capacity(texts[i].len() / 3 + 1);
                        engine
                            .encode(&texts[i], matcher.as_deref(), &mut out)
                            .map(|_| out)
                    })
                    .collect();
                // Release the texts before reporting, so the last reference (and the
                // Python decrefs) stays with the thread that holds the GIL.
                drop(texts);
                let _ = tx.send((c, result));
            };
            spawn_in_pool(threads, job)?;
        }
        drop(tx);
        let list = PyList::empty(py);
        let mut pending: Vec<Option<Vec<Vec<u32>>>> = (0..n_chunks).map(|_| None).collect();
        let mut next = 0;
        let mut rx = rx;
        while next < n_chunks {
            // The receiver is Send but not Sync: move it through the GIL-free section.
            let (back, message) = py.detach(move || {
                let m = rx.recv();
                (rx, m)
            });
            rx = back;
            let (c, result) = message
                .map_err(|_| PyRuntimeError::new_err("an encoding worker stopped unexpectedly"))?;
            pending[c] = Some(result.map_err(|e| to_py(py, e))?);
            while next < n_chunks {
                let Some(done) = pending[next].take() else {
                    break;
                };
                for ids in done {
                    list.append(self.id_list(py, &ids)?)?;
                }
                next += 1;
            }
        }
        drop(texts);
        Ok(list)
    }

    /// Flat IDs and per-text offsets (len(texts) + 1) as numpy arrays.
    #[pyo3(signature = (texts, allowed=None, threads=None))]
    #[allow(clippy::type_complexity)]
    fn encode_batch_flat<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed: Option<&PySpecialMatcher>,
        threads: Option<usize>,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<i64>>)> {
        let lists = self.encode_all(py, &texts, allowed, threads)?;
        let (ids, offsets) = py.detach(|| flatten(&lists));
        Ok((ids.into_pyarray(py), offsets.into_pyarray(py)))
    }

    /// `encode_batch_flat` plus, per text, the SHA-256 of its UTF-8 (an `(n, 32)` uint8
    /// array) and its UTF-8 size (int64): each worker hashes a text right after
    /// encoding it, while its bytes are still in cache, so a corpus manifest need not
    /// read the texts again.
    #[pyo3(signature = (texts, allowed=None, threads=None))]
    #[allow(clippy::type_complexity)]
    fn encode_batch_flat_digests<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed: Option<&PySpecialMatcher>,
        threads: Option<usize>,
    ) -> PyResult<(
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray2<u8>>,
        Bound<'py, PyArray1<i64>>,
    )> {
        let m = matcher(allowed);
        let result = py.detach(|| {
            in_pool(threads, || {
                texts
                    .par_iter()
                    .map(|t| {
                        let mut out = Vec::with_capacity(t.len() / 3 + 1);
                        self.engine.encode(t, m, &mut out)?;
                        let digest: [u8; 32] = Sha256::digest(t.as_bytes()).into();
                        Ok((out, digest))
                    })
                    .collect::<Result<Vec<_>, CoreError>>()
            })
        })?;
        let encoded = result.map_err(|e| to_py(py, e))?;
        let (ids, offsets, digests, sizes) = py.detach(|| {
            let mut ids = Vec::with_capacity(encoded.iter().map(|(l, _)| l.len()).sum());
            let mut offsets = Vec::with_capacity(encoded.len() + 1);
            offsets.push(0i64);
            let mut digests = Vec::with_capacity(encoded.len() * 32);
            for (list, digest) in &encoded {
                ids.extend_from_slice(list);
                offsets.push(ids.len() as i64);
                digests.extend_from_slice(digest);
            }
            let sizes: Vec<i64> = texts.iter().map(|t| t.len() as i64).collect();
            (ids, offsets, digests, sizes)
        });
        let digests = digests.into_pyarray(py).reshape([texts.len(), 32])?;
        Ok((
            ids.into_pyarray(py),
            offsets.into_pyarray(py),
            digests,
            sizes.into_pyarray(py),
        ))
    }

    /// IDs and UTF-8 byte offsets (starts, ends) into `text`, as numpy arrays. Special
    /// spellings overlapping an `untrusted` byte range (any order, may overlap) stay text.
    #[pyo3(signature = (text, allowed=None, untrusted=None))]
    #[allow(clippy::type_complexity)]
    fn encode_with_offsets<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Option<&PySpecialMatcher>,
        untrusted: Option<Vec<(usize, usize)>>,
    ) -> PyResult<(
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<u32>>,
    )> {
        let (ids, offs) = self.offsets(py, text, allowed, untrusted, false)?;
        let (starts, ends): (Vec<u32>, Vec<u32>) = offs.into_iter().unzip();
        Ok((
            ids.into_pyarray(py),
            starts.into_pyarray(py),
            ends.into_pyarray(py),
        ))
    }

    /// IDs and offsets as Python lists; offsets flat `[s0, e0, s1, e1, ...]` in codepoints
    /// (a token holding part of a character covers the whole character) or UTF-8 bytes.
    /// Flat ints reuse cached objects and are invisible to the cyclic GC, unlike a tuple
    /// per token, which is what makes building them cheap.
    #[pyo3(signature = (text, allowed=None, untrusted=None, codepoints=true))]
    fn encode_offsets_lists<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Option<&PySpecialMatcher>,
        untrusted: Option<Vec<(usize, usize)>>,
        codepoints: bool,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let (ids, offs) = self.offsets(py, text, allowed, untrusted, codepoints)?;
        let flat: Vec<u32> = offs.iter().flat_map(|&(a, b)| [a, b]).collect();
        let offsets = self.id_list(py, &flat)?;
        Ok((self.id_list(py, &ids)?, offsets))
    }

    /// A Python list of an ID array made of the cached ints: ``ndarray.tolist()`` makes
    /// and later frees an int object per ID, this takes a reference each (3x faster on
    /// long chat records, whose ID lists ``render_batch``'s calling thread builds).
    fn id_array_list<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.id_list(py, ids.as_slice()?)
    }

    /// Decoded bytes (SentencePiece: byte pieces kept raw).
    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self
            .engine
            .decode_bytes(ids.as_slice()?)
            .map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Decoded text with ill-formed bytes replaced (SentencePiece's own rule where the
    /// engine has `sentencepiece_decode`).
    fn decode_text<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyString>> {
        let text = self
            .engine
            .decode_text(ids.as_slice()?)
            .map_err(|e| to_py(py, e))?;
        Ok(PyString::new(py, &text))
    }

    /// The `n` most probable segmentations of `text` with their log probabilities (the
    /// `nbest` capability: Unigram models).
    fn nbest(&self, py: Python<'_>, text: &str, n: usize) -> PyResult<Vec<(Vec<u32>, f64)>> {
        py.detach(|| self.engine.nbest(text, n))
            .map_err(|e| to_py(py, e))
    }

    /// log P(text) over all segmentations (the `log_likelihood` capability).
    fn log_likelihood(&self, py: Python<'_>, text: &str) -> PyResult<f64> {
        py.detach(|| self.engine.log_likelihood(text))
            .map_err(|e| to_py(py, e))
    }

    /// A segmentation drawn from P(z)^alpha with the counter-based stream of `key`
    /// (seed, epoch, sample, view) (the `sample` capability).
    fn sample(
        &self,
        py: Python<'_>,
        text: &str,
        alpha: f64,
        key: (u64, u64, u64, u64),
    ) -> PyResult<Vec<u32>> {
        let stream = crate::rng::stream_key(key.0, key.1, key.2, key.3);
        let mut draws = Draws::Counter {
            stream,
            occurrence: 0,
        };
        py.detach(|| self.engine.sample(text, alpha, &mut draws))
            .map_err(|e| to_py(py, e))
    }

    /// `count` successive segmentations of `text` drawn from P(z)^alpha with one
    /// `lcg64_v1` stream started at `seed` (one draw per segment, lexicographic order).
    fn sample_lcg64(
        &self,
        py: Python<'_>,
        text: &str,
        alpha: f64,
        seed: u64,
        count: usize,
    ) -> PyResult<Vec<Vec<u32>>> {
        let mut draws = Draws::Lcg64(crate::rng::Lcg64::new(seed));
        py.detach(|| {
            (0..count)
                .map(|_| self.engine.sample(text, alpha, &mut draws))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| to_py(py, e))
    }

    /// The bytes of one ID (a piece, or a special token's spelling), or None.
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.engine.token_bytes(id).map(|b| PyBytes::new(py, b))
    }

    /// Piece text of each ID (U+FFFD for incomplete UTF-8), as Python strings.
    fn piece_strs<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyList>> {
        let strs = self.strs.get_or_init(|| {
            (0..self.engine.id_space())
                .map(|i| {
                    let piece = self.engine.token_bytes(i).unwrap_or(&[]);
                    PyString::new(py, &String::from_utf8_lossy(piece)).unbind()
                })
                .collect()
        });
        let ids = ids.as_slice()?;
        if let Some(&bad) = ids.iter().find(|&&i| i as usize >= strs.len()) {
            return Err(to_py(
                py,
                CoreError::UnknownToken(format!("token ID {bad} is not in this tokenizer")),
            ));
        }
        PyList::new(py, ids.iter().map(|&i| strs[i as usize].bind(py).clone()))
    }

    /// The normalized text, as `SentencePieceProcessor.normalize` returns it.
    fn normalize<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyString>> {
        let out = self.engine.normalize(text).map_err(|e| to_py(py, e))?;
        Ok(PyString::new(py, &String::from_utf8_lossy(&out)))
    }

    /// `normalize` plus, per normalized byte, the input byte offset it came from (and
    /// one final entry); empty lists for an all-space input.
    fn normalize_aligned<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<(Bound<'py, PyString>, Vec<u32>)> {
        let (out, map) = self
            .engine
            .normalize_aligned(text)
            .map_err(|e| to_py(py, e))?;
        Ok((PyString::new(py, &String::from_utf8_lossy(&out)), map))
    }

    /// The ID of a piece string (SentencePiece: the unknown piece's ID when absent;
    /// pipelines: None when no piece or special token is spelled so).
    fn piece_to_id(&self, piece: &str) -> Option<u32> {
        self.engine.piece_to_id(piece.as_bytes())
    }

    /// Number of model (non-special) IDs.
    fn model_size(&self) -> usize {
        self.engine.vocab().len()
    }

    /// ID created by merging (left, right), if that pair has a rule.
    fn merge_result(&self, left: u32, right: u32) -> Option<u32> {
        self.engine.merge_result(left, right)
    }

    /// Merge rules in rank order (empty without the `merges` capability).
    fn merges(&self) -> Vec<(u32, u32)> {
        self.engine.merges().to_vec()
    }

    /// Model pieces (special tokens excluded).
    fn vocab<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.engine
            .vocab()
            .iter()
            .map(|b| PyBytes::new(py, b))
            .collect()
    }
}

/// The name of every engine capability, in declaration order (`crate::engine::Capability`):
/// what Python's `Capability` enum must list.
#[pyfunction]
fn capability_names() -> Vec<&'static str> {
    crate::engine::Capability::ALL
        .iter()
        .map(|c| c.name())
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    m.add_function(wrap_pyfunction!(capability_names, m)?)?;
    // The byte-level constructors' historical home: `BpeCore.from_merges(...)` etc.
    m.add("BpeCore", m.getattr("Engine")?)?;
    Ok(())
}
