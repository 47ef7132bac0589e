//! Binding for the native chat-template engine (`crate::chat_template`): Python's
//! template context (plain data and the tracker's `SpanStr` content strings) converted
//! to engine values, rendered, and the text and code-point spans handed back, or the
//! reason the engine declined (then Python renders).

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use super::chat_messages::{owners_and_roles, wrap_plain, OwnerCache};
use super::special::PySpecialMatcher;
use crate::chat_template::value::{decline, Res, SStr, Value};
use crate::chat_template::{Limits, NativeTemplate, Rendered};

/// Deepest nesting of context data converted (the Python inputs bound it lower).
const MAX_DEPTH: usize = 64;

/// Why a template with `{% generation %}` blocks is not prepared for a worker thread:
/// the chunk encoder reports content spans only, and such a record needs its generation
/// spans (`render` returns them).
const GENERATION_DECLINE: &str = "a template with generation blocks (rendered by render)";

#[pyclass(frozen, module = "tokenpact._native", name = "NativeChatTemplate")]
pub(crate) struct PyNativeChatTemplate {
    inner: Arc<NativeTemplate>,
    /// `tokenpact.chat.spans.SpanStr`: strings of this type carry `_spans`.
    span_type: Py<PyType>,
    /// The Jinja environment's globals (`range`, `namespace`, ...): a context entry that
    /// is one of these objects is left to the engine's own builtins.
    env_globals: Py<PyDict>,
    /// The owner tuples `prepare_messages` made, reused by later records.
    owners: Mutex<OwnerCache>,
}

