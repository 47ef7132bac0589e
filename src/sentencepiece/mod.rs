//! SentencePiece models (Unigram and BPE) with IDs, offsets and decoding identical to the
//! `sentencepiece` library: normalize, segment, then SentencePiece's post-pass (unknown
//! runs fused, or split into `<0xXX>` byte pieces under byte fallback).

pub mod bpe;
mod char_word;
mod decode;
pub mod normalizer;
pub mod segment_cache;
pub mod segment_cuts;
pub mod trie;
pub mod unigram;

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::error::{CoreError, CoreResult};
use crate::special::{SpecialMatcher, Untrusted};
pub(crate) use decode::push_unescaped;
pub use decode::DecodePiece;
pub use normalizer::Resume;
use normalizer::{Normalizer, NormalizerConfig, SPACE_SYMBOL};
use trie::PieceTrie;
use unigram::Unigram;

use crate::unigram::UnigramLattice;

/// A segment of the normalized text: (start, end, id).
pub type Piece = (u32, u32, u32);

/// Per-thread buffers reused across calls: encoding many short texts would otherwise
/// spend much of its time in the allocator.
#[derive(Default)]
struct Scratch {
    normalized: Vec<u8>,
    map: Vec<u32>,
    pieces: Vec<Piece>,
    lattice: Lattice,
}

