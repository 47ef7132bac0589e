//! Bindings for corpus preparation: MinHash signatures, LSH band keys and candidate
//! groups, cluster verification, and the corpus manifest's document records. Conversion
//! and GIL release only.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyBytes;

use super::{in_pool, to_py};
use crate::data::corpus_records::{
    corpus_records_json as records_json, corpus_records_json_digested as records_json_digested,
    RecordColumns,
};
use crate::data::lsh::{band_keys, candidate_groups, verify_groups};
use crate::data::minhash::{signatures, Permutations, ShingleKind, Shingling};
use crate::error::CoreError;

fn shingling(py: Python<'_>, kind: &str, n: usize) -> PyResult<Shingling> {
    ShingleKind::parse(kind)
        .and_then(|k| Shingling::new(k, n))
        .map_err(|e| to_py(py, e))
}

fn shape_err(py: Python<'_>, msg: &str) -> PyErr {
    to_py(py, CoreError::InvalidInput(msg.to_string()))
}

/// MinHash signatures `[len(texts), len(a)]` (uint32) of the texts' shingles.
#[pyfunction]
#[pyo3(signature = (texts, kind, n, scheme, a, b, threads=None))]
#[allow(clippy::too_many_arguments)]
fn minhash_signatures<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
    kind: &str,
    n: usize,
    scheme: &str,
    a: PyReadonlyArray1<'py, u64>,
    b: PyReadonlyArray1<'py, u64>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<u32>>> {
    let shingles = shingling(py, kind, n)?;
    let perms =
        Permutations::new(scheme, a.as_slice()?, b.as_slice()?).map_err(|e| to_py(py, e))?;
    let k = perms.len();
    let flat = py.detach(|| in_pool(threads, || signatures(&texts, &shingles, &perms)))?;
    let rows = texts.len();
    flat.into_pyarray(py)
        .reshape([rows, k])
        .map_err(|_| shape_err(py, "signature buffer has the wrong size"))
}

/// One 64-bit key per (document, band): `[n_docs, bands]` (uint64).
#[pyfunction]
#[pyo3(signature = (signatures, bands, rows, threads=None))]
fn lsh_band_keys<'py>(
    py: Python<'py>,
    signatures: PyReadonlyArray2<'py, u32>,
    bands: usize,
    rows: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let num_perm = signatures.shape()[1];
    let n_docs = signatures.shape()[0];
    let sigs = signatures.as_slice()?;
    let keys = py
        .detach(|| in_pool(threads, || band_keys(sigs, num_perm, bands, rows)))?
        .map_err(|e| to_py(py, e))?;
    keys.into_pyarray(py)
        .reshape([n_docs, bands])
        .map_err(|_| shape_err(py, "band key buffer has the wrong size"))
}

/// Candidate groups from band keys, flat: `(members uint32, offsets uint64)`.
#[pyfunction]
#[pyo3(signature = (keys, threads=None))]
#[allow(clippy::type_complexity)]
fn lsh_candidate_groups<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray2<'py, u64>,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>)> {
    let bands = keys.shape()[1];
    let flat = keys.as_slice()?;
    let (members, offsets) = py
        .detach(|| in_pool(threads, || candidate_groups(flat, bands)))?
        .map_err(|e| to_py(py, e))?;
    Ok((members.into_pyarray(py), offsets.into_pyarray(py)))
}

/// Verifies candidate groups by true Jaccard; returns (roots uint32, checked, similar).
#[pyfunction]
#[pyo3(signature = (texts, members, offsets, kind, n, threshold, threads=None))]
#[allow(clippy::too_many_arguments)]
fn lsh_verify_groups<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
    members: PyReadonlyArray1<'py, u32>,
    offsets: PyReadonlyArray1<'py, u64>,
    kind: &str,
    n: usize,
    threshold: f64,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, PyArray1<u32>>, u64, u64)> {
    let shingles = shingling(py, kind, n)?;
    let (m, o) = (members.as_slice()?, offsets.as_slice()?);
    let clusters = py
        .detach(|| {
            in_pool(threads, || {
                verify_groups(&texts, m, o, &shingles, threshold)
            })
        })?
        .map_err(|e| to_py(py, e))?;
    Ok((
        clusters.roots.into_pyarray(py),
        clusters.pairs_checked,
        clusters.pairs_similar,
    ))
}

/// The corpus manifest's document records joined by `,` (UTF-8 JSON, keys sorted,
/// compact; both digests the SHA-256 of the text) and each text's UTF-8 size (int64).
/// A string with a lone surrogate has no UTF-8: it raises UnicodeEncodeError.
#[pyfunction]
fn corpus_records_json<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
    doc_ids: Vec<PyBackedStr>,
    license_classes: Vec<PyBackedStr>,
    sources: Vec<PyBackedStr>,
    splits: Vec<PyBackedStr>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyArray1<i64>>)> {
    let cols = RecordColumns {
        texts: &texts,
        doc_ids: &doc_ids,
        license_classes: &license_classes,
        sources: &sources,
        splits: &splits,
    };
    let (json, sizes) = py
        .detach(|| records_json(&cols))
        .map_err(|e| to_py(py, e))?;
    Ok((PyBytes::new(py, &json), sizes.into_pyarray(py)))
}

/// `corpus_records_json` for texts the encoder already hashed: `digests` is the
/// `(n, 32)` uint8 SHA-256 of each text's UTF-8, in record order.
#[pyfunction]
fn corpus_records_json_digested<'py>(
    py: Python<'py>,
    digests: PyReadonlyArray2<'py, u8>,
    doc_ids: Vec<PyBackedStr>,
    license_classes: Vec<PyBackedStr>,
    sources: Vec<PyBackedStr>,
    splits: Vec<PyBackedStr>,
) -> PyResult<Bound<'py, PyBytes>> {
    let digests = digests.as_slice()?;
    let cols = RecordColumns {
        texts: &[],
        doc_ids: &doc_ids,
        license_classes: &license_classes,
        sources: &sources,
        splits: &splits,
    };
    let json = py
        .detach(|| records_json_digested(digests, &cols))
        .map_err(|e| to_py(py, e))?;
    Ok(PyBytes::new(py, &json))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(minhash_signatures, m)?)?;
    m.add_function(wrap_pyfunction!(lsh_band_keys, m)?)?;
    m.add_function(wrap_pyfunction!(lsh_candidate_groups, m)?)?;
    m.add_function(wrap_pyfunction!(lsh_verify_groups, m)?)?;
    m.add_function(wrap_pyfunction!(corpus_records_json, m)?)?;
    m.add_function(wrap_pyfunction!(corpus_records_json_digested, m)?)?;
    Ok(())
}
