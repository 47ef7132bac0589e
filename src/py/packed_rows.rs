//! Binding for the loader's packed rows (`crate::data::packed_rows`): conversion and
//! GIL release only.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::prelude::*;

use super::to_py;
use crate::data::packed_rows::{gather_rows, row_bounds};

type Bounds<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i32>>,
);

/// Fills `out` (the batch's tokens as bytes, rows back to back) with the `seq_len + 1`
/// tokens from each `samples[r] * seq_len` of `stream` (the mapped shard as bytes,
/// `item` bytes per token) and returns `(first_docs, cut_rows, cuts, cu_seqlens)`.
#[pyfunction]
fn packed_rows<'py>(
    py: Python<'py>,
    stream: PyReadonlyArray1<'py, u8>,
    starts: PyReadonlyArray1<'py, i64>,
    samples: PyReadonlyArray1<'py, i64>,
    seq_len: i64,
    item: usize,
    mut out: PyReadwriteArray1<'py, u8>,
) -> PyResult<Bounds<'py>> {
    let stream = stream.as_slice()?;
    let starts = starts.as_slice()?;
    let samples = samples.as_slice()?;
    let out = out.as_slice_mut()?;
    if item == 0 || stream.len() % item != 0 {
        return Err(to_py(
            py,
            crate::error::CoreError::InvalidInput(format!(
                "a stream of {} bytes is not made of {item}-byte tokens",
                stream.len()
            )),
        ));
    }
    let tokens = (stream.len() / item) as i64;
    let bounds = py
        .detach(|| {
            let bounds = row_bounds(starts, samples, seq_len, tokens)?;
            gather_rows(stream, samples, seq_len as usize, item, out)?;
            Ok(bounds)
        })
        .map_err(|e| to_py(py, e))?;
    Ok((
        bounds.first_docs.into_pyarray(py),
        bounds.cut_rows.into_pyarray(py),
        bounds.cuts.into_pyarray(py),
        bounds.cu_seqlens.into_pyarray(py),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(packed_rows, m)?)?;
    Ok(())
}
