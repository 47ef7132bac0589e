//! The push path of `tokenpact.runtime.StreamingEncoder` in one object, so a push costs
//! one call instead of a UTF-8 decode, a scan call and an encode call from Python.
//!
//! The rules are the Python reference's (`stream_encode.py`), step for step (but see
//! `Pretokens` and `SentencePiece` below): the undecided text is rescanned on every push
//! while it is at most `SCAN_ALWAYS_BELOW` bytes long (UTF-8) and afterwards only once
//! it has doubled since the last scan (linear total work on a run with no boundary). A scan
//! finds the longest prefix no continuation can change:
//!
//! - a recognized (allowed) special or added spelling is a hard boundary once all of it
//!   has arrived and no other spelling can match at its start: the text before it and
//!   its ID are final, and the scan goes on after it;
//! - before the first position where a spelling may start, the family's rule decides:
//!   `Pretokens` commits the pre-tokens `Builtin::final_pretoken_ends` proves final
//!   (encoded as scanned, so it may commit a little more than the Python reference,
//!   which encodes the prefix alone and so needs `final_pretokens`' extra check),
//!   `Whitespace` cuts right before the last ASCII whitespace character (WordPiece),
//!   `Metaspace` right before the last ASCII space, `Specials` nowhere,
//!   `Normalized` at the final pre-tokens of the normalized text before the last
//!   Unicode-stable character (see `stream_normalize`),
//!   `SentencePiece` right before the last `▁` (an ASCII space) that follows another
//!   character in the normalized text, once every normalizer step before it is final
//!   (no byte after the text that arrived can change it; see `SpmCut`).
//!
//! Which rule is exact for a tokenizer is decided in Python (`commit_rule`); this module
//! only runs it.

use std::sync::Arc;

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::normalize::unicode::Form;
use crate::normalize::Normalizer;
use crate::pretok::builtin::Builtin;
use crate::special::SpecialMatcher;
use crate::tokenizer::CoreTokenizer;

use super::stream_guards::Guards;
use super::stream_normalize::normalized_cut;
use super::stream_record::Record;
use super::stream_sentencepiece::SpmCut;

/// UTF-8 bytes of undecided text up to which every push rescans (as in Python).
pub const SCAN_ALWAYS_BELOW: usize = 4096;

/// The default `scan_step` (Python's `StreamingEncoder` passes the same): a push scans
/// once 256 new bytes arrived since the last scan. Each scan costs a fixed amount on
/// top of the bytes it reads (rescanning the undecided pre-token, starting the piece
/// stream, building the returned list in Python); with 64-byte transport chunks,
/// scanning every fourth push removes most of it (callgrind, 200 kB, Llama 3.2: the
/// stream's extra instructions over one-shot `encode` fall from 21.7% to 16.3%; 128:
/// 17.7%, 512: 14.7%). IDs then commit at most 255 bytes after they became final.
pub const DEFAULT_SCAN_STEP: usize = 256;

/// Where a prefix of undecided text (with no special spelling in it) may be cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutRule {
    /// Byte-level BPE behind a built-in pattern, nothing rewrites the text: the
    /// pre-tokens the scanner proves final.
    Pretokens(Builtin),
    /// Byte-level BPE behind a Unicode normalizer (NFC, NFKC, NFD, NFKD): the final
    /// pre-tokens the scanner proves in the normalized text before the last stable
    /// character, where a stable character starts in the raw text.
    Normalized(Builtin),
    /// Right before an ASCII whitespace character (split there and dropped).
    Whitespace,
    /// Right before an ASCII space (it becomes the `▁` that starts the next pre-token).
    Metaspace,
    /// Nowhere: only a decided spelling cuts (the engine encodes the text between
    /// spellings as separate inputs).
    Specials,
    /// A SentencePiece `.model` whose sentences may be cut before a `▁` (see
    /// `SentencePieceCore::stream_cut`).
    SentencePiece,
}

