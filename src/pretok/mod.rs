//! Pre-tokenization: split text into the spans that BPE merges may not cross.

pub mod builtin;
pub mod chain;
pub mod classes;
pub mod hf;
pub mod rewrite;

use crate::error::{CoreError, CoreResult};
use crate::thread_regex::ThreadRegex;
use builtin::Builtin;
use hf::HfScanner;

/// A pre-tokenizer: a hand-written scanner for a named pattern, or a general regex
/// (searched through a per-thread clone, see `thread_regex`).
pub enum Pretokenizer {
    Builtin(Builtin),
    Regex(Box<ThreadRegex>),
    Hf(HfScanner),
}

impl Pretokenizer {
    /// `name` selects a built-in scanner; otherwise `pattern` is compiled as a regex.
    /// Names `hf:whitespace`, `hf:whitespace_split`, `hf:bert`, `hf:punct`, `hf:numeric`
    /// and `hf:delim` (the delimiter is `pattern`) select Hugging Face's scanners.
    pub fn new(name: Option<&str>, pattern: &str) -> CoreResult<Pretokenizer> {
        if let Some(hf) = name.and_then(|n| n.strip_prefix("hf:")) {
            return Ok(Pretokenizer::Hf(match hf {
                "whitespace" => HfScanner::Whitespace,
                "whitespace_split" => HfScanner::WhitespaceSplit,
                "bert" => HfScanner::Bert,
                "punct" => HfScanner::Punct,
                "numeric" => HfScanner::Numeric,
                "delim" => {
                    let mut chars = pattern.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => HfScanner::Delim(c),
                        _ => {
                            return Err(CoreError::Config(format!(
                                "CharDelimiterSplit needs exactly one char, got {pattern:?}"
                            )))
                        }
                    }
                }
                other => {
                    return Err(CoreError::Config(format!(
                        "unknown Hugging Face pre-tokenizer scanner {other:?}"
                    )))
                }
            }));
        }
        if let Some(b) = name.and_then(Builtin::from_name) {
            return Ok(Pretokenizer::Builtin(b));
        }
        let re = fancy_regex::RegexBuilder::new(pattern)
            .backtrack_limit(10_000_000)
            .build()
            .map_err(|e| {
                CoreError::Config(format!(
                    "cannot compile pre-tokenizer pattern {pattern:?}: {e}; \
                     fix the regex or use a named pattern (gpt2, gpt4, o200k, llama3)"
                ))
            })?;
        Ok(Pretokenizer::Regex(Box::new(ThreadRegex::new(re))))
    }

    /// Calls `emit(start, end)` with byte offsets of every non-empty pre-token, in order.
    /// Text outside the regex's matches is dropped, as with `regex.findall`.
    pub fn split(&self, text: &str, mut emit: impl FnMut(usize, usize)) -> CoreResult<()> {
        match self {
            Pretokenizer::Builtin(b) => {
                b.split(text, emit);
                Ok(())
            }
            Pretokenizer::Hf(h) => {
                h.split(text, emit);
                Ok(())
            }
            Pretokenizer::Regex(re) => re.with(|re| {
                for m in re.find_iter(text) {
                    let m = m.map_err(|e| {
                        CoreError::InvalidInput(format!(
                            "pre-tokenizer regex failed on this input ({e}); simplify the \
                             pattern or use a named pattern"
                        ))
                    })?;
                    if m.end() > m.start() {
                        emit(m.start(), m.end());
                    }
                }
                Ok(())
            }),
        }
    }

    /// Byte spans of all pre-tokens.
    pub fn spans(&self, text: &str) -> CoreResult<Vec<(usize, usize)>> {
        let mut out = Vec::new();
        self.split(text, |s, e| out.push((s, e)))?;
        Ok(out)
    }
}
