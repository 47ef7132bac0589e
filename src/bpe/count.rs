//! Counting pre-tokens: the trainer's only pass over the corpus.
//!
//! Memory grows with the number of *distinct* pre-tokens, not with corpus size. Counting
//! is split across threads and merged by addition, so the result does not depend on the
//! thread count or the document order. The corpus digest is order-independent too: the
//! sum of the documents' SHA-256 values modulo 2^256.

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use crate::error::{CoreError, CoreResult};
use crate::pretok::Pretokenizer;

#[derive(Default)]
pub struct PretokenCounts {
    pub counts: FxHashMap<Vec<u8>, u64>,
    pub documents: u64,
    pub bytes: u64,
    /// 256-bit little-endian limbs of the multiset digest.
    pub digest: [u64; 4],
}

/// Sums two count maps, folding the smaller into the larger (fewer re-hashes). Addition
/// commutes, so parallel reductions give the same counts in any order.
pub fn merge_counts<K: std::hash::Hash + Eq>(
    a: FxHashMap<K, u64>,
    b: FxHashMap<K, u64>,
) -> FxHashMap<K, u64> {
    let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    for (k, v) in small {
        *big.entry(k).or_insert(0) += v;
    }
    big
}

fn add_digest(acc: &mut [u64; 4], other: &[u64; 4]) {
    let mut carry = 0u128;
    for i in 0..4 {
        let s = acc[i] as u128 + other[i] as u128 + carry;
        acc[i] = s as u64;
        carry = s >> 64;
    }
}

fn doc_digest(text: &str) -> [u64; 4] {
    let h = Sha256::digest(text.as_bytes());
    // SHA-256 output read as a big-endian 256-bit integer, stored little-endian by limb.
    let mut limbs = [0u64; 4];
    for (i, limb) in limbs.iter_mut().enumerate() {
        let start = (3 - i) * 8;
        *limb = u64::from_be_bytes(h[start..start + 8].try_into().unwrap_or([0; 8]));
    }
    limbs
}

impl PretokenCounts {
    /// Sums `other` into this count (addition commutes: any merge order gives the same).
    pub fn merge(mut self, other: PretokenCounts) -> PretokenCounts {
        self.counts = merge_counts(std::mem::take(&mut self.counts), other.counts);
        self.documents += other.documents;
        self.bytes += other.bytes;
        add_digest(&mut self.digest, &other.digest);
        self
    }

    fn count_one(&mut self, pretok: &Pretokenizer, text: &str) -> CoreResult<()> {
        self.documents += 1;
        self.bytes += text.len() as u64;
        add_digest(&mut self.digest, &doc_digest(text));
        let bytes = text.as_bytes();
        let counts = &mut self.counts;
        pretok.split(text, |s, e| {
            let piece = &bytes[s..e];
            if let Some(c) = counts.get_mut(piece) {
                *c += 1;
            } else {
                counts.insert(piece.to_vec(), 1);
            }
        })
    }

    /// Counts the pre-tokens of `texts` in parallel (in the current rayon pool).
    pub fn add_texts<S: AsRef<str> + Sync>(
        &mut self,
        pretok: &Pretokenizer,
        texts: &[S],
    ) -> CoreResult<()> {
        if texts.is_empty() {
            return Ok(());
        }
        let threads = rayon::current_num_threads().max(1);
        let chunk = texts.len().div_ceil(threads * 4).max(1);
        let partial = texts
            .par_chunks(chunk)
            .map(|docs| {
                let mut local = PretokenCounts::default();
                for d in docs {
                    local.count_one(pretok, d.as_ref())?;
                }
                Ok(local)
            })
            .try_reduce(PretokenCounts::default, |a, b| Ok(a.merge(b)))?;
        let this = std::mem::take(self);
        *self = this.merge(partial);
        Ok(())
    }

    /// Rebuilds counts made elsewhere (another process or machine) from their parts.
    pub fn from_parts(
        pieces: Vec<Vec<u8>>,
        counts: &[u64],
        documents: u64,
        bytes: u64,
        digest_hex: &str,
    ) -> CoreResult<PretokenCounts> {
        if pieces.len() != counts.len() {
            return Err(CoreError::InvalidInput(format!(
                "{} pre-tokens but {} counts; pass one count per pre-token",
                pieces.len(),
                counts.len()
            )));
        }
        let hex = digest_hex.trim_start_matches("sha256-multiset:");
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CoreError::InvalidInput(format!(
                "corpus digest {digest_hex:?} is not 64 hex digits"
            )));
        }
        let mut digest = [0u64; 4];
        for (i, limb) in digest.iter_mut().enumerate() {
            let start = (3 - i) * 16;
            *limb = u64::from_str_radix(&hex[start..start + 16], 16)
                .map_err(|e| CoreError::InvalidInput(e.to_string()))?;
        }
        let mut map: FxHashMap<Vec<u8>, u64> = FxHashMap::default();
        map.reserve(pieces.len());
        for (p, &c) in pieces.into_iter().zip(counts) {
            *map.entry(p).or_insert(0) += c;
        }
        Ok(PretokenCounts {
            counts: map,
            documents,
            bytes,
            digest,
        })
    }

    pub fn digest_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for limb in self.digest.iter().rev() {
            s.push_str(&format!("{limb:016x}"));
        }
        s
    }
}