impl CutRule {
    pub fn from_name(rule: &str, pattern: Option<&str>) -> CoreResult<CutRule> {
        match (rule, pattern) {
            ("whitespace", _) => Ok(CutRule::Whitespace),
            ("metaspace", _) => Ok(CutRule::Metaspace),
            ("specials", _) => Ok(CutRule::Specials),
            ("sentencepiece", _) => Ok(CutRule::SentencePiece),
            ("normalized", Some(p)) => {
                Builtin::from_name(p)
                    .map(CutRule::Normalized)
                    .ok_or_else(|| {
                        CoreError::Config(format!(
                            "the normalized rule needs a built-in pattern that proves the \
                         split (gpt2, gpt4, o200k, llama3), not {p:?}; use \
                         StreamingEncoder, which picks a rule"
                        ))
                    })
            }
            ("pretokens", Some(p)) => {
                Builtin::from_name(p)
                    .map(CutRule::Pretokens)
                    .ok_or_else(|| {
                        CoreError::Config(format!(
                    "the pretokens rule needs a built-in pattern (gpt2, gpt4, cl100k, o200k, \
                     llama3), not {p:?}; use StreamingEncoder, which picks a rule"
                ))
                    })
            }
            _ => Err(CoreError::Config(format!(
                "no native streaming rule {rule:?} (with pattern {pattern:?}); use \
                 StreamingEncoder, which picks a rule"
            ))),
        }
    }
}

enum Backend {
    Pipeline(Arc<CoreTokenizer>),
    SentencePiece(SpmCut),
}

pub struct StreamEncoder {
    backend: Backend,
    rule: CutRule,
    /// The normalization form of the `Normalized` rule.
    form: Form,
    guards: Option<Guards>,
    /// Decoded text that is not committed yet.
    pending: String,
    /// The bytes of an incomplete trailing UTF-8 character (at most 3).
    partial: Vec<u8>,
    /// `pending.len()` after the last scan.
    scanned: usize,
    /// New bytes a push must bring since the last scan before it scans again (0: every
    /// push scans). Trades commit latency for fewer scans of short pushes.
    scan_step: usize,
    /// Scratch: the ends of the final pre-tokens of the last scan.
    ends: Vec<usize>,
    /// Every ID committed since the last `reset` (finish included).
    committed: Record,
}

