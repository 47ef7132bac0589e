//! Streaming encode for byte-level BPE behind a built-in pattern with nothing to
//! recognize (no special or added spellings, no normalizer): the whole push path of
//! `tokenpact.runtime.StreamingEncoder`'s `pretokens` rule in one object, so a push
//! costs one call instead of a UTF-8 decode, a scan call and an encode call from Python.
//!
//! The rules are the Python reference's (`stream_encode.py`), step for step, so both
//! commit the same IDs after every push: the undecided text is rescanned on every push
//! while it is at most `SCAN_ALWAYS_BELOW` characters long and afterwards only once it
//! has doubled since the last scan (linear total work on a run with no boundary); a scan
//! commits the pre-tokens `Builtin::final_prefix` proves final.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::pretok::builtin::Builtin;
use crate::tokenizer::CoreTokenizer;

/// Characters of undecided text below which every push rescans (as in Python).
pub const SCAN_ALWAYS_BELOW: usize = 4096;

pub struct StreamEncoder {
    core: Arc<CoreTokenizer>,
    builtin: Builtin,
    /// Decoded text that is not committed yet.
    pending: String,
    /// `pending`'s length in characters (the Python reference counts characters).
    pending_chars: usize,
    /// The bytes of an incomplete trailing UTF-8 character (at most 3).
    partial: Vec<u8>,
    /// `pending_chars` after the last scan.
    scanned: usize,
    /// Scratch: the ends of the final pre-tokens of the last scan.
    ends: Vec<usize>,
    reach: Vec<usize>,
    /// Every ID committed since the last `reset` (finish included).
    committed: Vec<u32>,
}

fn char_count(text: &str) -> usize {
    // Every character has exactly one byte that is not a continuation byte.
    text.bytes().filter(|&b| (b as i8) >= -0x40).count()
}

/// Python's `UnicodeDecodeError.reason` for the byte at which decoding failed.
fn utf8_reason(bytes: &[u8], at: usize) -> &'static str {
    let b0 = bytes[at];
    if (0x80..0xC2).contains(&b0) || b0 > 0xF4 {
        "invalid start byte"
    } else {
        "invalid continuation byte"
    }
}

impl StreamEncoder {
    /// `core` must split text with `builtin` and nothing else (no normalizer, no
    /// pre-tokenizer rewrite): the commit rule and the direct piece encoding rely on it.
    pub fn new(core: Arc<CoreTokenizer>, builtin: Builtin) -> CoreResult<StreamEncoder> {
        if core.normalizer.is_some() || core.pretok.rewrite.is_some() {
            return Err(CoreError::Config(
                "StreamingCore needs a tokenizer without a normalizer or a pre-tokenizer \
                 rewrite; use StreamingEncoder, which picks a rule"
                    .into(),
            ));
        }
        Ok(StreamEncoder {
            core,
            builtin,
            pending: String::new(),
            pending_chars: 0,
            partial: Vec::new(),
            scanned: 0,
            ends: Vec::new(),
            reach: Vec::new(),
            committed: Vec::new(),
        })
    }

    /// Cancels: drops undecided text, incomplete UTF-8 bytes and the committed record.
    pub fn reset(&mut self) {
        self.clear_pending();
        self.committed.clear();
    }

    fn clear_pending(&mut self) {
        self.pending.clear();
        self.pending_chars = 0;
        self.partial.clear();
        self.scanned = 0;
    }

    pub fn committed(&self) -> &[u32] {
        &self.committed
    }

    pub fn pending_text(&self) -> &str {
        &self.pending
    }

    /// Whether an incomplete UTF-8 character waits for its remaining bytes.
    pub fn mid_character(&self) -> bool {
        !self.partial.is_empty()
    }

    /// Adds raw UTF-8 split anywhere; appends the newly committed IDs to `out`. Invalid
    /// UTF-8 rejects the whole chunk and leaves the stream as it was.
    pub fn push_bytes(&mut self, data: &[u8], out: &mut Vec<u32>) -> CoreResult<()> {
        let joined;
        let bytes = if self.partial.is_empty() {
            data
        } else {
            joined = [self.partial.as_slice(), data].concat();
            joined.as_slice()
        };
        let (valid, rest) = match std::str::from_utf8(bytes) {
            Ok(text) => (text, &[][..]),
            Err(e) if e.error_len().is_none() => {
                let at = e.valid_up_to();
                // Safe split: from_utf8 validated bytes[..at].
                let text = std::str::from_utf8(&bytes[..at]).expect("validated prefix");
                (text, &bytes[at..])
            }
            Err(e) => {
                let at = e.valid_up_to();
                return Err(CoreError::InvalidInput(format!(
                    "the stream is not valid UTF-8 ({} at byte {} of this chunk); decode the \
                     transport with the right charset before encoding",
                    utf8_reason(bytes, at),
                    at
                )));
            }
        };
        if rest.is_empty() && self.partial.is_empty() {
            return if valid.is_empty() {
                Ok(())
            } else {
                self.add(valid, out)
            };
        }
        let rest = rest.to_vec();
        if !valid.is_empty() {
            self.add(valid, out)?;
        }
        self.partial = rest;
        Ok(())
    }

    /// Adds text (the caller checked that no UTF-8 character is incomplete).
    pub fn push_str(&mut self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        self.add(text, out)
    }

    /// The IDs of the undecided text as they would be if the stream ended now.
    pub fn provisional(&self, out: &mut Vec<u32>) -> CoreResult<()> {
        self.core.encode_ordinary_serial(&self.pending, out)
    }

    /// End of stream: appends the IDs of the rest and starts over.
    pub fn finish(&mut self, out: &mut Vec<u32>) -> CoreResult<()> {
        if self.mid_character() {
            return Err(CoreError::InvalidInput(
                "the stream ends inside a UTF-8 character; send its remaining bytes, or \
                 reset() to cancel"
                    .into(),
            ));
        }
        let start = out.len();
        let result = self.core.encode_ordinary(&self.pending, out);
        self.committed.extend_from_slice(&out[start..]);
        self.clear_pending();
        result
    }

    fn add(&mut self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        self.pending.push_str(text);
        self.pending_chars += char_count(text);
        let first = out.len();
        let size = self.pending_chars;
        if size > SCAN_ALWAYS_BELOW && size < 2 * self.scanned {
            return Ok(()); // rescan only after doubling: linear total work
        }
        let cut = self
            .builtin
            .final_pretokens(&self.pending, &mut self.ends, &mut self.reach);
        if cut > 0 {
            // The scan already split the prefix: encode its pre-tokens directly (what
            // `encode_ordinary` does after splitting; `new` checked that nothing rewrites
            // the text before the split).
            let bytes = self.pending.as_bytes();
            let mut piece_start = 0;
            for &end in &self.ends {
                self.core
                    .model
                    .encode_piece(&bytes[piece_start..end], out)?;
                piece_start = end;
            }
            // Count the short remainder rather than the committed prefix.
            self.pending_chars = char_count(&self.pending[cut..]);
            self.pending.drain(..cut);
            self.committed.extend_from_slice(&out[first..]);
        }
        self.scanned = self.pending_chars;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_count_counts_scalars() {
        assert_eq!(char_count("a€😀"), 3);
        assert_eq!(char_count(""), 0);
    }

    #[test]
    fn utf8_reasons_follow_python() {
        assert_eq!(utf8_reason(b"\x80", 0), "invalid start byte");
        assert_eq!(utf8_reason(b"\xe2\x28", 0), "invalid continuation byte");
    }
}
