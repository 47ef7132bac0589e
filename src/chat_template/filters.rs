//! Filters, tests and globals of transformers' chat-template environment, with Jinja's
//! results on CPython. Generator filters (`map`, `select`, `items`, `reverse` of a list)
//! return one-shot iterators, as in Python; anything not modelled declines.

use std::sync::{Arc, Mutex};

use super::eval::{contains, Eval};
use super::ops::{get_item, iterate, pick_chars};
use super::pyjson::{dumps, JsonOptions};
use super::strings::{capitalize, lower, replace, strip, strip_shared, upper};
use super::value::{decline, to_plain_str, to_sstr, Global, Res, SStr, Value};

/// Jinja's `range` limit in the sandbox (`MAX_RANGE`).
const MAX_RANGE: i64 = 100_000;

fn one_shot(items: Vec<Value>) -> Value {
    Value::Iter(Arc::new(Mutex::new(Some(items))))
}

/// Positional-or-keyword arguments bound by name (`names` in order after the value).
fn bind<'a>(
    what: &str,
    names: &[&str],
    pos: &'a [Value],
    kw: &'a [(String, Value)],
) -> Res<Vec<Option<&'a Value>>> {
    if pos.len() > names.len() {
        return decline(format!("too many arguments to {what}"));
    }
    let mut out: Vec<Option<&Value>> = names.iter().map(|_| None).collect();
    for (i, v) in pos.iter().enumerate() {
        out[i] = Some(v);
    }
    for (k, v) in kw {
        match names.iter().position(|n| n == k) {
            Some(i) if out[i].is_none() => out[i] = Some(v),
            _ => return decline(format!("keyword {k} to {what}")),
        }
    }
    Ok(out)
}

fn soft_str(v: &Value) -> Res<SStr> {
    match v {
        Value::Markup(_) => decline("a str method of Markup"),
        other => to_sstr(other),
    }
}

fn length(v: &Value) -> Res<usize> {
    Ok(match v {
        Value::Str(s) => s.char_len(),
        Value::Markup(m) => m.chars().count(),
        Value::List(items) | Value::Tuple(items) | Value::View(items) => items.len(),
        Value::Dict(pairs) => pairs.len(),
        Value::Undefined => 0,
        other => return decline(format!("len() of {}", other.type_name())),
    })
}

fn tojson(value: &Value, args: &[Option<&Value>]) -> Res<Value> {
    let flag = |v: Option<&Value>| match v {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => decline("a tojson flag that is not a bool"),
    };
    let ensure_ascii = flag(args[0])?;
    let indent = match args[1] {
        None | Some(Value::None) => None,
        Some(Value::Int(n)) if (0..=64).contains(n) => Some(" ".repeat(*n as usize)),
        Some(Value::Str(s)) if s.text.len() <= 64 => Some(s.text.clone()),
        Some(_) => return decline("a tojson indent"),
    };
    let (item_sep, key_sep) = match args[2] {
        None | Some(Value::None) => (
            if indent.is_some() { "," } else { ", " }.to_string(),
            ": ".to_string(),
        ),
        Some(Value::List(p) | Value::Tuple(p)) if p.len() == 2 => match (&p[0], &p[1]) {
            (Value::Str(a), Value::Str(b)) => (a.text.clone(), b.text.clone()),
            _ => return decline("tojson separators"),
        },
        Some(_) => return decline("tojson separators"),
    };
    let opts = JsonOptions {
        ensure_ascii,
        indent,
        item_sep,
        key_sep,
        sort_keys: flag(args[3])?,
    };
    Ok(Value::sstr(dumps(value, &opts)?))
}

/// `attribute` of `item` as Jinja's `make_attrgetter` reads it (item access first).
fn attr_of(item: &Value, attribute: &Value) -> Res<Value> {
    match attribute {
        Value::Str(s) if !s.text.contains('.') => {
            let key = match s.text.parse::<i64>() {
                Ok(i) if s.text.bytes().all(|b| b.is_ascii_digit()) => Value::Int(i),
                _ => attribute.clone(),
            };
            get_item(item, &key)
        }
        Value::Int(_) => get_item(item, attribute),
        _ => decline("a dotted or unusual attribute path"),
    }
}

