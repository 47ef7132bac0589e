//! One tokenizer engine over the two runtimes: the pipeline runtime (`CoreTokenizer`:
//! normalizer, pre-tokenizer chain, BPE / WordPiece / WordLevel / Unigram model, decoder)
//! and the SentencePiece runtime (`SentencePieceCore`). Everything a binding or a serving
//! engine asks of a tokenizer is answered here, once, so the Python class over it only
//! converts types; what differs between the runtimes is declared as capabilities instead
//! of being discovered by probing for methods.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::model::Model;
use crate::normalize::Normalizer;
use crate::sentencepiece::SentencePieceCore;
use crate::special::{SpecialMatcher, Untrusted};
use crate::tokenizer::CoreTokenizer;
use crate::unigram::{Draws, UnigramLattice, NO_UNK};

/// A tokenizer runtime. Cheap to clone (shared): serving engines (incremental decoders,
/// streaming encoders) hold the same runtime as the tokenizer that made them.
#[derive(Clone)]
pub enum Engine {
    Pipeline(Arc<CoreTokenizer>),
    SentencePiece(Arc<SentencePieceCore>),
}

/// What an engine can do beyond encode / decode / vocabulary lookups (which every engine
/// has). Names are stable: Python's `tokenpact.core.Capability` has one member per name
/// (checked against `_native.capability_names()` when it is imported) and reads an
/// engine's set from `engine.capabilities`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Byte offsets of every token into the raw text (`encode_with_offsets`).
    Offsets,
    /// Untrusted byte ranges whose special spellings stay plain text.
    UntrustedSpans,
    /// Hugging Face's added-token flags (single_word, lstrip, rstrip, normalized) are
    /// honoured; otherwise every allowed spelling is matched as written.
    AddedTokenFlags,
    /// Pieces missing from the vocabulary become `<0xXX>` byte pieces.
    ByteFallback,
    /// The model is merge-ranked BPE over bytes: `merges` and `merge_result` describe it.
    Merges,
    /// Pre-token spans of a text (`pretokenize`).
    Pretokenize,
    /// The engine's own normalized text (`normalize`, SentencePiece's `normalize`).
    Normalize,
    /// `decode_text` follows SentencePiece's replacement rule (one U+FFFD per ill-formed
    /// byte), which differs from decoding the bytes with errors="replace".
    SentencePieceDecode,
    /// Token-by-token decoding with the batch decoder's result (`IncrementalDecoderCore`).
    IncrementalDecode,
    /// The native streaming encoder (`StreamingCore`) can cut at final pre-tokens here
    /// (`pretokens` rule: a pipeline with no normalizer and no pre-tokenizer rewrite; its
    /// `whitespace`, `metaspace` and `specials` rules run on every pipeline).
    StreamingEncodePretokens,
    /// The native streaming encoder can cut a SentencePiece sentence before a space
    /// (`sentencepiece` rule: a BPE or Unigram `.model` with a proven cut, `stream_cut`);
    /// other models' streams keep the hold/specials rules.
    StreamingEncodeSentencePiece,
    /// The `n` most probable segmentations with their log probabilities (`nbest`): every
    /// Unigram model, loaded or trained, from SentencePiece or Hugging Face.
    Nbest,
    /// A segmentation drawn from P(z)^alpha (`sample`): every Unigram model.
    Sample,
    /// log P(text), the exact marginal over all segmentations (`log_likelihood`): every
    /// Unigram model.
    LogLikelihood,
}

