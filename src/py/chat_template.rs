//! Binding for the native chat-template engine (`crate::chat_template`): Python's
//! template context (plain data and the tracker's `SpanStr` content strings) converted
//! to engine values, rendered, and the text and code-point spans handed back, or the
//! reason the engine declined (then Python renders).

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::chat_template::value::{decline, Res, SStr, Value};
use crate::chat_template::{Limits, NativeTemplate};

/// Deepest nesting of context data converted (the Python inputs bound it lower).
const MAX_DEPTH: usize = 64;

#[pyclass(frozen, module = "tokenpact._native", name = "NativeChatTemplate")]
pub(crate) struct PyNativeChatTemplate {
    inner: Arc<NativeTemplate>,
    /// `tokenpact.chat.spans.SpanStr`: strings of this type carry `_spans`.
    span_type: Py<PyType>,
    /// The Jinja environment's globals (`range`, `namespace`, ...): a context entry that
    /// is one of these objects is left to the engine's own builtins.
    env_globals: Py<PyDict>,
}

/// A `SpanStr`'s code-point spans as byte spans of its text.
fn byte_spans(text: &str, spans: &Bound<'_, PyAny>) -> PyResult<Vec<(u32, u32, i32)>> {
    let spans: Vec<(usize, usize, i32)> = spans.extract()?;
    let starts: Option<Vec<usize>> = if text.is_ascii() {
        None
    } else {
        let mut s: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        s.push(text.len());
        Some(s)
    };
    let at = |i: usize| -> PyResult<u32> {
        let byte = match &starts {
            None if i <= text.len() => i,
            Some(s) if i < s.len() => s[i],
            _ => return Err(PyValueError::new_err("a span beyond its string")),
        };
        Ok(byte as u32)
    };
    spans
        .into_iter()
        .map(|(a, b, o)| Ok((at(a)?, at(b)?, o)))
        .collect()
}

impl PyNativeChatTemplate {
    fn convert(&self, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Res<Value>> {
        if depth > MAX_DEPTH {
            return Ok(decline("context nesting"));
        }
        let py = obj.py();
        if let Ok(s) = obj.cast_exact::<PyString>() {
            return Ok(Ok(Value::str(s.to_str()?)));
        }
        if obj.get_type().is(self.span_type.bind(py)) {
            let text = obj.cast::<PyString>()?.to_str()?.to_string();
            let spans = byte_spans(&text, &obj.getattr("_spans")?)?;
            return Ok(Ok(Value::sstr(SStr { text, spans })));
        }
        if obj.is_none() {
            return Ok(Ok(Value::None));
        }
        if let Ok(b) = obj.cast_exact::<PyBool>() {
            return Ok(Ok(Value::Bool(b.is_true())));
        }
        if obj.cast_exact::<PyInt>().is_ok() {
            return Ok(match obj.extract::<i64>() {
                Ok(i) => Ok(Value::Int(i)),
                Err(_) => decline("an int beyond 64 bits"),
            });
        }
        if let Ok(f) = obj.cast_exact::<PyFloat>() {
            return Ok(Ok(Value::Float(f.value())));
        }
        let is_list = obj.cast_exact::<PyList>().is_ok();
        if is_list || obj.cast_exact::<PyTuple>().is_ok() {
            let mut out = Vec::with_capacity(obj.len()?);
            for item in obj.try_iter()? {
                match self.convert(&item?, depth + 1)? {
                    Ok(v) => out.push(v),
                    Err(d) => return Ok(Err(d)),
                }
            }
            let items = Arc::new(out);
            return Ok(Ok(if is_list {
                Value::List(items)
            } else {
                Value::Tuple(items)
            }));
        }
        if let Ok(dict) = obj.cast_exact::<PyDict>() {
            let mut out = Vec::with_capacity(dict.len());
            for (k, v) in dict.iter() {
                let key = match self.convert(&k, depth + 1)? {
                    Ok(key @ Value::Str(_)) => key,
                    Ok(_) => return Ok(decline("a dict key that is not a string")),
                    Err(d) => return Ok(Err(d)),
                };
                match self.convert(&v, depth + 1)? {
                    Ok(value) => out.push((key, value)),
                    Err(d) => return Ok(Err(d)),
                }
            }
            return Ok(Ok(Value::Dict(Arc::new(out))));
        }
        Ok(decline(format!(
            "a context value of type {}",
            obj.get_type().name()?
        )))
    }
}

#[pymethods]
impl PyNativeChatTemplate {
    /// Compiles `source`; raises ValueError with the reason when the native engine does
    /// not run this template (the Python engine then renders it).
    #[new]
    fn new(
        source: &str,
        span_type: Bound<'_, PyType>,
        env_globals: Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let compiled = catch_unwind(|| NativeTemplate::compile(source))
            .map_err(|_| PyValueError::new_err("the native template compiler failed"))?;
        match compiled {
            Ok(t) => Ok(PyNativeChatTemplate {
                inner: Arc::new(t),
                span_type: span_type.unbind(),
                env_globals: env_globals.unbind(),
            }),
            Err(d) => Err(PyValueError::new_err(d.0)),
        }
    }

    /// `(text, spans)` (code points, sorted) of one render of `context`, or the reason
    /// (a str) the engine declined.
    fn render<'py>(
        &self,
        py: Python<'py>,
        context: &Bound<'py, PyDict>,
        max_iterations: i64,
        max_chars: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut vars = HashMap::with_capacity(context.len());
        let env_globals = self.env_globals.bind(py);
        for (k, v) in context.iter() {
            if let Some(g) = env_globals.get_item(&k)? {
                if g.is(&v) {
                    continue;
                }
            }
            let Ok(name) = k.cast_exact::<PyString>() else {
                return Ok(PyString::new(py, "a context key that is not a str").into_any());
            };
            // A value Python cannot hand over (a lone surrogate) declines: the Python
            // engine renders it and raises its own typed error.
            let value = match self.convert(&v, 0) {
                Ok(Ok(value)) => value,
                Ok(Err(d)) => return Ok(PyString::new(py, &d.0).into_any()),
                Err(_) => return Ok(PyString::new(py, "a value that is not valid text").into_any()),
            };
            let Ok(name) = name.to_str() else {
                return Ok(PyString::new(py, "a context key that is not valid text").into_any());
            };
            vars.insert(name.to_string(), value);
        }
        let limits = Limits {
            max_iterations,
            max_chars,
        };
        let template = self.inner.clone();
        let result = catch_unwind(AssertUnwindSafe(|| template.render(vars, limits)));
        match result {
            Ok(Ok(r)) => Ok((r.text, r.spans).into_pyobject(py)?.into_any()),
            Ok(Err(d)) => Ok(PyString::new(py, &d.0).into_any()),
            Err(_) => Ok(PyString::new(py, "the native engine failed").into_any()),
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNativeChatTemplate>()
}
