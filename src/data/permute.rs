//! MinHash permutations: folding a document's shingle hashes into its signature.
//!
//! Two schemes are reproduced bit for bit:
//!
//! * `legacy` (datasketch < 2.0, still selectable): `((a * h + b) mod 2^64) mod (2^61 - 1)`
//!   masked to 32 bits. The `mod 2^64` is numpy's uint64 wraparound, which datasketch
//!   relies on without saying so; dropping it changes the signatures.
//! * `affine32` (datasketch 2.x default): `h' = fmix32(h)`, then `a * h' + b mod 2^32`.
//!
//! The permutations are processed in tiles that stay in vector registers while every
//! hash of the document streams past (tile-outer, hash-inner), so a signature slot is
//! loaded and stored once per document instead of once per shingle. The plain Rust tile
//! loops are compiled for AVX-512 and AVX2 (picked at run time with
//! `is_x86_feature_detected!`); `legacy` on AVX2 is written with intrinsics instead (the
//! vectorizer emulates 64-bit multiplies and compares there). On other CPUs, and as the
//! reference the tests compare every vector path against, plain scalar loops run. The
//! Mersenne reduction needs no division or compare: `(x & p) + (x >> 61)`, then
//! `min(r, r - p)`.

use crate::error::{CoreError, CoreResult};

pub const MERSENNE_PRIME: u64 = (1 << 61) - 1;
pub const MAX_HASH: u32 = u32::MAX;

/// The instruction set a signature update runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simd {
    /// Baseline target (the reference).
    Scalar,
    Avx2,
    Avx512,
}

impl Simd {
    /// The widest level this CPU supports.
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512vl")
            {
                return Simd::Avx512;
            }
            if is_x86_feature_detected!("avx2") {
                return Simd::Avx2;
            }
        }
        Simd::Scalar
    }
}

/// The MurmurHash3 32-bit finalizer (datasketch's `_fmix` at width 32).
#[inline]
pub fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// `x mod (2^61 - 1)` for any u64 without a division.
#[inline(always)]
pub fn mod_mersenne(x: u64) -> u64 {
    let r = (x & MERSENNE_PRIME) + (x >> 61);
    // r <= p + 7; when r < p the wrapped difference is larger than r.
    r.min(r.wrapping_sub(MERSENNE_PRIME))
}

/// Permutation parameters of one scheme.
#[derive(Clone, Debug)]
pub enum Scheme {
    Legacy { a: Vec<u64>, b: Vec<u64> },
    Affine32 { a: Vec<u32>, b: Vec<u32> },
}

#[derive(Clone, Debug)]
pub struct Permutations {
    pub scheme: Scheme,
    simd: Simd,
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
        let scheme = match scheme {
            "legacy" => Scheme::Legacy {
                a: a.to_vec(),
                b: b.to_vec(),
            },
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
                Scheme::Affine32 {
                    a: narrow(a)?,
                    b: narrow(b)?,
                }
            }
            _ => {
                return Err(CoreError::Config(format!(
                    "unknown MinHash scheme {scheme:?}; use \"affine32\" (datasketch 2.x) or \"legacy\""
                )))
            }
        };
        Ok(Permutations {
            scheme,
            simd: Simd::detect(),
        })
    }

    /// The same permutations on another instruction set (clamped to what the CPU has).
    pub fn with_simd(mut self, simd: Simd) -> Permutations {
        let best = Simd::detect();
        self.simd = match (simd, best) {
            (Simd::Avx512, Simd::Avx512) => Simd::Avx512,
            (Simd::Avx512 | Simd::Avx2, Simd::Avx512 | Simd::Avx2) => Simd::Avx2,
            _ => Simd::Scalar,
        };
        self
    }

    pub fn simd(&self) -> Simd {
        self.simd
    }

    pub fn len(&self) -> usize {
        match &self.scheme {
            Scheme::Legacy { a, .. } => a.len(),
            Scheme::Affine32 { a, .. } => a.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Folds shingle hashes into `sig` (elementwise minimum; `sig` is not reset). Only the
    /// low 32 bits of each hash are used (`sha1_hash32` is the low half of
    /// `sha1_hash64`). `mixed` is scratch space for the scheme's pre-mix.
    pub fn update(&self, hashes: &[u64], mixed: &mut Vec<u64>, sig: &mut [u32]) {
        debug_assert_eq!(sig.len(), self.len());
        mixed.clear();
        match &self.scheme {
            Scheme::Legacy { a, b } => {
                mixed.extend(hashes.iter().map(|&h| h & u64::from(MAX_HASH)));
                Tiles(self.simd).legacy(a, b, mixed, sig);
            }
            Scheme::Affine32 { a, b } => {
                mixed.extend(hashes.iter().map(|&h| u64::from(fmix32(h as u32))));
                Tiles(self.simd).affine32(a, b, mixed, sig);
            }
        }
    }
}

/// Which compiled copy of the tile loops to run.
#[derive(Clone, Copy)]
struct Tiles(Simd);

impl Tiles {
    #[inline(always)]
    fn legacy(self, a: &[u64], b: &[u64], hv: &[u64], sig: &mut [u32]) {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Simd::Avx512` is only set after run-time detection.
            Simd::Avx512 => unsafe { x86::legacy_avx512(a, b, hv, sig) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Simd::Avx2` is only set after run-time detection.
            Simd::Avx2 => unsafe { x86::legacy_avx2(a, b, hv, sig) },
            _ => legacy_plain(a, b, hv, sig),
        }
    }

    #[inline(always)]
    fn affine32(self, a: &[u32], b: &[u32], hv: &[u64], sig: &mut [u32]) {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Simd::Avx512 => unsafe { x86::affine32_avx512(a, b, hv, sig) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Simd::Avx2 => unsafe { x86::affine32_avx2(a, b, hv, sig) },
            _ => affine32_tiles::<8>(a, b, hv, sig),
        }
    }
}

