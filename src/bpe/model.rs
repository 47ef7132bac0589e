//! The BPE model: a merge map `(left, right) -> (rank, new_id)` plus the byte pieces.
//!
//! Two artifact families share this one engine:
//! * ranked merges (our trainer, Hugging Face): base IDs 0..255 are bytes, merge `r`
//!   creates ID `256 + r` (or an explicit ID) and has priority `r`;
//! * tiktoken ranks: every token has a rank that is also its ID, and a pair of adjacent
//!   parts merges when their concatenated bytes have a rank. We compile that rule into
//!   the same merge map by enumerating, for each token, every split into two tokens;
//!   the priority is the token's rank. tiktoken also emits a whole pre-token directly
//!   when it is itself a token (`whole_piece`).

use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use super::pair_key;
use crate::error::{CoreError, CoreResult};

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

pub use super::piece_cache::pack_short;

/// Piece -> ID map with the short-key fast path of [`pack_short`].
#[derive(Default)]
pub struct PieceMap {
    short: FxHashMap<u128, u32>,
    long: FxHashMap<Vec<u8>, u32>,
}

impl PieceMap {
    #[inline]
    pub fn get(&self, piece: &[u8]) -> Option<u32> {
        match pack_short(piece) {
            Some(key) => self.short.get(&key).copied(),
            None => self.long.get(piece).copied(),
        }
    }

    /// Removes every entry whose ID is in `ids`.
    pub fn remove_ids(&mut self, ids: &rustc_hash::FxHashSet<u32>) {
        self.short.retain(|_, id| !ids.contains(id));
        self.long.retain(|_, id| !ids.contains(id));
    }

    /// Inserts unless the piece is present; returns the ID now stored.
    pub fn insert_first(&mut self, piece: &[u8], id: u32) -> u32 {
        match pack_short(piece) {
            Some(key) => *self.short.entry(key).or_insert(id),
            None => *self.long.entry(piece.to_vec()).or_insert(id),
        }
    }
}

pub struct BpeModel {
    /// Byte piece of every model ID (special tokens live elsewhere).
    pub vocab: Vec<Vec<u8>>,
    /// `pair_key(left, right)` -> `(rank << 32) | new_id`.
    pub merges: FxHashMap<u64, u64>,
    /// Merges in rank order (ranked-merge models only).
    pub merge_list: Vec<(u32, u32)>,
    /// ID of each single byte.
    pub byte_ids: [u32; 256],
    /// Piece -> ID lookup applied before merging (tiktoken semantics).
    pub whole_piece: Option<PieceMap>,
    /// Identity used to key per-thread caches.
    pub uid: u64,
    /// Byte length of each ID's piece, `u8::MAX` meaning "that or more" (a dense table
    /// for offsets: reading the lengths in `vocab` touches 24 bytes per ID).
    token_lens: Vec<u8>,
}

fn token_lens(vocab: &[Vec<u8>]) -> Vec<u8> {
    vocab.iter().map(|p| p.len().min(255) as u8).collect()
}

/// `byte_ids` entry of a byte the vocabulary has no single-byte piece for.
pub const NO_BYTE: u32 = u32::MAX;

/// Bytes that never occur in UTF-8 (0xC0, 0xC1: overlong lead bytes; 0xF5..0xFF: past
/// U+10FFFF). Published byte-level vocabularies often omit their single-byte pieces, and
/// Hugging Face loads them: text is always valid UTF-8, so the encoder never needs them.
pub fn never_in_utf8(b: u8) -> bool {
    matches!(b, 0xC0 | 0xC1 | 0xF5..=0xFF)
}

/// Every byte that UTF-8 text can contain needs a single-byte piece; the others may lack
/// one (their entry stays `NO_BYTE`, which no encoder reads: inputs are `&str`).
fn check_byte_ids(byte_ids: &[u32; 256], what: &str) -> CoreResult<()> {
    match (0..=255u8).find(|&b| byte_ids[b as usize] == NO_BYTE && !never_in_utf8(b)) {
        Some(b) => Err(CoreError::Artifact(format!(
            "byte 0x{b:02x} has no {what}; a byte-level vocabulary needs a single-byte piece \
             for every byte UTF-8 text can contain"
        ))),
        None => Ok(()),
    }
}

