//! The normalizers of Hugging Face `tokenizers`, configured from their `tokenizer.json`
//! nodes. Adding one (SentencePiece's `Precompiled`, say) means one enum variant, one
//! arm in `from_json` and one in `apply`; see docs/PIPELINE.md.

use serde_json::Value;

use super::precompiled::Precompiled;
use super::tables::tables;
use super::unicode::{decomposed, normalize_items, Form};
use super::NormalizedString;
use crate::error::{CoreError, CoreResult};
use crate::thread_regex::ThreadRegex;

pub enum Pattern {
    String(String),
    /// Searched through a per-thread clone (see `thread_regex`).
    Regex(Box<ThreadRegex>),
}

impl Pattern {
    /// Non-overlapping matches, left to right (byte ranges).
    pub fn find_all(&self, text: &str) -> CoreResult<Vec<(usize, usize)>> {
        match self {
            Pattern::String(s) if s.is_empty() => Ok(Vec::new()),
            Pattern::String(s) => Ok(text
                .match_indices(s.as_str())
                .map(|(i, m)| (i, i + m.len()))
                .collect()),
            // HF finds nothing in an empty string, and keeps empty matches elsewhere
            // (`(?<=\S)\z` inserts at the end).
            Pattern::Regex(_) if text.is_empty() => Ok(Vec::new()),
            Pattern::Regex(re) => re.with(|re| {
                re.find_iter(text)
                    .map(|m| {
                        m.map(|m| (m.start(), m.end())).map_err(|e| {
                            CoreError::InvalidInput(format!(
                                "Replace regex failed on this input: {e}"
                            ))
                        })
                    })
                    .collect()
            }),
        }
    }

    /// `{"String": s}` or `{"Regex": r}` as in HF files.
    pub fn from_json(node: &Value, what: &str) -> CoreResult<Pattern> {
        if let Some(s) = node.get("String").and_then(Value::as_str) {
            return Ok(Pattern::String(s.to_owned()));
        }
        if let Some(r) = node.get("Regex").and_then(Value::as_str) {
            let re = fancy_regex::RegexBuilder::new(r)
                .backtrack_limit(10_000_000)
                .build()
                .map_err(|e| {
                    CoreError::Artifact(format!("{what}: cannot compile regex {r:?}: {e}"))
                })?;
            return Ok(Pattern::Regex(Box::new(ThreadRegex::new(re))));
        }
        Err(CoreError::Artifact(format!(
            "{what}: pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {node}"
        )))
    }
}

pub struct Bert {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    pub strip_accents: bool,
    pub lowercase: bool,
}

pub enum Normalizer {
    Unicode(Form),
    Lowercase,
    StripAccents,
    Replace {
        pattern: Pattern,
        content: String,
    },
    Prepend(String),
    Strip {
        left: bool,
        right: bool,
    },
    Bert(Bert),
    /// SentencePiece's NMT whitespace/control cleanup (HF `Nmt`).
    Nmt,
    Precompiled(Box<Precompiled>),
    Sequence(Vec<Normalizer>),
}

fn flag(node: &Value, key: &str, default: bool) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(default)
}

fn text_field(node: &Value, key: &str, kind: &str) -> CoreResult<String> {
    node.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CoreError::Artifact(format!("normalizer {kind} needs a string {key:?}")))
}