/// `legacy` over tiles of `T` permutations, then the remainder one by one (the
/// AVX-512 copy; other CPUs use [`legacy_plain`] or the AVX2 intrinsics).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn legacy_tiles<const T: usize>(a: &[u64], b: &[u64], hv: &[u64], sig: &mut [u32]) {
    let k = sig.len();
    let whole = k - k % T;
    for base in (0..whole).step_by(T) {
        let ta: [u64; T] = a[base..base + T].try_into().expect("tile");
        let tb: [u64; T] = b[base..base + T].try_into().expect("tile");
        // Low 32 bits of the minimum carry the answer; the slots stay 64-bit so the
        // vectorizer needs no narrowing inside the hot loop.
        let mut ts = [0u64; T];
        for j in 0..T {
            ts[j] = u64::from(sig[base + j]);
        }
        for &h in hv {
            for j in 0..T {
                let x = ta[j].wrapping_mul(h).wrapping_add(tb[j]);
                ts[j] = ts[j].min(mod_mersenne(x) & u64::from(MAX_HASH));
            }
        }
        for j in 0..T {
            sig[base + j] = ts[j] as u32;
        }
    }
    for j in whole..k {
        for &h in hv {
            let x = a[j].wrapping_mul(h).wrapping_add(b[j]);
            sig[j] = sig[j].min(mod_mersenne(x) as u32);
        }
    }
}

/// `legacy` one slot at a time: the reference, and the path for CPUs without AVX2. On
/// baseline x86-64 (SSE2: no 64-bit multiply, compare or minimum in vectors) scalar code
/// beats what the vectorizer makes of the tile loop, so the reduction here branches.
fn legacy_plain(a: &[u64], b: &[u64], hv: &[u64], sig: &mut [u32]) {
    for &h in hv {
        for ((s, &ak), &bk) in sig.iter_mut().zip(a).zip(b) {
            let x = ak.wrapping_mul(h).wrapping_add(bk);
            let r = (x & MERSENNE_PRIME) + (x >> 61);
            let r = if r >= MERSENNE_PRIME {
                r - MERSENNE_PRIME
            } else {
                r
            };
            *s = (*s).min(r as u32);
        }
    }
}

