//! Bindings for SentencePiece models (Unigram and BPE): the same method names as
//! `BpeCore`, so `tokenpact.Tokenizer` holds either.

use std::sync::{Arc, OnceLock};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyInt, PyList, PyString};
use rayon::prelude::*;

use super::bpe::PySpecialMatcher;
use super::{cached_id_list, flatten, in_pool, to_py};
use crate::sentencepiece::normalizer::NormalizerConfig;
use crate::sentencepiece::{SentencePieceCore as Core, SentencePieceSpec};
use crate::special::SpecialMatcher;

/// (charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces,
/// treat_whitespace_as_suffix)
pub(super) type NormSpec = (Vec<u8>, bool, bool, bool, bool);

pub(super) fn norm(spec: NormSpec) -> (NormalizerConfig, Vec<u8>) {
    let (map, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, suffix) = spec;
    let cfg = NormalizerConfig {
        add_dummy_prefix,
        remove_extra_whitespaces,
        escape_whitespaces,
        treat_whitespace_as_suffix: suffix,
    };
    (cfg, map)
}

#[pyclass(frozen, module = "tokenpact._native")]
pub(crate) struct SentencePieceCore {
    /// Shared so that runtime engines (incremental decoders) can hold the model.
    pub(crate) inner: Arc<Core>,
    /// One Python int per ID, made once (see BpeCore::id_list).
    ints: OnceLock<Vec<Py<PyInt>>>,
}

fn matcher(allowed: Option<&PySpecialMatcher>) -> Option<&SpecialMatcher> {
    allowed.map(|m| &*m.inner)
}

impl SentencePieceCore {
    fn id_list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        let ints = self.ints.get_or_init(|| {
            (0..self.inner.piece_count() as u32)
                .map(|i| i.into_pyobject(py).map(|b| b.unbind()).expect("int"))
                .collect()
        });
        cached_id_list(py, ints, ids)
    }

    fn encode_all(
        &self,
        py: Python<'_>,
        texts: &[PyBackedStr],
        allowed: Option<&PySpecialMatcher>,
        threads: Option<usize>,
    ) -> PyResult<Vec<Vec<u32>>> {
        let m = matcher(allowed);
        py.detach(|| {
            in_pool(threads, || {
                texts
                    .par_iter()
                    .map(|t| {
                        let mut out = Vec::with_capacity(t.len() / 3 + 1);
                        self.inner.encode(t, m, &[], &mut out, None);
                        out
                    })
                    .collect()
            })
        })
    }
}

#[pymethods]
impl SentencePieceCore {
    #[new]
    #[pyo3(signature = (pieces, scores, types, model_type, byte_fallback, normalizer, denormalizer, unk_surface))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        pieces: Vec<Vec<u8>>,
        scores: Vec<f32>,
        types: Vec<u8>,
        model_type: String,
        byte_fallback: bool,
        normalizer: NormSpec,
        denormalizer: Option<NormSpec>,
        unk_surface: Vec<u8>,
    ) -> PyResult<Self> {
        let (normalizer, charsmap) = norm(normalizer);
        let spec = SentencePieceSpec {
            pieces,
            scores,
            types,
            model_type,
            byte_fallback,
            normalizer,
            charsmap,
            denormalizer: denormalizer.map(norm),
            unk_surface,
        };
        let inner = Arc::new(py.detach(|| Core::new(spec)).map_err(|e| to_py(py, e))?);
        Ok(SentencePieceCore {
            inner,
            ints: OnceLock::new(),
        })
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
        // Small inputs are not worth releasing and re-taking the GIL.
        if text.len() < 4096 {
            self.inner.encode(text, m, &[], &mut out, None);
        } else {
            py.detach(|| self.inner.encode(text, m, &[], &mut out, None));
        }
        self.id_list(py, &out)
    }

    #[pyo3(signature = (texts, allowed=None, threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed: Option<&PySpecialMatcher>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let lists = self.encode_all(py, &texts, allowed, threads)?;
        let out = PyList::empty(py);
        for ids in &lists {
            out.append(self.id_list(py, ids)?)?;
        }
        Ok(out)
    }

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
        let (ids, offsets) = flatten(&lists);
        Ok((ids.into_pyarray(py), offsets.into_pyarray(py)))
    }

    /// IDs and UTF-8 byte offsets (starts, ends) into `text`, as SentencePiece reports
    /// `begin`/`end`.
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
        let m = matcher(allowed);
        let mut untrusted = untrusted.unwrap_or_default();
        untrusted.sort_unstable();
        let (mut ids, mut offs) = (Vec::new(), Vec::new());
        py.detach(|| {
            self.inner
                .encode(text, m, &untrusted, &mut ids, Some(&mut offs))
        });
        let (starts, ends): (Vec<u32>, Vec<u32>) = offs.into_iter().unzip();
        Ok((
            ids.into_pyarray(py),
            starts.into_pyarray(py),
            ends.into_pyarray(py),
        ))
    }

    /// Decoded bytes (SentencePiece's rules; byte pieces kept raw).
    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self
            .inner
            .decode(ids.as_slice()?, false)
            .map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Decoded text exactly as SentencePiece returns it (ill-formed bytes -> U+FFFD each).
    fn decode_text<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyString>> {
        let bytes = self
            .inner
            .decode(ids.as_slice()?, true)
            .map_err(|e| to_py(py, e))?;
        Ok(PyString::new(py, &String::from_utf8_lossy(&bytes)))
    }

    /// The piece string of an ID (SentencePiece's `id_to_piece`), as UTF-8 bytes.
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.inner
            .pieces
            .get(id as usize)
            .map(|b| PyBytes::new(py, b))
    }

    /// The normalized text, as `SentencePieceProcessor.normalize` returns it.
    fn normalize<'py>(&self, py: Python<'py>, text: &str) -> Bound<'py, PyString> {
        let out = self.inner.normalize(text);
        PyString::new(py, &String::from_utf8_lossy(&out))
    }

    fn piece_to_id(&self, piece: &str) -> u32 {
        self.inner.piece_to_id(piece.as_bytes())
    }

    fn model_size(&self) -> usize {
        self.inner.piece_count()
    }

    fn merges(&self) -> Vec<(u32, u32)> {
        Vec::new()
    }

    fn vocab<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.inner
            .pieces
            .iter()
            .map(|b| PyBytes::new(py, b))
            .collect()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SentencePieceCore>()
}
