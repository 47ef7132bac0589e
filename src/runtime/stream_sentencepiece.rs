//! The SentencePiece rule of a stream (`CutRule::SentencePiece`): where a sentence of a
//! SentencePiece BPE model may be cut while text still arrives, and how each part is
//! normalized and encoded so that the parts give exactly what `encode` gives the whole.

use std::sync::Arc;

use crate::sentencepiece::{Resume, SentencePieceCore, StreamCut};
use crate::special::{SpecialMatcher, Untrusted};

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
/// when (1) the normalized byte before `o` ends a character other than `▁` and the step
/// at `c` wrote the `▁` at `o`, and (2) every step before `c` is final (`normalizer::
/// resume`: it read only bytes that arrived and reads the same whatever follows): the
/// normalized text before `o` is then the same for every continuation; the normalizer
/// reaches `c` with no pending space (its state is the previous output), so the rest of
/// the sentence normalizes as the text from `c` does right after a cut
/// (`Resume::at_cut`). No piece has `▁` after another character, so `o` is a boundary
/// of every segmentation and BPE encodes each side alone the same (`stream_cut`). For
/// Unigram the normalized text is well-formed UTF-8 (`stream_cut` checks the charsmap),
/// so Viterbi's walk, one character at a time, reaches `o`, and the rest continues
/// Viterbi from the best path's score at `o` (`score`), exactly as over the whole
/// sentence. The committed part never ends in `▁`, so the end-of-sentence space
/// stripping never reaches it.
///
/// The normalization resumes: `normalized` keeps the output of the final steps of the
/// pending text across scans, and a scan normalizes only the bytes after them, so each
/// byte is normalized once however often the undecided text is scanned.
pub(super) struct SpmCut {
    sp: Arc<SentencePieceCore>,
    cut: StreamCut,
    context: Context,
    /// The normalized text of the final steps of the pending text (from its start).
    normalized: Vec<u8>,
    /// Where those steps end.
    resume: Resume,
    /// Bytes of the pending text the last scan saw: every final step read only bytes
    /// before it, so the state holds for any text that extends those bytes.
    seen: usize,
    /// Scratch: the normalized text of a whole sentence (`provisional`, `finish`).
    sentence: Vec<u8>,
    /// The cut the last `final_cut` proved: (normalized offset, input offset).
    proven: (usize, usize),
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
            resume: Resume::sentence_start(),
            seen: 0,
            sentence: Vec::new(),
            proven: (0, 0),
            score: 0.0,
        }
    }

    /// The next text starts a sentence (the stream's start, or right after a spelling).
    pub(super) fn start_sentence(&mut self) {
        self.context = Context::Start;
        self.score = 0.0;
        self.restart();
    }

    /// Forgets the normalized text: the pending text normalizes from its start again.
    fn restart(&mut self) {
        self.normalized.clear();
        self.resume = self.initial();
        self.seen = 0;
    }

    /// The normalizer's state where the pending text starts.
    fn initial(&self) -> Resume {
        match self.context {
            Context::Start => Resume::sentence_start(),
            Context::Mid => Resume::at_cut(),
        }
    }

    /// Encodes the normalized prefix the last `final_cut` proved final and drops it (and
    /// the input before the cut, which the caller drops from the pending text); the rest
    /// of the sentence continues after a cut.
    pub(super) fn encode_proven(&mut self, out: &mut Vec<u32>) {
        let (o, c) = self.proven;
        self.score = self
            .sp
            .encode_normalized_from(&self.normalized[..o], self.score, out);
        self.normalized.drain(..o);
        self.resume.rebase(c);
        self.seen -= c;
        self.context = Context::Mid;
    }

    /// The IDs of `text` (the pending text from its start, or a prefix of it; no
    /// spelling in it) in the stream's context. The stream's state is left as it was:
    /// this serves `provisional` and `finish`.
    fn encode_sentence(&mut self, text: &str, out: &mut Vec<u32>) {
        let bytes = text.as_bytes();
        self.sentence.clear();
        let mut st = if bytes.len() >= self.seen {
            // The final steps hold for `text`: resume after them.
            self.sentence.extend_from_slice(&self.normalized);
            self.resume
        } else {
            self.initial()
        };
        self.sp.finish_normalize(bytes, &mut st, &mut self.sentence);
        self.sp
            .encode_normalized_from(&self.sentence, self.score, out);
    }

    /// `encode(text)` with the spellings of `matcher`, the first sentence in context
    /// (`text` starts where the pending text does).
    pub(super) fn encode(
        &mut self,
        text: &str,
        matcher: Option<&SpecialMatcher>,
        out: &mut Vec<u32>,
    ) {
        let untrusted = Untrusted::none();
        let first = matcher.and_then(|m| m.trusted_matches(text, &untrusted).next());
        match first {
            None => self.encode_sentence(text, out),
            Some(_) if self.context == Context::Start => {
                self.sp.encode(text, matcher, &untrusted, out, None);
            }
            Some((s, e, idx)) => {
                self.encode_sentence(&text[..s], out);
                out.push(matcher.expect("a match came from it").ids[idx]);
                self.sp.encode(&text[e..], matcher, &untrusted, out, None);
            }
        }
    }

    /// The byte offset in `head` (the pending text from its start, no spelling in it)
    /// of the last exact cut, 0 if none; `encode_proven` then commits the text before it.
    pub(super) fn final_cut(&mut self, head: &str) -> usize {
        let bytes = head.as_bytes();
        if bytes.len() < self.seen {
            // Shorter than the last scan's text (a spelling may start earlier than the
            // guards thought): the final steps may have read past its end.
            self.restart();
        }
        self.seen = bytes.len();
        self.sp.normalize_final_steps(
            bytes,
            self.cut.reach,
            &mut self.resume,
            &mut self.normalized,
        );
        match self.resume.cut {
            Some((o, c)) if c > 0 => {
                self.proven = (o, c);
                c
            }
            _ => 0,
        }
    }
}
