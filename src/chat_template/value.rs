//! Template values with Python's semantics (the reference is Jinja running on CPython,
//! as `transformers` runs chat templates), and strings that carry content spans.
//!
//! Every operation either gives exactly the value Python would give or declines
//! ([`Decline`]); the caller then renders the conversation with the Python engine. So an
//! operation whose Python result is uncertain here (a `repr` of non-ASCII text, a float
//! outside plain notation, an integer overflow, an error Python would raise) declines.

use std::sync::{Arc, Mutex};

use super::ast::MacroDef;

/// Why the native engine did not render (the Python engine renders instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decline(pub String);

pub type Res<T> = Result<T, Decline>;

pub fn decline<T>(why: impl Into<String>) -> Res<T> {
    Err(Decline(why.into()))
}

/// `(start, end, owner)` in UTF-8 bytes of the string that holds it; end exclusive.
pub type Span = (u32, u32, i32);

/// A string and the spans of its characters that came from content (sorted, disjoint).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SStr {
    pub text: String,
    pub spans: Vec<Span>,
}

impl SStr {
    pub fn plain(text: impl Into<String>) -> SStr {
        SStr {
            text: text.into(),
            spans: Vec::new(),
        }
    }

    pub fn char_len(&self) -> usize {
        if self.text.is_ascii() {
            self.text.len()
        } else {
            self.text.chars().count()
        }
    }

    /// Bytes `[start, end)` (on char boundaries), spans clipped and moved to 0.
    pub fn slice(&self, start: usize, end: usize) -> SStr {
        let mut spans = Vec::new();
        for &(a, b, o) in &self.spans {
            let lo = (a as usize).max(start);
            let hi = (b as usize).min(end);
            if lo < hi {
                spans.push(((lo - start) as u32, (hi - start) as u32, o));
            }
        }
        SStr {
            text: self.text[start..end].to_string(),
            spans,
        }
    }

    /// Appends `other`, its spans moved behind this text.
    pub fn push(&mut self, other: &SStr) {
        let shift = self.text.len() as u32;
        self.spans.extend(
            other
                .spans
                .iter()
                .map(|&(a, b, o)| (a + shift, b + shift, o)),
        );
        self.text.push_str(&other.text);
    }

    /// The byte offset of each char index `0..=n` (n = char count).
    pub fn char_starts(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.text.char_indices().map(|(i, _)| i).collect();
        out.push(self.text.len());
        out
    }
}

/// Builtin callables of the template globals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    Namespace,
    Range,
    Dict,
    RaiseException,
    StrftimeNow,
}

/// One iteration's `loop` variable.
#[derive(Debug)]
pub struct LoopInfo {
    pub index0: usize,
    pub length: usize,
    pub prev: Option<Value>,
    pub next: Option<Value>,
}

pub type Namespace = Mutex<Vec<(String, Value)>>;

/// A call block's `caller`: its body as a macro and the scope it closes over (a frame of
/// the render, checked by id when called: a caller kept past its block declines).
#[derive(Debug)]
pub struct CallerRef {
    pub def: Arc<MacroDef>,
    /// `(frame index, frame id)`, or None at the top level.
    pub scope: Option<(usize, u64)>,
}

#[derive(Debug, Clone)]
pub enum Value {
    Undefined,
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<SStr>),
    /// `markupsafe.Markup` (the `safe` filter): a str whose operators escape; only
    /// printing, `~`, tests and truthiness are modelled.
    Markup(Arc<str>),
    List(Arc<Vec<Value>>),
    Tuple(Arc<Vec<Value>>),
    /// A dict view or a range: iterable again, with a length, not printable here.
    View(Arc<Vec<Value>>),
    /// A one-shot iterator (a generator filter): a second pass declines.
    Iter(Arc<Mutex<Option<Vec<Value>>>>),
    Dict(Arc<Vec<(Value, Value)>>),
    Namespace(Arc<Namespace>),
    Loop(Arc<LoopInfo>),
    /// A macro defined by this render: the outer `Arc` is the render's own, so that
    /// calls on two threads never count references on the template's shared definition.
    Macro(Arc<Arc<MacroDef>>),
    /// A call block's body, callable as `caller(...)` inside the macro it calls.
    Caller(Arc<CallerRef>),
    Global(Global),
    /// A bound method read as an attribute and not (yet) called.
    Method(Arc<(Value, String)>),
}

impl Value {
    pub fn str(text: impl Into<String>) -> Value {
        Value::Str(Arc::new(SStr::plain(text)))
    }