/// `affine32` over tiles of `T` permutations, then the remainder one by one.
#[inline(always)]
fn affine32_tiles<const T: usize>(a: &[u32], b: &[u32], hv: &[u64], sig: &mut [u32]) {
    let k = sig.len();
    let whole = k - k % T;
    for base in (0..whole).step_by(T) {
        let ta: [u32; T] = a[base..base + T].try_into().expect("tile");
        let tb: [u32; T] = b[base..base + T].try_into().expect("tile");
        let mut ts: [u32; T] = sig[base..base + T].try_into().expect("tile");
        for &h in hv {
            let h = h as u32;
            for j in 0..T {
                ts[j] = ts[j].min(ta[j].wrapping_mul(h).wrapping_add(tb[j]));
            }
        }
        sig[base..base + T].copy_from_slice(&ts);
    }
    for j in whole..k {
        for &h in hv {
            sig[j] = sig[j].min(a[j].wrapping_mul(h as u32).wrapping_add(b[j]));
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The tile loops compiled for wider vectors; tile sizes fill the register file
    //! (a, b and the running minimum of a tile stay in registers).

    use super::{affine32_tiles, legacy_tiles, MERSENNE_PRIME};

    /// `legacy` with AVX2 written out: AVX2 has no 64-bit multiply, unsigned 64-bit
    /// compare or minimum, which leaves the vectorizer emulating all three. Here the
    /// wrapping product by a 32-bit hash is two 32x32->64 multiplies (`a_lo * h` plus
    /// `a_hi * h` shifted up), the conditional subtract is a blend on the sign of
    /// `r - p` (`r < 2^62`), and the minimum is taken on 32-bit halves: only the low
    /// half of each 64-bit slot is the answer, the high half is ignored.
    #[target_feature(enable = "avx2")]
    pub unsafe fn legacy_avx2(a: &[u64], b: &[u64], hv: &[u64], sig: &mut [u32]) {
        use std::arch::x86_64::*;
        const V: usize = 8; // vectors of 4 slots per tile: 32 permutations
        let k = sig.len();
        let whole = k - k % (4 * V);
        let p = _mm256_set1_epi64x(MERSENNE_PRIME as i64);
        for base in (0..whole).step_by(4 * V) {
            let ld = |v: &[u64], i: usize| {
                _mm256_loadu_si256(v.as_ptr().add(base + 4 * i) as *const __m256i)
            };
            let mut ta = [_mm256_setzero_si256(); V];
            let mut ta_hi = ta;
            let mut tb = ta;
            let mut ts = ta;
            for i in 0..V {
                ta[i] = ld(a, i);
                ta_hi[i] = _mm256_srli_epi64(ta[i], 32);
                tb[i] = ld(b, i);
                let s = &sig[base + 4 * i..base + 4 * i + 4];
                ts[i] = _mm256_set_epi64x(s[3] as i64, s[2] as i64, s[1] as i64, s[0] as i64);
            }
            for &h in hv {
                let h = _mm256_set1_epi64x(h as i64);
                for i in 0..V {
                    let lo = _mm256_mul_epu32(ta[i], h);
                    let hi = _mm256_slli_epi64(_mm256_mul_epu32(ta_hi[i], h), 32);
                    let x = _mm256_add_epi64(_mm256_add_epi64(lo, hi), tb[i]);
                    let r = _mm256_add_epi64(_mm256_and_si256(x, p), _mm256_srli_epi64(x, 61));
                    let t = _mm256_sub_epi64(r, p);
                    let r = _mm256_castpd_si256(_mm256_blendv_pd(
                        _mm256_castsi256_pd(t),
                        _mm256_castsi256_pd(r),
                        _mm256_castsi256_pd(t),
                    ));
                    ts[i] = _mm256_min_epu32(ts[i], r);
                }
            }
            for i in 0..V {
                let mut lanes = [0u64; 4];
                _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, ts[i]);
                for (j, lane) in lanes.iter().enumerate() {
                    sig[base + 4 * i + j] = *lane as u32;
                }
            }
        }
        legacy_tiles::<1>(&a[whole..], &b[whole..], hv, &mut sig[whole..]);
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
    pub unsafe fn legacy_avx512(a: &[u64], b: &[u64], hv: &[u64], sig: &mut [u32]) {
        legacy_tiles::<64>(a, b, hv, sig)
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn affine32_avx2(a: &[u32], b: &[u32], hv: &[u64], sig: &mut [u32]) {
        affine32_tiles::<32>(a, b, hv, sig)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
    pub unsafe fn affine32_avx512(a: &[u32], b: &[u32], hv: &[u64], sig: &mut [u32]) {
        affine32_tiles::<128>(a, b, hv, sig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mersenne_reduction_matches_modulo() {
        for x in [
            0u64,
            1,
            MERSENNE_PRIME - 1,
            MERSENNE_PRIME,
            MERSENNE_PRIME + 5,
            2 * MERSENNE_PRIME,
            u64::MAX,
            1 << 62,
        ] {
            assert_eq!(mod_mersenne(x), x % MERSENNE_PRIME);
        }
    }

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Every compiled copy agrees with the scalar reference and with the formula
    /// written out per slot, for permutation counts around the tile sizes.
    #[test]
    fn vector_paths_match_the_scalar_reference() {
        let mut state = 0xDEAD_BEEF_1234_5678u64;
        for k in [1usize, 7, 8, 16, 31, 64, 100, 128, 129, 256] {
            let a: Vec<u64> = (0..k)
                .map(|_| xorshift(&mut state) % (MERSENNE_PRIME - 1) + 1)
                .collect();
            let b: Vec<u64> = (0..k)
                .map(|_| xorshift(&mut state) % MERSENNE_PRIME)
                .collect();
            // Full 64-bit hashes: only their low halves may count.
            let hashes: Vec<u64> = (0..(k * 3 % 97 + 1))
                .map(|_| xorshift(&mut state))
                .collect();
            let a32: Vec<u64> = a.iter().map(|&x| (x as u32 | 1) as u64).collect();
            let b32: Vec<u64> = b.iter().map(|&x| x as u32 as u64).collect();
            for (scheme, pa, pb) in [("legacy", &a, &b), ("affine32", &a32, &b32)] {
                let base = Permutations::new(scheme, pa, pb).unwrap();
                let mut expected = vec![MAX_HASH; k];
                for &h in &hashes {
                    let h = h as u32;
                    for j in 0..k {
                        let v = if scheme == "legacy" {
                            ((pa[j].wrapping_mul(h as u64).wrapping_add(pb[j])) % MERSENNE_PRIME)
                                as u32
                        } else {
                            (pa[j] as u32)
                                .wrapping_mul(fmix32(h))
                                .wrapping_add(pb[j] as u32)
                        };
                        expected[j] = expected[j].min(v);
                    }
                }
                for simd in [Simd::Scalar, Simd::Avx2, Simd::Avx512] {
                    let perms = base.clone().with_simd(simd);
                    let mut sig = vec![MAX_HASH; k];
                    perms.update(&hashes, &mut Vec::new(), &mut sig);
                    assert_eq!(sig, expected, "{scheme} k={k} {simd:?}");
                }
            }
        }
    }
}
