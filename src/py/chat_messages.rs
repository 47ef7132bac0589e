//! The common batch record's messages wrapped for the native template engine without
//! Python objects in between: what `tokenpact.chat.hf_inputs.wrap_messages` (the
//! reference) and `NativeChatTemplate.prepare` do together, for a list of dicts whose
//! keys are identifiers and whose values are strings or None.
//!
//! Anything else (other value types, non-identifier keys or roles, invalid text, message
//! objects) is left to the Python path, which wraps it or raises its own typed error;
//! `tests/chat/test_native_messages.py` compares the two on generated messages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
    /// Whether `messages::validate_plain` would accept the messages for the mode given
    /// (false when no mode was given).
    pub valid: bool,
}

/// The modes `tokenpact.chat.messages.MODES`.
const MODES: [&str; 3] = ["training", "generation", "prefill"];

/// `validate_plain`'s checks, fed one message at a time (`messages.validate_plain` is
/// the reference; `tests/chat/test_native_messages.py` compares the two).
struct PlainOrder {
    valid: bool,
    previous: &'static str,
}

impl PlainOrder {
    fn new(mode: Option<&str>) -> Self {
        PlainOrder {
            valid: mode.is_some_and(|m| MODES.contains(&m)),
            previous: "system",
        }
    }

    /// One message: its role (None when missing) and whether it has tool calls or a tool
    /// call id (either leaves the common shape).
    fn message(&mut self, role: Option<&str>, tools: bool) {
        let role = match role {
            Some("system") => "system",
            Some("user") => "user",
            Some("assistant") => "assistant",
            _ => {
                self.valid = false;
                return;
            }
        };
        let in_order = match role {
            "system" => self.previous == "system",
            "user" => self.previous != "user",
            _ => self.previous == "user",
        };
        if tools || !in_order {
            self.valid = false;
        }
        self.previous = role;
    }

    /// Whether the whole conversation passed, for `mode` (empty conversations do not).
    fn finish(&self, mode: Option<&str>, count: usize) -> bool {
        let last = if mode == Some("generation") {
            "user"
        } else {
            "assistant"
        };
        self.valid && count > 0 && self.previous == last
    }
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
    mode: Option<&str>,
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
        valid: false,
    };
    let mut order = PlainOrder::new(mode);
    let mut items = Vec::with_capacity(list.len());
    for (i, raw) in list.iter().enumerate() {
        let Ok(dict) = raw.cast_exact::<PyDict>() else {
            return Ok(None);
        };
        let mut message: Vec<(Value, Value)> = Vec::with_capacity(dict.len());
        let mut role = None;
        let mut tools = false;
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
            // validate_plain: truthy tool calls, or any tool call id, leave the common
            // shape (values here are str: None ones were skipped above).
            tools |= name == "tool_call_id" || (name == "tool_calls" && !s.is_empty());
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
        order.message(role.as_ref().and_then(|r| r.to_str().ok()), tools);
        out.roles
            .push(role.unwrap_or_else(|| PyString::intern(py, "")));
        items.push(Value::Dict(Arc::new(alias_reasoning(message))));
    }
    out.valid = order.finish(mode, list.len());
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

/// Most owner tuples a template keeps for reuse (`messages[i].field` of one kind).
const MAX_CACHED_OWNERS: usize = 4096;

/// Owner tuples made before, by `(kind, message index)` then label, for one owner type:
/// the same message position and field give an equal (immutable) tuple in every record,
/// and making one through `tuple.__new__` cost a third of wrapping a short record.
#[derive(Default)]
pub(crate) struct OwnerCache {
    owner_type: Option<Py<PyAny>>,
    made: HashMap<(u8, usize), HashMap<String, Py<PyAny>>>,
    count: usize,
}

/// The owners as `owner_type` tuples `(kind, message_index, label)` (`Owner`, built
/// as `tuple.__new__` builds it, or reused from `cache`) and the roles as a tuple.
pub(crate) fn owners_and_roles<'py>(
    py: Python<'py>,
    wrapped: &WrappedMessages<'py>,
    owner_type: &Bound<'py, PyAny>,
    kind: u8,
    cache: &Mutex<OwnerCache>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyTuple>)> {
    let tuple_new = py
        .get_type::<PyTuple>()
        .getattr(pyo3::intern!(py, "__new__"))?;
    // The GIL is held, so the lock is never contended; a poisoned one just goes unused,
    // as does a cache made for another owner type.
    let mut guard = cache.lock().ok();
    if let Some(c) = guard.as_deref_mut() {
        c.owner_type
            .get_or_insert_with(|| owner_type.clone().unbind());
    }
    let mut cache = guard.as_deref_mut().filter(|c| {
        c.owner_type
            .as_ref()
            .is_some_and(|t| t.bind(py).is(owner_type))
    });
    let mut items = Vec::with_capacity(wrapped.owners.len());
    for (message, label) in &wrapped.owners {
        let key = (kind, *message);
        let found = cache
            .as_deref()
            .and_then(|c| c.made.get(&key)?.get(label.as_str()));
        if let Some(found) = found {
            items.push(found.bind(py).clone());
            continue;
        }
        let owner = tuple_new.call1((owner_type, (kind, *message, label.as_str())))?;
        if let Some(c) = cache.as_deref_mut().filter(|c| c.count < MAX_CACHED_OWNERS) {
            c.made
                .entry(key)
                .or_default()
                .insert(label.clone(), owner.clone().unbind());
            c.count += 1;
        }
        items.push(owner);
    }
    Ok((PyList::new(py, items)?, PyTuple::new(py, &wrapped.roles)?))
}
