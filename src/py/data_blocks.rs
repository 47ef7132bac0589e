//! Bindings for blocks of documents shipped as one UTF-8 buffer plus offsets (the Ray
//! engine's unit of work): pre-token counts returned as a flat table, the sum of many
//! such tables, and MinHash band keys. Conversion and GIL release only.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyBytes;

use super::{in_pool, to_py};
use crate::bpe::count::PretokenCounts;
use crate::bpe::count_table::{flatten, sum_tables, CountTableRef};
use crate::data::lsh::band_keys;
use crate::data::minhash::{signatures, Permutations, ShingleKind, Shingling};
use crate::data::text_block::block_texts;
use crate::error::CoreError;
use crate::pretok::Pretokenizer;

type Table<'py> = (
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    u64,
    u64,
    String,
);

/// `texts` as one block: their UTF-8 bytes back to back and `n + 1` byte offsets (read
/// from each string's UTF-8 form, which Python caches, and copied once).
#[pyfunction]
fn pack_texts<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
) -> (Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<u64>>) {
    let (buf, offsets) = py.detach(|| {
        let total: usize = texts.iter().map(|t| t.len()).sum();
        let mut buf = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(texts.len() + 1);
        offsets.push(0u64);
        for t in &texts {
            buf.extend_from_slice(t.as_bytes());
            offsets.push(buf.len() as u64);
        }
        (buf, offsets)
    });
    (buf.into_pyarray(py), offsets.into_pyarray(py))
}

/// Pre-token counts of one block: `(pieces, offsets, counts, documents, bytes, digest)`,
/// the pieces flattened in no particular order (tables add up in any order).
#[pyfunction]
#[pyo3(signature = (buf, offsets, pattern, name, threads=None))]
fn count_pretokens_block<'py>(
    py: Python<'py>,
    buf: PyReadonlyArray1<'py, u8>,
    offsets: PyReadonlyArray1<'py, u64>,
    pattern: &str,
    name: Option<&str>,
    threads: Option<usize>,
) -> PyResult<Table<'py>> {
    let pretok = Pretokenizer::new(name, pattern).map_err(|e| to_py(py, e))?;
    let (buf, offsets) = (buf.as_slice()?, offsets.as_slice()?);
    let counted = py.detach(|| {
        let texts = block_texts(buf, offsets)?;
        let counts = in_pool(threads, || {
            let mut c = PretokenCounts::default();
            c.add_texts(&pretok, &texts).map(|_| c)
        })
        .map_err(|e| CoreError::InvalidInput(e.to_string()))??;
        let flat = flatten(&counts.counts);
        Ok::<_, CoreError>((flat, counts))
    });
    let ((pieces, offs, values), c) = counted.map_err(|e| to_py(py, e))?;
    Ok((
        pieces.into_pyarray(py),
        offs.into_pyarray(py),
        values.into_pyarray(py),
        c.documents,
        c.bytes,
        c.digest_hex(),
    ))
}

/// The sum of flat count tables, sorted by piece: `(pieces as bytes, counts)`, the form
/// `count_pretokens` returns.
#[pyfunction]
#[pyo3(signature = (pieces, offsets, counts, threads=None))]
#[allow(clippy::type_complexity)]
fn sum_count_tables<'py>(
    py: Python<'py>,
    pieces: Vec<PyReadonlyArray1<'py, u8>>,
    offsets: Vec<PyReadonlyArray1<'py, u64>>,
    counts: Vec<PyReadonlyArray1<'py, u64>>,
    threads: Option<usize>,
) -> PyResult<(Vec<Bound<'py, PyBytes>>, Bound<'py, PyArray1<u64>>)> {
    if pieces.len() != offsets.len() || pieces.len() != counts.len() {
        return Err(to_py(
            py,
            CoreError::InvalidInput("pass as many piece, offset and count arrays".into()),
        ));
    }
    let mut tables = Vec::with_capacity(pieces.len());
    for ((p, o), c) in pieces.iter().zip(&offsets).zip(&counts) {
        tables.push(CountTableRef {
            pieces: p.as_slice()?,
            offsets: o.as_slice()?,
            counts: c.as_slice()?,
        });
    }
    let entries = py
        .detach(|| in_pool(threads, || sum_tables(&tables)))?
        .map_err(|e| to_py(py, e))?;
    let values: Vec<u64> = entries.iter().map(|e| e.1).collect();
    let out = entries.iter().map(|(p, _)| PyBytes::new(py, p)).collect();
    Ok((out, values.into_pyarray(py)))
}

/// LSH band keys `[n_docs, bands]` (uint64) of one block: MinHash signatures of its
/// documents' shingles, then one key per band, without returning the signatures.
#[pyfunction]
#[pyo3(signature = (buf, offsets, kind, n, scheme, a, b, bands, rows, threads=None))]
#[allow(clippy::too_many_arguments)]
fn minhash_band_keys_block<'py>(
    py: Python<'py>,
    buf: PyReadonlyArray1<'py, u8>,
    offsets: PyReadonlyArray1<'py, u64>,
    kind: &str,
    n: usize,
    scheme: &str,
    a: PyReadonlyArray1<'py, u64>,
    b: PyReadonlyArray1<'py, u64>,
    bands: usize,
    rows: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let shingles = ShingleKind::parse(kind)
        .and_then(|k| Shingling::new(k, n))
        .map_err(|e| to_py(py, e))?;
    let perms =
        Permutations::new(scheme, a.as_slice()?, b.as_slice()?).map_err(|e| to_py(py, e))?;
    let (buf, offsets) = (buf.as_slice()?, offsets.as_slice()?);
    let num_perm = perms.len();
    let keys = py.detach(|| {
        let texts = block_texts(buf, offsets)?;
        in_pool(threads, || {
            let sigs = signatures(&texts, &shingles, &perms);
            band_keys(&sigs, num_perm, bands, rows)
        })
        .map_err(|e| CoreError::InvalidInput(e.to_string()))?
    });
    let keys = keys.map_err(|e| to_py(py, e))?;
    let n_docs = offsets.len().saturating_sub(1);
    keys.into_pyarray(py).reshape([n_docs, bands]).map_err(|_| {
        to_py(
            py,
            CoreError::InvalidInput("band key buffer has the wrong size".into()),
        )
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pack_texts, m)?)?;
    m.add_function(wrap_pyfunction!(count_pretokens_block, m)?)?;
    m.add_function(wrap_pyfunction!(sum_count_tables, m)?)?;
    m.add_function(wrap_pyfunction!(minhash_band_keys_block, m)?)?;
    Ok(())
}