impl Capability {
    /// Every capability, in declaration order: the one list Python's `Capability` enum
    /// is checked against (`_native.capability_names()`).
    pub const ALL: [Capability; 14] = [
        Capability::Offsets,
        Capability::UntrustedSpans,
        Capability::AddedTokenFlags,
        Capability::ByteFallback,
        Capability::Merges,
        Capability::Pretokenize,
        Capability::Normalize,
        Capability::SentencePieceDecode,
        Capability::IncrementalDecode,
        Capability::StreamingEncodePretokens,
        Capability::StreamingEncodeSentencePiece,
        Capability::Nbest,
        Capability::Sample,
        Capability::LogLikelihood,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Capability::Offsets => "offsets",
            Capability::UntrustedSpans => "untrusted_spans",
            Capability::AddedTokenFlags => "added_token_flags",
            Capability::ByteFallback => "byte_fallback",
            Capability::Merges => "merges",
            Capability::Pretokenize => "pretokenize",
            Capability::Normalize => "normalize",
            Capability::SentencePieceDecode => "sentencepiece_decode",
            Capability::IncrementalDecode => "incremental_decode",
            Capability::StreamingEncodePretokens => "streaming_encode_pretokens",
            Capability::StreamingEncodeSentencePiece => "streaming_encode_sentencepiece",
            Capability::Nbest => "nbest",
            Capability::Sample => "sample",
            Capability::LogLikelihood => "log_likelihood",
        }
    }
}

impl From<CoreTokenizer> for Engine {
    fn from(core: CoreTokenizer) -> Engine {
        Engine::Pipeline(Arc::new(core))
    }
}

impl From<SentencePieceCore> for Engine {
    fn from(core: SentencePieceCore) -> Engine {
        Engine::SentencePiece(Arc::new(core))
    }
}

