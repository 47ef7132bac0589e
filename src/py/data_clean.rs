//! Bindings for the cleaning engines (language identification, script counts, quality
//! counts): batches of documents per call, the GIL released while they run. Conversion
//! only; the engines are `crate::data::{langid_nb, py_text, quality_counts}`.

use std::sync::Arc;

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;

use super::to_py;
use crate::data::langid_nb::NbModel;
use crate::data::py_text::{script_counts, CharTable};
use crate::data::quality_counts::{document_counts, DocPolicy, QualityRules, COUNT_NAMES};
use crate::error::CoreError;

fn invalid(py: Python<'_>, msg: String) -> PyErr {
    to_py(py, CoreError::InvalidInput(msg))
}

/// Python's `str.isspace`/`str.isalpha` and letter scripts, one entry per code point.
#[pyclass(frozen, module = "tokenpact._native", name = "NativeCharTable")]
pub(crate) struct PyCharTable {
    inner: Arc<CharTable>,
}

#[pymethods]
impl PyCharTable {
    #[new]
    fn new(py: Python<'_>, entries: PyReadonlyArray1<'_, u16>) -> PyResult<Self> {
        let table = CharTable::new(entries.as_slice()?.to_vec()).map_err(|e| to_py(py, e))?;
        Ok(Self {
            inner: Arc::new(table),
        })
    }

    /// Per document, `(script ID, letters)` of its first `max_chars` code points.
    fn script_counts(
        &self,
        py: Python<'_>,
        texts: Vec<PyBackedBytes>,
        max_chars: usize,
    ) -> Vec<Vec<(u16, u32)>> {
        let table = self.inner.clone();
        py.detach(|| {
            texts
                .iter()
                .map(|t| script_counts(&table, t, max_chars))
                .collect()
        })
    }
}

/// The naive Bayes language identifier over py3langid's model.
#[pyclass(frozen, module = "tokenpact._native", name = "NativeLangId")]
pub(crate) struct PyLangId {
    inner: Arc<NbModel>,
}

#[pymethods]
impl PyLangId {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        rows: PyReadonlyArray1<'_, u32>,
        state_row: PyReadonlyArray1<'_, u32>,
        output: PyReadonlyArray1<'_, i32>,
        ptc: PyReadonlyArray2<'_, u16>,
        prior: PyReadonlyArray1<'_, f32>,
        columns: Vec<usize>,
        aliases: Vec<(usize, usize)>,
    ) -> PyResult<Self> {
        let classes = ptc.shape()[1];
        let model = NbModel::new(
            rows.as_slice()?.to_vec(),
            state_row.as_slice()?.to_vec(),
            output.as_slice()?.to_vec(),
            ptc.as_slice()?.to_vec(),
            classes,
            prior.as_slice()?.to_vec(),
            columns,
            aliases,
        )
        .map_err(|e| to_py(py, e))?;
        Ok(Self {
            inner: Arc::new(model),
        })
    }

    /// `(class index, probability)` arrays for the prepared inputs (UTF-8 bytes).
    fn classify<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<PyBackedBytes>,
    ) -> (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f64>>) {
        let model = self.inner.clone();
        let (labels, probs): (Vec<u32>, Vec<f64>) = py.detach(|| {
            inputs
                .iter()
                .map(|b| {
                    let (c, p) = model.classify(b);
                    (c as u32, p)
                })
                .unzip()
        });
        (labels.into_pyarray(py), probs.into_pyarray(py))
    }
}

/// The Gopher/C4 rule counts of many documents.
#[pyclass(frozen, module = "tokenpact._native", name = "NativeQualityCounts")]
pub(crate) struct PyQualityCounts {
    table: Arc<CharTable>,
    rules: Arc<QualityRules>,
}

#[pymethods]
impl PyQualityCounts {
    #[new]
    fn new(
        table: &PyCharTable,
        stop_words: Vec<Vec<u8>>,
        top_ns: Vec<usize>,
        dup_ns: Vec<usize>,
    ) -> Self {
        Self {
            table: table.inner.clone(),
            rules: Arc::new(QualityRules {
                stop_words: stop_words.into_iter().collect(),
                top_ns,
                dup_ns,
            }),
        }
    }

    /// The names of the leading columns of `counts` (the n-gram columns follow).
    #[staticmethod]
    fn names() -> Vec<&'static str> {
        COUNT_NAMES.to_vec()
    }

    /// `[documents, columns]` counts (uint64); `no_space[i]` and `scale[i]` say how
    /// document `i` is read.
    fn counts<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedBytes>,
        no_space: Vec<bool>,
        scale: Vec<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        if no_space.len() != texts.len() || scale.len() != texts.len() {
            return Err(invalid(
                py,
                format!(
                    "{} texts but {} no_space flags and {} scales",
                    texts.len(),
                    no_space.len(),
                    scale.len()
                ),
            ));
        }
        let width = COUNT_NAMES.len() + 2 * self.rules.top_ns.len() + self.rules.dup_ns.len();
        let (table, rules) = (self.table.clone(), self.rules.clone());
        let flat: Vec<u64> = py.detach(|| {
            let mut flat = Vec::with_capacity(texts.len() * width);
            for ((t, ns), s) in texts.iter().zip(&no_space).zip(&scale) {
                let policy = DocPolicy {
                    no_space: *ns,
                    scale: *s,
                };
                flat.extend(document_counts(&table, &rules, policy, t));
            }
            flat
        });
        let rows = texts.len();
        flat.into_pyarray(py)
            .reshape([rows, width])
            .map_err(|_| invalid(py, "count buffer has the wrong size".to_string()))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCharTable>()?;
    m.add_class::<PyLangId>()?;
    m.add_class::<PyQualityCounts>()?;
    Ok(())
}
