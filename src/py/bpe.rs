//! Bindings for pre-tokenization and the byte-level BPE encoder (trainer: bpe_train.rs).

use std::sync::{mpsc, Arc, OnceLock};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyInt, PyList, PyString};
use rayon::prelude::*;

use super::{cached_id_list, flatten, in_pool, spawn_in_pool, to_py};
use crate::bpe::model::BpeModel;
use crate::error::CoreError;
use crate::pretok::chain::PretokChain;
use crate::pretok::Pretokenizer;
use crate::special::{AddedFlags, SpecialMatcher};
use crate::tokenizer::CoreTokenizer;

#[pyfunction]
#[pyo3(signature = (text, pattern, name=None, byte_offsets=false))]
fn pretokenize(
    py: Python<'_>,
    text: &str,
    pattern: &str,
    name: Option<&str>,
    byte_offsets: bool,
) -> PyResult<Vec<(usize, usize)>> {
    let pretok = Pretokenizer::new(name, pattern).map_err(|e| to_py(py, e))?;
    let spans = py.detach(|| pretok.spans(text)).map_err(|e| to_py(py, e))?;
    Ok(if byte_offsets {
        spans
    } else {
        crate::offsets::char_spans(text, &spans)
    })
}

#[pyclass(frozen, module = "tokenpact._native", name = "SpecialMatcher")]
pub(crate) struct PySpecialMatcher {
    pub(crate) inner: Arc<SpecialMatcher>,
    /// The tokenizer whose normalizer `find_first` applies for `normalized` tokens.
    core: Option<Arc<CoreTokenizer>>,
}

#[pymethods]
impl PySpecialMatcher {
    /// `flags[i]` = (single_word, lstrip, rstrip, normalized) of `specials[i]` (Hugging
    /// Face's added-token flags; all false when omitted). `core` supplies the normalizer
    /// that `normalized` spellings and texts go through.
    #[new]
    #[pyo3(signature = (specials, flags=None, core=None))]
    fn new(
        py: Python<'_>,
        specials: Vec<(String, u32)>,
        flags: Option<Vec<(bool, bool, bool, bool)>>,
        core: Option<&BpeCore>,
    ) -> PyResult<Self> {
        let flags = flags.unwrap_or_else(|| vec![(false, false, false, false); specials.len()]);
        if flags.len() != specials.len() {
            return Err(to_py(
                py,
                CoreError::Config(format!(
                    "{} flag tuples for {} added tokens; give one per token",
                    flags.len(),
                    specials.len()
                )),
            ));
        }
        let tokens = specials
            .into_iter()
            .zip(flags)
            .map(
                |((content, id), (single_word, lstrip, rstrip, normalized))| {
                    let f = AddedFlags {
                        single_word,
                        lstrip,
                        rstrip,
                        normalized,
                    };
                    (content, id, f)
                },
            )
            .collect();
        let core = core.map(|c| c.inner.clone());
        let normalizer = core.as_ref().and_then(|c| c.normalizer.as_ref());
        let inner = SpecialMatcher::with_flags(tokens, normalizer).map_err(|e| to_py(py, e))?;
        Ok(PySpecialMatcher {
            inner: inner.into(),
            core,
        })
    }

    /// (byte start, spelling) of the first special spelling in `text`, or None. A
    /// `normalized` token is also looked for in the normalized text (start 0 then).
    fn find_first(&self, py: Python<'_>, text: &str) -> PyResult<Option<(usize, String)>> {
        if let Some((s, _, i)) = self.inner.find_first(text) {
            return Ok(Some((s, self.inner.contents[i].clone())));
        }
        if !self.inner.has_normalized() {
            return Ok(None);
        }
        let mut n = crate::normalize::NormalizedString::new(text);
        if let Some(normalizer) = self.core.as_ref().and_then(|c| c.normalizer.as_ref()) {
            normalizer.apply(&mut n).map_err(|e| to_py(py, e))?;
        }
        Ok(self
            .inner
            .find_first_normalized(&n.text)
            .map(|c| (0, c.to_owned())))
    }
}