impl Engine {
    /// The runtime: "pipeline" or "sentencepiece".
    pub fn kind(&self) -> &'static str {
        match self {
            Engine::Pipeline(_) => "pipeline",
            Engine::SentencePiece(_) => "sentencepiece",
        }
    }

    /// The segmentation model: "bpe" (byte-level), "hf_bpe" (over characters),
    /// "wordpiece", "wordlevel", "unigram", or SentencePiece's "unigram" / "bpe".
    pub fn model_kind(&self) -> &'static str {
        match self {
            Engine::Pipeline(c) => match &c.model {
                Model::Bpe(_) => "bpe",
                Model::HfBpe(_) => "hf_bpe",
                Model::WordPiece(_) => "wordpiece",
                Model::WordLevel(_) => "wordlevel",
                Model::Unigram(_) => "unigram",
            },
            Engine::SentencePiece(sp) => sp.model_type(),
        }
    }

    pub fn capabilities(&self) -> Vec<Capability> {
        use Capability::*;
        let mut caps = vec![Offsets, UntrustedSpans, IncrementalDecode];
        match self {
            Engine::Pipeline(c) => {
                caps.extend([AddedTokenFlags, Pretokenize]);
                match &c.model {
                    Model::Bpe(_) => caps.push(Merges),
                    Model::HfBpe(m) if m.options.byte_fallback => caps.push(ByteFallback),
                    Model::Unigram(m) if m.byte_fallback() => caps.push(ByteFallback),
                    _ => {}
                }
                if c.normalizer.is_none() && c.pretok.rewrite.is_none() {
                    caps.push(StreamingEncodePretokens);
                }
            }
            Engine::SentencePiece(sp) => {
                caps.extend([Normalize, SentencePieceDecode]);
                if sp.byte_fallback() {
                    caps.push(ByteFallback);
                }
                if sp.stream_cut().is_some() {
                    caps.push(StreamingEncodeSentencePiece);
                }
            }
        }
        if self.is_unigram() {
            caps.extend([Nbest, Sample, LogLikelihood]);
        }
        caps
    }

    pub fn has(&self, capability: Capability) -> bool {
        self.capabilities().contains(&capability)
    }

    fn unsupported(&self, what: &str, capability: Capability) -> CoreError {
        CoreError::Config(format!(
            "{what} is not available on a {} engine (it lacks the {:?} capability); check \
             engine.capabilities first",
            self.kind(),
            capability.name()
        ))
    }

    /// The pipeline runtime, for engines that only run on it (the streaming encoder).
    pub fn as_pipeline(&self) -> Option<&Arc<CoreTokenizer>> {
        match self {
            Engine::Pipeline(c) => Some(c),
            Engine::SentencePiece(_) => None,
        }
    }

    /// The normalizer that `normalized` added tokens go through (pipelines only; the
    /// SentencePiece runtime matches added tokens in the raw text).
    pub fn added_token_normalizer(&self) -> Option<&Normalizer> {
        match self {
            Engine::Pipeline(c) => c.normalizer.as_ref(),
            Engine::SentencePiece(_) => None,
        }
    }

    /// Encodes `text`, turning spellings found by `allowed` into their IDs.
    #[inline]
    pub fn encode(
        &self,
        text: &str,
        allowed: Option<&SpecialMatcher>,
        out: &mut Vec<u32>,
    ) -> CoreResult<()> {
        match self {
            Engine::Pipeline(c) => c.encode(text, allowed, out),
            Engine::SentencePiece(sp) => {
                sp.encode(text, allowed, &Untrusted::none(), out, None);
                Ok(())
            }
        }
    }

    /// The single-threaded definition of ordinary encoding (no special tokens).
    pub fn encode_ordinary_serial(&self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        match self {
            Engine::Pipeline(c) => c.encode_ordinary_serial(text, out),
            Engine::SentencePiece(sp) => {
                sp.encode(text, None, &Untrusted::none(), out, None);
                Ok(())
            }
        }
    }

    /// Like `encode`, also recording each token's UTF-8 byte range in `text`; matches
    /// of `allowed` that overlap an untrusted range stay ordinary text.
    pub fn encode_with_offsets(
        &self,
        text: &str,
        allowed: Option<&SpecialMatcher>,
        untrusted: &Untrusted,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(u32, u32)>,
    ) -> CoreResult<()> {
        match self {
            Engine::Pipeline(c) => c.encode_with_offsets(text, allowed, untrusted, ids, offsets),
            Engine::SentencePiece(sp) => {
                sp.encode(text, allowed, untrusted, ids, Some(offsets));
                Ok(())
            }
        }
    }

    /// Decoded bytes (the pipeline's decoder, or SentencePiece's rules with byte pieces
    /// kept raw).
    pub fn decode_bytes(&self, ids: &[u32]) -> CoreResult<Vec<u8>> {
        match self {
            Engine::Pipeline(c) => c.decode_bytes(ids),
            Engine::SentencePiece(sp) => sp.decode(ids, false),
        }
    }

    /// Decoded text with ill-formed UTF-8 replaced: SentencePiece's own rule on that
    /// runtime (`SentencePieceDecode`), else the decoded bytes read with U+FFFD.
    pub fn decode_text(&self, ids: &[u32]) -> CoreResult<String> {
        let bytes = match self {
            Engine::Pipeline(c) => c.decode_bytes(ids)?,
            Engine::SentencePiece(sp) => sp.decode(ids, true)?,
        };
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The bytes of one ID: a model piece (SentencePiece's piece string) or a special
    /// token's spelling; None outside the ID space.
    #[inline]
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        match self {
            Engine::Pipeline(c) => c.token_bytes(id),
            Engine::SentencePiece(sp) => sp.pieces.get(id as usize).map(Vec::as_slice),
        }
    }

    /// `max ID + 1` over everything `token_bytes` knows.
    pub fn id_space(&self) -> u32 {
        match self {
            Engine::Pipeline(c) => c.id_space(),
            Engine::SentencePiece(sp) => sp.piece_count() as u32,
        }
    }

    /// Model pieces (special tokens of a pipeline excluded).
    pub fn vocab(&self) -> &[Vec<u8>] {
        match self {
            Engine::Pipeline(c) => c.model.vocab(),
            Engine::SentencePiece(sp) => &sp.pieces,
        }
    }

    /// Merge rules in rank order (empty unless the engine has `Merges`).
    pub fn merges(&self) -> &[(u32, u32)] {
        match self.bpe() {
            Some(m) => &m.merge_list,
            None => &[],
        }
    }

    /// The ID made by merging (left, right), if that pair has a rule.
    pub fn merge_result(&self, left: u32, right: u32) -> Option<u32> {
        self.bpe()?.merge_of(left, right).map(|(_, id)| id)
    }

    fn bpe(&self) -> Option<&crate::bpe::model::BpeModel> {
        match self {
            Engine::Pipeline(c) => c.model.as_bpe(),
            Engine::SentencePiece(_) => None,
        }
    }

    /// Raw byte spans of the pre-tokens of `text` (`Pretokenize`).
    pub fn pretokenize(&self, text: &str) -> CoreResult<Vec<(u32, u32)>> {
        match self {
            Engine::Pipeline(c) => c.pretokenize(text),
            Engine::SentencePiece(_) => {
                Err(self.unsupported("pretokenize", Capability::Pretokenize))
            }
        }
    }

    /// The normalized text as SentencePiece's `normalize` returns it (`Normalize`).
    pub fn normalize(&self, text: &str) -> CoreResult<Vec<u8>> {
        match self {
            Engine::SentencePiece(sp) => Ok(sp.normalize(text)),
            Engine::Pipeline(_) => Err(self.unsupported("normalize", Capability::Normalize)),
        }
    }

    /// `normalize` with the input byte offset of each normalized byte (plus a final
    /// entry): SentencePiece's normalized-to-original map.
    pub fn normalize_aligned(&self, text: &str) -> CoreResult<(Vec<u8>, Vec<u32>)> {
        match self {
            Engine::SentencePiece(sp) => Ok(sp.normalize_aligned(text)),
            Engine::Pipeline(_) => Err(self.unsupported("normalize", Capability::Normalize)),
        }
    }

    fn is_unigram(&self) -> bool {
        match self {
            Engine::Pipeline(c) => matches!(c.model, Model::Unigram(_)),
            Engine::SentencePiece(sp) => sp.model_type() == "unigram",
        }
    }

    /// The Unigram lattice and the segments of `text` it scores independently: a
    /// SentencePiece model's normalized text (`whole`: as one segment, else cut before
    /// every `▁`), or a pipeline's normalized pre-tokens.
    fn lattice_segments(
        &self,
        text: &str,
        whole: bool,
        what: &str,
        capability: Capability,
    ) -> CoreResult<(&UnigramLattice, Vec<Vec<char>>)> {
        match self {
            Engine::SentencePiece(sp) => {
                let Some(lattice) = sp.lattice() else {
                    return Err(self.unsupported(what, capability));
                };
                let normalized = sp.normalize(text);
                let chars: Vec<char> = String::from_utf8_lossy(&normalized).chars().collect();
                if whole {
                    Ok((lattice, vec![chars]))
                } else {
                    Ok((lattice, UnigramLattice::split_words(&chars)))
                }
            }
            Engine::Pipeline(c) => match &c.model {
                Model::Unigram(m) => Ok((m.lattice(), c.model_pretokens(text)?)),
                _ => Err(self.unsupported(what, capability)),
            },
        }
    }

    /// Refuses IDs holding `NO_UNK`: a character no piece covers in a model without an
    /// unknown piece (what `encode` refuses too).
    fn covered(&self, ids: &[u32], text: &str) -> CoreResult<()> {
        if ids.contains(&NO_UNK) {
            return Err(CoreError::InvalidInput(format!(
                "no piece covers a character of {:?} and the Unigram model has no unk_id",
                text.chars().take(80).collect::<String>()
            )));
        }
        Ok(())
    }

    /// The `n` most probable segmentations of `text` with their log probabilities, best
    /// first (`Nbest`).
    pub fn nbest(&self, text: &str, n: usize) -> CoreResult<Vec<(Vec<u32>, f64)>> {
        let (lattice, segments) = self.lattice_segments(text, true, "nbest", Capability::Nbest)?;
        let best = lattice.nbest_segments(&segments, n);
        for (ids, _) in &best {
            self.covered(ids, text)?;
        }
        Ok(best)
    }

    /// log P(text): the exact marginal over all segmentations (`LogLikelihood`).
    pub fn log_likelihood(&self, text: &str) -> CoreResult<f64> {
        let (lattice, segments) =
            self.lattice_segments(text, false, "log_likelihood", Capability::LogLikelihood)?;
        Ok(lattice.log_likelihood_segments(&segments))
    }

    /// A segmentation of `text` drawn from P(z)^alpha with `draws` (`Sample`): segments
    /// (SentencePiece words, pipeline pre-tokens) in text order.
    pub fn sample(&self, text: &str, alpha: f64, draws: &mut Draws) -> CoreResult<Vec<u32>> {
        let (lattice, segments) =
            self.lattice_segments(text, false, "sample", Capability::Sample)?;
        let ids = lattice.sample_segments(&segments, alpha, draws);
        self.covered(&ids, text)?;
        Ok(ids)
    }

    /// The ID of a piece string: SentencePiece's `piece_to_id` (the unknown piece's ID
    /// when absent); on a pipeline, the model piece or special token with exactly these
    /// bytes, or None.
    pub fn piece_to_id(&self, piece: &[u8]) -> Option<u32> {
        match self {
            Engine::SentencePiece(sp) => Some(sp.piece_to_id(piece)),
            Engine::Pipeline(c) => c.piece_to_id(piece),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::model::BpeModel;
    use crate::pretok::chain::PretokChain;
    use crate::pretok::Pretokenizer;

    fn byte_bpe() -> Engine {
        let model = BpeModel::from_merges(&[(b'a' as u32, b'b' as u32)]).unwrap();
        let pretok = PretokChain::single(Pretokenizer::new(Some("gpt2"), "").unwrap());
        CoreTokenizer::new(model, pretok, vec![("<|eot|>".into(), 300)])
            .unwrap()
            .into()
    }

    #[test]
    fn pipeline_engine_answers_through_one_interface() {
        let engine = byte_bpe();
        assert_eq!(engine.kind(), "pipeline");
        assert_eq!(engine.model_kind(), "bpe");
        let names: Vec<&str> = engine.capabilities().iter().map(|c| c.name()).collect();
        for want in [
            "offsets",
            "merges",
            "pretokenize",
            "streaming_encode_pretokens",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        assert!(!engine.has(Capability::Normalize));
        let matcher = SpecialMatcher::new(vec![("<|eot|>".into(), 300)]).unwrap();
        let mut ids = Vec::new();
        engine
            .encode("ab<|eot|>", Some(&matcher), &mut ids)
            .unwrap();
        assert_eq!(ids, vec![256, 300]);
        assert_eq!(engine.merge_result(b'a' as u32, b'b' as u32), Some(256));
        assert_eq!(engine.merges(), &[(b'a' as u32, b'b' as u32)]);
        assert_eq!(engine.token_bytes(300), Some(&b"<|eot|>"[..]));
        assert_eq!(engine.piece_to_id(b"ab"), Some(256));
        assert_eq!(engine.piece_to_id(b"<|eot|>"), Some(300));
        assert_eq!(engine.piece_to_id(b"zz"), None);
        assert_eq!(engine.decode_text(&ids).unwrap(), "ab<|eot|>");
        assert!(matches!(engine.normalize("x"), Err(CoreError::Config(_))));
        // The untrusted gate is the same for every engine: the spelling stays text.
        let (mut ids, mut offs) = (Vec::new(), Vec::new());
        let gate = Untrusted::new(vec![(0, 9), (1, 2)]).unwrap();
        engine
            .encode_with_offsets("ab<|eot|>", Some(&matcher), &gate, &mut ids, &mut offs)
            .unwrap();
        assert!(!ids.contains(&300));
        assert_eq!(offs.last().map(|o| o.1), Some(9));
    }
}
