//! Incremental decoding: IDs arrive a few at a time; text is emitted as soon as no later
//! ID can change it, and the concatenation of everything emitted (plus `finish`) is
//! exactly the tokenizer's batch decode of all the IDs.
//!
//! Per-token work is constant (no re-decoding of a growing window). What is held back:
//! - byte-level pieces: at most 3 bytes of an incomplete UTF-8 character;
//! - SentencePiece: the same 3 bytes (a byte-piece run is validated character by
//!   character, as SentencePiece does), nothing else; a model with a denormalizer
//!   (rare) holds everything until `finish`, since the denormalizer rewrites the text;
//! - Hugging Face decoder chains: see `chain.rs` (one token for BPEDecoder, the current
//!   run of `<0xXX>` tokens while it is valid UTF-8 for ByteFallback, pattern length - 1
//!   bytes for literal replacements after Fuse, `stop` characters for Strip after Fuse).

use rustc_hash::FxHashSet;

use super::chain::ChainStream;
use super::utf8::{InvalidUtf8, Utf8Stream};
use crate::decoder::Decoder;
use crate::engine::Engine;
use crate::error::CoreError;
use crate::sentencepiece::normalizer::{char_len, SPACE_SYMBOL};
use crate::sentencepiece::{push_unescaped, DecodePiece, SentencePieceCore};
use crate::tokenizer::CoreTokenizer;

/// Why decoding stopped.
#[derive(Debug)]
pub enum DecodeFailure {
    UnknownId(CoreError),
    Invalid(InvalidUtf8),
}

impl From<InvalidUtf8> for DecodeFailure {
    fn from(e: InvalidUtf8) -> Self {
        DecodeFailure::Invalid(e)
    }
}

struct SpState {
    is_bos_ws: bool,
    bos_ws_seen: bool,
    text_nonempty: bool,
    /// Bytes of the current byte-piece run not yet resolved into characters (<= 3).
    run: Vec<u8>,
    /// Everything, when the model has a denormalizer (applied to the whole text).
    whole: Option<Vec<u8>>,
}

enum Mode {
    Bytes,
    Chain(Box<ChainStream>),
    Sp(Box<SpState>),
}

pub struct IncrementalDecoder {
    source: Engine,
    mode: Mode,
    utf8: Utf8Stream,
    strict: bool,
    skip: FxHashSet<u32>,
    scratch: Vec<u8>,
    /// The prompt's text that the decoder held back while priming, and how much of it
    /// the output has matched: output is dropped while it repeats this text (it is the
    /// prompt's, not the completion's), and never again after the first difference.
    skip_text: String,
    skip_at: usize,
    /// IDs consumed so far.
    pub count: usize,
}

fn unknown(id: u32, rows: usize) -> DecodeFailure {
    DecodeFailure::UnknownId(CoreError::UnknownToken(format!(
        "token ID {id} is not in this tokenizer (IDs are 0..{}); check that the IDs come from \
         this tokenizer",
        rows.saturating_sub(1)
    )))
}

impl IncrementalDecoder {
    /// `strict`: invalid UTF-8 is an error (else U+FFFD as the batch decoder's `replace`);
    /// `skip`: IDs dropped before decoding (skip_special_tokens).
    pub fn new(source: Engine, strict: bool, skip: FxHashSet<u32>) -> IncrementalDecoder {
        let mode = match &source {
            Engine::Pipeline(core) => match &core.decoder {
                Decoder::Bytes => Mode::Bytes,
                Decoder::Tokens { steps, separator } => {
                    Mode::Chain(Box::new(ChainStream::new(steps, separator)))
                }
            },
            Engine::SentencePiece(sp) => Mode::Sp(Box::new(SpState {
                is_bos_ws: true,
                bos_ws_seen: false,
                text_nonempty: false,
                run: Vec::new(),
                whole: sp.denormalize(b"").map(|_| Vec::new()),
            })),
        };
        IncrementalDecoder {
            source,
            mode,
            utf8: Utf8Stream::new(strict),
            strict,
            skip,
            scratch: Vec::new(),
            skip_text: String::new(),
            skip_at: 0,
            count: 0,
        }
    }

