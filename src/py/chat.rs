//! Bindings for chat token ownership (`crate::chat`): conversion only.

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use super::to_py;
use crate::chat::{columns, span_token_ranges};
use crate::error::CoreError;

type ColumnLists<'py> = (
    Vec<usize>,
    Vec<usize>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
);

/// Token ranges of the content byte spans and the per-token lists of a conversation:
/// `(span_lo, span_hi, input_ids, special_tokens_mask, origin, message_index,
/// owner_index)`. `spans` are `(byte_start, byte_end, owner)`, sorted; `kind_names[k]`
/// is the origin string of kind code `k`.
#[pyfunction]
#[pyo3(signature = (ids, starts, ends, spans, owner_kind, owner_message, is_control, kind_names))]
#[allow(clippy::too_many_arguments)]
fn chat_token_columns<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, u32>,
    starts: PyReadonlyArray1<'py, u32>,
    ends: PyReadonlyArray1<'py, u32>,
    spans: Vec<(u32, u32, i64)>,
    owner_kind: Vec<u8>,
    owner_message: Vec<i64>,
    is_control: PyReadonlyArray1<'py, bool>,
    kind_names: Vec<Bound<'py, PyString>>,
) -> PyResult<ColumnLists<'py>> {
    let (ids, starts, ends) = (ids.as_slice()?, starts.as_slice()?, ends.as_slice()?);
    let table = is_control.as_slice()?;
    if starts.len() != ids.len() || ends.len() != ids.len() {
        return Err(to_py(
            py,
            CoreError::InvalidInput("chat columns: ids, starts and ends differ in length".into()),
        ));
    }
    if let Some(&k) = owner_kind
        .iter()
        .find(|&&k| usize::from(k) >= kind_names.len())
    {
        return Err(to_py(
            py,
            CoreError::InvalidInput(format!("chat columns: kind code {k} has no name")),
        ));
    }
    let bounds: Vec<(u32, u32)> = spans.iter().map(|&(a, b, _)| (a, b)).collect();
    let span_owner: Vec<i64> = spans.iter().map(|&(_, _, o)| o).collect();
    let ranges = span_token_ranges(starts, ends, &bounds);
    let cols = columns(
        ids,
        &ranges,
        &span_owner,
        &owner_kind,
        &owner_message,
        |id| table.get(id as usize).copied().unwrap_or(false),
    )
    .map_err(|e| to_py(py, e))?;
    let origin = PyList::new(py, cols.kind.iter().map(|&k| &kind_names[usize::from(k)]))?;
    Ok((
        ranges.iter().map(|r| r.0).collect(),
        ranges.iter().map(|r| r.1).collect(),
        PyList::new(py, ids)?,
        PyList::new(py, cols.special)?,
        origin,
        PyList::new(py, cols.message)?,
        PyList::new(py, cols.owner)?,
    ))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(chat_token_columns, m)?)?;
    Ok(())
}
