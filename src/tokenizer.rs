//! The core tokenizer: normalizer + pre-tokenizer + model + special tokens + decoder.
//! Encodes text to IDs (with offsets into the raw text) and IDs back to bytes. No
//! Python types here.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::model::BpeModel;
use crate::decoder::Decoder;
use crate::error::{CoreError, CoreResult};
use crate::model::Model;
use crate::normalize::{NormalizedString, Normalizer};
use crate::pretok::chain::PretokChain;
use crate::special::{SpecialMatcher, Untrusted};

mod added;

const PARALLEL_MIN_BYTES: usize = 1 << 20;
const GROUP_BYTES: usize = 64 << 10;

pub struct CoreTokenizer {
    pub model: Model,
    pub normalizer: Option<Normalizer>,
    pub pretok: PretokChain,
    pub decoder: Decoder,
    pub specials: FxHashMap<u32, Vec<u8>>,
    /// The decoded bytes of the special (added) tokens whose decoding is not their
    /// spelling: under the byte-level decoder, a spelling made only of GPT-2 alphabet
    /// characters decodes to those characters' bytes (Hugging Face's `ByteLevel`
    /// decoder runs on added tokens too: DeepSeek LLM's added `ø` is the byte 0xF8).
    pub special_decoded: FxHashMap<u32, Vec<u8>>,
}

impl CoreTokenizer {
    /// Byte-level BPE with no normalizer.
    pub fn new(
        model: BpeModel,
        pretok: PretokChain,
        specials: Vec<(String, u32)>,
    ) -> CoreResult<CoreTokenizer> {
        CoreTokenizer::with_pipeline(
            Model::Bpe(Box::new(model)),
            None,
            pretok,
            Decoder::Bytes,
            specials,
        )
    }

    /// Any model with an optional normalizer and a decoder. Special (added) tokens are
    /// matched in the raw text, before normalization (HF's `normalized: false`).
    pub fn with_pipeline(
        model: Model,
        normalizer: Option<Normalizer>,
        pretok: PretokChain,
        decoder: Decoder,
        specials: Vec<(String, u32)>,
    ) -> CoreResult<CoreTokenizer> {
        let mut map = FxHashMap::default();
        for (content, id) in specials {
            if let Some(piece) = model.vocab().get(id as usize) {
                // Allowed only when the vocabulary row spells the token (Hugging Face files
                // list added tokens in the model vocabulary too).
                if piece.as_slice() != content.as_bytes() {
                    return Err(CoreError::Artifact(format!(
                        "added token {content:?} has ID {id}, which the model vocabulary uses \
                         for a different piece {piece:?}; give it its own ID"
                    )));
                }
                continue;
            }
            if map.insert(id, content.clone().into_bytes()).is_some() {
                return Err(CoreError::Artifact(format!(
                    "special token ID {id} is used twice; give each special token its own ID"
                )));
            }
        }
        // Tables indexed by ID (the Python int cache, piece strings) are sized by the
        // largest ID: bound it by the number of entries before anything is allocated.
        if let Some(&top) = map.keys().max() {
            crate::id_space::check(model.vocab().len() + map.len(), top, "added tokens")?;
        }
        let mut special_decoded = FxHashMap::default();
        if matches!(decoder, Decoder::Bytes) {
            for (&id, spelling) in &map {
                let text = std::str::from_utf8(spelling).unwrap_or_default();
                if let Some(bytes) = crate::bpe::hf::byte_level_string_bytes(text) {
                    if bytes != *spelling {
                        special_decoded.insert(id, bytes);
                    }
                }
            }
        }
        Ok(CoreTokenizer {
            model,
            normalizer,
            pretok,
            decoder,
            specials: map,
            special_decoded,
        })
    }

    /// Makes the control tokens' IDs unreachable from text in the model (`Model::forbid`):
    /// the trust rule's other half. The added-token matcher decides when a control's
    /// spelling becomes its ID; segmentation must never produce it from content, even
    /// where the vocabulary spells it as an ordinary piece.
    pub fn forbid_controls(mut self, controls: &[u32]) -> CoreTokenizer {
        let inside: rustc_hash::FxHashSet<u32> = controls
            .iter()
            .copied()
            .filter(|&id| (id as usize) < self.model.vocab().len())
            .collect();
        if !inside.is_empty() {
            self.model.forbid(&inside);
        }
        self
    }

    /// One special-token segment after the normalizer and the pre-tokenizer's text
    /// rewrite (None when neither exists: the raw text is used as is). `first`: the
    /// segment starts the input (Metaspace's `prepend_scheme: first`).
    fn normalized(&self, text: &str, first: bool) -> CoreResult<Option<NormalizedString>> {
        if self.normalizer.is_none() && self.pretok.rewrite.is_none() {
            return Ok(None);
        }
        let mut s = NormalizedString::new(text);
        if let Some(n) = &self.normalizer {
            n.apply(&mut s)?;
        }
        if let Some(r) = &self.pretok.rewrite {
            r.apply(&mut s, first)?;
        }
        Ok(Some(s))
    }

