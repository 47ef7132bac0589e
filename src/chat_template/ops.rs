//! Operators, attribute and item access, slicing and iteration with the results Jinja
//! gives on CPython (the sandbox's `getattr`/`getitem` fallbacks included).

use std::sync::Arc;

use super::ast::BinOp;
use super::value::{decline, dict_get, to_sstr, LoopInfo, Res, SStr, Value};

/// `dir(dict)`, `dir(list)` and `dir(str)` without dunders: an attribute of that name is
/// the method, not a key or undefined.
const DICT_ATTRS: &[&str] = &[
    "clear",
    "copy",
    "fromkeys",
    "get",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
];
const LIST_ATTRS: &[&str] = &[
    "append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove", "reverse",
    "sort",
];
pub const STR_ATTRS: &[&str] = &[
    "capitalize",
    "casefold",
    "center",
    "count",
    "encode",
    "endswith",
    "expandtabs",
    "find",
    "format",
    "format_map",
    "index",
    "isalnum",
    "isalpha",
    "isascii",
    "isdecimal",
    "isdigit",
    "isidentifier",
    "islower",
    "isnumeric",
    "isprintable",
    "isspace",
    "istitle",
    "isupper",
    "join",
    "ljust",
    "lower",
    "lstrip",
    "maketrans",
    "partition",
    "removeprefix",
    "removesuffix",
    "replace",
    "rfind",
    "rindex",
    "rjust",
    "rpartition",
    "rsplit",
    "rstrip",
    "split",
    "splitlines",
    "startswith",
    "strip",
    "swapcase",
    "title",
    "translate",
    "upper",
    "zfill",
];

/// Largest string or list `*` may build before the size check (bytes or items).
const MAX_REPEAT: usize = 1 << 26;