    pub fn sstr(s: SStr) -> Value {
        Value::Str(Arc::new(s))
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Undefined => "undefined",
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) | Value::Markup(_) => "str",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::View(_) => "view",
            Value::Iter(_) => "iterator",
            Value::Dict(_) => "dict",
            Value::Namespace(_) => "Namespace",
            Value::Loop(_) => "LoopContext",
            Value::Macro(_) | Value::Caller(_) => "Macro",
            Value::Global(_) => "function",
            Value::Method(_) => "method",
        }
    }

    /// Views, iterators, loops, macros and callables: objects whose equality in Python
    /// is their identity (or a view's contents), not modelled.
    fn is_object(&self) -> bool {
        matches!(
            self,
            Value::View(_)
                | Value::Iter(_)
                | Value::Loop(_)
                | Value::Macro(_)
                | Value::Caller(_)
                | Value::Global(_)
                | Value::Method(_)
        )
    }

    /// Python's `bool(value)` (Jinja's undefined is false).
    pub fn truthy(&self) -> bool {
        match self {
            Value::Undefined | Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.text.is_empty(),
            Value::Markup(s) => !s.is_empty(),
            Value::List(v) | Value::Tuple(v) | Value::View(v) => !v.is_empty(),
            Value::Dict(d) => !d.is_empty(),
            _ => true,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(&s.text),
            Value::Markup(s) => Some(s),
            _ => None,
        }
    }

    /// A number as f64 when it is one (bool counts, as in Python).
    fn number(&self) -> Option<f64> {
        match self {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    fn int_like(&self) -> Option<i64> {
        match self {
            Value::Bool(b) => Some(i64::from(*b)),
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// Python's `a == b`.
    pub fn py_eq(&self, other: &Value) -> Res<bool> {
        if let (Some(a), Some(b)) = (self.int_like(), other.int_like()) {
            return Ok(a == b);
        }
        if let (Some(a), Some(b)) = (self.number(), other.number()) {
            if matches!(self, Value::Float(_)) || matches!(other, Value::Float(_)) {
                // int vs float compares exactly in Python; exact here below 2**53.
                let big = |v: &Value| matches!(v, Value::Int(i) if i.unsigned_abs() > 1 << 53);
                if big(self) || big(other) {
                    return decline("comparison of a large int with a float");
                }
                return Ok(a == b);
            }
        }
        Ok(match (self, other) {
            (Value::Undefined, Value::Undefined) | (Value::None, Value::None) => true,
            (a, b) if a.as_text().is_some() && b.as_text().is_some() => a.as_text() == b.as_text(),
            (Value::List(a), Value::List(b)) | (Value::Tuple(a), Value::Tuple(b)) => {
                if a.len() != b.len() {
                    return Ok(false);
                }
                for (x, y) in a.iter().zip(b.iter()) {
                    if !x.py_eq(y)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Dict(a), Value::Dict(b)) => {
                if a.len() != b.len() {
                    return Ok(false);
                }
                for (k, v) in a.iter() {
                    match dict_get(b, k)? {
                        Some(w) if v.py_eq(&w)? => {}
                        _ => return Ok(false),
                    }
                }
                true
            }
            (Value::Namespace(a), Value::Namespace(b)) => Arc::ptr_eq(a, b),
            (a, b) if a.is_object() || b.is_object() => {
                return decline("equality of an object this engine does not model")
            }
            _ => false,
        })
    }

    /// Python's ordering `a < b` as -1/0/1, for the types Python orders.
    pub fn py_cmp(&self, other: &Value) -> Res<std::cmp::Ordering> {
        if let (Some(a), Some(b)) = (self.int_like(), other.int_like()) {
            return Ok(a.cmp(&b));
        }
        if let (Some(a), Some(b)) = (self.number(), other.number()) {
            return a
                .partial_cmp(&b)
                .map_or_else(|| decline("NaN comparison"), Ok);
        }
        match (self.as_text(), other.as_text()) {
            // UTF-8 byte order is code point order, as Python compares str.
            (Some(a), Some(b)) => Ok(a.cmp(b)),
            _ => match (self, other) {
                (Value::List(a), Value::List(b)) | (Value::Tuple(a), Value::Tuple(b)) => {
                    for (x, y) in a.iter().zip(b.iter()) {
                        if !x.py_eq(y)? {
                            return x.py_cmp(y);
                        }
                    }
                    Ok(a.len().cmp(&b.len()))
                }
                _ => decline(format!(
                    "ordering of {} and {}",
                    self.type_name(),
                    other.type_name()
                )),
            },
        }
    }
}

/// `d[key]` of a dict held as pairs (None when absent).
pub fn dict_get(d: &[(Value, Value)], key: &Value) -> Res<Option<Value>> {
    match key {
        Value::Str(_) | Value::Markup(_) | Value::Int(_) | Value::Bool(_) | Value::None => {}
        Value::Float(_) | Value::Tuple(_) => {}
        _ => return decline("an unhashable dict key"),
    }
    for (k, v) in d {
        if k.py_eq(key)? {
            return Ok(Some(v.clone()));
        }
    }
    Ok(None)
}

/// Python's whitespace (`str.isspace`): Unicode White_Space plus the four ASCII
/// information separators, which Python also strips and splits on.
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `repr(float)` (and `str`), for finite values.
pub fn float_repr(x: f64) -> Res<String> {
    if !x.is_finite() {
        return decline("a non-finite float");
    }
    if x == 0.0 {
        return Ok(if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string());
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, as Python's repr does.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp >= 0 {
            let int_len = exp + 1;
            if n <= int_len {
                format!("{digits}{}.0", "0".repeat((int_len - n) as usize))
            } else {
                let (a, b) = digits.split_at(int_len as usize);
                format!("{a}.{b}")
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        Ok(format!("{sign}{body}"))
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        Ok(format!("{sign}{first}{frac}e{esign}{:02}", exp.abs()))
    }
}

/// Python's `repr(str)` for text this engine is sure of (printable ASCII, `\n`, `\r`,
/// `\t`, backslash); anything else declines.
pub fn str_repr(s: &str) -> Res<String> {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => return decline("repr of non-ASCII or control text"),
        }
    }
    out.push(quote);
    Ok(out)
}

/// Python's `repr(value)` for data values.
pub fn repr(v: &Value) -> Res<String> {
    Ok(match v {
        Value::Str(s) => str_repr(&s.text)?,
        Value::Markup(_) => return decline("repr of Markup"),
        Value::List(items) | Value::Tuple(items) => {
            let parts: Res<Vec<String>> = items.iter().map(repr).collect();
            let body = parts?.join(", ");
            match v {
                Value::Tuple(_) if items.len() == 1 => format!("({body},)"),
                Value::Tuple(_) => format!("({body})"),
                _ => format!("[{body}]"),
            }
        }
        Value::Dict(pairs) => {
            let mut parts = Vec::with_capacity(pairs.len());
            for (k, x) in pairs.iter() {
                parts.push(format!("{}: {}", repr(k)?, repr(x)?));
            }
            format!("{{{}}}", parts.join(", "))
        }
        Value::Undefined => return decline("repr of an undefined value"),
        other => to_plain_str(other)?,
    })
}

/// Python's `str(value)` for values that are not strings (strings keep their spans
/// through [`to_sstr`]).
pub fn to_plain_str(v: &Value) -> Res<String> {
    Ok(match v {
        Value::Undefined => String::new(),
        Value::None => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_repr(*f)?,
        Value::Str(s) => s.text.clone(),
        Value::Markup(s) => s.to_string(),
        Value::List(_) | Value::Tuple(_) | Value::Dict(_) => repr(v)?,
        other => return decline(format!("str() of {}", other.type_name())),
    })
}

/// Python's `str(value)`, spans kept (a content string prints as itself).
pub fn to_sstr(v: &Value) -> Res<SStr> {
    match v {
        Value::Str(s) => Ok((**s).clone()),
        other => Ok(SStr::plain(to_plain_str(other)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_is_pythons() {
        // Expected strings are CPython 3.11's repr() of the same doubles.
        let cases = [
            (0.1, "0.1"),
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.0 / 3.0, "0.3333333333333333"),
            (123456789.125, "123456789.125"),
            (3e300, "3e+300"),
            (-0.0, "-0.0"),
            (5e-324, "5e-324"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x).unwrap(), want, "{x:e}");
        }
        assert!(float_repr(f64::NAN).is_err());
    }

    #[test]
    fn repr_declines_what_it_does_not_model() {
        assert_eq!(str_repr("it's").unwrap(), "\"it's\"");
        assert_eq!(str_repr("a'\"b\n").unwrap(), "'a\\'\"b\\n'");
        assert!(str_repr("é").is_err());
        assert!(str_repr("\u{7}").is_err());
    }

    #[test]
    fn python_whitespace_includes_information_separators() {
        for c in ['\u{1c}', '\u{1f}', '\u{3000}', '\u{85}', ' ', '\t'] {
            assert!(py_space(c), "{c:?}");
        }
        for c in ['\u{200b}', 'a', '\u{180e}'] {
            assert!(!py_space(c), "{c:?}");
        }
    }
}