fn select(name: &str, value: &Value, pos: &[Value], kw: &[(String, Value)]) -> Res<Value> {
    if !kw.is_empty() {
        return decline("keyword arguments to a select filter");
    }
    let by_attr = name.ends_with("attr");
    let keep_if = name.starts_with("select");
    let (attr, rest) = if by_attr {
        match pos.split_first() {
            Some((a, rest)) => (Some(a), rest),
            None => return decline("selectattr without an attribute"),
        }
    } else {
        (None, pos)
    };
    let mut kept = Vec::new();
    for item in iterate(value)? {
        let probe = match attr {
            Some(a) => attr_of(&item, a)?,
            None => item.clone(),
        };
        let pass = match rest.split_first() {
            None => probe.truthy(),
            Some((Value::Str(t), args)) => test(&t.text, &probe, args)?,
            Some(_) => return decline("a test name that is not a string"),
        };
        if pass == keep_if {
            kept.push(item);
        }
    }
    Ok(one_shot(kept))
}

fn map(ev: &mut Eval, value: &Value, pos: &[Value], kw: &[(String, Value)]) -> Res<Value> {
    let items = iterate(value)?;
    if let Some((Value::Str(f), args)) = pos.split_first() {
        if !kw.is_empty() {
            return decline("keyword arguments to map(filter)");
        }
        let out = items
            .into_iter()
            .map(|item| filter(ev, &f.text, item, args, &[]))
            .collect::<Res<_>>()?;
        return Ok(one_shot(out));
    }
    let args = bind("map", &["attribute", "default"], pos, kw)?;
    let Some(attribute) = args[0] else {
        return decline("map without attribute");
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let v = attr_of(&item, attribute)?;
        out.push(match (&v, args[1]) {
            (Value::Undefined, Some(d)) => d.clone(),
            _ => v,
        });
    }
    Ok(one_shot(out))
}

