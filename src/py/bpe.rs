//! Bindings for pre-tokenization and Hugging Face BPE tables (the encoder class is
//! `engine.rs`; the trainer is `bpe_train.rs`).

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::to_py;
use crate::error::CoreError;
use crate::pretok::Pretokenizer;

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

/// Version of Python's `regex` whose Unicode tables the built-in scanners embed.
#[pyfunction]
fn unicode_tables_version() -> &'static str {
    crate::pretok::classes::tables_version()
}

/// GPT-2's byte alphabet: the character that spells byte `b` is item `b` (Hugging Face's
/// byte-level vocabularies are written in it).
#[pyfunction]
fn gpt2_byte_alphabet() -> String {
    crate::bpe::hf::bytes_to_unicode().iter().collect()
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
    m.add_function(wrap_pyfunction!(gpt2_byte_alphabet, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(unicode_tables_version, m)?)?;
    Ok(())
}
