//! Encoding with flagged added tokens: Hugging Face's two-pass split
//! (`AddedVocabulary::extract_and_normalize`).
//!
//! Pass 1 finds the raw-text tokens (`normalized: false`) in the raw text. Each segment
//! between them is normalized on its own; pass 2 finds the `normalized` tokens in that
//! normalized text, and the slices between them are pre-tokenized and encoded as they
//! are (already normalized: a `Strip` or `Prepend` is not applied again per slice).
//! Offsets map back to the raw text through the segment's alignment. Plain matchers
//! never come here (`CoreTokenizer::encode` keeps its one-pass loop).

use super::CoreTokenizer;
use crate::error::CoreResult;
use crate::normalize::NormalizedString;
use crate::special::{SpecialMatcher, Untrusted};

impl CoreTokenizer {
    /// `encode` / `encode_with_offsets` for a matcher that is not plain.
    pub(super) fn encode_flagged(
        &self,
        text: &str,
        matcher: &SpecialMatcher,
        untrusted: &Untrusted,
        ids: &mut Vec<u32>,
        mut offsets: Option<&mut Vec<(u32, u32)>>,
    ) -> CoreResult<()> {
        let mut tokens = Vec::new();
        matcher.raw_matches(text, &|a, b| untrusted.allows(a, b), &mut tokens);
        let mut pos = 0;
        for (s, e, id) in tokens {
            if pos < s {
                self.flagged_segment(
                    text,
                    pos,
                    s,
                    matcher,
                    untrusted,
                    ids,
                    offsets.as_deref_mut(),
                )?;
            }
            ids.push(id);
            if let Some(o) = offsets.as_deref_mut() {
                o.push((s as u32, e as u32));
            }
            pos = e;
        }
        if pos < text.len() {
            self.flagged_segment(text, pos, text.len(), matcher, untrusted, ids, offsets)?;
        }
        Ok(())
    }

    /// One raw segment `from..to` between pass-1 tokens: normalized, then pass 2.
    #[allow(clippy::too_many_arguments)]
    fn flagged_segment(
        &self,
        text: &str,
        from: usize,
        to: usize,
        matcher: &SpecialMatcher,
        untrusted: &Untrusted,
        ids: &mut Vec<u32>,
        mut offsets: Option<&mut Vec<(u32, u32)>>,
    ) -> CoreResult<()> {
        if !matcher.has_normalized() {
            return match offsets {
                Some(o) => self.ordinary_with_offsets(text, from, to, ids, o),
                None => self.encode_segment(&text[from..to], from == 0, ids),
            };
        }
        let raw = &text[from..to];
        // Normalizer only: a text-rewriting pre-tokenizer (Metaspace, prefix space) runs
        // on each slice between pass-2 tokens, as HF pre-tokenizes each split.
        let mut n = NormalizedString::new(raw);
        if let Some(normalizer) = &self.normalizer {
            normalizer.apply(&mut n)?;
        }
        let trusted = |a: usize, b: usize| {
            let (x, y) = n.original_span(a, b);
            untrusted.allows(from + x as usize, from + y as usize)
        };
        let mut tokens = Vec::new();
        matcher.normalized_matches(&n.text, &trusted, &mut tokens);
        let mut pos = 0;
        for (s, e, id) in tokens {
            if pos < s {
                self.normalized_slice(&n, pos, s, from, ids, offsets.as_deref_mut())?;
            }
            ids.push(id);
            if let Some(o) = offsets.as_deref_mut() {
                let (a, b) = n.original_span(s, e);
                o.push((from as u32 + a, from as u32 + b));
            }
            pos = e;
        }
        if pos < n.text.len() {
            self.normalized_slice(&n, pos, n.text.len(), from, ids, offsets)?;
        }
        Ok(())
    }

    /// Pre-tokenizes and encodes normalized bytes `a..b` of `n` (a raw segment starting
    /// at byte `base`), mapping each token's span back to the raw text.
    fn normalized_slice(
        &self,
        n: &NormalizedString,
        a: usize,
        b: usize,
        base: usize,
        ids: &mut Vec<u32>,
        offsets: Option<&mut Vec<(u32, u32)>>,
    ) -> CoreResult<()> {
        let slice = &n.text[a..b];
        // HF pre-tokenizes each split; a rewrite's `first` means the split starts the input.
        let rewritten = match &self.pretok.rewrite {
            Some(r) => {
                let mut sub = NormalizedString::new(slice);
                r.apply(&mut sub, base as u32 + n.original_span(a, b).0 == 0)?;
                Some(sub)
            }
            None => None,
        };
        let target = rewritten.as_ref().map_or(slice, |r| r.text.as_str());
        let Some(offsets) = offsets else {
            return self.encode_normalized(target, ids);
        };
        let bytes = target.as_bytes();
        let mut spans = Vec::new();
        let mut failed = Ok(());
        self.pretok.split(target, |s, e| {
            if failed.is_err() {
                return;
            }
            spans.clear();
            failed = self.model.encode_spans(&bytes[s..e], ids, &mut spans);
            for &(x, y) in &spans {
                let (x, y) = (s + x as usize, s + y as usize);
                // Slice (or rewritten slice) bytes -> normalized segment -> raw text.
                let (x, y) = match &rewritten {
                    Some(r) => {
                        let (p, q) = r.original_span(x, y);
                        (p as usize, q as usize)
                    }
                    None => (x, y),
                };
                let (x, y) = n.original_span(a + x, a + y);
                offsets.push((base as u32 + x, base as u32 + y));
            }
        })?;
        failed
    }
}