/// The error for invalid UTF-8 at `bytes[at]`, `skew` bytes into the chunk as Python
/// counts it.
fn invalid_utf8(bytes: &[u8], at: usize, skew: usize) -> CoreError {
    CoreError::InvalidInput(format!(
        "the stream is not valid UTF-8 ({} at byte {} of this chunk); decode the \
         transport with the right charset before encoding",
        utf8_reason(bytes, at),
        at + skew
    ))
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
    /// `matcher`: the allowed spellings, exactly as `encode` recognizes them (plain: no
    /// flags). `through_spellings`: see `Guards::through`. `scan_step`: see the field. The `Pretokens` rule needs a
    /// tokenizer without a normalizer or a pre-tokenizer rewrite: it encodes the final
    /// pre-tokens straight from the scan's boundaries.
    pub fn new(
        engine: &Engine,
        rule: CutRule,
        matcher: Option<Arc<SpecialMatcher>>,
        through_spellings: bool,
        scan_step: usize,
    ) -> CoreResult<StreamEncoder> {
        let backend = match (engine, rule) {
            (Engine::SentencePiece(sp), CutRule::SentencePiece) => {
                let Some(cut) = sp.stream_cut() else {
                    return Err(CoreError::Config(
                        "no cut inside a sentence is proven for this SentencePiece model \
                         (pieces with an inner U+2581, UNUSED BPE pieces, spaces a rule \
                         rewrites, or an ill-formed charsmap rule); use StreamingEncoder, \
                         which picks a rule"
                            .into(),
                    ));
                };
                Backend::SentencePiece(SpmCut::new(sp.clone(), cut))
            }
            (Engine::Pipeline(core), rule) if rule != CutRule::SentencePiece => {
                Backend::Pipeline(core.clone())
            }
            _ => {
                return Err(CoreError::Config(format!(
                    "the {rule:?} rule does not run on a {} engine; use StreamingEncoder, \
                     which picks a rule",
                    engine.kind()
                )))
            }
        };
        if let (CutRule::Pretokens(_), Backend::Pipeline(core)) = (rule, &backend) {
            if core.normalizer.is_some() || core.pretok.rewrite.is_some() {
                return Err(CoreError::Config(
                    "the pretokens rule needs a tokenizer without a normalizer or a \
                 pre-tokenizer rewrite; use StreamingEncoder, which picks a rule"
                        .into(),
                ));
            }
        }
        let mut form = Form::Nfc;
        if let (CutRule::Normalized(_), Backend::Pipeline(core)) = (rule, &backend) {
            match &core.normalizer {
                Some(Normalizer::Unicode(f)) if core.pretok.rewrite.is_none() => form = *f,
                _ => {
                    return Err(CoreError::Config(
                        "the normalized rule needs a tokenizer whose normalizer is one \
                         Unicode form (NFC, NFKC, NFD, NFKD) and no pre-tokenizer rewrite; \
                         use StreamingEncoder, which picks a rule"
                            .into(),
                    ))
                }
            }
        }
        let guards = match matcher {
            Some(m) if !m.contents.is_empty() => Some(Guards::new(m, through_spellings)?),
            _ => None,
        };
        Ok(StreamEncoder {
            backend,
            rule,
            form,
            guards,
            pending: String::new(),
            partial: Vec::new(),
            scanned: 0,
            scan_step,
            ends: Vec::new(),
            committed: Record::default(),
        })
    }

    /// Cancels: drops undecided text, incomplete UTF-8 bytes and the committed record.
    pub fn reset(&mut self) {
        self.clear_pending();
        self.committed.clear();
    }

    fn clear_pending(&mut self) {
        self.pending.clear();
        self.partial.clear();
        self.scanned = 0;
        if let Backend::SentencePiece(spm) = &mut self.backend {
            spm.start_sentence();
        }
    }

    /// Every ID committed since the last `reset` (finish included).
    pub fn committed(&self) -> Vec<u32> {
        self.committed.to_vec()
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
        if self.partial.is_empty() {
            // The common case: no character waits, nothing is copied before the check.
            return match std::str::from_utf8(data) {
                Ok(text) => self.add(text, out),
                Err(e) => self.push_split(data, 0, e, out),
            };
        }
        // A character waits: complete it from the chunk's first bytes (no copy of the
        // chunk; error positions count from the waiting bytes, as in Python).
        let held = self.partial.len();
        let want = match self.partial[0] {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        let take = (want - held).min(data.len());
        let mut buf = [0u8; 4];
        buf[..held].copy_from_slice(&self.partial);
        buf[held..held + take].copy_from_slice(&data[..take]);
        let joined = &buf[..held + take];
        let ch = match std::str::from_utf8(joined) {
            Ok(ch) => ch,
            Err(e) if e.error_len().is_some() => {
                return Err(invalid_utf8(joined, e.valid_up_to(), 0));
            }
            Err(_) => {
                // Still incomplete: the chunk was too short to finish the character.
                self.partial.extend_from_slice(data);
                return Ok(());
            }
        };
        let rest = &data[take..];
        let (text, tail) = match std::str::from_utf8(rest) {
            Ok(text) => (text, &[][..]),
            Err(e) if e.error_len().is_some() => {
                return Err(invalid_utf8(rest, e.valid_up_to(), held + take));
            }
            Err(e) => {
                let at = e.valid_up_to();
                // from_utf8 validated rest[..at].
                let text = std::str::from_utf8(&rest[..at]).expect("validated prefix");
                (text, &rest[at..])
            }
        };
        self.partial.clear();
        self.partial.extend_from_slice(tail);
        if text.is_empty() {
            return self.add(ch, out);
        }
        // What `add` of the joined text does: append all of it, then scan once.
        self.pending.push_str(ch);
        self.add(text, out)
    }

    /// `push_bytes` of `bytes` (no character waiting before them) that end inside a
    /// character or are invalid; `skew`: bytes before `bytes` in error positions.
    fn push_split(
        &mut self,
        bytes: &[u8],
        skew: usize,
        e: std::str::Utf8Error,
        out: &mut Vec<u32>,
    ) -> CoreResult<()> {
        let at = e.valid_up_to();
        if e.error_len().is_some() {
            return Err(invalid_utf8(bytes, at, skew));
        }
        // from_utf8 validated bytes[..at].
        let text = std::str::from_utf8(&bytes[..at]).expect("validated prefix");
        self.partial.clear();
        self.partial.extend_from_slice(&bytes[at..]);
        self.add(text, out)
    }

    /// Adds text (the caller checked that no UTF-8 character is incomplete).
    pub fn push_str(&mut self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        self.add(text, out)
    }

    /// `encode(text)` with the recognized spellings, as one input (for SentencePiece:
    /// starting in the stream's context).
    fn encode(&mut self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        let matcher = self.guards.as_ref().map(|g| &*g.matcher);
        match &mut self.backend {
            Backend::Pipeline(core) => match matcher {
                Some(m) => core.encode(text, Some(m), out),
                None => core.encode_ordinary(text, out),
            },
            Backend::SentencePiece(spm) => {
                spm.encode(text, matcher, out);
                Ok(())
            }
        }
    }

    /// `encode` of `pending[from..to]`.
    fn encode_pending(&mut self, from: usize, to: usize, out: &mut Vec<u32>) -> CoreResult<()> {
        let text = std::mem::take(&mut self.pending);
        let result = self.encode(&text[from..to], out);
        self.pending = text;
        result
    }

    /// The IDs of the undecided text as they would be if the stream ended now.
    pub fn provisional(&mut self, out: &mut Vec<u32>) -> CoreResult<()> {
        self.encode_pending(0, self.pending.len(), out)
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
        let result = self.encode_pending(0, self.pending.len(), out);
        self.committed.extend(&out[start..]);
        self.clear_pending();
        result
    }

    /// Appends `text` to the undecided text (which may already end with a character
    /// `push_bytes` completed, then `text` is not empty) and commits what became final.
    fn add(&mut self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        if text.is_empty() {
            return Ok(());
        }
        self.pending.push_str(text);
        let size = self.pending.len();
        if size < self.scanned + self.scan_step {
            return Ok(()); // amortized: wait for `scan_step` new bytes
        }
        if size > SCAN_ALWAYS_BELOW && size < 2 * self.scanned {
            return Ok(()); // rescan only after doubling: linear total work
        }
        let first = out.len();
        let mut start = 0;
        loop {
            let (cut, through_spelling) = self.final_cut(start);
            if cut > start {
                if let (false, Backend::SentencePiece(spm)) = (through_spelling, &mut self.backend)
                {
                    spm.encode_proven(out);
                } else if through_spelling || !matches!(self.rule, CutRule::Pretokens(_)) {
                    self.encode_pending(start, cut, out)?;
                    if let Backend::SentencePiece(spm) = &mut self.backend {
                        spm.start_sentence(); // a new sentence after the spelling
                    }
                } else {
                    // The scan already split the prefix: encode its pre-tokens directly
                    // (what `encode_ordinary` does after splitting; `new` checked that
                    // nothing rewrites the text, and no spelling lies before the cut).
                    // Byte-level BPE goes through one piece stream, as in `encode`:
                    // one cache borrow per push, each piece's cache line prefetched.
                    let Backend::Pipeline(core) = &self.backend else {
                        unreachable!("the pretokens rule runs on pipeline engines")
                    };
                    let bytes = self.pending.as_bytes();
                    let ends = &self.ends;
                    match core.model.as_bpe() {
                        Some(bpe) => bpe.encode_stream(|stream| {
                            let mut piece = start;
                            for &end in ends {
                                stream.push(&bytes[piece..end], piece, out);
                                piece = end;
                            }
                            while stream.finish(out).is_some() {}
                        }),
                        None => {
                            let mut piece = start;
                            for &end in ends {
                                core.model.encode_piece(&bytes[piece..end], out)?;
                                piece = end;
                            }
                        }
                    }
                }
                start = cut;
            }
            if !through_spelling {
                break; // the tail's first pre-token is undecided: rescanning finds nothing
            }
        }
        if start > 0 {
            self.pending.drain(..start);
            self.committed.extend(&out[first..]);
        }
        self.scanned = self.pending.len();
        Ok(())
    }

    /// The end of the longest prefix of `pending[start..]` whose IDs no continuation can
    /// change (a byte offset into `pending`), and whether it ends with a recognized
    /// spelling (then more may be final after it).
    fn final_cut(&mut self, start: usize) -> (usize, bool) {
        let buf = &self.pending[start..];
        let mut limit = buf.len();
        if let Some(g) = &self.guards {
            limit = g.held_tail(buf);
            if let Some((at, _, _)) = g.matcher.find_first(buf) {
                if at < limit {
                    // The earliest spelling starts here. When exactly one spelling can
                    // match at this start and all of it has arrived, `encode` must split
                    // the text there: the text before it and the spelling's ID are final.
                    if g.through {
                        if let Some(len) = g.decided(&buf.as_bytes()[at..]) {
                            return (start + at + len, true);
                        }
                    }
                    limit = at;
                }
            }
        }
        let head = &buf[..limit];
        let cut = match self.rule {
            CutRule::Pretokens(builtin) => {
                // Every final pre-token, encoded as scanned (`final_pretoken_ends`): no
                // check that the prefix alone splits the same, and no look-ahead tracking.
                let cut = builtin.final_pretoken_ends(head, &mut self.ends);
                for end in &mut self.ends {
                    *end += start;
                }
                cut
            }
            CutRule::Whitespace => head
                .bytes()
                .rposition(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(0),
            CutRule::Metaspace => head.bytes().rposition(|b| b == b' ').unwrap_or(0),
            CutRule::Normalized(proof) => normalized_cut(buf, limit, self.form, proof),
            CutRule::Specials => 0,
            CutRule::SentencePiece => match &mut self.backend {
                Backend::SentencePiece(spm) => spm.final_cut(head),
                Backend::Pipeline(_) => 0,
            },
        };
        (start + cut, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_reasons_follow_python() {
        assert_eq!(utf8_reason(b"\x80", 0), "invalid start byte");
        assert_eq!(utf8_reason(b"\xe2\x28", 0), "invalid continuation byte");
    }

    fn byte_stream() -> StreamEncoder {
        use crate::bpe::model::BpeModel;
        use crate::pretok::chain::PretokChain;
        use crate::pretok::Pretokenizer;
        let ranks = (0..=255u8).map(|b| vec![b]).collect();
        let pretok = PretokChain::single(Pretokenizer::Builtin(Builtin::Llama3));
        let core = CoreTokenizer::new(BpeModel::from_ranks(ranks).unwrap(), pretok, vec![]);
        let rule = CutRule::Pretokens(Builtin::Llama3);
        let engine = Engine::Pipeline(Arc::new(core.unwrap()));
        StreamEncoder::new(&engine, rule, None, true, 0).unwrap()
    }

    fn message(e: CoreError) -> String {
        match e {
            CoreError::InvalidInput(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_waiting_character_completes_from_the_next_chunk() {
        let mut s = byte_stream();
        let mut out = Vec::new();
        for chunk in [
            &b"a \xe2"[..],
            b"\x82",
            b"\xac b \xf0\x9f",
            b"\x98\x80!",
            b" ",
        ] {
            s.push_bytes(chunk, &mut out).unwrap();
        }
        s.finish(&mut out).unwrap();
        let text = "a € b 😀! ";
        assert_eq!(out, text.bytes().map(u32::from).collect::<Vec<_>>());
    }

    #[test]
    fn invalid_bytes_after_a_waiting_character_leave_the_stream_as_it_was() {
        let mut s = byte_stream();
        let mut out = Vec::new();
        s.push_bytes(b"x \xe2", &mut out).unwrap();
        // Positions count from the waiting byte, as Python's decoder reports them.
        let e = message(s.push_bytes(b"\x28", &mut out).unwrap_err());
        assert!(e.contains("invalid continuation byte at byte 0"), "{e}");
        let e = message(s.push_bytes(b"\x82\xac y\xff", &mut out).unwrap_err());
        assert!(e.contains("invalid start byte at byte 5"), "{e}");
        assert!(s.mid_character());
        assert_eq!(s.pending_text().len() + out.len(), 2);
        s.push_bytes(b"\x82\xac", &mut out).unwrap();
        s.finish(&mut out).unwrap();
        assert_eq!(out, "x €".bytes().map(u32::from).collect::<Vec<_>>());
    }
}