    /// Encodes text with no special-token recognition.
    ///
    /// Long texts (seed 0x01B) are pre-tokenized whole, in one pass, and their pieces are
    /// then encoded in parallel groups: pieces never interact, so the IDs are exactly the
    /// serial result, whatever the thread count.
    pub fn encode_ordinary(&self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        self.encode_segment(text, true, out)
    }

    /// `encode_ordinary` of a segment of a larger input (`first`: it starts the input).
    fn encode_segment(&self, text: &str, first: bool, out: &mut Vec<u32>) -> CoreResult<()> {
        let normalized = self.normalized(text, first)?;
        let text = normalized.as_ref().map_or(text, |n| n.text.as_str());
        // In a forked child, off any pool, the global pool has no threads: serial.
        if text.len() >= PARALLEL_MIN_BYTES
            && rayon::current_num_threads() > 1
            && crate::fork_guard::parallel_ok()
        {
            return self.encode_normalized_parallel(text, out);
        }
        self.encode_normalized(text, out)
    }

    /// The single-threaded definition of `encode_ordinary`.
    pub fn encode_ordinary_serial(&self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        let normalized = self.normalized(text, true)?;
        self.encode_normalized(normalized.as_ref().map_or(text, |n| n.text.as_str()), out)
    }

    fn encode_normalized(&self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        let bytes = text.as_bytes();
        if let Model::Bpe(bpe) = &self.model {
            // Byte-level BPE cannot fail; its pieces go through one cache stream.
            return bpe.encode_stream(|stream| {
                self.pretok.split(text, |s, e| {
                    stream.push(&bytes[s..e], s, out);
                })?;
                while stream.finish(out).is_some() {}
                Ok(())
            });
        }
        let model = &self.model;
        let mut failed = Ok(());
        self.pretok.split(text, |s, e| {
            if failed.is_ok() {
                failed = model.encode_piece(&bytes[s..e], out);
            }
        })?;
        failed
    }

    fn encode_normalized_parallel(&self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        let spans = self.pretok.spans(text)?;
        let bytes = text.as_bytes();
        // Groups of about GROUP_BYTES keep scheduling overhead small and load balanced.
        let mut groups: Vec<&[(usize, usize)]> = Vec::new();
        let (mut start, mut size) = (0usize, 0usize);
        for (i, &(s, e)) in spans.iter().enumerate() {
            size += e - s;
            if size >= GROUP_BYTES {
                groups.push(&spans[start..=i]);
                start = i + 1;
                size = 0;
            }
        }
        groups.push(&spans[start..]);
        let parts: Vec<Vec<u32>> = groups
            .par_iter()
            .map(|group| {
                let mut ids = Vec::new();
                for &(s, e) in group.iter() {
                    self.model.encode_piece(&bytes[s..e], &mut ids)?;
                }
                Ok(ids)
            })
            .collect::<CoreResult<_>>()?;
        for part in parts {
            out.extend_from_slice(&part);
        }
        Ok(())
    }

    /// The pre-tokens of `text` as the model sees them (normalized, rewritten, split; no
    /// special tokens), each as characters: the segments of a Unigram lattice.
    pub fn model_pretokens(&self, text: &str) -> CoreResult<Vec<Vec<char>>> {
        let normalized = self.normalized(text, true)?;
        let target = normalized.as_ref().map_or(text, |n| n.text.as_str());
        let mut out = Vec::new();
        self.pretok
            .split(target, |s, e| out.push(target[s..e].chars().collect()))?;
        Ok(out)
    }

    /// Raw byte spans of the pre-tokens of `text` (normalized first; no special tokens).
    pub fn pretokenize(&self, text: &str) -> CoreResult<Vec<(u32, u32)>> {
        let normalized = self.normalized(text, true)?;
        let target = normalized.as_ref().map_or(text, |n| n.text.as_str());
        let mut out = Vec::new();
        self.pretok.split(target, |s, e| {
            out.push(match &normalized {
                Some(n) => n.original_span(s, e),
                None => (s as u32, e as u32),
            })
        })?;
        Ok(out)
    }

    /// Encodes text, turning spellings found by `allowed` into their special IDs (with
    /// Hugging Face's added-token flags when the matcher has any: `added.rs`).
    pub fn encode(
        &self,
        text: &str,
        allowed: Option<&SpecialMatcher>,
        out: &mut Vec<u32>,
    ) -> CoreResult<()> {
        let Some(matcher) = allowed else {
            return self.encode_ordinary(text, out);
        };
        if !matcher.is_plain() {
            return self.encode_flagged(text, matcher, &Untrusted::none(), out, None);
        }
        let mut pos = 0;
        for (s, e, idx) in matcher.find_all(text) {
            self.encode_segment(&text[pos..s], pos == 0, out)?;
            out.push(matcher.ids[idx]);
            pos = e;
        }
        self.encode_segment(&text[pos..], pos == 0, out)
    }