#[derive(Default)]
struct Lattice {
    best: Vec<unigram::Best>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceType {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

impl PieceType {
    pub fn from_proto(value: u8) -> CoreResult<PieceType> {
        Ok(match value {
            1 => PieceType::Normal,
            2 => PieceType::Unknown,
            3 => PieceType::Control,
            4 => PieceType::UserDefined,
            5 => PieceType::Unused,
            6 => PieceType::Byte,
            _ => {
                return Err(CoreError::Artifact(format!(
                    "pieces: type {value} is not a SentencePiece piece type (1..6)"
                )))
            }
        })
    }
}

pub enum Segmenter {
    Unigram(Unigram),
    Bpe(Option<bpe::SafeSplits>),
    /// One character (or user-defined piece) per segment.
    Char,
    /// One `▁`-led word per segment.
    Word,
}

/// Everything the model file says about encoding and decoding.
pub struct SentencePieceSpec {
    pub pieces: Vec<Vec<u8>>,
    pub scores: Vec<f32>,
    pub types: Vec<u8>,
    pub model_type: String,
    pub byte_fallback: bool,
    pub normalizer: NormalizerConfig,
    pub charsmap: Vec<u8>,
    /// The denormalizer (applied to decoded text) when the model has a charsmap for it.
    pub denormalizer: Option<(NormalizerConfig, Vec<u8>)>,
    pub unk_surface: Vec<u8>,
    /// Memoize Unigram segmentations of whitespace-delimited segments where the
    /// vocabulary allows it (identical IDs either way; see `unigram::segment_cut_proof`).
    pub segment_cache: bool,
}

/// See `SentencePieceCore::stream_cut`.
#[derive(Clone, Copy, Debug)]
pub struct StreamCut {
    /// The most input bytes one normalizer step reads from where it starts.
    pub reach: usize,
    pub add_dummy_prefix: bool,
    pub remove_extra_whitespaces: bool,
    /// Unigram: the part after a cut continues Viterbi from the best path's score at the
    /// cut (`encode_normalized_from`); proven only where the normalizer writes well-formed
    /// text (Viterbi's walk, one character at a time, then reaches every cut).
    pub viterbi: bool,
}

pub struct SentencePieceCore {
    pub pieces: Vec<Vec<u8>>,
    types: Vec<PieceType>,
    scores: Vec<f32>,
    /// NORMAL, USER_DEFINED and UNUSED pieces (SentencePiece's `pieces_`).
    vocab: PieceTrie,
    /// CONTROL, UNKNOWN and BYTE pieces (SentencePiece's `reserved_id_map_`).
    reserved: FxHashMap<Vec<u8>, u32>,
    unk_id: u32,
    byte_fallback: bool,
    byte_ids: Vec<u32>,
    segmenter: Segmenter,
    normalizer: Normalizer,
    denormalizer: Option<Normalizer>,
    user: Option<PieceTrie>,
    unk_surface: Vec<u8>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    /// `stream_cut`, computed once (it reads every piece).
    stream_cut: OnceLock<Option<StreamCut>>,
    /// The Unigram lattice for n-best lists, samples and likelihoods (`lattice`), built
    /// on first use.
    lattice: OnceLock<Option<UnigramLattice>>,
}

fn byte_piece(b: u8) -> Vec<u8> {
    format!("<0x{b:02X}>").into_bytes()
}

impl SentencePieceCore {
    pub fn new(spec: SentencePieceSpec) -> CoreResult<SentencePieceCore> {
        let bad = |m: String| Err(CoreError::Artifact(m));
        let types = spec
            .types
            .iter()
            .map(|&t| PieceType::from_proto(t))
            .collect::<CoreResult<Vec<_>>>()?;
        if spec.pieces.len() != types.len() || spec.pieces.len() != spec.scores.len() {
            return bad("pieces, scores and types differ in length".into());
        }
        let mut keys: Vec<(&[u8], i32)> = Vec::new();
        let mut seen: FxHashMap<&[u8], usize> = FxHashMap::default();
        let mut reserved = FxHashMap::default();
        let mut unk_id = None;
        let mut user_pieces: Vec<&[u8]> = Vec::new();
        for (i, (piece, t)) in spec.pieces.iter().zip(&types).enumerate() {
            if piece.is_empty() {
                return bad(format!(
                    "pieces[{i}]: a piece is empty; the model is damaged"
                ));
            }
            let normal = matches!(
                t,
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused
            );
            if normal {
                if let Some(j) = seen.insert(piece, i) {
                    return bad(format!(
                        "pieces[{i}]: {:?} is already piece {j}; each piece needs one ID",
                        String::from_utf8_lossy(piece)
                    ));
                }
                keys.push((piece, i as i32));
            } else if reserved.insert(piece.clone(), i as u32).is_some() {
                return bad(format!(
                    "pieces[{i}]: {:?} is defined twice; each piece needs one ID",
                    String::from_utf8_lossy(piece)
                ));
            }
            match t {
                PieceType::UserDefined => user_pieces.push(piece),
                PieceType::Unknown if unk_id.is_some() => {
                    return bad(format!(
                        "pieces[{i}]: a second UNKNOWN piece; a model has exactly one"
                    ))
                }
                PieceType::Unknown => unk_id = Some(i as u32),
                PieceType::Byte if !is_byte_piece(piece) => {
                    return bad(format!(
                        "pieces[{i}]: BYTE piece {:?} is not of the form <0xXX>; the model \
                         is damaged",
                        String::from_utf8_lossy(piece)
                    ))
                }
                PieceType::Byte if !spec.byte_fallback => {
                    return bad(format!(
                        "pieces[{i}]: byte piece {:?} although trainer_spec.byte_fallback is \
                         false; the model is inconsistent",
                        String::from_utf8_lossy(piece)
                    ))
                }
                _ => {}
            }
        }
        let Some(unk_id) = unk_id else {
            return bad("pieces: no UNKNOWN piece; SentencePiece models define <unk>".into());
        };
        let vocab = PieceTrie::new(&keys);
        let lookup = |p: &[u8]| -> u32 {
            reserved
                .get(p)
                .copied()
                .or_else(|| vocab.get(p).map(|v| v as u32))
                .unwrap_or(unk_id)
        };
        let byte_ids: Vec<u32> = (0..=255u8).map(|b| lookup(&byte_piece(b))).collect();
        if spec.byte_fallback {
            if let Some(b) =
                (0..=255u8).find(|&b| types[byte_ids[b as usize] as usize] != PieceType::Byte)
            {
                return bad(format!(
                    "pieces: byte_fallback is on but piece <0x{b:02X}> is missing; a byte \
                     fallback model has all 256 byte pieces"
                ));
            }
        }
        let segmenter = match spec.model_type.as_str() {
            "unigram" => Segmenter::Unigram(Unigram::new(
                &spec.pieces,
                &types,
                &spec.scores,
                spec.segment_cache,
            )),
            "bpe" => Segmenter::Bpe(bpe::SafeSplits::new(&spec.pieces, &types)),
            "char" => Segmenter::Char,
            "word" => Segmenter::Word,
            other => {
                return bad(format!(
                    "trainer_spec.model_type: {other:?} is not a SentencePiece model type \
                     (unigram, bpe, char, word)"
                ))
            }
        };
        let add_dummy_prefix = spec.normalizer.add_dummy_prefix;
        let remove_extra_whitespaces = spec.normalizer.remove_extra_whitespaces;
        let normalizer = Normalizer::new(Some(&spec.charsmap), spec.normalizer, &user_pieces)?;
        let denormalizer = match spec.denormalizer {
            Some((cfg, map)) => Some(Normalizer::new(Some(&map), cfg, &[])?),
            None => None,
        };
        let user = (!user_pieces.is_empty()).then(|| {
            let k: Vec<(&[u8], i32)> = user_pieces.iter().map(|p| (*p, 0)).collect();
            PieceTrie::new(&k)
        });
        Ok(SentencePieceCore {
            pieces: spec.pieces,
            types,
            scores: spec.scores,
            vocab,
            reserved,
            unk_id,
            byte_fallback: spec.byte_fallback,
            byte_ids,
            segmenter,
            normalizer,
            denormalizer,
            user,
            unk_surface: spec.unk_surface,
            add_dummy_prefix,
            remove_extra_whitespaces,
            stream_cut: OnceLock::new(),
            lattice: OnceLock::new(),
        })
    }

    pub fn piece_to_id(&self, piece: &[u8]) -> u32 {
        self.reserved
            .get(piece)
            .copied()
            .or_else(|| self.vocab.get(piece).map(|v| v as u32))
            .unwrap_or(self.unk_id)
    }

    fn segment(&self, normalized: &[u8], scratch: &mut Lattice, out: &mut Vec<Piece>) {
        match &self.segmenter {
            Segmenter::Unigram(u) => u.encode(self.unk_id, normalized, &mut scratch.best, out),
            Segmenter::Bpe(splits) => {
                let lookup = |p: &[u8]| self.piece_to_id(p);
                let cx = bpe::BpeContext {
                    trie: &self.vocab,
                    types: &self.types,
                    scores: &self.scores,
                    user: self.user.as_ref(),
                    piece_to_id: &lookup,
                };
                bpe::encode_chunked(&cx, splits.as_ref(), normalized, out)
            }
            Segmenter::Char => {
                char_word::encode_char(normalized, self.user.as_ref(), |p| self.piece_to_id(p), out)
            }
            Segmenter::Word => char_word::encode_word(normalized, |p| self.piece_to_id(p), out),
        }
    }

    /// Encodes one sentence; `offsets` (when given) receives original byte ranges,
    /// shifted by `base`, exactly as SentencePiece's `begin`/`end`.
    fn encode_sentence(
        &self,
        text: &[u8],
        base: usize,
        ids: &mut Vec<u32>,
        offsets: Option<&mut Vec<(u32, u32)>>,
    ) {
        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let scratch = &mut *guard;
            self.encode_with(text, base, ids, offsets, scratch);
        });
    }