impl Normalizer {
    /// Builds a normalizer from an HF `tokenizer.json` normalizer node.
    pub fn from_json(node: &Value) -> CoreResult<Normalizer> {
        let kind = node.get("type").and_then(Value::as_str).unwrap_or("");
        Ok(match kind {
            "NFC" => Normalizer::Unicode(Form::Nfc),
            "NFD" => Normalizer::Unicode(Form::Nfd),
            "NFKC" => Normalizer::Unicode(Form::Nfkc),
            "NFKD" => Normalizer::Unicode(Form::Nfkd),
            "Lowercase" => Normalizer::Lowercase,
            "StripAccents" => Normalizer::StripAccents,
            "Replace" => Normalizer::Replace {
                pattern: Pattern::from_json(
                    node.get("pattern").unwrap_or(&Value::Null),
                    "normalizer Replace",
                )?,
                content: text_field(node, "content", kind)?,
            },
            "Prepend" => Normalizer::Prepend(text_field(node, "prepend", kind)?),
            "Strip" => Normalizer::Strip {
                left: flag(node, "strip_left", true),
                right: flag(node, "strip_right", true),
            },
            "BertNormalizer" => {
                let lowercase = flag(node, "lowercase", true);
                Normalizer::Bert(Bert {
                    clean_text: flag(node, "clean_text", true),
                    handle_chinese_chars: flag(node, "handle_chinese_chars", true),
                    // HF: strip_accents None follows lowercase.
                    strip_accents: node
                        .get("strip_accents")
                        .and_then(Value::as_bool)
                        .unwrap_or(lowercase),
                    lowercase,
                })
            }
            "Nmt" => Normalizer::Nmt,
            "Precompiled" => Normalizer::Precompiled(Box::new(Precompiled::from_base64(
                &text_field(node, "precompiled_charsmap", kind)?,
            )?)),
            "Sequence" => {
                let items = node
                    .get("normalizers")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                Normalizer::Sequence(
                    items
                        .iter()
                        .map(Normalizer::from_json)
                        .collect::<Result<_, _>>()?,
                )
            }
            other => {
                return Err(CoreError::Artifact(format!(
                    "normalizer type {other:?} is not supported; supported: NFC, NFD, NFKC, \
                     NFKD, Lowercase, StripAccents, Replace, Prepend, Strip, BertNormalizer, \
                     Nmt, Precompiled, Sequence"
                )))
            }
        })
    }

    /// Normalizes `s` in place, keeping alignments.
    pub fn apply(&self, s: &mut NormalizedString) -> CoreResult<()> {
        match self {
            Normalizer::Unicode(form) => {
                if !s.text.is_ascii() {
                    let items = normalize_items(&s.text, *form);
                    if !(items.iter().all(|&(_, ch)| ch == 0)
                        && items.iter().map(|&(c, _)| c).eq(s.text.chars()))
                    {
                        s.transform(items, 0);
                    }
                }
            }
            Normalizer::Lowercase => {
                let t = tables();
                let mut items = Vec::with_capacity(s.text.len());
                for c in s.text.chars() {
                    let (a, b) = t.lowercase(c);
                    items.push((a, 0));
                    if let Some(b) = b {
                        items.push((b, 1));
                    }
                }
                s.transform(items, 0);
            }
            Normalizer::StripAccents => {
                let marks = &tables().combining_mark;
                s.filter(|c| c.is_ascii() || !marks.contains(c));
            }
            Normalizer::Replace { pattern, content } => {
                let matches = pattern.find_all(&s.text)?;
                if !matches.is_empty() {
                    replace_all(s, &matches, content);
                }
            }
            Normalizer::Prepend(p) => s.prepend(p),
            Normalizer::Strip { left, right } => strip(s, *left, *right),
            Normalizer::Bert(b) => bert(s, b),
            Normalizer::Nmt => {
                s.filter(nmt_keeps);
                s.map(nmt_map);
            }
            Normalizer::Precompiled(p) => p.apply(s),
            Normalizer::Sequence(items) => {
                for n in items {
                    n.apply(s)?;
                }
            }
        }
        Ok(())
    }
}

/// HF `Nmt`: ASCII control characters removed ...
fn nmt_keeps(c: char) -> bool {
    !matches!(
        c as u32,
        0x0001..=0x0008 | 0x000B | 0x000E..=0x001F | 0x007F | 0x008F | 0x009F
    )
}

/// ... and other whitespace-like code points turned into a space.
fn nmt_map(c: char) -> char {
    match c as u32 {
        0x0009
        | 0x000A
        | 0x000C
        | 0x000D
        | 0x1680
        | 0x200B..=0x200F
        | 0x2028
        | 0x2029
        | 0x2581
        | 0xFEFF
        | 0xFFFD => ' ',
        _ => c,
    }
}

