//! Bindings for general pipelines (normalizer + any model + decoder); the resulting
//! object is the one `Engine` class, so `Tokenizer` drives every model one way.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::engine::{build_chain, PyEngine};
use super::to_py;
use crate::engine::Engine;
use crate::pipeline::build;
use crate::pretok::chain::StepSpec;
use crate::tokenizer::CoreTokenizer;

/// A core from a pipeline config (see `crate::pipeline::build`) and split steps.
#[pyfunction]
#[pyo3(signature = (config, vocab, records, specials, steps, controls=Vec::new()))]
fn pipeline_core(
    py: Python<'_>,
    config: &str,
    vocab: Vec<Bound<'_, PyBytes>>,
    records: Vec<(u32, u32, u32)>,
    specials: Vec<(String, u32)>,
    steps: Vec<StepSpec>,
    controls: Vec<u32>,
) -> PyResult<PyEngine> {
    let vocab: Vec<Vec<u8>> = vocab.iter().map(|b| b.as_bytes().to_vec()).collect();
    let parts = py
        .detach(|| build(config, vocab, &records))
        .map_err(|e| to_py(py, e))?;
    let chain = build_chain(None, "", Some(steps)).map_err(|e| to_py(py, e))?;
    let inner = CoreTokenizer::with_pipeline(
        parts.model,
        parts.normalizer,
        chain,
        parts.decoder,
        specials,
    )
    .map_err(|e| to_py(py, e))?
    .forbid_controls(&controls);
    Ok(Engine::from(inner).into())
}

/// Normalized text and, per normalized byte, the original byte range (for tests and
/// `Tokenizer.normalize`).
#[pyfunction]
fn normalize_str(py: Python<'_>, node: &str, text: &str) -> PyResult<(String, Vec<(u32, u32)>)> {
    let value: serde_json::Value = serde_json::from_str(node)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let normalizer = crate::normalize::Normalizer::from_json(&value).map_err(|e| to_py(py, e))?;
    let mut s = crate::normalize::NormalizedString::new(text);
    normalizer.apply(&mut s).map_err(|e| to_py(py, e))?;
    Ok((s.text, s.align))
}

/// Raw codepoint spans of the pre-tokens of `text` under the engine's normalizer and
/// pre-tokenizer chain (engines with the `pretokenize` capability).
#[pyfunction]
fn core_pretokenize(py: Python<'_>, core: &PyEngine, text: &str) -> PyResult<Vec<(u32, u32)>> {
    let mut spans = py
        .detach(|| core.engine.pretokenize(text))
        .map_err(|e| to_py(py, e))?;
    crate::offsets::bytes_to_chars(text, &mut spans);
    Ok(spans)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline_core, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_str, m)?)?;
    Ok(())
}
