//! Methods templates call on strings and dicts, with the spans the Python tracker
//! (`tokenpact.chat.spans.SpanStr`) gives: strip/split/replace/case mapping keep where
//! content characters went; methods the tracker does not override (`join`, `find`)
//! return plain values, as on CPython.

use std::sync::Arc;

use super::value::{decline, dict_get, py_space, Res, SStr, Value};

/// Methods modelled here (any other str method declines).
pub const METHODS: &[&str] = &[
    "strip",
    "lstrip",
    "rstrip",
    "split",
    "rsplit",
    "startswith",
    "endswith",
    "replace",
    "upper",
    "lower",
    "capitalize",
    "removeprefix",
    "removesuffix",
    "find",
    "join",
];

fn text_arg<'a>(v: Option<&'a Value>, what: &str) -> Res<Option<&'a str>> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Str(s)) => Ok(Some(&s.text)),
        Some(_) => decline(format!("{what} argument that is not a str")),
    }
}

/// Byte range left after stripping `chars` (None: whitespace) from the chosen ends.
fn strip_range(text: &str, chars: Option<&str>, left: bool, right: bool) -> (usize, usize) {
    let strip = |c: char| match chars {
        None => py_space(c),
        Some(set) => set.contains(c),
    };
    let mut lo = 0;
    if left {
        lo = text.len() - text.trim_start_matches(strip).len();
    }
    let mut hi = text.len();
    if right {
        hi = text.trim_end_matches(strip).len().max(lo);
    }
    (lo, hi)
}

pub fn strip(s: &SStr, chars: Option<&str>, left: bool, right: bool) -> SStr {
    let (lo, hi) = strip_range(&s.text, chars, left, right);
    s.slice(lo, hi)
}

/// `strip` of a shared string: the same string (no copy) when nothing is stripped.
pub fn strip_shared(s: &Arc<SStr>, chars: Option<&str>, left: bool, right: bool) -> Value {
    let (lo, hi) = strip_range(&s.text, chars, left, right);
    if lo == 0 && hi == s.text.len() {
        return Value::Str(s.clone());
    }
    Value::sstr(s.slice(lo, hi))
}

/// `s.split(sep, maxsplit)` as byte ranges of the pieces.
fn split_ranges(text: &str, sep: Option<&str>, maxsplit: i64) -> Res<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    match sep {
        Some("") => return decline("empty separator"),
        Some(sep) => {
            let mut pos = 0;
            while maxsplit < 0 || (out.len() as i64) < maxsplit {
                match text[pos..].find(sep) {
                    Some(at) => {
                        out.push((pos, pos + at));
                        pos += at + sep.len();
                    }
                    None => break,
                }
            }
            out.push((pos, text.len()));
        }
        None => {
            let mut iter = text.char_indices().peekable();
            loop {
                while let Some(&(_, c)) = iter.peek() {
                    if !py_space(c) {
                        break;
                    }
                    iter.next();
                }
                let Some(&(start, _)) = iter.peek() else {
                    break;
                };
                if maxsplit >= 0 && out.len() as i64 == maxsplit {
                    out.push((start, text.len()));
                    break;
                }
                let mut end = text.len();
                for (i, c) in iter.by_ref() {
                    if py_space(c) {
                        end = i;
                        break;
                    }
                }
                out.push((start, end));
            }
        }
    }
    Ok(out)
}

fn pieces(s: &SStr, ranges: &[(usize, usize)]) -> Value {
    Value::List(Arc::new(
        ranges
            .iter()
            .map(|&(a, b)| Value::sstr(s.slice(a, b)))
            .collect(),
    ))
}

/// `s.replace(old, new, count)`: the pieces between matches keep their spans, and so
/// does `new` (the tracker splits and joins).
/// Largest string a replace or join may build before the caller's size check (bytes):
/// a hostile template must not make one allocation of many gigabytes.
const MAX_BUILT: usize = 1 << 27;

fn bounded(size: usize) -> Res<()> {
    if size > MAX_BUILT {
        return decline("a string over the size limit");
    }
    Ok(())
}

