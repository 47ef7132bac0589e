//! The common batch record's messages wrapped for the native template engine without
//! Python objects in between: what `tokenpact.chat.hf_inputs.wrap_messages` (the
//! reference) and `NativeChatTemplate.prepare` do together, for a list of dicts whose
//! keys are identifiers and whose values are strings or None.
//!
//! Anything else (other value types, non-identifier keys or roles, invalid text, message
//! objects) is left to the Python path, which wraps it or raises its own typed error;
//! `tests/chat/test_native_messages.py` compares the two on generated messages.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::special::PySpecialMatcher;
use crate::chat_template::value::{SStr, Value};

/// The message keys a reasoning text is read from, in order, and copied under
/// (`hf_inputs.REASONING_FIELDS`).
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

/// Messages as template data, with the owner of each content string.
pub(crate) struct WrappedMessages<'py> {
    pub value: Value,
    /// Per content string, in the order the tracker numbers owners: its message index
    /// and label (`messages[2].content`).
    pub owners: Vec<(usize, String)>,
    /// Each message's role (`""` when it has none), as given.
    pub roles: Vec<Bound<'py, PyString>>,
    /// The first control spelling found in a content string.
    pub found_control: Option<String>,
}

/// `hf_inputs._NAME_RE`: a short identifier (letters, digits, `_` or `-`, not starting
/// with a digit or `-`, at most 64 characters).
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b[1..]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// `messages` wrapped, or None when they are not the plain case.
pub(crate) fn wrap_plain<'py>(
    messages: &Bound<'py, PyAny>,
    matcher: &PySpecialMatcher,
) -> PyResult<Option<WrappedMessages<'py>>> {
    let py = messages.py();
    let Ok(list) = messages.cast_exact::<PyList>() else {
        return Ok(None);
    };
    let mut out = WrappedMessages {
        value: Value::None,
        owners: Vec::new(),
        roles: Vec::with_capacity(list.len()),
        found_control: None,
    };
    let mut items = Vec::with_capacity(list.len());
    for (i, raw) in list.iter().enumerate() {
        let Ok(dict) = raw.cast_exact::<PyDict>() else {
            return Ok(None);
        };
        let mut message: Vec<(Value, Value)> = Vec::with_capacity(dict.len());
        let mut role = None;
        for (k, v) in dict.iter() {
            if v.is_none() {
                continue; // transformers drops None values
            }
            let Ok(key) = k.cast_exact::<PyString>() else {
                return Ok(None);
            };
            let Ok(name) = key.to_str() else {
                return Ok(None);
            };
            if !is_name(name) {
                return Ok(None);
            }
            let Ok(text) = v.cast_exact::<PyString>() else {
                return Ok(None); // structured content: the Python path wraps it
            };
            // A lone surrogate fails here: the Python path raises its typed error.
            let Ok(s) = text.to_str() else {
                return Ok(None);
            };
            let value = if name == "role" {
                if !is_name(s) {
                    return Ok(None);
                }
                role = Some(text.clone());
                Value::str(s)
            } else if s.is_empty() {
                Value::str("") // an empty string has no owner (Tracker.string)
            } else {
                if out.found_control.is_none() {
                    out.found_control = matcher.first_spelling(py, s)?.map(|(_, c)| c);
                }
                let owner = out.owners.len() as i32;
                out.owners.push((i, format!("messages[{i}].{name}")));
                Value::sstr(SStr {
                    text: s.to_string(),
                    spans: vec![(0, s.len() as u32, owner)],
                })
            };
            message.push((Value::str(name), value));
        }
        out.roles
            .push(role.unwrap_or_else(|| PyString::intern(py, "")));
        items.push(Value::Dict(Arc::new(alias_reasoning(message))));
    }
    out.value = Value::List(Arc::new(items));
    Ok(Some(out))
}

/// `wrap_messages`' reasoning aliases: when a message has a reasoning text (the first of
/// `REASONING_FIELDS` it has), it is also given as `thinking` (first) and
/// `reasoning_content` (last, or in its place), as `transformers` v5 copies it.
fn alias_reasoning(message: Vec<(Value, Value)>) -> Vec<(Value, Value)> {
    let find =
        |m: &[(Value, Value)], name: &str| m.iter().position(|(k, _)| k.as_text() == Some(name));
    let Some(reasoning) = REASONING_FIELDS
        .iter()
        .find_map(|f| find(&message, f).map(|at| message[at].1.clone()))
    else {
        return message;
    };
    // {"thinking": reasoning, **message, "reasoning_content": reasoning}
    let mut out: Vec<(Value, Value)> = Vec::with_capacity(message.len() + 2);
    out.push((Value::str("thinking"), reasoning.clone()));
    for (k, v) in message {
        match find(&out, k.as_text().unwrap_or_default()) {
            Some(at) => out[at].1 = v,
            None => out.push((k, v)),
        }
    }
    match find(&out, "reasoning_content") {
        Some(at) => out[at].1 = reasoning,
        None => out.push((Value::str("reasoning_content"), reasoning)),
    }
    out
}

/// The owners as `owner_type` tuples `(kind, message_index, label)` (`Owner`, built
/// as `tuple.__new__` builds it) and the roles as a tuple.
pub(crate) fn owners_and_roles<'py>(
    py: Python<'py>,
    wrapped: &WrappedMessages<'py>,
    owner_type: &Bound<'py, PyAny>,
    kind: u8,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyTuple>)> {
    let tuple_new = py
        .get_type::<PyTuple>()
        .getattr(pyo3::intern!(py, "__new__"))?;
    let owners = PyList::empty(py);
    for (message, label) in &wrapped.owners {
        let fields = (kind, *message, label.as_str()).into_pyobject(py)?;
        owners.append(tuple_new.call1((owner_type, fields))?)?;
    }
    Ok((owners, PyTuple::new(py, &wrapped.roles)?))
}