impl BpeModel {
    /// Ranked merges over the 256 byte IDs; merge `r` creates ID `256 + r`.
    pub fn from_merges(merges: &[(u32, u32)]) -> CoreResult<BpeModel> {
        let mut vocab: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut map = FxHashMap::default();
        map.reserve(merges.len());
        for (rank, &(left, right)) in merges.iter().enumerate() {
            let new_id = 256 + rank as u32;
            if left >= new_id || right >= new_id {
                return Err(CoreError::Artifact(format!(
                    "merge rank {rank} ({left}, {right}) uses an ID that does not exist yet; \
                     merges must only combine base bytes or earlier merges"
                )));
            }
            if map
                .insert(pair_key(left, right), ((rank as u64) << 32) | new_id as u64)
                .is_some()
            {
                return Err(CoreError::Artifact(format!(
                    "merge ({left}, {right}) appears twice (second time at rank {rank}); \
                     remove the duplicate merge"
                )));
            }
            let mut piece = vocab[left as usize].clone();
            piece.extend_from_slice(&vocab[right as usize]);
            vocab.push(piece);
        }
        let mut byte_ids = [0u32; 256];
        for (b, id) in byte_ids.iter_mut().enumerate() {
            *id = b as u32;
        }
        Ok(BpeModel {
            vocab,
            merges: map,
            merge_list: merges.to_vec(),
            byte_ids,
            whole_piece: None,
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            token_lens: Vec::new(),
        }
        .with_token_lens())
    }

    /// Explicit merge records `(left, right, new_id)` in rank order over a vocabulary of
    /// byte pieces indexed by ID (Hugging Face files, or seed 0x07's improper dictionary).
    /// Every byte UTF-8 can contain must have a single-byte ID (`check_byte_ids`);
    /// ancestry is checked: `new = left ++ right`.
    pub fn from_records(
        vocab: Vec<Vec<u8>>,
        records: &[(u32, u32, u32)],
        ignore_merges: bool,
    ) -> CoreResult<BpeModel> {
        let n = vocab.len() as u32;
        let mut byte_ids = [NO_BYTE; 256];
        for (id, piece) in vocab.iter().enumerate() {
            if piece.len() == 1 && byte_ids[piece[0] as usize] == NO_BYTE {
                byte_ids[piece[0] as usize] = id as u32;
            }
        }
        check_byte_ids(&byte_ids, "token")?;
        let mut map = FxHashMap::default();
        map.reserve(records.len());
        for (rank, &(left, right, new_id)) in records.iter().enumerate() {
            if left >= n || right >= n || new_id >= n {
                return Err(CoreError::Artifact(format!(
                    "merge rank {rank} ({left}, {right}) -> {new_id} uses an ID outside the \
                     vocabulary of {n} pieces"
                )));
            }
            let (l, r, m) = (
                &vocab[left as usize],
                &vocab[right as usize],
                &vocab[new_id as usize],
            );
            if m.len() != l.len() + r.len() || !m.starts_with(l) || !m.ends_with(r) {
                return Err(CoreError::Artifact(format!(
                    "merge rank {rank}: piece {new_id} is not the concatenation of pieces \
                     {left} and {right}; the merges do not match the vocabulary"
                )));
            }
            // The first (lowest-rank) record of a pair wins, as in Hugging Face.
            map.entry(pair_key(left, right))
                .or_insert(((rank as u64) << 32) | new_id as u64);
        }
        // `ignore_merges` (Hugging Face): a pre-token that is itself a vocabulary entry is
        // emitted directly, before any merge.
        let whole_piece = ignore_merges.then(|| {
            let mut m = PieceMap::default();
            for (id, piece) in vocab.iter().enumerate() {
                if !piece.is_empty() {
                    m.insert_first(piece, id as u32);
                }
            }
            m
        });
        Ok(BpeModel {
            vocab,
            merges: map,
            merge_list: records.iter().map(|&(l, r, _)| (l, r)).collect(),
            byte_ids,
            whole_piece,
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            token_lens: Vec::new(),
        }
        .with_token_lens())
    }

