//! MinHash signatures over word or character shingles, bit-identical to `datasketch` 2.x.
//!
//! A shingle is hashed with datasketch's `sha1_hash32` (the first four bytes of its SHA-1
//! digest, read little-endian) and pushed through each permutation; a signature slot is
//! the minimum over the document's shingles. The three steps live in their own modules:
//! [`super::shingles`] (what a shingle is), [`super::shingle_hash`] (SHA-1, with the x86
//! SHA extensions when present) and [`super::permute`] (the permutation schemes, in
//! vector registers when AVX2 / AVX-512 are present).
//!
//! The permutation parameters come from numpy's `RandomState(seed)` on the Python side,
//! so they are passed in rather than re-derived here.

use rayon::prelude::*;

pub use super::permute::{Permutations, MAX_HASH};
use super::shingle_hash::ShingleHasher;
pub use super::shingles::{ShingleKind, ShingleScratch, Shingling};

/// Buffers reused from one document to the next by one worker thread.
#[derive(Default)]
pub struct MinHasher {
    scratch: ShingleScratch,
    hasher: ShingleHasher,
    hashes: Vec<u64>,
    mixed: Vec<u64>,
}

impl MinHasher {
    /// The fastest hashing and permutation paths this CPU supports.
    pub fn new() -> MinHasher {
        MinHasher::default()
    }

    /// The `sha1` crate for every shingle (with [`Permutations::with_simd`] set to
    /// `Simd::Scalar`, the reference path the fast one is tested against).
    pub fn portable() -> MinHasher {
        MinHasher {
            hasher: ShingleHasher::portable(),
            ..MinHasher::default()
        }
    }

    /// `sha1_hash64` of every shingle of `text`, in document order (repeats kept).
    pub fn shingle_hashes(&mut self, text: &str, shingling: &Shingling) -> &[u64] {
        self.hashes.clear();
        let doc = shingling.prepare(text, &mut self.scratch);
        self.hasher.hash_all(&doc, &mut self.hashes);
        &self.hashes
    }

    /// MinHash signature of one document into `sig` (`perms.len()` slots).
    pub fn signature_into(
        &mut self,
        text: &str,
        shingling: &Shingling,
        perms: &Permutations,
        sig: &mut [u32],
    ) {
        sig.fill(MAX_HASH);
        self.shingle_hashes(text, shingling);
        perms.update(&self.hashes, &mut self.mixed, sig);
    }
}

/// MinHash signature of one document into `sig` (`perms.len()` slots).
pub fn signature_into(text: &str, shingling: &Shingling, perms: &Permutations, sig: &mut [u32]) {
    MinHasher::new().signature_into(text, shingling, perms, sig)
}

/// Signatures of many documents, row-major `[texts.len() * perms.len()]`, computed in
/// parallel in the current rayon pool. Rows depend only on their own document.
pub fn signatures<S: AsRef<str> + Sync>(
    texts: &[S],
    shingling: &Shingling,
    perms: &Permutations,
) -> Vec<u32> {
    let k = perms.len();
    // Zeroed, not MAX_HASH-filled: a zeroed allocation is lazily mapped, so its pages are
    // touched by the workers (`signature_into` fills each row) instead of one serial pass
    // over the whole buffer before the parallel part starts.
    let mut out = vec![0u32; texts.len() * k];
    out.par_chunks_mut(k)
        .zip(texts.par_iter())
        .with_min_len(16)
        .for_each_init(MinHasher::new, |worker, (row, text)| {
            worker.signature_into(text.as_ref(), shingling, perms, row)
        });
    out
}

/// The distinct shingles of `text` as sorted 64-bit hashes (`sha1_hash64`), for exact
/// Jaccard verification of candidate pairs.
pub fn shingle_set(text: &str, shingling: &Shingling) -> Vec<u64> {
    let mut set = MinHasher::new().shingle_hashes(text, shingling).to_vec();
    set.sort_unstable();
    set.dedup();
    set
}

/// Jaccard similarity of two sorted, deduplicated sets; two empty sets are identical.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - inter;
    inter as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::super::permute::Simd;
    use super::*;

    #[test]
    fn seed_example_jaccard_is_one_third() {
        let s = Shingling::new(ShingleKind::Word, 2).unwrap();
        let a = shingle_set("The cat sleeps.", &s);
        let b = shingle_set("The cat wakes.", &s);
        assert!((jaccard(&a, &b) - 1.0 / 3.0).abs() < 1e-12);
    }

    /// The fast path (batched SHA extensions, vector permutations) against the reference
    /// path (the `sha1` crate per shingle, scalar permutations) on mixed-script texts
    /// with long words, odd gaps and repeats.
    #[test]
    fn fast_signatures_match_the_reference_path() {
        let words = [
            "the",
            "cat",
            "sleeps.",
            "Übergrößenträger",
            "日本語のテキスト",
            "ok",
            "a-very-long-hyphenated-compound-word-that-crosses-a-block",
            "\u{a0}",
            "\n\n",
            "  ",
            "\t",
            "\u{3000}",
            "x",
        ];
        let mut state = 0x1234_5678_9ABC_DEF1u64;
        let mut texts = Vec::new();
        for len in 0..150 {
            let mut t = String::new();
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                t.push_str(words[(state % words.len() as u64) as usize]);
                if state & 0x100 == 0 {
                    t.push(' ');
                }
            }
            texts.push(t);
        }
        let a: Vec<u64> = (1..=128u64)
            .map(|i| i * 0x9E37_79B9 % ((1 << 61) - 1))
            .collect();
        let b: Vec<u64> = (1..=128u64)
            .map(|i| i * 0x7F4A_7C15 % ((1 << 61) - 1))
            .collect();
        let a32: Vec<u64> = a.iter().map(|&x| (x as u32 | 1) as u64).collect();
        let b32: Vec<u64> = b.iter().map(|&x| x as u32 as u64).collect();
        for (kind, n) in [
            (ShingleKind::Word, 5),
            (ShingleKind::Word, 1),
            (ShingleKind::Char, 4),
        ] {
            let shingling = Shingling::new(kind, n).unwrap();
            for (scheme, pa, pb) in [("legacy", &a, &b), ("affine32", &a32, &b32)] {
                let fast = Permutations::new(scheme, pa, pb).unwrap();
                let slow = fast.clone().with_simd(Simd::Scalar);
                let mut reference = MinHasher::portable();
                let got = signatures(&texts, &shingling, &fast);
                for (text, row) in texts.iter().zip(got.chunks(128)) {
                    let mut want = vec![0u32; 128];
                    reference.signature_into(text, &shingling, &slow, &mut want);
                    assert_eq!(row, &want[..], "{scheme} {kind:?} {text:?}");
                }
            }
        }
    }
}
