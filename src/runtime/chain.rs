//! Hugging Face decoder chains (`crate::decoder::Step`) run token by token.
//!
//! Batch decoding maps the whole token list through each step, then joins. Each step is
//! run here as a transducer that emits a token as soon as no later token can change it,
//! reusing `Step::apply` for the per-token work so both paths share one definition:
//!
//! - WordPiece, Metaspace: per token; only "is this the step's first token" matters.
//! - Strip, Replace: per token, stateless.
//! - CTC: per token, plus the previous token (repeats collapse).
//! - BPEDecoder: the last token differs, so one token is held until the next arrives.
//! - ByteFallback: a run of `<0xXX>` tokens becomes its text only if the whole run is
//!   UTF-8 (else one U+FFFD per byte), so a run is held while it is a valid prefix;
//!   once invalid, each byte is one U+FFFD at once.
//! - Fuse: joins every token into one, so the steps after it run over a growing string
//!   (`CharStage`): a literal replacement holds at most its pattern length - 1 bytes,
//!   Strip holds up to `stop` trailing content characters; a regex Replace after Fuse
//!   (never seen in released files) holds everything until the end.

use crate::decoder::{fallback_byte, flush_bytes, Step};
use crate::normalize::normalizer::Pattern;

/// The replacements of HF's `cleanup`, in its order.
const CLEANUP: [(&str, &str); 11] = [
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
];

enum TokenStage {
    /// WordPiece, Metaspace: `Step::apply` with the token first or not.
    Positional {
        seen: bool,
    },
    /// Strip, Replace: `Step::apply` on the token alone.
    Stateless,
    Ctc {
        previous: Option<String>,
    },
    Bpe {
        held: Option<String>,
    },
    ByteFallback {
        run: Vec<u8>,
        valid_upto: usize,
        invalid: bool,
    },
}

/// A step after Fuse, over the single growing token.
enum CharStage {
    Identity,
    /// `Step::apply` on each chunk (Metaspace on the only token: a per-char map).
    PerChar,
    Literal(LiteralReplace),
    Chain(Vec<LiteralReplace>),
    Strip {
        content: char,
        lead_left: usize,
        lead_done: bool,
        stop: usize,
        held: usize,
    },
    /// Held whole until the end, then the step applied once (regex Replace, empty patterns).
    Whole {
        buffer: String,
    },
    /// ByteFallback on the fused token: it is a byte only if exactly `<0xXX>` (6 bytes).
    FusedByte {
        buffer: String,
        passing: bool,
    },
}

/// Leftmost non-overlapping replacement of a literal over a growing string.
pub struct LiteralReplace {
    pattern: String,
    content: String,
    held: String,
}

impl LiteralReplace {
    pub fn new(pattern: &str, content: &str) -> LiteralReplace {
        LiteralReplace {
            pattern: pattern.to_owned(),
            content: content.to_owned(),
            held: String::new(),
        }
    }

    /// Longest suffix of `s` that is a proper prefix of the pattern: the only place a
    /// match can still start (positions before it would need a longer live prefix).
    fn live_suffix(&self, s: &str) -> usize {
        let max = (self.pattern.len() - 1).min(s.len());
        (1..=max)
            .rev()
            .find(|&k| {
                s.is_char_boundary(s.len() - k)
                    && self.pattern.is_char_boundary(k)
                    && s.ends_with(&self.pattern[..k])
            })
            .unwrap_or(0)
    }

    pub fn push(&mut self, s: &str, out: &mut String) {
        let mut buf = std::mem::take(&mut self.held);
        buf.push_str(s);
        let mut at = 0;
        for (i, m) in buf.match_indices(self.pattern.as_str()) {
            out.push_str(&buf[at..i]);
            out.push_str(&self.content);
            at = i + m.len();
        }
        let tail = &buf[at..];
        let keep = self.live_suffix(tail);
        out.push_str(&tail[..tail.len() - keep]);
        self.held = tail[tail.len() - keep..].to_owned();
    }

    pub fn finish(&mut self, out: &mut String) {
        out.push_str(&std::mem::take(&mut self.held));
    }

    pub fn held_len(&self) -> usize {
        self.held.len()
    }
}

fn literal_chain(pairs: &[(&str, &str)]) -> Vec<LiteralReplace> {
    pairs
        .iter()
        .map(|(p, c)| LiteralReplace::new(p, c))
        .collect()
}

fn run_chain(chain: &mut [LiteralReplace], s: &str, finish: bool, out: &mut String) {
    let mut cur = s.to_owned();
    for r in chain.iter_mut() {
        let mut next = String::new();
        r.push(&cur, &mut next);
        if finish {
            r.finish(&mut next);
        }
        cur = next;
    }
    out.push_str(&cur);
}