    /// Primes the stream with prompt IDs: what it emits from now on is
    /// `decode(prompt + completion)` after its longest common prefix with
    /// `decode(prompt)`, which is `decode(prompt + completion)[len(decode(prompt)):]`
    /// whenever the prompt's text is a prefix of the whole (always, unless the prompt
    /// ends inside a character: then the character the completion completes is the
    /// completion's, not a U+FFFD of the prompt's). So a completion continues the prompt's
    /// text (a SentencePiece `▁` after a prompt is a space, not a stripped sentence
    /// start). A tail of the prompt works the same for decoders whose state never reaches
    /// back further than that tail (one token for Metaspace/SentencePiece, a character
    /// for byte-level). `count` is unchanged.
    pub fn prime(&mut self, prompt: &[u32]) -> Result<(), DecodeFailure> {
        let count = self.count;
        let mut emitted = String::new();
        self.run(prompt, false, &mut emitted)?;
        self.count = count;
        // The decode of the prompt alone, as the batch decoder gives it: the text the
        // stream emitted plus what the end of the prompt would flush.
        let mut whole = String::new();
        let mut alone = IncrementalDecoder::new(self.source.clone(), false, self.skip.clone());
        alone.run(prompt, true, &mut whole)?;
        // `emitted` is a prefix of `whole`: the stream only emits final text.
        self.skip_text = whole.get(emitted.len()..).unwrap_or_default().to_owned();
        self.skip_at = 0;
        Ok(())
    }

    /// Decodes `ids`, appending the text that no later ID can change to `out`.
    pub fn push(&mut self, ids: &[u32], out: &mut String) -> Result<(), DecodeFailure> {
        self.run(ids, false, out)
    }

    /// Ends the stream, appending the rest of the text.
    pub fn finish(&mut self, out: &mut String) -> Result<(), DecodeFailure> {
        self.run(&[], true, out)
    }

    /// Bytes held back right now (for tests of the documented bounds).
    pub fn held(&self) -> usize {
        let mode = match &self.mode {
            Mode::Bytes => 0,
            Mode::Chain(c) => c.held(),
            Mode::Sp(s) => s.run.len() + s.whole.as_ref().map_or(0, Vec::len),
        };
        mode + self.utf8.pending().len()
    }