pub fn replace(s: &SStr, old: &str, new: &SStr, count: i64) -> Res<SStr> {
    if old.is_empty() {
        let slots = s.text.chars().count().saturating_add(1);
        bounded(
            s.text
                .len()
                .saturating_add(slots.saturating_mul(new.text.len())),
        )?;
        // The tracker hands this rare case to str.replace: the result is untracked.
        let n = if count < 0 {
            usize::MAX
        } else {
            count as usize
        };
        // `new` goes before each of the first `n` of the `slots` positions (around every
        // character).
        let mut text = String::new();
        for (k, c) in s.text.chars().enumerate() {
            if k < n {
                text.push_str(&new.text);
            }
            text.push(c);
        }
        if slots <= n {
            text.push_str(&new.text);
        }
        return Ok(SStr::plain(text));
    }
    let ranges = split_ranges(&s.text, Some(old), count)?;
    bounded(
        s.text
            .len()
            .saturating_add(ranges.len().saturating_mul(new.text.len())),
    )?;
    // A plain receiver is a plain str in Python: str.replace keeps no spans of `new`.
    let new = if s.spans.is_empty() {
        &SStr::plain(new.text.clone())
    } else {
        new
    };
    let mut out = SStr::default();
    for (k, &(a, b)) in ranges.iter().enumerate() {
        if k > 0 {
            out.push(new);
        }
        out.push(&s.slice(a, b));
    }
    Ok(out)
}

/// Whether Python 3.11 (Unicode 14) and Rust's standard library map the case of `text`
/// alike: scripts whose case mappings and properties no Unicode version after 14 changed
/// (Latin, Greek, Cyrillic and Armenian below U+0530, Georgian, Latin and Greek
/// extended, the Latin ligatures, fullwidth Latin) and text without case in Rust's
/// tables; anything else declines. The final-sigma rule looks at its neighbours'
/// properties, so a capital sigma beside text outside those scripts declines too.
fn case_alike(text: &str) -> bool {
    // (Unicode 16 gave "ƛ" and "ɤ" upper cases and changed whether "ʕ" and "ჼ" are
    // lowercase: checked against CPython 3.11 over every character of these ranges.)
    let stable = |c: char| {
        !matches!(c as u32, 0x19B | 0x264 | 0x295 | 0x10FC)
            && matches!(c as u32,
            0..=0x52F
            | 0x10A0..=0x10FF
            | 0x1C90..=0x1CBF
            | 0x1E00..=0x1FFF
            | 0xFB00..=0xFB17
            | 0xFF21..=0xFF3A
            | 0xFF41..=0xFF5A)
    };
    let caseless = |c: char| {
        !c.is_lowercase()
            && !c.is_uppercase()
            && c.to_lowercase().eq([c])
            && c.to_uppercase().eq([c])
    };
    let sigma = text.contains('\u{3a3}');
    text.chars().all(|c| stable(c) || (!sigma && caseless(c)))
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Upper,
    Lower,
    Capitalize,
}