    fn encode_with(
        &self,
        text: &[u8],
        base: usize,
        ids: &mut Vec<u32>,
        mut offsets: Option<&mut Vec<(u32, u32)>>,
        scratch: &mut Scratch,
    ) {
        let Scratch {
            normalized,
            map,
            pieces,
            lattice,
        } = scratch;
        pieces.clear();
        let want = offsets.is_some();
        self.normalizer
            .normalize(text, normalized, want.then_some(&mut *map));
        self.segment(normalized, lattice, pieces);
        let at = |i: u32| base as u32 + map[i as usize];
        let mut prev_unk = false;
        for &(s, e, id) in pieces.iter() {
            let kind = self.types[id as usize];
            let is_unk = kind == PieceType::Unknown;
            if kind == PieceType::Control {
                // A control piece has no surface; SentencePiece does not advance over it.
                ids.push(id);
                if let Some(o) = offsets.as_deref_mut() {
                    o.push((at(s), at(s)));
                }
            } else if is_unk && self.byte_fallback {
                let last = e - 1;
                for i in s..e {
                    ids.push(self.byte_ids[normalized[i as usize] as usize]);
                    if let Some(o) = offsets.as_deref_mut() {
                        // Only the last byte carries the character's surface.
                        o.push((at(s), if i == last { at(e) } else { at(s) }));
                    }
                }
            } else if is_unk && prev_unk {
                // A run of unknown characters is one unknown piece.
                if let Some(o) = offsets.as_deref_mut() {
                    if let Some(lastp) = o.last_mut() {
                        lastp.1 = at(e);
                    }
                }
            } else {
                ids.push(id);
                if let Some(o) = offsets.as_deref_mut() {
                    o.push((at(s), at(e)));
                }
            }
            prev_unk = is_unk;
        }
    }