/// A `SpanStr`'s code-point spans as byte spans of its text (one pass over the text
/// up to the last bound; a span over the whole string, the common case, needs none).
fn byte_spans(
    text: &str,
    chars: usize,
    spans: &Bound<'_, PyAny>,
) -> PyResult<Vec<(u32, u32, i32)>> {
    let spans: Vec<(usize, usize, i32)> = spans.extract()?;
    let too_far = || PyValueError::new_err("a span beyond its string");
    if text.is_ascii() {
        return spans
            .into_iter()
            .map(|(a, b, o)| {
                if b <= text.len() {
                    Ok((a as u32, b as u32, o))
                } else {
                    Err(too_far())
                }
            })
            .collect();
    }
    if let [(0, b, o)] = spans[..] {
        if b == chars {
            return Ok(vec![(0, text.len() as u32, o)]);
        }
    }
    let mut bounds: Vec<usize> = spans.iter().flat_map(|&(a, b, _)| [a, b]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut bytes = Vec::with_capacity(bounds.len());
    let mut chars = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .enumerate();
    for &bound in &bounds {
        match chars.by_ref().find(|&(k, _)| k == bound) {
            Some((_, byte)) => bytes.push(byte as u32),
            None => return Err(too_far()),
        }
    }
    let byte = |c: usize| bytes[bounds.binary_search(&c).expect("a span bound")];
    Ok(spans
        .into_iter()
        .map(|(a, b, o)| (byte(a), byte(b), o))
        .collect())
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
            let spans = byte_spans(&text, obj.len()?, &obj.getattr("_spans")?)?;
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
                owners: Mutex::new(OwnerCache::default()),
            }),
            Err(d) => Err(PyValueError::new_err(d.0)),
        }
    }

    /// Whether the template has `{% generation %}` blocks (their spans are the third item
    /// of a render; `prepare` and `prepare_messages` decline such templates, whose
    /// records need those spans).
    #[getter]
    fn has_generation(&self) -> bool {
        self.inner.has_generation()
    }

    /// `(text, spans, generation_spans)` of one render of `context` (code points; content
    /// spans sorted, `{% generation %}` spans in output order), or the reason (a str) the
    /// engine declined.
    fn render<'py>(
        &self,
        py: Python<'py>,
        context: &Bound<'py, PyDict>,
        max_iterations: i64,
        max_chars: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let rendered = self.render_input(context, max_iterations, max_chars)?;
        match rendered.and_then(RenderInput::run) {
            Ok(r) => Ok((r.text, r.spans, r.generation)
                .into_pyobject(py)?
                .into_any()),
            Err(d) => Ok(PyString::new(py, &d.0).into_any()),
        }
    }

    /// `context` converted for a render on a worker thread (`ChatChunkEncoder.start`'s
    /// `renders`), or the reason (a str) the engine declines it.
    fn prepare<'py>(
        &self,
        py: Python<'py>,
        context: &Bound<'py, PyDict>,
        max_iterations: i64,
        max_chars: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.has_generation() {
            return Ok(PyString::new(py, GENERATION_DECLINE).into_any());
        }
        match self.render_input(context, max_iterations, max_chars)? {
            Ok(input) => Ok(Bound::new(py, PyNativeRenderInput::new(input))?.into_any()),
            Err(d) => Ok(PyString::new(py, &d.0).into_any()),
        }
    }

    /// `prepare` of `context` plus `messages` wrapped here (`chat_messages`): the
    /// prepared input, the owners (`owner_type` tuples of kind `kind`), the roles and the
    /// first control spelling `matcher` finds in the content, and whether
    /// `validate_plain(messages, mode)` holds (False without `mode`), or None when the
    /// messages are not plain (dicts of identifier keys and str or None values) or the
    /// engine declines the context: then Python wraps them and prepares.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (messages, context, owner_type, kind, matcher, max_iterations, max_chars, mode=None))]
    fn prepare_messages<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        context: &Bound<'py, PyDict>,
        owner_type: &Bound<'py, PyAny>,
        kind: u8,
        matcher: &PySpecialMatcher,
        max_iterations: i64,
        max_chars: usize,
        mode: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.has_generation() {
            return Ok(py.None().into_bound(py));
        }
        let Some(wrapped) = wrap_plain(messages, matcher, mode)? else {
            return Ok(py.None().into_bound(py));
        };
        let Ok(mut input) = self.render_input(context, max_iterations, max_chars)? else {
            return Ok(py.None().into_bound(py));
        };
        let (owners, roles) = owners_and_roles(py, &wrapped, owner_type, kind, &self.owners)?;
        input.vars.insert("messages".to_string(), wrapped.value);
        let input = Bound::new(py, PyNativeRenderInput::new(input))?;
        Ok((input, owners, roles, wrapped.found_control, wrapped.valid)
            .into_pyobject(py)?
            .into_any())
    }

    /// The rendered text of `messages[:i]` with `add_generation_prompt` for each `(i,
    /// add_generation_prompt)` of `cuts`, the rest of `context` (without those two
    /// entries) converted once for all of them: what the supervision rule renders for a
    /// record's assistant turns (`ChatTemplate.prefix_texts` is the caller). With a
    /// `matcher`, `messages` are the caller's plain messages, wrapped here as
    /// `prepare_messages` wraps them (None when they are not plain: the caller wraps them
    /// and calls again without a matcher); without one, they are template data already.
    /// The reason (a str) when the engine declines a render: the caller renders them.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (messages, context, cuts, matcher, max_iterations, max_chars))]
    fn prefix_texts<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        context: &Bound<'py, PyDict>,
        cuts: Vec<(usize, bool)>,
        matcher: Option<&PySpecialMatcher>,
        max_iterations: i64,
        max_chars: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let declined = |reason: &str| Ok(PyString::new(py, reason).into_any());
        let converted = match matcher {
            Some(matcher) => match wrap_plain(messages, matcher, None)? {
                Some(wrapped) => Ok(wrapped.value),
                None => return Ok(py.None().into_bound(py)),
            },
            None => match self.convert(messages, 0) {
                Ok(found) => found,
                Err(_) => return declined("a value that is not valid text"),
            },
        };
        let items = match converted {
            Ok(Value::List(items)) => items,
            Ok(_) => return declined("messages that are not a list"),
            Err(d) => return declined(&d.0),
        };
        let input = match self.render_input(context, max_iterations, max_chars)? {
            Ok(input) => input,
            Err(d) => return declined(&d.0),
        };
        let mut texts = Vec::with_capacity(cuts.len());
        for (i, generation) in cuts {
            let mut vars = input.vars.clone();
            let prefix = items[..i.min(items.len())].to_vec();
            vars.insert("messages".to_string(), Value::List(Arc::new(prefix)));
            vars.insert("add_generation_prompt".to_string(), Value::Bool(generation));
            let run = RenderInput {
                template: input.template.clone(),
                vars,
                limits: input.limits,
            };
            match run.run() {
                Ok(rendered) => texts.push(rendered.text),
                Err(d) => return declined(&d.0),
            }
        }
        Ok(PyList::new(py, texts)?.into_any())
    }
}