/// `str.upper()`, `str.lower()` or `str.capitalize()` as the tracker maps them: a result
/// of the same length keeps each character's owner; one whose length changed (`"ß"`
/// upper is `"SS"`) is owned as a whole by the first span's owner.
pub fn case_map(s: &SStr, case: Case) -> Res<SStr> {
    if s.text.is_ascii() {
        // Same length, same owners (the common case).
        let text = match case {
            Case::Upper => s.text.to_ascii_uppercase(),
            Case::Lower => s.text.to_ascii_lowercase(),
            Case::Capitalize => {
                let mut t = s.text.to_ascii_lowercase();
                if let Some(first) = t.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                t
            }
        };
        return Ok(SStr {
            text,
            spans: s.spans.clone(),
        });
    }
    let text = {
        if !case_alike(&s.text) {
            return decline("case mapping of text outside the modelled scripts");
        }
        match case {
            Case::Upper => s.text.to_uppercase(),
            Case::Lower => s.text.to_lowercase(),
            Case::Capitalize => {
                // Python title-cases the first character and lowercases the rest with the
                // whole string as the final-sigma context. Title case is upper case except
                // for digraphs, ligatures, "ß", Armenian "և", Greek with ypogegrammeni and
                // Georgian: those decline (Rust has no title case).
                let first = s.text.chars().next().expect("non-ASCII text is not empty");
                let title_differs = matches!(first as u32,
                    0xDF | 0x1C4..=0x1CC | 0x1F1..=0x1F3 | 0x587 | 0x10A0..=0x10FF
                    | 0x1F80..=0x1FFF | 0xFB00..=0xFB17);
                if title_differs {
                    return decline(
                        "capitalize of a character whose title case is not its upper case",
                    );
                }
                let lowered = s.text.to_lowercase();
                let rest_at = lowered
                    .char_indices()
                    .nth(first.to_lowercase().count())
                    .map_or(lowered.len(), |(i, _)| i);
                let mut t: String = first.to_uppercase().collect();
                t.push_str(&lowered[rest_at..]);
                t
            }
        }
    };
    let (old, new) = (s.char_starts(), SStr::plain(text));
    let new_starts = new.char_starts();
    if old.len() != new_starts.len() {
        let spans = match s.spans.first() {
            Some(&(_, _, o)) if !new.text.is_empty() => vec![(0, new.text.len() as u32, o)],
            _ => Vec::new(),
        };
        return Ok(SStr {
            text: new.text,
            spans,
        });
    }
    // Same length in characters: each span moved to the same characters (their UTF-8
    // widths may differ, "ı" upper is "I").
    let char_of = |b: u32| old.binary_search(&(b as usize)).unwrap_or_else(|i| i);
    let spans = s
        .spans
        .iter()
        .map(|&(a, b, o)| {
            (
                new_starts[char_of(a)] as u32,
                new_starts[char_of(b)] as u32,
                o,
            )
        })
        .collect();
    Ok(SStr {
        text: new.text,
        spans,
    })
}

pub fn upper(s: &SStr) -> Res<SStr> {
    case_map(s, Case::Upper)
}

pub fn lower(s: &SStr) -> Res<SStr> {
    case_map(s, Case::Lower)
}

pub fn capitalize(s: &SStr) -> Res<SStr> {
    case_map(s, Case::Capitalize)
}

fn int_arg(v: Option<&Value>, default: i64) -> Res<i64> {
    match v {
        None => Ok(default),
        Some(Value::Int(i)) => Ok(*i),
        Some(Value::Bool(b)) => Ok(i64::from(*b)),
        Some(_) => decline("an int argument"),
    }
}

fn affix_test(s: &str, arg: Option<&Value>, starts: bool) -> Res<bool> {
    let test = |p: &str| {
        if starts {
            s.starts_with(p)
        } else {
            s.ends_with(p)
        }
    };
    match arg {
        Some(Value::Str(p)) => Ok(test(&p.text)),
        Some(Value::Tuple(items)) => {
            for item in items.iter() {
                match item {
                    Value::Str(p) if test(&p.text) => return Ok(true),
                    Value::Str(_) => {}
                    _ => return decline("a non-str prefix"),
                }
            }
            Ok(false)
        }
        _ => decline("startswith/endswith argument"),
    }
}

