//! MinHash signatures over word or character shingles, bit-identical to `datasketch` 2.x.
//!
//! A shingle is hashed with datasketch's `sha1_hash32` (the first four bytes of its SHA-1
//! digest, read little-endian) and pushed through each permutation; a signature slot is
//! the minimum over the document's shingles. Two permutation schemes are reproduced:
//!
//! * `legacy` (datasketch < 2.0, still selectable): `((a * h + b) mod 2^64) mod (2^61 - 1)`
//!   masked to 32 bits. The `mod 2^64` is numpy's uint64 wraparound, which datasketch
//!   relies on without saying so; dropping it changes the signatures.
//! * `affine32` (datasketch 2.x default): `h' = fmix32(h)`, then `a * h' + b mod 2^32`.
//!
//! The permutation parameters come from numpy's `RandomState(seed)` on the Python side,
//! so they are passed in rather than re-derived here.

use rayon::prelude::*;
use sha1::{Digest, Sha1};

use crate::error::{CoreError, CoreResult};

const MERSENNE_PRIME: u64 = (1 << 61) - 1;
const MAX_HASH: u32 = u32::MAX;

/// How a document is cut into shingles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShingleKind {
    /// `n` consecutive whitespace-separated words joined by one space.
    Word,
    /// `n` consecutive Unicode code points.
    Char,
}