fn strip(s: &mut NormalizedString, left: bool, right: bool) {
    let space = &tables().rust_space;
    let chars: Vec<char> = s.text.chars().collect();
    let n = chars.len();
    let lead = if left {
        chars.iter().take_while(|&&c| space.contains(c)).count()
    } else {
        0
    };
    let trail = if right {
        chars
            .iter()
            .rev()
            .take_while(|&&c| space.contains(c))
            .count()
    } else {
        0
    };
    if lead == 0 && trail == 0 {
        return;
    }
    let mut items = Vec::with_capacity(n);
    for (i, &c) in chars.iter().enumerate() {
        if i < lead || i + trail >= n {
            continue;
        }
        let change = if i + trail + 1 == n {
            -(trail as isize)
        } else {
            0
        };
        items.push((c, change));
    }
    s.transform(items, lead.min(n));
}

/// BertNormalizer in one pass. Every step HF runs (clean, CJK padding, NFD + mark
/// removal, lowercase) maps one source char to chars that all inherit its alignment, so
/// fusing them gives HF's text and offsets (see docs/PIPELINE.md for the one exception).
fn bert(s: &mut NormalizedString, b: &Bert) {
    let t = tables();
    let mut text = String::with_capacity(s.text.len() + 8);
    let mut align: Vec<(u32, u32)> = Vec::with_capacity(s.text.len() + 8);
    let mut push = |c: char, a: (u32, u32), text: &mut String| {
        if b.lowercase {
            let (x, y) = t.lowercase(c);
            text.push(x);
            align.extend(std::iter::repeat_n(a, x.len_utf8()));
            if let Some(y) = y {
                text.push(y);
                align.extend(std::iter::repeat_n(a, y.len_utf8()));
            }
        } else {
            text.push(c);
            align.extend(std::iter::repeat_n(a, c.len_utf8()));
        }
    };
    let mut parts: Vec<(char, isize)> = Vec::new();
    for (i, c) in s.text.char_indices() {
        let a = s.align[i];
        if c.is_ascii() {
            let byte = c as u8;
            if b.clean_text && (byte < 0x20 || byte == 0x7f) {
                if matches!(byte, b'\t' | b'\n' | b'\r') {
                    push(' ', a, &mut text);
                }
                continue;
            }
            push(c, a, &mut text);
            continue;
        }
        let mut c = c;
        if b.clean_text {
            if t.bert_control.contains(c) {
                continue;
            }
            if t.bert_space.contains(c) {
                c = ' ';
            }
        }
        let cjk = b.handle_chinese_chars && t.bert_chinese.contains(c);
        if cjk {
            push(' ', a, &mut text);
        }
        if b.strip_accents {
            parts.clear();
            let mut buf = [0u8; 4];
            parts.extend(decomposed(c.encode_utf8(&mut buf), false));
            for &(d, _) in &parts {
                if !t.nonspacing_mark.contains(d) {
                    push(d, a, &mut text);
                }
            }
        } else {
            push(c, a, &mut text);
        }
        if cjk {
            push(' ', a, &mut text);
        }
    }
    s.text = text;
    s.align = align;
}

/// Replaces every match (sorted, disjoint byte ranges) by `content` in one pass. Same
/// alignments as HF's per-match `transform_range` with the matched chars removed and the
/// content inserted: each content char takes the alignment of the last byte before the
/// match end (the removed match's last byte, or for an empty match the byte before it).
/// One pass keeps it linear: a splice per match was quadratic on long texts.
fn replace_all(s: &mut NormalizedString, matches: &[(usize, usize)], content: &str) {
    let mut text = String::with_capacity(s.text.len());
    let mut align = Vec::with_capacity(s.align.len());
    let mut pos = 0;
    for &(a, b) in matches {
        text.push_str(&s.text[pos..a]);
        align.extend_from_slice(&s.align[pos..a]);
        let inherited = if b == 0 { (0, 0) } else { s.align[b - 1] };
        text.push_str(content);
        align.extend(std::iter::repeat_n(inherited, content.len()));
        pos = b;
    }
    text.push_str(&s.text[pos..]);
    align.extend_from_slice(&s.align[pos..]);
    s.text = text;
    s.align = align;
}
