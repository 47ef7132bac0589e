//! `tojson` as transformers defines it for chat templates: Python's `json.dumps` (no HTML
//! escaping; `ensure_ascii`, `indent`, `separators`, `sort_keys`), with the Python
//! tracker's spans: the escaped body of a string that carries content spans is owned as a
//! whole by its first owner.

use super::value::{decline, float_repr, Res, SStr, Value};

pub struct JsonOptions {
    pub ensure_ascii: bool,
    pub indent: Option<String>,
    pub item_sep: String,
    pub key_sep: String,
    pub sort_keys: bool,
}

pub fn dumps(value: &Value, opts: &JsonOptions) -> Res<SStr> {
    let mut out = SStr::default();
    write(value, opts, 0, &mut out, 0)?;
    Ok(out)
}

fn quote(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn string(v: &Value, opts: &JsonOptions, out: &mut SStr) {
    let (text, owner) = match v {
        Value::Str(s) => (
            s.text.as_str(),
            s.spans.iter().map(|&(_, _, o)| o).find(|&o| o >= 0),
        ),
        Value::Markup(m) => (&**m, None),
        _ => unreachable!("string() takes strings"),
    };
    let at = out.text.len();
    quote(text, opts.ensure_ascii, &mut out.text);
    let end = out.text.len();
    if let Some(o) = owner {
        if end - at > 2 {
            out.spans.push((at as u32 + 1, end as u32 - 1, o));
        }
    }
}

fn newline(opts: &JsonOptions, level: usize, out: &mut SStr) {
    if let Some(indent) = &opts.indent {
        out.text.push('\n');
        for _ in 0..level {
            out.text.push_str(indent);
        }
    }
}

const MAX_DEPTH: usize = 256;

fn write(v: &Value, opts: &JsonOptions, level: usize, out: &mut SStr, depth: usize) -> Res<()> {
    if depth > MAX_DEPTH {
        return decline("tojson nesting");
    }
    match v {
        Value::None => out.text.push_str("null"),
        Value::Bool(b) => out.text.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.text.push_str(&i.to_string()),
        Value::Float(f) => out.text.push_str(&float_repr(*f)?),
        Value::Str(_) | Value::Markup(_) => string(v, opts, out),
        Value::List(items) | Value::Tuple(items) => {
            if items.is_empty() {
                out.text.push_str("[]");
                return Ok(());
            }
            out.text.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.text.push_str(&opts.item_sep);
                }
                newline(opts, level + 1, out);
                write(item, opts, level + 1, out, depth + 1)?;
            }
            newline(opts, level, out);
            out.text.push(']');
        }
        Value::Dict(pairs) => {
            if pairs.is_empty() {
                out.text.push_str("{}");
                return Ok(());
            }
            let mut order: Vec<&(Value, Value)> = pairs.iter().collect();
            for (k, _) in &order {
                if !matches!(k, Value::Str(_)) {
                    return decline("a JSON key that is not a string");
                }
            }
            if opts.sort_keys {
                order.sort_by(|a, b| a.0.as_text().cmp(&b.0.as_text()));
            }
            out.text.push('{');
            for (k, (key, item)) in order.into_iter().enumerate() {
                if k > 0 {
                    out.text.push_str(&opts.item_sep);
                }
                newline(opts, level + 1, out);
                string(key, opts, out);
                out.text.push_str(&opts.key_sep);
                write(item, opts, level + 1, out, depth + 1)?;
            }
            newline(opts, level, out);
            out.text.push('}');
        }
        other => return decline(format!("tojson of {}", other.type_name())),
    }
    Ok(())
}