impl ShingleKind {
    pub fn parse(s: &str) -> CoreResult<ShingleKind> {
        match s {
            "word" => Ok(ShingleKind::Word),
            "char" => Ok(ShingleKind::Char),
            _ => Err(CoreError::Config(format!(
                "unknown shingle kind {s:?}; use \"word\" or \"char\""
            ))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shingling {
    pub kind: ShingleKind,
    pub n: usize,
}

/// Python's `str.split()` whitespace: Unicode White_Space plus the four ASCII
/// information separators (U+001C..U+001F) that Python also splits on.
#[inline]
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Byte spans of the words of `text` as Python's `str.split()` finds them (ASCII bytes
/// are classified by a table check; other characters by `is_py_space`).
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut start: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (space, width) = if b < 0x80 {
            (matches!(b, b'\t'..=b'\r' | 0x1c..=0x20), 1)
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            (is_py_space(c), c.len_utf8())
        };
        match (space, start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
        i += width;
    }
    if let Some(s) = start {
        spans.push((s, bytes.len()));
    }
    spans
}

impl Shingling {
    pub fn new(kind: ShingleKind, n: usize) -> CoreResult<Shingling> {
        if n == 0 {
            return Err(CoreError::Config(
                "shingle size n must be >= 1; use n=5 for word shingles".into(),
            ));
        }
        Ok(Shingling { kind, n })
    }

    /// Calls `f` with the UTF-8 bytes of every shingle of `text`, in document order
    /// (repeats included). A document shorter than `n` units is one shingle; an empty
    /// one (no words / no code points) has none.
    pub fn for_each(&self, text: &str, mut f: impl FnMut(&[u8])) {
        match self.kind {
            ShingleKind::Word => {
                let bytes = text.as_bytes();
                let spans = word_spans(text);
                if spans.is_empty() {
                    return;
                }
                // bad[k]: gaps among the first k that are not exactly one ASCII space. A
                // window whose gaps are all single spaces is its own joined shingle, so
                // it is hashed in place instead of being copied into the buffer.
                let mut bad = Vec::with_capacity(spans.len());
                bad.push(0u32);
                for w in spans.windows(2) {
                    let single = w[1].0 == w[0].1 + 1 && bytes[w[0].1] == b' ';
                    bad.push(bad[bad.len() - 1] + u32::from(!single));
                }
                let mut buf: Vec<u8> = Vec::with_capacity(64);
                let windows = spans.len().saturating_sub(self.n) + 1;
                for start in 0..windows {
                    let stop = (start + self.n).min(spans.len());
                    if bad[stop - 1] == bad[start] {
                        f(&bytes[spans[start].0..spans[stop - 1].1]);
                        continue;
                    }
                    buf.clear();
                    for (k, &(a, b)) in spans[start..stop].iter().enumerate() {
                        if k > 0 {
                            buf.push(b' ');
                        }
                        buf.extend_from_slice(&bytes[a..b]);
                    }
                    f(&buf);
                }
            }
            ShingleKind::Char => {
                if text.is_empty() {
                    return;
                }
                let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
                bounds.push(text.len());
                let chars = bounds.len() - 1;
                let windows = chars.saturating_sub(self.n) + 1;
                let bytes = text.as_bytes();
                for start in 0..windows {
                    let stop = (start + self.n).min(chars);
                    f(&bytes[bounds[start]..bounds[stop]]);
                }
            }
        }
    }
}

/// datasketch's `sha1_hash32` and `sha1_hash64` from one digest.
#[inline]
fn sha1_hashes(data: &[u8]) -> (u32, u64) {
    let d = Sha1::digest(data);
    let h32 = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    let h64 = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
    (h32, h64)
}

/// The MurmurHash3 32-bit finalizer (datasketch's `_fmix` at width 32).
#[inline]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// `x mod (2^61 - 1)` for any u64 without a division.
#[inline]
fn mod_mersenne(x: u64) -> u64 {
    let r = (x & MERSENNE_PRIME) + (x >> 61);
    if r >= MERSENNE_PRIME {
        r - MERSENNE_PRIME
    } else {
        r
    }
}

/// Permutation parameters of one scheme.
#[derive(Clone, Debug)]
pub enum Permutations {
    Legacy { a: Vec<u64>, b: Vec<u64> },
    Affine32 { a: Vec<u32>, b: Vec<u32> },
}

impl Permutations {
    pub fn new(scheme: &str, a: &[u64], b: &[u64]) -> CoreResult<Permutations> {
        if a.len() != b.len() || a.is_empty() {
            return Err(CoreError::Config(format!(
                "permutation arrays must be non-empty and of equal length (got {} and {})",
                a.len(),
                b.len()
            )));
        }
        match scheme {
            "legacy" => Ok(Permutations::Legacy {
                a: a.to_vec(),
                b: b.to_vec(),
            }),
            "affine32" => {
                let narrow = |v: &[u64]| -> CoreResult<Vec<u32>> {
                    v.iter()
                        .map(|&x| {
                            u32::try_from(x).map_err(|_| {
                                CoreError::Config(format!(
                                    "affine32 permutation parameter {x} does not fit 32 bits"
                                ))
                            })
                        })
                        .collect()
                };
                Ok(Permutations::Affine32 {
                    a: narrow(a)?,
                    b: narrow(b)?,
                })
            }
            _ => Err(CoreError::Config(format!(
                "unknown MinHash scheme {scheme:?}; use \"affine32\" (datasketch 2.x) or \"legacy\""
            ))),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Permutations::Legacy { a, .. } => a.len(),
            Permutations::Affine32 { a, .. } => a.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Folds one shingle hash into `sig` (elementwise minimum).
    #[inline]
    fn update(&self, h: u32, sig: &mut [u32]) {
        match self {
            Permutations::Legacy { a, b } => {
                let hv = h as u64;
                for ((s, &ak), &bk) in sig.iter_mut().zip(a).zip(b) {
                    let phv = mod_mersenne(ak.wrapping_mul(hv).wrapping_add(bk)) as u32;
                    *s = (*s).min(phv);
                }
            }
            Permutations::Affine32 { a, b } => {
                let hv = fmix32(h);
                for ((s, &ak), &bk) in sig.iter_mut().zip(a).zip(b) {
                    *s = (*s).min(ak.wrapping_mul(hv).wrapping_add(bk));
                }
            }
        }
    }
}

/// MinHash signature of one document into `sig` (`perms.len()` slots).
pub fn signature_into(text: &str, shingling: &Shingling, perms: &Permutations, sig: &mut [u32]) {
    sig.fill(MAX_HASH);
    shingling.for_each(text, |sh| perms.update(sha1_hashes(sh).0, sig));
}

/// Signatures of many documents, row-major `[texts.len() * perms.len()]`, computed in
/// parallel in the current rayon pool. Rows depend only on their own document.
pub fn signatures<S: AsRef<str> + Sync>(
    texts: &[S],
    shingling: &Shingling,
    perms: &Permutations,
) -> Vec<u32> {
    let k = perms.len();
    let mut out = vec![MAX_HASH; texts.len() * k];
    out.par_chunks_mut(k)
        .zip(texts.par_iter())
        .with_min_len(16)
        .for_each(|(row, text)| signature_into(text.as_ref(), shingling, perms, row));
    out
}

/// The distinct shingles of `text` as sorted 64-bit hashes (`sha1_hash64`), for exact
/// Jaccard verification of candidate pairs.
pub fn shingle_set(text: &str, shingling: &Shingling) -> Vec<u64> {
    let mut set = Vec::new();
    shingling.for_each(text, |sh| set.push(sha1_hashes(sh).1));
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
    use super::*;

    fn words(text: &str, n: usize) -> Vec<String> {
        let s = Shingling::new(ShingleKind::Word, n).unwrap();
        let mut out = Vec::new();
        s.for_each(text, |b| out.push(String::from_utf8(b.to_vec()).unwrap()));
        out
    }

    #[test]
    fn seed_example_jaccard_is_one_third() {
        assert_eq!(words("The cat sleeps.", 2), vec!["The cat", "cat sleeps."]);
        let s = Shingling::new(ShingleKind::Word, 2).unwrap();
        let a = shingle_set("The cat sleeps.", &s);
        let b = shingle_set("The cat wakes.", &s);
        assert!((jaccard(&a, &b) - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn short_documents_are_one_shingle() {
        assert_eq!(words("one\u{1f}two", 5), vec!["one two"]);
        assert!(words(" \t ", 2).is_empty());
    }

    #[test]
    fn mersenne_reduction_matches_modulo() {
        for x in [
            0u64,
            1,
            MERSENNE_PRIME,
            MERSENNE_PRIME + 5,
            u64::MAX,
            1 << 62,
        ] {
            assert_eq!(mod_mersenne(x), x % MERSENNE_PRIME);
        }
    }
}