    fn run(&mut self, ids: &[u32], finish: bool, out: &mut String) -> Result<(), DecodeFailure> {
        let source = self.source.clone();
        let start = out.len();
        match source {
            Engine::Pipeline(core) => self.run_core(&core, ids, finish, out)?,
            Engine::SentencePiece(sp) => self.run_sp(&sp, ids, finish, out)?,
        }
        if self.skip_at < self.skip_text.len() {
            let fresh = &out[start..];
            let expected = &self.skip_text[self.skip_at..];
            let matched: usize = fresh
                .chars()
                .zip(expected.chars())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a.len_utf8())
                .sum();
            let all = matched == fresh.len();
            out.replace_range(start..start + matched, "");
            self.skip_at += matched;
            if !all || self.skip_at == self.skip_text.len() {
                self.skip_text = String::new();
                self.skip_at = 0;
            }
        }
        Ok(())
    }

    fn run_core(
        &mut self,
        core: &CoreTokenizer,
        ids: &[u32],
        finish: bool,
        out: &mut String,
    ) -> Result<(), DecodeFailure> {
        let rows = core.model.vocab().len() + core.specials.len();
        match (&mut self.mode, &core.decoder) {
            (Mode::Bytes, _) => {
                for &id in ids {
                    self.count += 1;
                    if self.skip.contains(&id) {
                        continue;
                    }
                    let piece = core.decode_piece(id).ok_or_else(|| unknown(id, rows))?;
                    self.utf8.push(piece, out)?;
                }
                if finish {
                    self.utf8.finish(out)?;
                }
            }
            (Mode::Chain(chain), Decoder::Tokens { steps, .. }) => {
                let mut tokens = Vec::with_capacity(ids.len());
                for &id in ids {
                    self.count += 1;
                    if self.skip.contains(&id) {
                        continue;
                    }
                    let piece = core.decode_piece(id).ok_or_else(|| unknown(id, rows))?;
                    tokens.push(String::from_utf8_lossy(piece).into_owned());
                }
                chain.push(steps, tokens, finish, out);
            }
            _ => unreachable!("the mode follows the decoder"),
        }
        Ok(())
    }

    fn run_sp(
        &mut self,
        sp: &SentencePieceCore,
        ids: &[u32],
        finish: bool,
        out: &mut String,
    ) -> Result<(), DecodeFailure> {
        let Mode::Sp(state) = &mut self.mode else {
            unreachable!("the mode follows the source")
        };
        let (add_dummy_prefix, remove_extra_whitespaces) = sp.decode_flags();
        let lossy = !self.strict;
        let text = &mut self.scratch;
        text.clear();
        for &id in ids {
            self.count += 1;
            if self.skip.contains(&id) {
                continue;
            }
            let piece = sp
                .decode_piece(id)
                .ok_or_else(|| unknown(id, sp.piece_count()))?;
            if let DecodePiece::Byte(b) = piece {
                state.run.push(b);
                state.text_nonempty = true;
                resolve_run(&mut state.run, lossy, false, text);
                continue;
            }
            resolve_run(&mut state.run, lossy, true, text);
            if state.bos_ws_seen || state.text_nonempty {
                state.is_bos_ws = false;
            }
            state.bos_ws_seen = false;
            let before = text.len();
            match piece {
                DecodePiece::Control | DecodePiece::Byte(_) => {}
                DecodePiece::Unknown(surface) => text.extend_from_slice(surface),
                DecodePiece::Text(mut p) => {
                    if state.is_bos_ws && (add_dummy_prefix || remove_extra_whitespaces) {
                        if let Some(rest) = p.strip_prefix(SPACE_SYMBOL) {
                            p = rest;
                            state.bos_ws_seen = !remove_extra_whitespaces;
                        }
                    }
                    push_unescaped(text, p);
                }
            }
            state.text_nonempty |= text.len() > before;
        }
        if finish {
            resolve_run(&mut state.run, lossy, true, text);
        }
        if let Some(whole) = &mut state.whole {
            whole.extend_from_slice(text);
            if !finish {
                return Ok(());
            }
            let all = std::mem::take(whole);
            *text = sp.denormalize(&all).unwrap_or(all);
        }
        self.utf8.push(text, out)?;
        if finish {
            self.utf8.finish(out)?;
        }
        Ok(())
    }
}

/// Moves the resolved part of a byte-piece run into `text`. Raw (strict) runs pass
/// through (the UTF-8 stream judges them); lossy runs follow SentencePiece's rule, one
/// character at a time: a complete well-formed character, or one U+FFFD per bad byte.
/// An incomplete but valid prefix waits for more bytes unless the run has ended.
fn resolve_run(run: &mut Vec<u8>, lossy: bool, ended: bool, text: &mut Vec<u8>) {
    if !lossy {
        text.append(run);
        return;
    }
    let mut i = 0;
    while i < run.len() {
        let rest = &run[i..];
        if !ended {
            if let Err(e) = std::str::from_utf8(rest) {
                if e.valid_up_to() == 0 && e.error_len().is_none() {
                    break; // an incomplete character: wait
                }
            }
        }
        let (n, ok) = char_len(rest);
        text.extend_from_slice(if ok {
            &rest[..n]
        } else {
            "\u{fffd}".as_bytes()
        });
        i += n;
    }
    run.drain(..i);
}
