//! The SentencePiece rule of a stream (`CutRule::SentencePiece`): where a sentence of a
//! SentencePiece BPE model may be cut while text still arrives, and how each part is
//! normalized and encoded so that the parts give exactly what `encode` gives the whole.

use std::sync::Arc;

use crate::sentencepiece::{SentencePieceCore, StreamCut};
use crate::special::{SpecialMatcher, Untrusted};

/// `▁` (U+2581) in UTF-8: what SentencePiece writes for a space.
const SPACE_SYMBOL: &[u8] = "\u{2581}".as_bytes();

/// Where the pending text of a SentencePiece stream starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Context {
    /// At the start of a sentence (of the stream, or right after a spelling): `encode`
    /// adds the dummy prefix and strips leading spaces there.
    Start,
    /// Inside a sentence, at an ASCII space that followed another character.
    Mid,
}

/// The SentencePiece side of a stream: how a sentence is cut and encoded in parts.
///
/// A cut at input offset `c` (an ASCII space) with the normalized text at `o` is exact
/// when (1) the normalized byte before `o` ends a character other than `▁` and a step
/// started at `c` and wrote the `▁` at `o`, and (2) every step that started before `c`
/// read only bytes that arrived (`c - 1 + reach <= len`): those steps, and so the
/// normalized text before `o`, are the same for every continuation; the normalizer
/// reaches `c` with no pending space (its state is the previous output), so the rest of
/// the sentence normalizes as the text from `c` does "in the middle" (`normalize_mid`).
/// No piece has `▁` after another character, so `o` is a boundary of every
/// segmentation and BPE encodes each side alone the same (`stream_cut`). For Unigram
/// the normalized text is well-formed UTF-8 (`stream_cut` checks the charsmap), so
/// Viterbi's walk, one character at a time, reaches `o`, and the rest continues Viterbi
/// from the best path's score at `o` (`score`), exactly as over the whole sentence.
/// The committed part never ends in `▁`, so the end-of-sentence space stripping never
/// reaches it.
pub(super) struct SpmCut {
    sp: Arc<SentencePieceCore>,
    cut: StreamCut,
    context: Context,
    normalized: Vec<u8>,
    map: Vec<u32>,
    /// End of the normalized prefix the last scan proved final.
    proven: usize,
    /// Unigram: the best path's score where the pending text starts (0 at a sentence
    /// start), what Viterbi over the whole sentence carries there.
    score: f32,
}

impl SpmCut {
    pub(super) fn new(sp: Arc<SentencePieceCore>, cut: StreamCut) -> SpmCut {
        SpmCut {
            sp,
            cut,
            context: Context::Start,
            normalized: Vec::new(),
            map: Vec::new(),
            proven: 0,
            score: 0.0,
        }
    }

    /// The next text starts a sentence (the stream's start, or right after a spelling).
    pub(super) fn start_sentence(&mut self) {
        self.context = Context::Start;
        self.score = 0.0;
    }

    /// Encodes the normalized prefix the last `final_cut` proved final; the rest of the
    /// sentence continues in the middle.
    pub(super) fn encode_proven(&mut self, out: &mut Vec<u32>) {
        self.score =
            self.sp
                .encode_normalized_from(&self.normalized[..self.proven], self.score, out);
        self.context = Context::Mid;
    }

    /// The normalized text of `text` (no spelling in it) where the stream's context
    /// says it starts, with the input offset per normalized byte.
    pub(super) fn normalize(&mut self, text: &str) {
        self.sp
            .normalize_with_map(text.as_bytes(), &mut self.normalized, &mut self.map);
        if self.context == Context::Start || self.normalized.is_empty() {
            return;
        }
        // In the middle, at a space after another character: the space writes `▁` and,
        // with remove_extra_whitespaces, swallows the spaces after it. `normalize` of
        // the same text at a sentence start strips those spaces and writes the dummy
        // prefix instead (or keeps every space and adds the prefix before them).
        match (self.cut.remove_extra_whitespaces, self.cut.add_dummy_prefix) {
            (false, true) => {
                self.normalized.drain(..SPACE_SYMBOL.len());
                self.map.drain(..SPACE_SYMBOL.len());
            }
            (true, false) => {
                self.normalized.splice(0..0, SPACE_SYMBOL.iter().copied());
                self.map.splice(0..0, [0; 3]);
            }
            _ => {}
        }
    }

    /// The IDs of `text` (no spelling in it) in the stream's context (the stream's
    /// state is left as it was: this serves `provisional` and `finish`).
    pub(super) fn encode_sentence(&mut self, text: &str, out: &mut Vec<u32>) {
        self.normalize(text);
        self.sp
            .encode_normalized_from(&self.normalized, self.score, out);
    }

    /// `encode(text)` with the spellings of `matcher`, the first sentence in context.
    pub(super) fn encode(
        &mut self,
        text: &str,
        matcher: Option<&SpecialMatcher>,
        out: &mut Vec<u32>,
    ) {
        let untrusted = Untrusted::none();
        if self.context == Context::Start {
            self.sp.encode(text, matcher, &untrusted, out, None);
            return;
        }
        let first = matcher.and_then(|m| m.trusted_matches(text, &untrusted).next());
        match first {
            None => self.encode_sentence(text, out),
            Some((s, e, idx)) => {
                self.encode_sentence(&text[..s], out);
                out.push(matcher.expect("a match came from it").ids[idx]);
                self.sp.encode(&text[e..], matcher, &untrusted, out, None);
            }
        }
    }

    /// The byte offset in `head` (no spelling in it) of the last exact cut, 0 if none;
    /// leaves the normalized prefix before it in `normalized[..proven]`.
    pub(super) fn final_cut(&mut self, head: &str) -> usize {
        self.normalize(head);
        let (norm, map) = (&self.normalized, &self.map);
        let bytes = head.as_bytes();
        let mut end = norm.len();
        while let Some(o) = norm[..end]
            .windows(SPACE_SYMBOL.len())
            .rposition(|w| w == SPACE_SYMBOL)
        {
            end = o;
            if o == 0 {
                break;
            }
            if o >= SPACE_SYMBOL.len() && &norm[o - SPACE_SYMBOL.len()..o] == SPACE_SYMBOL {
                continue; // a run of spaces: a piece may span it
            }
            let c = map[o] as usize;
            if c > 0 && bytes[c] == b' ' && c - 1 + self.cut.reach <= bytes.len() {
                // map[o - 1] < c: the output before `o` came from earlier steps.
                self.proven = o;
                return c;
            }
        }
        0
    }
}