    /// tiktoken ranks: `ranks[id]` is the byte piece whose rank (and ID) is `id`.
    pub fn from_ranks(ranks: Vec<Vec<u8>>) -> CoreResult<BpeModel> {
        BpeModel::from_ranks_after(Vec::new(), ranks)
    }

    /// tiktoken ranks whose IDs start after the `reserved` rows (rank r is ID
    /// `reserved.len() + r`). Mistral's Tekken files put their special tokens there: the
    /// rows hold their spellings, which no merge and no whole-piece lookup ever produces.
    /// Merge priority is still the rank, so encoding equals tiktoken's on the ranks.
    pub fn from_ranks_after(reserved: Vec<Vec<u8>>, ranks: Vec<Vec<u8>>) -> CoreResult<BpeModel> {
        let offset = u32::try_from(reserved.len()).unwrap_or(u32::MAX);
        let mut lookup: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
        lookup.reserve(ranks.len());
        for (rank, piece) in ranks.iter().enumerate() {
            if piece.is_empty() {
                return Err(CoreError::Artifact(format!(
                    "rank {rank} has an empty byte piece; every rank needs at least one byte"
                )));
            }
            let id = offset as usize + rank;
            if id > u32::MAX as usize - 1 {
                return Err(CoreError::Artifact(format!(
                    "rank {rank} at ID offset {offset} does not fit a 32-bit token ID"
                )));
            }
            if let Some(prev) = lookup.insert(piece.clone(), id as u32) {
                return Err(CoreError::Artifact(format!(
                    "ranks {} and {rank} have the same bytes {piece:?}; each piece needs one rank",
                    prev - offset
                )));
            }
        }
        let mut vocab = reserved;
        vocab.extend(ranks);
        let ranks = vocab;
        let mut byte_ids = [NO_BYTE; 256];
        for (b, slot) in byte_ids.iter_mut().enumerate() {
            if let Some(&id) = lookup.get(&vec![b as u8]) {
                *slot = id;
            }
        }
        check_byte_ids(&byte_ids, "rank")?;
        let mut merges = FxHashMap::default();
        for (id, piece) in ranks.iter().enumerate().skip(offset as usize) {
            for k in 1..piece.len() {
                if let (Some(&l), Some(&r)) = (lookup.get(&piece[..k]), lookup.get(&piece[k..])) {
                    merges.insert(pair_key(l, r), ((id as u64) << 32) | id as u64);
                }
            }
        }
        Ok(BpeModel {
            vocab: ranks,
            merges,
            merge_list: Vec::new(),
            byte_ids,
            whole_piece: Some({
                let mut m = PieceMap::default();
                for (piece, id) in lookup {
                    m.insert_first(&piece, id);
                }
                m
            }),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            token_lens: Vec::new(),
        }
        .with_token_lens())
    }

    fn with_token_lens(mut self) -> BpeModel {
        self.token_lens = token_lens(&self.vocab);
        self
    }

    /// Byte length of the piece of model ID `id` (0 for an ID outside the vocabulary).
    #[inline]
    pub fn token_len(&self, id: u32) -> usize {
        match self.token_lens.get(id as usize) {
            Some(&n) if n < u8::MAX => n as usize,
            _ => self.vocab.get(id as usize).map_or(0, |p| p.len()),
        }
    }

    /// Makes the IDs in `controls` unreachable from text: no merge creates them and no
    /// whole-piece lookup returns them (`Model::forbid`). A single-byte piece stays: a
    /// byte-level model needs one for every byte, and no tokenizer we know of declares
    /// a control token on one (`tokenpact doctor` reports it).
    pub fn forbid(&mut self, controls: &rustc_hash::FxHashSet<u32>) {
        self.merges
            .retain(|_, value| !controls.contains(&(*value as u32)));
        if let Some(map) = &mut self.whole_piece {
            let single_bytes: rustc_hash::FxHashSet<u32> = controls
                .iter()
                .copied()
                .filter(|&id| self.vocab.get(id as usize).is_none_or(|p| p.len() > 1))
                .collect();
            map.remove_ids(&single_bytes);
        }
    }

    #[inline]
    pub fn merge_of(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        self.merges
            .get(&pair_key(left, right))
            .map(|&v| ((v >> 32) as u32, v as u32))
    }
}