#[pyclass(frozen, module = "tokenpact._native")]
pub(crate) struct BpeCore {
    pub(crate) inner: Arc<CoreTokenizer>,
    /// One Python int per ID, made once: returning a list of IDs then costs a reference
    /// count per token instead of allocating an int object per token.
    pub(crate) ints: OnceLock<Vec<Py<PyInt>>>,
    /// One Python str per ID (its bytes decoded with U+FFFD for partial characters),
    /// for the `tokens` field of structured encodings.
    pub(crate) strs: OnceLock<Vec<Py<PyString>>>,
}

// One pre-tokenizer step from Python: (regex source, built-in name, behaviour, invert).
pub(crate) use crate::pretok::chain::StepSpec;

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

fn build_core(
    py: Python<'_>,
    model: Result<BpeModel, CoreError>,
    name: Option<&str>,
    pattern: &str,
    specials: Vec<(String, u32)>,
    steps: Option<Vec<StepSpec>>,
) -> PyResult<BpeCore> {
    let model = model.map_err(|e| to_py(py, e))?;
    let pretok = build_chain(name, pattern, steps).map_err(|e| to_py(py, e))?;
    let inner = CoreTokenizer::new(model, pretok, specials).map_err(|e| to_py(py, e))?;
    Ok(BpeCore {
        inner: Arc::new(inner),
        ints: OnceLock::new(),
        strs: OnceLock::new(),
    })
}

impl BpeCore {
    fn ints(&self, py: Python<'_>) -> &Vec<Py<PyInt>> {
        self.ints.get_or_init(|| {
            let top = self.inner.id_space();
            (0..top)
                .map(|i| i.into_pyobject(py).map(|b| b.unbind()).expect("int"))
                .collect()
        })
    }

