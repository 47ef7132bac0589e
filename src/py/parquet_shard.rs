//! Binding of the native Parquet shard writer: conversion, GIL release, typed errors.

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use super::to_py;
use crate::data::parquet_shard::{DocIds, ParquetShardWriter, TokenIds};
use crate::error::CoreError;

/// Token IDs as handed over by numpy: uint16 or uint32, one dimension.
#[derive(FromPyObject)]
enum IdArray<'py> {
    U16(PyReadonlyArray1<'py, u16>),
    U32(PyReadonlyArray1<'py, u32>),
}

/// Writes one Parquet shard (fixed schema: doc_id, input_ids, length, truncated) row
/// group by row group; `finish` returns the file's SHA-256 computed while writing.
#[pyclass(frozen, module = "tokenpact._native", name = "ParquetShardWriter")]
pub(crate) struct PyParquetShardWriter {
    inner: Mutex<Option<ParquetShardWriter>>,
}

fn closed(py: Python<'_>) -> PyErr {
    to_py(
        py,
        CoreError::InvalidInput("the Parquet shard writer is closed".into()),
    )
}

#[pymethods]
impl PyParquetShardWriter {
    #[new]
    #[pyo3(signature = (path, *, id_bits, doc_ids, metadata, created_by))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        id_bits: u8,
        doc_ids: Vec<PyBackedStr>,
        metadata: Vec<(String, String)>,
        created_by: &str,
    ) -> PyResult<Self> {
        let writer = py
            .detach(|| {
                // The IDs' UTF-8 (cached by Python) copied into one buffer.
                let doc_ids: DocIds = doc_ids.iter().map(|d| &**d).collect();
                ParquetShardWriter::create(&path, id_bits, metadata, doc_ids, created_by)
            })
            .map_err(|e| to_py(py, e))?;
        Ok(Self {
            inner: Mutex::new(Some(writer)),
        })
    }

    /// Documents written so far.
    #[getter]
    fn written(&self, py: Python<'_>) -> PyResult<usize> {
        let guard = self.inner.lock().map_err(|_| closed(py))?;
        guard
            .as_ref()
            .map(|w| w.written())
            .ok_or_else(|| closed(py))
    }

    /// Writes the next documents as one row group (IDs uint16/uint32, offsets int64
    /// `[n + 1]` from 0, truncated bool `[n]`).
    fn write_chunk<'py>(
        &self,
        py: Python<'py>,
        ids: IdArray<'py>,
        offsets: PyReadonlyArray1<'py, i64>,
        truncated: PyReadonlyArray1<'py, bool>,
    ) -> PyResult<()> {
        let ids = match &ids {
            IdArray::U16(a) => TokenIds::U16(a.as_slice()?),
            IdArray::U32(a) => TokenIds::U32(a.as_slice()?),
        };
        let (offsets, truncated) = (offsets.as_slice()?, truncated.as_slice()?);
        let mut guard = self.inner.lock().map_err(|_| closed(py))?;
        let writer = guard.as_mut().ok_or_else(|| closed(py))?;
        py.detach(|| writer.write_chunk(ids, offsets, truncated))
            .map_err(|e| to_py(py, e))
    }

    /// Writes the footer and closes the file; returns its SHA-256 (hex). The writer is
    /// closed afterwards, whether or not this succeeds.
    fn finish(&self, py: Python<'_>) -> PyResult<String> {
        let writer = self
            .inner
            .lock()
            .map_err(|_| closed(py))?
            .take()
            .ok_or_else(|| closed(py))?;
        py.detach(|| writer.finish()).map_err(|e| to_py(py, e))
    }

    /// Closes the file without a footer (after an error; the caller removes it).
    fn abort(&self) {
        if let Ok(mut guard) = self.inner.lock() {
            guard.take();
        }
    }

    /// Whether `finish` or `abort` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().map(|g| g.is_none()).unwrap_or(true)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyParquetShardWriter>()?;
    Ok(())
}