    /// For streaming encoders (`runtime::stream_encode`): whether a sentence may be
    /// encoded in parts cut right before a `▁` that follows another character, and how
    /// far one normalizer step reads ahead; None when that is not proven for this model.
    /// Computed once per model.
    ///
    /// BPE without UNUSED pieces, when no piece has `▁` after another character
    /// (`split_by_whitespace`): no piece, so no merge, spans such a `▁`, and BPE's merge
    /// order compares piece scores only, so each side merges as it would alone.
    ///
    /// Unigram, when no piece Viterbi may use (user-defined ones included) holds `▁`
    /// past its first character (`Unigram::space_cuts`): every `▁` the walk reaches cuts
    /// the lattice, so every segmentation passes through it and Viterbi from there on
    /// depends on the text before only through the best score there. That score is
    /// carried from part to part (`encode_normalized_from`), so f32 rounding, ties and
    /// re-centring fall exactly as over the whole sentence. The `▁` piece must be a
    /// piece Viterbi uses: then no unknown piece starts at a cut, and SentencePiece's
    /// fusion of unknown runs never reaches across one.
    pub fn stream_cut(&self) -> Option<StreamCut> {
        *self.stream_cut.get_or_init(|| self.prove_stream_cut())
    }

    fn prove_stream_cut(&self) -> Option<StreamCut> {
        let space = self.piece_to_id(SPACE_SYMBOL);
        let mut longest_user = 0;
        let viterbi = match &self.segmenter {
            Segmenter::Bpe(Some(_)) => false,
            Segmenter::Unigram(u) if u.space_cuts() => true,
            _ => return None,
        };
        for (piece, t) in self.pieces.iter().zip(&self.types) {
            if !matches!(
                t,
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused
            ) {
                continue;
            }
            if *t == PieceType::UserDefined {
                longest_user = longest_user.max(piece.len());
            }
            if viterbi {
                continue; // `space_cuts` checked the pieces Viterbi uses
            }
            let mut rest = &piece[..];
            while let Some(tail) = rest.strip_prefix(SPACE_SYMBOL) {
                rest = tail;
            }
            if find(rest, SPACE_SYMBOL).is_some() {
                return None;
            }
        }
        if viterbi {
            // Viterbi walks one character at a time: a cut must be a character boundary
            // of the walk, which well-formed normalized text guarantees.
            if !matches!(
                self.types[space as usize],
                PieceType::Normal | PieceType::UserDefined
            ) || !self.normalizer.writes_well_formed()
            {
                return None;
            }
        } else if !self.byte_fallback && self.types[space as usize] == PieceType::Unknown {
            // The piece at a cut starts with `▁`: it must never be an unknown piece, which
            // would join a run of unknown pieces before the cut.
            return None;
        }
        Some(StreamCut {
            reach: self.normalizer.stream_reach(longest_user)?,
            add_dummy_prefix: self.add_dummy_prefix,
            remove_extra_whitespaces: self.remove_extra_whitespaces,
            viterbi,
        })
    }

    /// For streaming encoders: appends the normalized text of the steps of `text` from
    /// `st` on that no continuation can change (`normalizer::Resume`; `reach` from
    /// `stream_cut`).
    pub fn normalize_final_steps(
        &self,
        text: &[u8],
        reach: usize,
        st: &mut Resume,
        out: &mut Vec<u8>,
    ) {
        self.normalizer.normalize_final_steps(text, reach, st, out);
    }

    /// For streaming encoders: `text` is the whole sentence; completes its normalized
    /// text in `out` from `st` (`normalize` of it, from a sentence start).
    pub fn finish_normalize(&self, text: &[u8], st: &mut Resume, out: &mut Vec<u8>) {
        self.normalizer.finish_normalize(text, st, out);
    }

    /// The IDs of already normalized text: `encode`'s segmentation and ID mapping
    /// without the normalizer (streaming encoders normalize themselves, see `stream_cut`).
    pub fn encode_normalized(&self, normalized: &[u8], ids: &mut Vec<u32>) {
        self.encode_normalized_from(normalized, 0.0, ids);
    }