fn char_stage(step: &Step) -> CharStage {
    match step {
        Step::WordPiece { cleanup: true, .. } => CharStage::Chain(literal_chain(&CLEANUP)),
        Step::WordPiece { .. } | Step::Fuse => CharStage::Identity,
        Step::Metaspace { .. } => CharStage::PerChar,
        Step::Strip {
            content,
            start,
            stop,
        } => CharStage::Strip {
            content: *content,
            lead_left: *start,
            lead_done: *start == 0,
            stop: *stop,
            held: 0,
        },
        Step::Replace {
            pattern: Pattern::String(p),
            content,
        } if !p.is_empty() => CharStage::Literal(LiteralReplace::new(p, content)),
        Step::Bpe { suffix } if !suffix.is_empty() => {
            CharStage::Literal(LiteralReplace::new(suffix, ""))
        }
        Step::Ctc {
            pad,
            delimiter,
            cleanup: c,
        } if !pad.is_empty() && !delimiter.is_empty() => {
            let mut pairs = vec![(pad.as_str(), "")];
            if *c {
                pairs.extend_from_slice(&CLEANUP);
                pairs.push((delimiter.as_str(), " "));
            }
            CharStage::Chain(literal_chain(&pairs))
        }
        Step::ByteFallback => CharStage::FusedByte {
            buffer: String::new(),
            passing: false,
        },
        _ => CharStage::Whole {
            buffer: String::new(),
        },
    }
}

impl CharStage {
    fn push(&mut self, step: &Step, s: &str, finish: bool, out: &mut String) {
        match self {
            CharStage::Identity => out.push_str(s),
            CharStage::PerChar => {
                if !s.is_empty() {
                    out.push_str(&step.apply(vec![s.to_owned()]).concat());
                }
            }
            CharStage::Literal(r) => {
                r.push(s, out);
                if finish {
                    r.finish(out);
                }
            }
            CharStage::Chain(chain) => run_chain(chain, s, finish, out),
            CharStage::Strip {
                content,
                lead_left,
                lead_done,
                stop,
                held,
            } => {
                for c in s.chars() {
                    if !*lead_done {
                        if c == *content && *lead_left > 0 {
                            *lead_left -= 1;
                            *lead_done = *lead_left == 0;
                            continue;
                        }
                        *lead_done = true;
                    }
                    if c == *content && *stop > 0 {
                        *held += 1;
                        if *held > *stop {
                            out.push(c);
                            *held -= 1;
                        }
                    } else {
                        out.extend(std::iter::repeat_n(*content, *held));
                        *held = 0;
                        out.push(c);
                    }
                }
                // At the end the held characters are exactly the trailing ones HF cuts.
            }
            CharStage::Whole { buffer } => {
                buffer.push_str(s);
                if finish {
                    out.push_str(&step.apply(vec![std::mem::take(buffer)]).concat());
                }
            }
            CharStage::FusedByte { buffer, passing } => {
                if *passing {
                    out.push_str(s);
                    return;
                }
                buffer.push_str(s);
                if buffer.len() > 6 {
                    *passing = true;
                    out.push_str(&std::mem::take(buffer));
                } else if finish && !buffer.is_empty() {
                    out.push_str(&step.apply(vec![std::mem::take(buffer)]).concat());
                }
            }
        }
    }

    /// Bytes or characters this stage holds back.
    fn held(&self) -> usize {
        match self {
            CharStage::Literal(r) => r.held_len(),
            CharStage::Chain(c) => c.iter().map(LiteralReplace::held_len).sum(),
            CharStage::Strip { held, .. } => *held,
            CharStage::Whole { buffer } | CharStage::FusedByte { buffer, .. } => buffer.len(),
            _ => 0,
        }
    }
}

fn token_stage(step: &Step) -> TokenStage {
    match step {
        Step::WordPiece { .. } | Step::Metaspace { .. } => TokenStage::Positional { seen: false },
        Step::Ctc { .. } => TokenStage::Ctc { previous: None },
        Step::Bpe { .. } => TokenStage::Bpe { held: None },
        Step::ByteFallback => TokenStage::ByteFallback {
            run: Vec::new(),
            valid_upto: 0,
            invalid: false,
        },
        _ => TokenStage::Stateless,
    }
}

impl TokenStage {
    fn push(&mut self, step: &Step, t: String, out: &mut Vec<String>) {
        match self {
            TokenStage::Stateless => out.extend(step.apply(vec![t])),
            TokenStage::Positional { seen } => {
                if *seen {
                    // Not the first token: the same map as position 1 of a list.
                    let mut r = step.apply(vec![String::new(), t]);
                    out.push(r.pop().unwrap_or_default());
                } else {
                    *seen = true;
                    out.extend(step.apply(vec![t]));
                }
            }
            TokenStage::Ctc { previous } => {
                if previous.as_ref() == Some(&t) {
                    return;
                }
                out.extend(step.apply(vec![t.clone()]));
                *previous = Some(t);
            }
            TokenStage::Bpe { held } => {
                if let Some(h) = held.replace(t) {
                    let mut r = step.apply(vec![h, String::new()]);
                    r.truncate(1);
                    out.extend(r);
                }
            }
            TokenStage::ByteFallback {
                run,
                valid_upto,
                invalid,
            } => match fallback_byte(&t) {
                Some(b) if *invalid => {
                    let _ = b;
                    out.push("\u{FFFD}".to_owned());
                }
                Some(b) => {
                    run.push(b);
                    match std::str::from_utf8(&run[*valid_upto..]) {
                        Ok(_) => *valid_upto = run.len(),
                        Err(e) if e.error_len().is_none() => *valid_upto += e.valid_up_to(),
                        Err(_) => {
                            // Any continuation keeps the run invalid: one U+FFFD per byte.
                            *invalid = true;
                            out.extend(std::iter::repeat_n("\u{FFFD}".to_owned(), run.len()));
                            run.clear();
                            *valid_upto = 0;
                        }
                    }
                }
                None => {
                    flush_bytes(run, out);
                    *valid_upto = 0;
                    *invalid = false;
                    out.push(t);
                }
            },
        }
    }