/// `value|name(*pos, **kw)`.
pub fn filter(
    ev: &mut Eval,
    name: &str,
    value: Value,
    pos: &[Value],
    kw: &[(String, Value)],
) -> Res<Value> {
    let no_args = || {
        if pos.is_empty() && kw.is_empty() {
            Ok(())
        } else {
            decline(format!("arguments to {name}"))
        }
    };
    Ok(match name {
        "trim" => {
            let args = bind(name, &["chars"], pos, kw)?;
            let chars = match args[0] {
                None | Some(Value::None) => None,
                Some(Value::Str(s)) => Some(s.text.clone()),
                Some(_) => return decline("trim chars"),
            };
            match &value {
                Value::Str(s) => strip_shared(s, chars.as_deref(), true, true),
                other => Value::sstr(strip(&soft_str(other)?, chars.as_deref(), true, true)),
            }
        }
        "length" | "count" => {
            no_args()?;
            Value::Int(length(&value)? as i64)
        }
        "tojson" => {
            let args = bind(
                name,
                &["ensure_ascii", "indent", "separators", "sort_keys"],
                pos,
                kw,
            )?;
            if let Some(Value::Int(n)) = args[1] {
                ev.check_size(*n as usize)?;
            }
            tojson(&value, &args)?
        }
        "default" | "d" => {
            let args = bind(name, &["default_value", "boolean"], pos, kw)?;
            let boolean = args[1].is_some_and(Value::truthy);
            if matches!(value, Value::Undefined) || (boolean && !value.truthy()) {
                args[0].cloned().unwrap_or_else(|| Value::str(""))
            } else {
                value
            }
        }
        "string" => {
            no_args()?;
            match value {
                Value::Str(_) | Value::Markup(_) => value,
                other => Value::str(to_plain_str(&other)?),
            }
        }
        "upper" | "lower" | "capitalize" => {
            no_args()?;
            let s = soft_str(&value)?;
            Value::sstr(match name {
                "upper" => upper(&s)?,
                "lower" => lower(&s)?,
                _ => capitalize(&s)?,
            })
        }
        "first" => {
            no_args()?;
            iterate(&value)?
                .into_iter()
                .next()
                .unwrap_or(Value::Undefined)
        }
        "last" => {
            no_args()?;
            match &value {
                Value::Iter(_) | Value::Markup(_) => return decline("last of this value"),
                // reversed() indexes the str: the character keeps its span.
                Value::Str(s) if !s.text.is_empty() => return get_item(&value, &Value::Int(-1)),
                _ => {}
            }
            iterate(&value)?.pop().unwrap_or(Value::Undefined)
        }
        "join" => {
            let args = bind(name, &["d", "attribute"], pos, kw)?;
            let sep = match args[0] {
                None => SStr::default(),
                Some(d) => to_sstr(d)?,
            };
            let mut out = SStr::default();
            for (k, item) in iterate(&value)?.iter().enumerate() {
                if k > 0 {
                    out.push(&sep);
                }
                let item = match args[1] {
                    None | Some(Value::None) => item.clone(),
                    Some(a) => attr_of(item, a)?,
                };
                out.push(&to_sstr(&item)?);
                ev.check_size(out.text.len())?;
            }
            Value::sstr(out)
        }
        "list" => {
            no_args()?;
            Value::List(Arc::new(iterate(&value)?))
        }
        "items" => {
            no_args()?;
            match &value {
                Value::Undefined => one_shot(Vec::new()),
                Value::Dict(pairs) => one_shot(
                    pairs
                        .iter()
                        .map(|(k, v)| Value::Tuple(Arc::new(vec![k.clone(), v.clone()])))
                        .collect(),
                ),
                _ => return decline("items of a non-mapping"),
            }
        }
        "reverse" => {
            no_args()?;
            match &value {
                Value::Str(s) => {
                    let starts = s.char_starts();
                    let picked: Vec<i64> = (0..starts.len() as i64 - 1).rev().collect();
                    Value::sstr(pick_chars(s, &starts, &picked))
                }
                Value::List(_) | Value::Tuple(_) | Value::Dict(_) => {
                    let mut items = iterate(&value)?;
                    items.reverse();
                    one_shot(items)
                }
                _ => return decline("reverse of this value"),
            }
        }
        "select" | "reject" | "selectattr" | "rejectattr" => select(name, &value, pos, kw)?,
        "map" => map(ev, &value, pos, kw)?,
        "safe" => {
            no_args()?;
            // Markup(content) is a new str: the tracker loses its spans.
            Value::Markup(Arc::from(to_plain_str(&value)?))
        }
        "replace" => {
            let args = bind(name, &["old", "new", "count"], pos, kw)?;
            let (Some(Value::Str(old)), Some(new)) = (args[0], args[1]) else {
                return decline("replace arguments");
            };
            let count = match args[2] {
                None | Some(Value::None) => -1,
                Some(Value::Int(n)) => *n,
                Some(_) => return decline("replace count"),
            };
            Value::sstr(replace(
                &soft_str(&value)?,
                &old.text,
                &to_sstr(new)?,
                count,
            )?)
        }
        _ => return decline(format!("the filter {name}")),
    })
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// The tests that only look at the value's type.
fn type_test(name: &str, value: &Value) -> bool {
    match name {
        "defined" => !matches!(value, Value::Undefined),
        "undefined" => matches!(value, Value::Undefined),
        "none" => matches!(value, Value::None),
        "string" => matches!(value, Value::Str(_) | Value::Markup(_)),
        "number" => matches!(value, Value::Int(_) | Value::Float(_) | Value::Bool(_)),
        "integer" => matches!(value, Value::Int(_)),
        "float" => matches!(value, Value::Float(_)),
        "boolean" => matches!(value, Value::Bool(_)),
        "true" => matches!(value, Value::Bool(true)),
        "false" => matches!(value, Value::Bool(false)),
        _ => matches!(value, Value::Dict(_)), // "mapping"
    }
}

/// `value is name(*args)`.
pub fn test(name: &str, value: &Value, args: &[Value]) -> Res<bool> {
    let arg = |n: usize| -> Res<&Value> {
        if args.len() == n {
            Ok(&args[n - 1])
        } else {
            decline(format!("arguments to the test {name}"))
        }
    };
    let none = || {
        if args.is_empty() {
            Ok(())
        } else {
            decline(format!("arguments to the test {name}"))
        }
    };
    use super::ast::CmpOp;
    use super::eval::compare;
    Ok(match name {
        "defined" | "undefined" | "none" | "string" | "number" | "integer" | "float"
        | "boolean" | "true" | "false" | "mapping" => {
            none()?;
            type_test(name, value)
        }
        "iterable" | "sequence" => {
            none()?;
            // Python: iter(value) works / len(value) and value[...] both work.
            let sequence = name == "sequence";
            match value {
                Value::Str(_) | Value::Markup(_) | Value::List(_) | Value::Tuple(_) => true,
                Value::Dict(_) | Value::Undefined => true,
                Value::View(_) if !sequence => true,
                Value::Iter(_) => !sequence,
                Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) => false,
                _ => return decline(format!("the test {name} of this value")),
            }
        }
        "in" => contains(arg(1)?, value)?,
        "eq" | "equalto" | "==" => compare(CmpOp::Eq, value, arg(1)?)?,
        "ne" | "!=" => compare(CmpOp::Ne, value, arg(1)?)?,
        "lt" | "lessthan" | "<" => compare(CmpOp::Lt, value, arg(1)?)?,
        "le" | "<=" => compare(CmpOp::Lte, value, arg(1)?)?,
        "gt" | "greaterthan" | ">" => compare(CmpOp::Gt, value, arg(1)?)?,
        "ge" | ">=" => compare(CmpOp::Gte, value, arg(1)?)?,
        "odd" | "even" => {
            none()?;
            match int_of(value) {
                Some(i) => (i.rem_euclid(2) == 1) == (name == "odd"),
                None => return decline("odd/even of a non-int"),
            }
        }
        "divisibleby" => match (int_of(value), int_of(arg(1)?)) {
            (Some(a), Some(b)) if b != 0 => a.rem_euclid(b) == 0,
            _ => return decline("divisibleby"),
        },
        _ => return decline(format!("the test {name}")),
    })
}