    /// `encode_normalized` of a part of a sentence that starts at a stream cut where the
    /// best path's score is `score` (Unigram; `stream_cut`); returns the score at its end
    /// (BPE: 0, it carries nothing).
    pub fn encode_normalized_from(&self, normalized: &[u8], score: f32, ids: &mut Vec<u32>) -> f32 {
        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let Scratch {
                pieces, lattice, ..
            } = &mut *guard;
            pieces.clear();
            let end_score = match &self.segmenter {
                Segmenter::Unigram(u) => {
                    u.encode_from(self.unk_id, normalized, score, &mut lattice.best, pieces)
                }
                Segmenter::Bpe(_) | Segmenter::Char | Segmenter::Word => {
                    self.segment(normalized, lattice, pieces);
                    0.0
                }
            };
            let mut prev_unk = false;
            for &(s, e, id) in pieces.iter() {
                let is_unk = self.types[id as usize] == PieceType::Unknown;
                if is_unk && self.byte_fallback {
                    ids.extend((s..e).map(|i| self.byte_ids[normalized[i as usize] as usize]));
                } else if !(is_unk && prev_unk) {
                    ids.push(id);
                }
                prev_unk = is_unk;
            }
            end_score
        })
    }

    /// Encodes `text`; spellings found by `allowed` become their IDs, and the text
    /// between them is encoded as separate sentences (each with its dummy prefix).
    pub fn encode(
        &self,
        text: &str,
        allowed: Option<&SpecialMatcher>,
        untrusted: &Untrusted,
        ids: &mut Vec<u32>,
        mut offsets: Option<&mut Vec<(u32, u32)>>,
    ) {
        let bytes = text.as_bytes();
        let mut pos = 0;
        if let Some(matcher) = allowed {
            for (s, e, idx) in matcher.trusted_matches(text, untrusted) {
                self.encode_sentence(&bytes[pos..s], pos, ids, offsets.as_deref_mut());
                ids.push(matcher.ids[idx]);
                if let Some(o) = offsets.as_deref_mut() {
                    o.push((s as u32, e as u32));
                }
                pos = e;
            }
        }
        self.encode_sentence(&bytes[pos..], pos, ids, offsets);
    }

    /// The normalized text (SentencePiece's `normalize`).
    pub fn normalize(&self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + 8);
        self.normalizer.normalize(text.as_bytes(), &mut out, None);
        out
    }

    /// The normalized text with, for each of its bytes, the input byte offset it came
    /// from, plus one final entry (the input consumed); empty for an all-space input.
    pub fn normalize_aligned(&self, text: &str) -> (Vec<u8>, Vec<u32>) {
        let mut out = Vec::with_capacity(text.len() + 8);
        let mut map = Vec::with_capacity(text.len() + 9);
        self.normalizer
            .normalize(text.as_bytes(), &mut out, Some(&mut map));
        (out, map)
    }

    pub fn piece_count(&self) -> usize {
        self.pieces.len()
    }

    /// `trainer_spec.model_type` of the model: "unigram", "bpe", "char" or "word".
    pub fn model_type(&self) -> &'static str {
        match self.segmenter {
            Segmenter::Unigram(_) => "unigram",
            Segmenter::Bpe(_) => "bpe",
            Segmenter::Char => "char",
            Segmenter::Word => "word",
        }
    }

    pub fn byte_fallback(&self) -> bool {
        self.byte_fallback
    }

    /// A Unigram model's full lattice (None for other model types): the pieces Viterbi
    /// uses (NORMAL pieces with their scores, USER_DEFINED pieces with the score
    /// sentencepiece's n-best lists give them), the unknown character at the lowest NORMAL
    /// score minus 10, and byte pieces for uncovered characters with byte fallback. Its
    /// n-best lists, samples and marginals are over the segmentations `encode` chooses
    /// the best of.
    pub fn lattice(&self) -> Option<&UnigramLattice> {
        self.lattice
            .get_or_init(|| {
                if !matches!(self.segmenter, Segmenter::Unigram(_)) {
                    return None;
                }
                let min_score = self
                    .types
                    .iter()
                    .zip(&self.scores)
                    .filter(|(t, _)| **t == PieceType::Normal)
                    .fold(f32::MAX, |m, (_, &s)| m.min(s));
                let logp = self
                    .pieces
                    .iter()
                    .zip(self.types.iter().zip(&self.scores))
                    .map(|(piece, (t, &s))| match t {
                        PieceType::Normal => s as f64,
                        // What sentencepiece's n-best lattice gives a user-defined
                        // piece (0.1 per character, less 0.1; Viterbi's bonus differs,
                        // but the normalizer keeps these pieces whole either way).
                        PieceType::UserDefined => {
                            let chars = String::from_utf8_lossy(piece).chars().count();
                            (0.1f32 * chars as f32 - 0.1) as f64
                        }
                        _ => f64::NEG_INFINITY,
                    })
                    .collect();
                let pieces = self
                    .pieces
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect();
                let bytes = self
                    .byte_fallback
                    .then(|| Box::new(std::array::from_fn::<u32, 256, _>(|b| self.byte_ids[b])));
                let unk_logp = (min_score - 10.0) as f64;
                Some(UnigramLattice::with_unknown(
                    pieces,
                    logp,
                    self.unk_id,
                    bytes,
                    unk_logp,
                ))
            })
            .as_ref()
    }
}

fn is_byte_piece(piece: &[u8]) -> bool {
    piece.len() == 6
        && piece.starts_with(b"<0x")
        && piece[5] == b'>'
        && piece[3..5].iter().all(|c| c.is_ascii_hexdigit())
}

pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
