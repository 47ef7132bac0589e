//! The SentencePiece constructor (Unigram and BPE models): builds the one `Engine`
//! class (`engine.rs`), so `tokenpact.Tokenizer` drives every model the same way.

use pyo3::prelude::*;

use super::engine::PyEngine;
use super::to_py;
use crate::engine::Engine;
use crate::sentencepiece::normalizer::NormalizerConfig;
use crate::sentencepiece::{SentencePieceCore as Core, SentencePieceSpec};

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

/// An engine over a SentencePiece model (the fields of its `ModelProto`). Named like a
/// class because it was one: Python call sites build it as `SentencePieceCore(...)`.
#[pyfunction]
#[pyo3(name = "SentencePieceCore")]
#[pyo3(signature = (pieces, scores, types, model_type, byte_fallback, normalizer, denormalizer, unk_surface, *, segment_cache=true))]
#[allow(clippy::too_many_arguments)]
fn sentencepiece_core(
    py: Python<'_>,
    pieces: Vec<Vec<u8>>,
    scores: Vec<f32>,
    types: Vec<u8>,
    model_type: String,
    byte_fallback: bool,
    normalizer: NormSpec,
    denormalizer: Option<NormSpec>,
    unk_surface: Vec<u8>,
    segment_cache: bool,
) -> PyResult<PyEngine> {
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
        segment_cache,
    };
    let core = py.detach(|| Core::new(spec)).map_err(|e| to_py(py, e))?;
    Ok(Engine::from(core).into())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sentencepiece_core, m)?)
}