impl PyNativeChatTemplate {
    /// The context as engine values (the environment's own globals left out).
    fn render_input(
        &self,
        context: &Bound<'_, PyDict>,
        max_iterations: i64,
        max_chars: usize,
    ) -> PyResult<Res<RenderInput>> {
        let mut vars = HashMap::with_capacity(context.len());
        let env_globals = self.env_globals.bind(context.py());
        for (k, v) in context.iter() {
            if let Some(g) = env_globals.get_item(&k)? {
                if g.is(&v) {
                    continue;
                }
            }
            let Ok(name) = k.cast_exact::<PyString>() else {
                return Ok(decline("a context key that is not a str"));
            };
            // A value Python cannot hand over (a lone surrogate) declines: the Python
            // engine renders it and raises its own typed error.
            let value = match self.convert(&v, 0) {
                Ok(Ok(value)) => value,
                Ok(Err(d)) => return Ok(Err(d)),
                Err(_) => return Ok(decline("a value that is not valid text")),
            };
            let Ok(name) = name.to_str() else {
                return Ok(decline("a context key that is not valid text"));
            };
            vars.insert(name.to_string(), value);
        }
        let limits = Limits {
            max_iterations,
            max_chars,
        };
        Ok(Ok(RenderInput {
            template: self.inner.clone(),
            vars,
            limits,
        }))
    }
}

/// Bytes of text in a value (the pipeline's estimate of a record's rendered size).
fn text_size(v: &Value) -> usize {
    match v {
        Value::Str(s) => s.text.len(),
        Value::List(items) | Value::Tuple(items) => items.iter().map(text_size).sum(),
        Value::Dict(pairs) => pairs.iter().map(|(k, v)| text_size(k) + text_size(v)).sum(),
        _ => 0,
    }
}

/// One render's template, variables and bounds, ready to run on any thread.
pub(crate) struct RenderInput {
    template: Arc<NativeTemplate>,
    vars: HashMap<String, Value>,
    limits: Limits,
}

impl RenderInput {
    /// Renders (a panic becomes a decline: it must never reach Python).
    pub(crate) fn run(self) -> Res<Rendered> {
        let RenderInput {
            template,
            vars,
            limits,
        } = self;
        catch_unwind(AssertUnwindSafe(|| template.render(vars, limits)))
            .unwrap_or_else(|_| decline("the native engine failed"))
    }
}

/// A render prepared by `NativeChatTemplate.prepare`, run once by a chunk job.
#[pyclass(frozen, module = "tokenpact._native", name = "NativeRenderInput")]
pub(crate) struct PyNativeRenderInput {
    inner: Mutex<Option<RenderInput>>,
    /// Bytes of text in the context.
    #[pyo3(get)]
    size: usize,
}

impl PyNativeRenderInput {
    fn new(input: RenderInput) -> PyNativeRenderInput {
        let size = input.vars.values().map(text_size).sum();
        PyNativeRenderInput {
            inner: Mutex::new(Some(input)),
            size,
        }
    }

    /// The prepared render (None once taken: each input renders once).
    pub(crate) fn take(&self) -> Option<RenderInput> {
        self.inner.lock().ok().and_then(|mut slot| slot.take())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNativeChatTemplate>()?;
    m.add_class::<PyNativeRenderInput>()
}