fn int_like(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn float_like(v: &Value) -> Option<f64> {
    match v {
        Value::Float(f) => Some(*f),
        other => int_like(other).map(|i| i as f64),
    }
}

fn overflow<T>() -> Res<T> {
    decline("integer overflow (Python integers are unbounded)")
}

/// `-value`.
pub fn negate(v: &Value) -> Res<Value> {
    match v {
        Value::Float(f) => Ok(Value::Float(-f)),
        other => match int_like(other) {
            Some(i) => i.checked_neg().map(Value::Int).map_or_else(overflow, Ok),
            None => decline(format!("-{}", other.type_name())),
        },
    }
}

fn concat(a: &SStr, b: &SStr) -> Value {
    let mut out = SStr {
        text: String::with_capacity(a.text.len() + b.text.len()),
        spans: vec![],
    };
    out.push(a);
    out.push(b);
    Value::sstr(out)
}

fn repeat(s: &SStr, count: i64) -> Res<Value> {
    let n = count.max(0) as usize;
    if s.text.len().saturating_mul(n) > MAX_REPEAT {
        return decline("a repeated string over the size limit");
    }
    let mut out = SStr::default();
    for _ in 0..n {
        out.push(s);
    }
    Ok(Value::sstr(out))
}

/// A binary operator other than `and`/`or`.
pub fn binary(op: BinOp, l: Value, r: &Value) -> Res<Value> {
    // `a + b` and `a ~ b` on strings: append to `a` in place when this is its only
    // reference (the left end of a chain `'<|x|>' + role + '\n' + content`), so a chain
    // copies each piece once, as Python's one-pass join of the chain does.
    match (op, l) {
        (BinOp::Add | BinOp::Concat, Value::Str(a))
            if matches!(r, Value::Str(_)) || op == BinOp::Concat =>
        {
            let mut out = Arc::try_unwrap(a).unwrap_or_else(|shared| (*shared).clone());
            match r {
                Value::Str(b) => out.push(b),
                other => out.push(&to_sstr(other)?),
            }
            Ok(Value::sstr(out))
        }
        (BinOp::Concat, left) => Ok(concat(&to_sstr(&left)?, &to_sstr(r)?)),
        (_, left) => arithmetic(op, &left, r),
    }
}

fn arithmetic(op: BinOp, l: &Value, r: &Value) -> Res<Value> {
    if let (Some(a), Some(b)) = (int_like(l), int_like(r)) {
        return int_op(op, a, b);
    }
    if let (Some(a), Some(b)) = (float_like(l), float_like(r)) {
        return match op {
            BinOp::Add => Ok(Value::Float(a + b)),
            BinOp::Sub => Ok(Value::Float(a - b)),
            BinOp::Mul => Ok(Value::Float(a * b)),
            BinOp::Div if b != 0.0 => Ok(Value::Float(a / b)),
            _ => decline("a float operation this engine does not model"),
        };
    }
    match (op, l, r) {
        (BinOp::Add, Value::List(a), Value::List(b)) => Ok(Value::List(Arc::new(
            a.iter().chain(b.iter()).cloned().collect(),
        ))),
        (BinOp::Add, Value::Tuple(a), Value::Tuple(b)) => Ok(Value::Tuple(Arc::new(
            a.iter().chain(b.iter()).cloned().collect(),
        ))),
        (BinOp::Mul, Value::Str(s), n) | (BinOp::Mul, n, Value::Str(s)) => match int_like(n) {
            Some(count) => repeat(s, count),
            None => decline("str * non-int"),
        },
        (BinOp::Mul, Value::List(items), n) | (BinOp::Mul, n, Value::List(items)) => {
            match int_like(n) {
                Some(count) => {
                    let k = count.max(0) as usize;
                    if items.len().saturating_mul(k) > MAX_REPEAT {
                        return decline("a repeated list over the size limit");
                    }
                    let mut out = Vec::with_capacity(items.len() * k);
                    for _ in 0..k {
                        out.extend(items.iter().cloned());
                    }
                    Ok(Value::List(Arc::new(out)))
                }
                None => decline("list * non-int"),
            }
        }
        _ => decline(format!("{op:?} of {} and {}", l.type_name(), r.type_name())),
    }
}

fn int_op(op: BinOp, a: i64, b: i64) -> Res<Value> {
    let v = match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        BinOp::Div => {
            if b == 0 || a.unsigned_abs() > 1 << 53 || b.unsigned_abs() > 1 << 53 {
                return decline("an int division this engine does not model exactly");
            }
            return Ok(Value::Float(a as f64 / b as f64));
        }
        BinOp::FloorDiv => {
            if b == 0 {
                return decline("division by zero");
            }
            a.checked_div(b).map(|q| {
                if a % b != 0 && ((a < 0) != (b < 0)) {
                    q - 1
                } else {
                    q
                }
            })
        }
        BinOp::Rem => {
            if b == 0 {
                return decline("modulo by zero");
            }
            a.checked_rem(b).map(|r| {
                if r != 0 && ((r < 0) != (b < 0)) {
                    r + b
                } else {
                    r
                }
            })
        }
        BinOp::Pow => {
            if b < 0 {
                return decline("a negative power (a float in Python)");
            }
            u32::try_from(b).ok().and_then(|e| a.checked_pow(e))
        }
        _ => return decline("an int operator"),
    };
    v.map(Value::Int).map_or_else(overflow, Ok)
}

/// Python's `iter(value)` collected (Jinja's undefined iterates as empty).
pub fn iterate(v: &Value) -> Res<Vec<Value>> {
    Ok(match v {
        Value::List(items) | Value::Tuple(items) | Value::View(items) => items.to_vec(),
        Value::Dict(pairs) => pairs.iter().map(|(k, _)| k.clone()).collect(),
        // Iterating a str yields plain one-character strings (spans are not kept).
        Value::Str(_) | Value::Markup(_) => v
            .as_text()
            .expect("text")
            .chars()
            .map(|c| Value::str(c.to_string()))
            .collect(),
        Value::Undefined => Vec::new(),
        Value::Iter(cell) => match cell.lock().ok().and_then(|mut slot| slot.take()) {
            Some(items) => items,
            None => return decline("a second pass over a one-shot iterator"),
        },
        other => return decline(format!("iteration over {}", other.type_name())),
    })
}