    fn finish(&mut self, step: &Step, out: &mut Vec<String>) {
        match self {
            TokenStage::Bpe { held } => {
                if let Some(h) = held.take() {
                    out.extend(step.apply(vec![h]));
                }
            }
            TokenStage::ByteFallback { run, .. } => flush_bytes(run, out),
            _ => {}
        }
    }

    fn held(&self) -> usize {
        match self {
            TokenStage::Bpe { held: Some(h) } => h.len(),
            TokenStage::ByteFallback { run, .. } => run.len(),
            _ => 0,
        }
    }
}

/// A decoder chain run incrementally; `push` then `finish` over all tokens gives exactly
/// `Decoder::Tokens` on the whole list.
pub struct ChainStream {
    tokens: Vec<TokenStage>,
    /// Steps after the first Fuse (over one growing token), with their step indexes.
    chars: Vec<(usize, CharStage)>,
    fused: bool,
    separator: &'static str,
    emitted_any: bool,
}

impl ChainStream {
    pub fn new(steps: &[Step], separator: &'static str) -> ChainStream {
        let fuse = steps.iter().position(|s| matches!(s, Step::Fuse));
        let split = fuse.unwrap_or(steps.len());
        ChainStream {
            tokens: steps[..split].iter().map(token_stage).collect(),
            chars: steps
                .iter()
                .enumerate()
                .skip(split + 1)
                .map(|(i, s)| (i, char_stage(s)))
                .collect(),
            fused: fuse.is_some(),
            separator,
            emitted_any: false,
        }
    }

    /// Feeds token strings (None: the end of the stream) and appends final text to `out`.
    pub fn push(&mut self, steps: &[Step], input: Vec<String>, finish: bool, out: &mut String) {
        let mut cur = input;
        for (k, stage) in self.tokens.iter_mut().enumerate() {
            let mut next = Vec::with_capacity(cur.len());
            for t in cur {
                stage.push(&steps[k], t, &mut next);
            }
            if finish {
                stage.finish(&steps[k], &mut next);
            }
            cur = next;
        }
        if !self.fused {
            for t in cur {
                if self.emitted_any {
                    out.push_str(self.separator);
                }
                self.emitted_any = true;
                out.push_str(&t);
            }
            return;
        }
        let mut text = cur.concat();
        for (i, stage) in self.chars.iter_mut() {
            let mut next = String::with_capacity(text.len());
            stage.push(&steps[*i], &text, finish, &mut next);
            text = next;
        }
        out.push_str(&text);
    }

    /// Bytes (or characters) held back by the steps right now.
    pub fn held(&self) -> usize {
        self.tokens.iter().map(TokenStage::held).sum::<usize>()
            + self.chars.iter().map(|(_, c)| c.held()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoder::Decoder;

    fn both(node: &str, tokens: &[&str]) {
        let d = Decoder::from_json(&serde_json::from_str(node).unwrap()).unwrap();
        let mut whole = Vec::new();
        d.decode(tokens.iter().map(|t| t.as_bytes()), &mut whole);
        let Decoder::Tokens { steps, separator } = &d else {
            panic!()
        };
        for size in 1..=3 {
            let mut s = ChainStream::new(steps, separator);
            let mut out = String::new();
            for chunk in tokens.chunks(size) {
                let v = chunk.iter().map(|t| t.to_string()).collect();
                s.push(steps, v, false, &mut out);
            }
            s.push(steps, Vec::new(), true, &mut out);
            assert_eq!(out.as_bytes(), whole.as_slice(), "{node} {tokens:?} {size}");
        }
    }

    #[test]
    fn llama_chain_streams_exactly() {
        let node = r#"{"type":"Sequence","decoders":[
            {"type":"Replace","pattern":{"String":"▁"},"content":" "},
            {"type":"ByteFallback"},{"type":"Fuse"},
            {"type":"Strip","content":" ","start":1,"stop":1}]}"#;
        both(node, &["▁a", "<0xE5>", "<0x8f>", "<0xab>", "▁", "▁"]);
        both(node, &["▁", "▁", "<0xE5>", "<0xFF>", "<0x41>", "b"]);
        both(
            r#"{"type":"WordPiece"}"#,
            &["hello", "##s", ",", "do", "not", "'", "s"],
        );
        both(r#"{"type":"BPEDecoder"}"#, &["a</w>", "b", "c</w>"]);
        both(r#"{"type":"CTC"}"#, &["a", "a", "<pad>", "b", "|", "b"]);
        both("null", &["a", "b"]);
    }
}
