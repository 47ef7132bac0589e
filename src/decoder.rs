//! Decoders: turn the pieces of a sequence of IDs back into bytes.
//!
//! Byte-level BPE pieces are raw bytes and simply concatenate. Every other model decodes
//! as Hugging Face `tokenizers` does: the token strings go through the decoder's steps,
//! each mapping the list of strings to a new list (HF's `decode_chain`), and the result
//! is joined. Without a decoder HF joins the token strings with spaces.

use serde_json::Value;

use crate::error::{CoreError, CoreResult};
use crate::normalize::normalizer::Pattern;

pub enum Decoder {
    /// Concatenate the byte pieces (byte-level BPE: pieces are raw bytes).
    Bytes,
    /// HF decoder steps over token strings, then the strings joined by `separator`.
    Tokens {
        steps: Vec<Step>,
        separator: &'static str,
    },
}

/// One HF decoder (`tokenizers/src/decoders/*.rs`), as a map over the token list.
pub enum Step {
    /// Continuation pieces lose `prefix` and join the previous piece, others get a
    /// space; `cleanup` undoes tokenization spaces per token.
    WordPiece { prefix: String, cleanup: bool },
    /// Runs of `<0xXX>` pieces become their bytes; a run that is not UTF-8 becomes one
    /// U+FFFD per byte.
    ByteFallback,
    /// All tokens into one.
    Fuse,
    /// Remove up to `start` leading and `stop` trailing `content` chars of each token.
    Strip {
        content: char,
        start: usize,
        stop: usize,
    },
    /// Every match of `pattern` in each token becomes `content`.
    Replace { pattern: Pattern, content: String },
    /// `replacement` becomes a space, except in the first token (dropped there) unless
    /// the prepend scheme is `never`.
    Metaspace { replacement: char, drop_first: bool },
    /// `suffix` becomes a space, or nothing in the last token.
    Bpe { suffix: String },
    /// CTC: repeated tokens collapse, `pad` vanishes, `delimiter` becomes a space.
    Ctc {
        pad: String,
        delimiter: String,
        cleanup: bool,
    },
}

/// HF's `cleanup` for one token string (a space before punctuation and English clitics).
fn cleanup(token: &str) -> String {
    token
        .replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" do not", " don't")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

fn text(node: &Value, key: &str, default: &str) -> String {
    node.get(key)
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_owned()
}

fn one_char(node: &Value, key: &str, default: char, kind: &str) -> CoreResult<char> {
    let Some(s) = node.get(key).and_then(Value::as_str) else {
        return Ok(default);
    };
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(CoreError::Artifact(format!(
            "decoder {kind}.{key}: {s:?} must be exactly one character"
        ))),
    }
}

fn count(node: &Value, key: &str) -> usize {
    node.get(key).and_then(Value::as_u64).unwrap_or(0) as usize
}

impl Decoder {
    /// The decoder of a `tokenizer.json` (`null`: HF joins token strings with spaces),
    /// for a model whose pieces are strings.
    pub fn from_json(node: &Value) -> CoreResult<Decoder> {
        if node.is_null() {
            return Ok(Decoder::Tokens {
                steps: Vec::new(),
                separator: " ",
            });
        }
        let mut steps = Vec::new();
        push_steps(node, &mut steps)?;
        Ok(Decoder::Tokens {
            steps,
            separator: "",
        })
    }

    pub fn decode<'a>(&self, pieces: impl Iterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
        match self {
            Decoder::Bytes => pieces.for_each(|p| out.extend_from_slice(p)),
            Decoder::Tokens { steps, separator } => {
                let mut tokens: Vec<String> = pieces
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect();
                for step in steps {
                    tokens = step.apply(tokens);
                }
                out.extend_from_slice(tokens.join(separator).as_bytes());
            }
        }
    }
}

fn push_steps(node: &Value, steps: &mut Vec<Step>) -> CoreResult<()> {
    let kind = node.get("type").and_then(Value::as_str).unwrap_or("");
    let step = match kind {
        "Sequence" => {
            let items = node.get("decoders").and_then(Value::as_array);
            for item in items.into_iter().flatten() {
                push_steps(item, steps)?;
            }
            return Ok(());
        }
        "WordPiece" => Step::WordPiece {
            prefix: text(node, "prefix", "##"),
            cleanup: node.get("cleanup").and_then(Value::as_bool).unwrap_or(true),
        },
        "ByteFallback" => Step::ByteFallback,
        "Fuse" => Step::Fuse,
        "Strip" => Step::Strip {
            content: one_char(node, "content", ' ', kind)?,
            start: count(node, "start"),
            stop: count(node, "stop"),
        },
        "Replace" => Step::Replace {
            pattern: Pattern::from_json(
                node.get("pattern").unwrap_or(&Value::Null),
                "decoder Replace",
            )?,
            content: text(node, "content", ""),
        },
        "Metaspace" => {
            // Older files say add_prefix_space (true: "always") instead of the scheme.
            let scheme = match node.get("prepend_scheme").and_then(Value::as_str) {
                Some(s) => s.to_owned(),
                None if node.get("add_prefix_space").and_then(Value::as_bool) == Some(false) => {
                    "never".to_owned()
                }
                None => "always".to_owned(),
            };
            Step::Metaspace {
                replacement: one_char(node, "replacement", '\u{2581}', kind)?,
                drop_first: scheme != "never",
            }
        }
        "BPEDecoder" => Step::Bpe {
            suffix: text(node, "suffix", "</w>"),
        },
        "CTC" => Step::Ctc {
            pad: text(node, "pad_token", "<pad>"),
            delimiter: text(node, "word_delimiter_token", "|"),
            cleanup: node.get("cleanup").and_then(Value::as_bool).unwrap_or(true),
        },
        other => {
            return Err(CoreError::Artifact(format!(
                "decoder type {other:?} is not supported here; supported: ByteLevel (byte-level \
                 BPE only), WordPiece, ByteFallback, Fuse, Strip, Replace, Metaspace, \
                 BPEDecoder, CTC, Sequence"
            )))
        }
    };
    steps.push(step);
    Ok(())
}