    /// Like `encode`, also recording each token's byte range in `text`. Matches of
    /// `allowed` that overlap an `untrusted` byte range stay ordinary
    /// text: content spans never produce control IDs, while pre-tokenization still
    /// runs across their boundaries.
    pub fn encode_with_offsets(
        &self,
        text: &str,
        allowed: Option<&SpecialMatcher>,
        untrusted: &Untrusted,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(u32, u32)>,
    ) -> CoreResult<()> {
        if let Some(matcher) = allowed.filter(|m| !m.is_plain()) {
            return self.encode_flagged(text, matcher, untrusted, ids, Some(offsets));
        }
        let mut pos = 0;
        if let Some(matcher) = allowed {
            for (s, e, idx) in matcher.trusted_matches(text, untrusted) {
                self.ordinary_with_offsets(text, pos, s, ids, offsets)?;
                ids.push(matcher.ids[idx]);
                offsets.push((s as u32, e as u32));
                pos = e;
            }
        }
        self.ordinary_with_offsets(text, pos, text.len(), ids, offsets)
    }

    fn ordinary_with_offsets(
        &self,
        text: &str,
        from: usize,
        to: usize,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(u32, u32)>,
    ) -> CoreResult<()> {
        let raw = &text[from..to];
        let normalized = self.normalized(raw, from == 0)?;
        let segment = normalized.as_ref().map_or(raw, |n| n.text.as_str());
        let bytes = segment.as_bytes();
        if let Model::Bpe(bpe) = &self.model {
            // Tokens of a byte-level piece tile it: spans follow from the token lengths.
            let mut emit = |(piece, s, first): (&[u8], usize, usize), ids: &Vec<u32>| {
                let mut at = s;
                for &id in &ids[first..] {
                    let end = at + bpe.token_len(id);
                    offsets.push(match &normalized {
                        Some(n) => {
                            let (a, b) = n.original_span(at, end);
                            (from as u32 + a, from as u32 + b)
                        }
                        None => ((from + at) as u32, (from + end) as u32),
                    });
                    at = end;
                }
                debug_assert_eq!(at, s + piece.len());
            };
            return bpe.encode_stream(|stream| {
                self.pretok.split(segment, |s, e| {
                    if let Some(done) = stream.push(&bytes[s..e], s, ids) {
                        emit(done, ids);
                    }
                })?;
                while let Some(done) = stream.finish(ids) {
                    emit(done, ids);
                }
                Ok(())
            });
        }
        let model = &self.model;
        let mut spans = Vec::new();
        let mut failed = Ok(());
        self.pretok.split(segment, |s, e| {
            if failed.is_err() {
                return;
            }
            spans.clear();
            failed = model.encode_spans(&bytes[s..e], ids, &mut spans);
            for &(a, b) in &spans {
                let (a, b) = (s + a as usize, s + b as usize);
                let (a, b) = match &normalized {
                    Some(n) => n.original_span(a, b),
                    None => (a as u32, b as u32),
                };
                offsets.push((from as u32 + a, from as u32 + b));
            }
        })?;
        failed
    }

    /// `max ID + 1` over the model vocabulary and the special tokens (bounded by
    /// `id_space::check` at construction).
    pub fn id_space(&self) -> u32 {
        let specials = self.specials.keys().max().map_or(0, |&m| m + 1);
        (self.model.vocab().len() as u32).max(specials)
    }

    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        match self.model.vocab().get(id as usize) {
            Some(b) => Some(b),
            None => self.specials.get(&id).map(|v| v.as_slice()),
        }
    }

    /// The bytes the decoder takes for one ID: `token_bytes`, except for a special
    /// token whose decoding differs from its spelling (`special_decoded`).
    #[inline]
    pub fn decode_piece(&self, id: u32) -> Option<&[u8]> {
        match self.model.vocab().get(id as usize) {
            Some(b) => Some(b),
            None => self
                .special_decoded
                .get(&id)
                .or_else(|| self.specials.get(&id))
                .map(|v| v.as_slice()),
        }
    }

    /// The model ID or special ID whose bytes are exactly `piece` (a linear scan: a
    /// lookup for tools, not for encoding).
    pub fn piece_to_id(&self, piece: &[u8]) -> Option<u32> {
        if let Some(i) = self
            .model
            .vocab()
            .iter()
            .position(|p| p.as_slice() == piece)
        {
            return Some(i as u32);
        }
        self.specials
            .iter()
            .filter(|(_, spelling)| spelling.as_slice() == piece)
            .map(|(&id, _)| id)
            .min()
    }

    pub fn decode_bytes(&self, ids: &[u32]) -> CoreResult<Vec<u8>> {
        let mut pieces = Vec::with_capacity(ids.len());
        for &id in ids {
            match self.decode_piece(id) {
                Some(b) => pieces.push(b),
                None => {
                    return Err(CoreError::UnknownToken(format!(
                        "token ID {id} is not in this tokenizer (vocabulary has IDs 0..{} \
                         plus {} special IDs); check that the IDs come from this tokenizer",
                        self.model.vocab().len(),
                        self.specials.len()
                    )))
                }
            }
        }
        let mut out = Vec::with_capacity(ids.len() * 4);
        self.decoder.decode(pieces.into_iter(), &mut out);
        Ok(out)
    }
}