fn str_method(s: &Arc<SStr>, name: &str, pos: &[Value], kw: &[(String, Value)]) -> Res<Value> {
    let kwarg = |k: &str| kw.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let allowed: &[&str] = if matches!(name, "split" | "rsplit") {
        &["sep", "maxsplit"]
    } else {
        &[]
    };
    if kw.iter().any(|(k, _)| !allowed.contains(&k.as_str())) {
        return decline(format!("keyword arguments to str.{name}"));
    }
    let arity = |n: usize| {
        if pos.len() > n {
            decline(format!("str.{name} arguments"))
        } else {
            Ok(())
        }
    };
    Ok(match name {
        "strip" | "lstrip" | "rstrip" => {
            arity(1)?;
            let chars = text_arg(pos.first(), "strip")?;
            strip_shared(s, chars, name != "rstrip", name != "lstrip")
        }
        "split" | "rsplit" => {
            arity(2)?;
            let sep = text_arg(pos.first().or(kwarg("sep")), "split")?;
            let maxsplit = int_arg(pos.get(1).or(kwarg("maxsplit")), -1)?;
            if name == "rsplit" && maxsplit >= 0 {
                return decline("rsplit with maxsplit");
            }
            pieces(s, &split_ranges(&s.text, sep, maxsplit)?)
        }
        "startswith" | "endswith" => {
            arity(1)?;
            Value::Bool(affix_test(&s.text, pos.first(), name == "startswith")?)
        }
        "replace" => {
            arity(3)?;
            let (Some(Value::Str(old)), Some(Value::Str(new))) = (pos.first(), pos.get(1)) else {
                return decline("replace arguments");
            };
            Value::sstr(replace(s, &old.text, new, int_arg(pos.get(2), -1)?)?)
        }
        "upper" | "lower" | "capitalize" => {
            arity(0)?;
            Value::sstr(match name {
                "upper" => upper(s)?,
                "lower" => lower(s)?,
                _ => capitalize(s)?,
            })
        }
        "removeprefix" | "removesuffix" => {
            arity(1)?;
            let Some(Value::Str(affix)) = pos.first() else {
                return decline("affix argument");
            };
            let a = &affix.text;
            if name == "removeprefix" && s.text.starts_with(a.as_str()) {
                Value::sstr(s.slice(a.len(), s.text.len()))
            } else if name == "removesuffix" && !a.is_empty() && s.text.ends_with(a.as_str()) {
                Value::sstr(s.slice(0, s.text.len() - a.len()))
            } else {
                Value::Str(s.clone())
            }
        }
        "find" => {
            arity(1)?;
            let Some(Value::Str(sub)) = pos.first() else {
                return decline("find argument");
            };
            match s.text.find(sub.text.as_str()) {
                Some(at) => Value::Int(s.text[..at].chars().count() as i64),
                None => Value::Int(-1),
            }
        }
        "join" => {
            arity(1)?;
            // str.join is not overridden by the tracker: a plain result.
            let items = super::ops::iterate(pos.first().unwrap_or(&Value::Undefined))?;
            let mut parts = Vec::with_capacity(items.len());
            for item in &items {
                match item.as_text() {
                    Some(t) => parts.push(t),
                    None => return decline("join of a non-str item"),
                }
            }
            let total: usize = parts.iter().map(|p| p.len()).sum();
            bounded(total.saturating_add(parts.len().saturating_mul(s.text.len())))?;
            Value::str(parts.join(&s.text))
        }
        _ => return decline(format!("str.{name}")),
    })
}

fn dict_method(
    pairs: &[(Value, Value)],
    name: &str,
    pos: &[Value],
    kw: &[(String, Value)],
) -> Res<Value> {
    if !kw.is_empty() {
        return decline("keyword arguments to a dict method");
    }
    Ok(match (name, pos.len()) {
        ("get", 1 | 2) => {
            dict_get(pairs, &pos[0])?.unwrap_or_else(|| pos.get(1).cloned().unwrap_or(Value::None))
        }
        ("items", 0) => Value::View(Arc::new(
            pairs
                .iter()
                .map(|(k, v)| Value::Tuple(Arc::new(vec![k.clone(), v.clone()])))
                .collect(),
        )),
        ("keys", 0) => Value::View(Arc::new(pairs.iter().map(|(k, _)| k.clone()).collect())),
        ("values", 0) => Value::View(Arc::new(pairs.iter().map(|(_, v)| v.clone()).collect())),
        _ => return decline(format!("dict.{name}")),
    })
}

/// `obj.name(*pos, **kw)`.
pub fn call_method(obj: &Value, name: &str, pos: &[Value], kw: &[(String, Value)]) -> Res<Value> {
    match obj {
        Value::Str(s) => {
            if !super::ops::STR_ATTRS.contains(&name) {
                return decline("a call of an undefined attribute");
            }
            str_method(s, name, pos, kw)
        }
        Value::Dict(pairs) => {
            if !matches!(name, "get" | "items" | "keys" | "values") {
                return decline(format!("dict.{name}"));
            }
            dict_method(pairs, name, pos, kw)
        }
        other => match super::ops::get_attr(other, name)? {
            Value::Method(m) => call_method(&m.0, &m.1, pos, kw),
            _ => decline(format!("a call of {}.{name}", other.type_name())),
        },
    }
}