/// A call of a template global.
pub fn call_global(ev: &mut Eval, g: Global, pos: &[Value], kw: &[(String, Value)]) -> Res<Value> {
    match g {
        Global::Namespace | Global::Dict => {
            let mut attrs: Vec<(String, Value)> = Vec::new();
            match pos {
                [] => {}
                [Value::Dict(pairs)] => {
                    for (k, v) in pairs.iter() {
                        attrs.push((k.as_text().unwrap_or_default().to_string(), v.clone()));
                    }
                }
                _ => return decline("positional arguments to namespace/dict"),
            }
            for (k, v) in kw {
                match attrs.iter_mut().find(|(n, _)| n == k) {
                    Some(slot) => slot.1 = v.clone(),
                    None => attrs.push((k.clone(), v.clone())),
                }
            }
            if g == Global::Namespace {
                if attrs.iter().any(|(k, _)| k.starts_with('_')) {
                    return decline("an underscore namespace attribute");
                }
                return Ok(Value::Namespace(Arc::new(Mutex::new(attrs))));
            }
            Ok(Value::Dict(Arc::new(
                attrs.into_iter().map(|(k, v)| (Value::str(k), v)).collect(),
            )))
        }
        Global::Range => {
            if !kw.is_empty() {
                return decline("keyword arguments to range");
            }
            let ints: Option<Vec<i64>> = pos.iter().map(int_of).collect();
            let (start, stop, step) = match ints.as_deref() {
                Some([stop]) => (0, *stop, 1),
                Some([start, stop]) => (*start, *stop, 1),
                Some([start, stop, step]) if *step != 0 => (*start, *stop, *step),
                _ => return decline("range arguments"),
            };
            let span = i128::from(stop) - i128::from(start);
            let count = if (span > 0) == (step > 0) && span != 0 {
                (span.abs() + i128::from(step).abs() - 1) / i128::from(step).abs()
            } else {
                0
            };
            if count > i128::from(MAX_RANGE) {
                return decline("a range over the sandbox limit");
            }
            ev.check_size(count as usize)?;
            Ok(Value::View(Arc::new(
                (0..count as i64)
                    .map(|k| Value::Int(start + k * step))
                    .collect(),
            )))
        }
        Global::RaiseException => decline("the template raised an exception"),
        Global::StrftimeNow => match (pos, kw.is_empty()) {
            ([Value::Str(fmt)], true) => Ok(Value::str(super::clock::strftime_now(&fmt.text)?)),
            _ => decline("strftime_now arguments"),
        },
    }
}