    pub(crate) fn id_list<'py>(
        &self,
        py: Python<'py>,
        ids: &[u32],
    ) -> PyResult<Bound<'py, PyList>> {
        let ints = self.ints(py);
        cached_id_list(py, ints, ids)
    }

    fn encode_all(
        &self,
        py: Python<'_>,
        texts: &[PyBackedStr],
        allowed: Option<&PySpecialMatcher>,
        threads: Option<usize>,
    ) -> PyResult<Vec<Vec<u32>>> {
        let matcher = allowed.map(|m| &*m.inner);
        let result = py.detach(|| {
            in_pool(threads, || {
                texts
                    .par_iter()
                    .map(|t| {
                        let mut out = Vec::with_capacity(t.len() / 3 + 1);
                        self.inner.encode(t, matcher, &mut out).map(|_| out)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
        })?;
        result.map_err(|e| to_py(py, e))
    }
}

#[pymethods]
impl BpeCore {
    #[staticmethod]
    #[pyo3(signature = (merges, pattern, name, specials, steps=None))]
    fn from_merges(
        py: Python<'_>,
        merges: Vec<(u32, u32)>,
        pattern: &str,
        name: Option<&str>,
        specials: Vec<(String, u32)>,
        steps: Option<Vec<StepSpec>>,
    ) -> PyResult<Self> {
        let model = py.detach(|| BpeModel::from_merges(&merges));
        build_core(py, model, name, pattern, specials, steps)
    }

    #[staticmethod]
    #[pyo3(signature = (vocab, records, pattern, name, specials, steps=None, ignore_merges=false))]
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
    ) -> PyResult<Self> {
        let vocab: Vec<Vec<u8>> = vocab.iter().map(|b| b.as_bytes().to_vec()).collect();
        let model = py.detach(|| BpeModel::from_records(vocab, &records, ignore_merges));
        build_core(py, model, name, pattern, specials, steps)
    }

    #[staticmethod]
    #[pyo3(signature = (ranks, pattern, name, specials, steps=None, id_offset=0))]
    fn from_ranks(
        py: Python<'_>,
        ranks: Vec<Bound<'_, PyBytes>>,
        pattern: &str,
        name: Option<&str>,
        specials: Vec<(String, u32)>,
        steps: Option<Vec<StepSpec>>,
        id_offset: u32,
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
        build_core(py, model, name, pattern, specials, steps)
    }

    #[pyo3(signature = (text, allowed=None))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Option<&PySpecialMatcher>,
    ) -> PyResult<Bound<'py, PyList>> {
        let matcher = allowed.map(|m| &*m.inner);
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        // Small inputs are not worth the cost of releasing and re-taking the GIL.
        let result = if text.len() < 4096 {
            self.inner.encode(text, matcher, &mut out)
        } else {
            py.detach(|| self.inner.encode(text, matcher, &mut out))
        };
        result.map_err(|e| to_py(py, e))?;
        self.id_list(py, &out)
    }

    /// The single-threaded definition of ordinary encoding (a test hook: long inputs
    /// take a parallel path in `encode` that must give exactly these IDs).
    fn encode_serial(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        let mut out = Vec::new();
        py.detach(|| self.inner.encode_ordinary_serial(text, &mut out))
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
            let (texts, core, tx) = (texts.clone(), self.inner.clone(), tx.clone());
            let matcher = allowed.map(|m| m.inner.clone());
            let job = move || {
                let range = c * chunk..((c + 1) * chunk).min(texts.len());
                let result = range
                    .map(|i| {
                        let mut out = Vec::with_capacity(texts[i].len() / 3 + 1);
                        core.encode(&texts[i], matcher.as_deref(), &mut out)
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

    /// IDs and UTF-8 byte offsets (starts, ends) into `text`, as numpy arrays.
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
        let matcher = allowed.map(|m| &*m.inner);
        let (mut ids, mut offs) = (Vec::new(), Vec::new());
        let mut untrusted = untrusted.unwrap_or_default();
        untrusted.sort_unstable();
        py.detach(|| {
            self.inner
                .encode_with_offsets(text, matcher, &untrusted, &mut ids, &mut offs)
        })
        .map_err(|e| to_py(py, e))?;
        let (starts, ends): (Vec<u32>, Vec<u32>) = offs.into_iter().unzip();
        Ok((
            ids.into_pyarray(py),
            starts.into_pyarray(py),
            ends.into_pyarray(py),
        ))
    }

    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let ids = ids.as_slice()?;
        let bytes = self.inner.decode_bytes(ids).map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.inner.token_bytes(id).map(|b| PyBytes::new(py, b))
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
        let matcher = allowed.map(|m| &*m.inner);
        let mut untrusted = untrusted.unwrap_or_default();
        untrusted.sort_unstable();
        let (mut ids, mut offs) = (Vec::new(), Vec::new());
        py.detach(|| {
            let r = self
                .inner
                .encode_with_offsets(text, matcher, &untrusted, &mut ids, &mut offs);
            if r.is_ok() && codepoints {
                crate::offsets::bytes_to_chars(text, &mut offs);
            }
            r
        })
        .map_err(|e| to_py(py, e))?;
        let flat: Vec<u32> = offs.iter().flat_map(|&(a, b)| [a, b]).collect();
        let offsets = self.id_list(py, &flat)?;
        Ok((self.id_list(py, &ids)?, offsets))
    }

    /// Piece text of each ID (U+FFFD for incomplete UTF-8), as Python strings.
    fn piece_strs<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyList>> {
        let strs = self.strs.get_or_init(|| {
            let top = self.inner.id_space();
            (0..top)
                .map(|i| {
                    let piece = self.inner.token_bytes(i).unwrap_or(&[]);
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

    /// Number of model (non-special) IDs.
    fn model_size(&self) -> usize {
        self.inner.model.vocab().len()
    }

    /// ID created by merging (left, right), if that pair has a rule.
    fn merge_result(&self, left: u32, right: u32) -> Option<u32> {
        self.inner
            .model
            .as_bpe()?
            .merge_of(left, right)
            .map(|(_, new_id)| new_id)
    }

    fn merges(&self) -> Vec<(u32, u32)> {
        self.inner
            .model
            .as_bpe()
            .map_or_else(Vec::new, |m| m.merge_list.clone())
    }

    fn vocab<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.inner
            .model
            .vocab()
            .iter()
            .map(|b| PyBytes::new(py, b))
            .collect()
    }
}

/// Version of Python's `regex` whose Unicode tables the built-in scanners embed.
#[pyfunction]
fn unicode_tables_version() -> &'static str {
    crate::pretok::classes::tables_version()
}

/// Pieces and merge records of a Hugging Face BPE model: byte-level (`char_prefix` None)
/// or over characters (`char_prefix`: the `continuing_subword_prefix`, possibly "").
#[pyfunction]
#[allow(clippy::type_complexity)]
#[pyo3(signature = (vocab, merges, added, char_prefix=None))]
fn hf_byte_level_tables<'py>(
    py: Python<'py>,
    vocab: &Bound<'py, PyDict>,
    merges: &Bound<'py, PyList>,
    added: Vec<(PyBackedStr, u32)>,
    char_prefix: Option<String>,
) -> PyResult<(Vec<Bound<'py, PyBytes>>, Vec<(u32, u32, u32)>)> {
    let mut entries: Vec<(PyBackedStr, u32)> = Vec::with_capacity(vocab.len());
    for (k, v) in vocab.iter() {
        entries.push((k.extract()?, v.extract()?));
    }
    // A merge is "left right" (split at the first space) or a [left, right] pair.
    let mut pairs: Vec<(PyBackedStr, Option<PyBackedStr>, usize)> =
        Vec::with_capacity(merges.len());
    for (i, item) in merges.iter().enumerate() {
        let bad = |what: String| {
            to_py(
                py,
                CoreError::Artifact(format!(
                    "model.merges[{i}]: {what}; write \"left right\" or [left, right]"
                )),
            )
        };
        if let Ok(s) = item.extract::<PyBackedStr>() {
            let Some(at) = s.find(' ') else {
                let text: &str = &s;
                return Err(bad(format!(
                    "{text:?} is not two pieces separated by a space"
                )));
            };
            pairs.push((s, None, at));
        } else {
            let mut parts: Vec<PyBackedStr> = item.extract().map_err(|_| {
                bad(format!(
                    "{} is not a merge",
                    item.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                ))
            })?;
            if parts.len() != 2 {
                return Err(bad(format!(
                    "a merge has {} parts; each merge joins two pieces",
                    parts.len()
                )));
            }
            let r = parts.pop();
            let l = parts.pop().expect("two parts");
            pairs.push((l, r, 0));
        }
    }
    let result = py.detach(|| {
        let vocab: Vec<(&str, u32)> = entries.iter().map(|(k, v)| (&**k, *v)).collect();
        let added: rustc_hash::FxHashMap<&str, u32> =
            added.iter().map(|(k, v)| (&**k, *v)).collect();
        let merges: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b, at)| match b {
                Some(b) => (&**a, &**b),
                None => (&a[..*at], &a[*at + 1..]),
            })
            .collect();
        let byte_level = char_prefix.is_none();
        let strip = char_prefix.as_ref().map_or(0, |p| p.len());
        let pieces = crate::bpe::hf::pieces(&vocab, &added, byte_level)?;
        let records = crate::bpe::hf::merge_records(&vocab, &merges, strip)?;
        Ok::<_, CoreError>((pieces, records))
    });
    let (pieces, records) = result.map_err(|e| to_py(py, e))?;
    Ok((
        pieces.iter().map(|p| PyBytes::new(py, p)).collect(),
        records,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(hf_byte_level_tables, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(unicode_tables_version, m)?)?;
    m.add_class::<BpeCore>()?;
    m.add_class::<PySpecialMatcher>()?;
    Ok(())
}