fn loop_attr(info: &LoopInfo, name: &str) -> Res<Value> {
    let (i, n) = (info.index0 as i64, info.length as i64);
    Ok(match name {
        "index0" => Value::Int(i),
        "index" => Value::Int(i + 1),
        "revindex" => Value::Int(n - i),
        "revindex0" => Value::Int(n - i - 1),
        "first" => Value::Bool(i == 0),
        "last" => Value::Bool(i == n - 1),
        "length" => Value::Int(n),
        "depth" => Value::Int(1),
        "depth0" => Value::Int(0),
        "previtem" => info.prev.clone().unwrap_or(Value::Undefined),
        "nextitem" => info.next.clone().unwrap_or(Value::Undefined),
        _ => return decline(format!("loop.{name}")),
    })
}

/// `obj.name`: Python attribute first, then item, else undefined (Jinja's sandbox).
pub fn get_attr(obj: &Value, name: &str) -> Res<Value> {
    match obj {
        Value::Dict(pairs) => {
            if DICT_ATTRS.contains(&name) {
                return method(obj, name, &["get", "items", "keys", "values"]);
            }
            if name.starts_with("__") {
                return decline("a dunder attribute");
            }
            Ok(dict_get(pairs, &Value::str(name))?.unwrap_or(Value::Undefined))
        }
        Value::Str(_) => {
            if STR_ATTRS.contains(&name) {
                return method(obj, name, super::strings::METHODS);
            }
            undefined_unless_dunder(name)
        }
        Value::List(_) | Value::Tuple(_) => {
            if LIST_ATTRS.contains(&name) {
                return decline(format!("list.{name}"));
            }
            undefined_unless_dunder(name)
        }
        Value::Namespace(ns) => {
            let attrs = ns
                .lock()
                .map_err(|_| super::value::Decline("namespace lock".into()))?;
            Ok(attrs
                .iter()
                .find(|(k, _)| k == name)
                .map_or(Value::Undefined, |(_, v)| v.clone()))
        }
        Value::Loop(info) => loop_attr(info, name),
        Value::None => undefined_unless_dunder(name),
        other => decline(format!("attribute {name} of {}", other.type_name())),
    }
}

fn undefined_unless_dunder(name: &str) -> Res<Value> {
    if name.starts_with("__") {
        return decline("a dunder attribute");
    }
    Ok(Value::Undefined)
}

fn method(obj: &Value, name: &str, modelled: &[&str]) -> Res<Value> {
    if modelled.contains(&name) {
        Ok(Value::Method(Arc::new((obj.clone(), name.to_string()))))
    } else {
        decline(format!("the method {name}"))
    }
}

/// `obj[key]`: Python item first, then attribute for a str key, else undefined.
pub fn get_item(obj: &Value, key: &Value) -> Res<Value> {
    match (obj, key) {
        (Value::Dict(pairs), _) => match dict_get(pairs, key)? {
            Some(v) => Ok(v),
            None => match key.as_text() {
                Some(name) if DICT_ATTRS.contains(&name) => decline("a dict method by subscript"),
                _ => Ok(Value::Undefined),
            },
        },
        (Value::List(items) | Value::Tuple(items), _) => match int_like(key) {
            Some(i) => {
                let n = items.len() as i64;
                let at = if i < 0 { i + n } else { i };
                Ok(if (0..n).contains(&at) {
                    items[at as usize].clone()
                } else {
                    Value::Undefined
                })
            }
            None => match key.as_text() {
                Some(name) if LIST_ATTRS.contains(&name) || name.starts_with("__") => {
                    decline("a list attribute by subscript")
                }
                Some(_) => Ok(Value::Undefined),
                None => decline("a list index that is not an int"),
            },
        },
        (Value::Str(s), _) => match int_like(key) {
            Some(i) => {
                let starts = s.char_starts();
                let n = starts.len() as i64 - 1;
                let at = if i < 0 { i + n } else { i };
                if !(0..n).contains(&at) {
                    return Ok(Value::Undefined);
                }
                Ok(Value::sstr(
                    s.slice(starts[at as usize], starts[at as usize + 1]),
                ))
            }
            None => match key.as_text() {
                Some(name) if STR_ATTRS.contains(&name) || name.starts_with("__") => {
                    decline("a str attribute by subscript")
                }
                Some(_) => Ok(Value::Undefined),
                None => decline("a str index that is not an int"),
            },
        },
        (Value::None, _) => match key.as_text() {
            Some(name) => undefined_unless_dunder(name),
            None => Ok(Value::Undefined),
        },
        (Value::Namespace(_) | Value::Loop(_), Value::Str(s)) => get_attr(obj, &s.text),
        _ => decline(format!("{}[{}]", obj.type_name(), key.type_name())),
    }
}