/// `<0xXX>` as HF reads it: six bytes, two hex digits parsed by `from_str_radix` (which
/// also takes a sign, so `<0x+1>` is byte 1 in HF too).
pub(crate) fn fallback_byte(token: &str) -> Option<u8> {
    if token.len() == 6 && token.starts_with("<0x") && token.ends_with('>') {
        u8::from_str_radix(token.get(3..5)?, 16).ok()
    } else {
        None
    }
}

pub(crate) fn flush_bytes(bytes: &mut Vec<u8>, out: &mut Vec<String>) {
    if bytes.is_empty() {
        return;
    }
    match String::from_utf8(std::mem::take(bytes)) {
        Ok(s) => out.push(s),
        Err(e) => out.extend(std::iter::repeat_n(
            "\u{FFFD}".to_owned(),
            e.as_bytes().len(),
        )),
    }
}

impl Step {
    pub(crate) fn apply(&self, tokens: Vec<String>) -> Vec<String> {
        match self {
            Step::WordPiece { prefix, cleanup: c } => tokens
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    let t = if i == 0 {
                        t
                    } else if let Some(rest) = t.strip_prefix(prefix.as_str()) {
                        rest.to_owned()
                    } else {
                        format!(" {t}")
                    };
                    if *c {
                        cleanup(&t)
                    } else {
                        t
                    }
                })
                .collect(),
            Step::ByteFallback => {
                let mut out = Vec::with_capacity(tokens.len());
                let mut bytes = Vec::new();
                for t in tokens {
                    match fallback_byte(&t) {
                        Some(b) => bytes.push(b),
                        None => {
                            flush_bytes(&mut bytes, &mut out);
                            out.push(t);
                        }
                    }
                }
                flush_bytes(&mut bytes, &mut out);
                out
            }
            Step::Fuse => vec![tokens.concat()],
            Step::Strip {
                content,
                start,
                stop,
            } => tokens
                .into_iter()
                .map(|t| strip(&t, *content, *start, *stop))
                .collect(),
            Step::Replace { pattern, content } => tokens
                .into_iter()
                .map(|t| match pattern.find_all(&t) {
                    Ok(found) => {
                        let mut s = String::with_capacity(t.len());
                        let mut at = 0;
                        for (a, b) in found {
                            s.push_str(&t[at..a]);
                            s.push_str(content);
                            at = b;
                        }
                        s.push_str(&t[at..]);
                        s
                    }
                    // A regex that gives up (backtrack limit) leaves the token as is:
                    // decoding has no error path.
                    Err(_) => t,
                })
                .collect(),
            Step::Metaspace {
                replacement,
                drop_first,
            } => tokens
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    t.chars()
                        .filter_map(|c| match c {
                            c if c != *replacement => Some(c),
                            _ if i == 0 && *drop_first => None,
                            _ => Some(' '),
                        })
                        .collect()
                })
                .collect(),
            Step::Bpe { suffix } => {
                let last = tokens.len().saturating_sub(1);
                tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| t.replace(suffix.as_str(), if i == last { "" } else { " " }))
                    .collect()
            }
            Step::Ctc {
                pad,
                delimiter,
                cleanup: c,
            } => {
                let mut out: Vec<String> = Vec::new();
                let mut previous: Option<String> = None;
                for t in tokens {
                    if previous.as_ref() == Some(&t) {
                        continue;
                    }
                    let mut s = t.replace(pad.as_str(), "");
                    if *c {
                        s = cleanup(&s).replace(delimiter.as_str(), " ");
                    }
                    previous = Some(t);
                    if !s.is_empty() {
                        out.push(s);
                    }
                }
                out
            }
        }
    }
}

/// HF's Strip. HF panics when the cuts cross (a token of only `content` chars with
/// `start + stop` above its length); here the token becomes empty.
fn strip(token: &str, content: char, start: usize, stop: usize) -> String {
    let chars: Vec<char> = token.chars().collect();
    let start_cut = chars
        .iter()
        .take(start)
        .take_while(|&&c| c == content)
        .count();
    let trailing = chars[start_cut..]
        .iter()
        .rev()
        .take(stop)
        .take_while(|&&c| c == content)
        .count();
    chars[start_cut..chars.len() - trailing].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(node: &str, tokens: &[&str]) -> String {
        let d = Decoder::from_json(&serde_json::from_str(node).unwrap()).unwrap();
        let mut out = Vec::new();
        d.decode(tokens.iter().map(|t| t.as_bytes()), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn llama_chain() {
        let node = r#"{"type":"Sequence","decoders":[
            {"type":"Replace","pattern":{"String":"▁"},"content":" "},
            {"type":"ByteFallback"},{"type":"Fuse"},
            {"type":"Strip","content":" ","start":1,"stop":0}]}"#;
        let tokens = ["▁a", "<0xE5>", "<0x8f>", "<0xab>", "▁"];
        assert_eq!(run(node, &tokens), "a叫 ");
        let invalid = run(r#"{"type":"ByteFallback"}"#, &["<0x+1>", "<0xe5>", "x"]);
        assert_eq!(invalid, "\u{FFFD}\u{FFFD}x");
    }

    #[test]
    fn no_decoder_joins_with_spaces() {
        assert_eq!(run("null", &["a", "b"]), "a b");
    }
}