/// Python's `slice(start, stop, step).indices(n)` as the list of indices.
fn slice_indices(
    n: i64,
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
) -> Res<Vec<i64>> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return decline("slice step 0");
    }
    let (lower, upper) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let clamp = |v: Option<i64>, default: i64| match v {
        None => default,
        Some(v) if v < 0 => (v + n).max(lower),
        Some(v) => v.min(upper),
    };
    let start = clamp(start, if step > 0 { lower } else { upper });
    let stop = clamp(stop, if step > 0 { upper } else { lower });
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(i);
        i += step;
    }
    Ok(out)
}

fn bound(v: Option<Value>) -> Res<Option<i64>> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(other) => match int_like(&other) {
            Some(i) => Ok(Some(i)),
            None => decline("a slice bound that is not an int"),
        },
    }
}

/// `obj[start:stop:step]`.
pub fn slice(
    obj: &Value,
    start: Option<Value>,
    stop: Option<Value>,
    step: Option<Value>,
) -> Res<Value> {
    let (a, b, c) = (bound(start)?, bound(stop)?, bound(step)?);
    match obj {
        Value::List(items) | Value::Tuple(items) => {
            let picked: Vec<Value> = slice_indices(items.len() as i64, a, b, c)?
                .into_iter()
                .map(|i| items[i as usize].clone())
                .collect();
            Ok(match obj {
                Value::Tuple(_) => Value::Tuple(Arc::new(picked)),
                _ => Value::List(Arc::new(picked)),
            })
        }
        Value::Str(s) => {
            let starts = s.char_starts();
            let n = starts.len() as i64 - 1;
            let picked = slice_indices(n, a, b, c)?;
            if c.unwrap_or(1) == 1 {
                let (lo, hi) = match (picked.first(), picked.last()) {
                    (Some(&f), Some(&l)) => (starts[f as usize], starts[l as usize + 1]),
                    _ => (0, 0),
                };
                return Ok(Value::sstr(s.slice(lo, hi)));
            }
            Ok(Value::sstr(pick_chars(s, &starts, &picked)))
        }
        other => decline(format!("slicing {}", other.type_name())),
    }
}

/// The characters at `picked` (char indices), each keeping its owner; runs of one owner
/// over consecutive output characters merge (as the Python tracker rebuilds them).
pub fn pick_chars(s: &SStr, starts: &[usize], picked: &[i64]) -> SStr {
    let mut out = SStr::default();
    for &i in picked {
        let (lo, hi) = (starts[i as usize], starts[i as usize + 1]);
        // The tracker's per-character owners: the last span over a character wins, and
        // a negative owner (a generation mark) leaves it unowned.
        let owner = s
            .spans
            .iter()
            .rev()
            .find(|&&(a, b, _)| (a as usize) <= lo && hi <= b as usize)
            .filter(|&&(_, _, o)| o >= 0);
        let at = out.text.len() as u32;
        out.text.push_str(&s.text[lo..hi]);
        let end = out.text.len() as u32;
        if let Some(&(_, _, o)) = owner {
            match out.spans.last_mut() {
                Some(last) if last.1 == at && last.2 == o => last.1 = end,
                _ => out.spans.push((at, end, o)),
            }
        }
    }
    out
}
