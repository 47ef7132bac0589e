//! datasketch's shingle hashes: `sha1_hash32` (the first four bytes of the SHA-1 digest,
//! little-endian) and `sha1_hash64` (the first eight), computed many at a time.
//!
//! Shingles are short (about 36 bytes for five words), so almost every one is a single
//! padded SHA-1 block. With the x86 SHA extensions (detected at run time) such a block
//! is built in registers straight from the shingle buffer (which has 64 readable bytes
//! after every shingle start): two table lookups by length clear the bytes past the end
//! and add the padding. The blocks of one document are compressed in a tight loop where
//! independent blocks overlap in the out-of-order core; the generic `sha1` crate pays
//! its streaming wrapper (buffering, padding, output formatting) per call, which costs
//! more than the compression itself here. Everywhere else, and as the reference, the
//! `sha1` crate hashes each shingle.

use sha1::{Digest, Sha1};

use super::shingles::Prepared;

/// `sha1_hash64` with the `sha1` crate: the portable path and the reference.
#[inline]
pub fn sha1_hash64(data: &[u8]) -> u64 {
    let d = Sha1::digest(data);
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// Computes the `sha1_hash64` of every shingle of a [`Prepared`] document.
pub struct ShingleHasher {
    shani: bool,
}

impl Default for ShingleHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl ShingleHasher {
    /// The fastest path this CPU supports.
    pub fn new() -> ShingleHasher {
        ShingleHasher {
            shani: shani::available(),
        }
    }

    /// The `sha1` crate for every shingle (the reference path).
    pub fn portable() -> ShingleHasher {
        ShingleHasher { shani: false }
    }

    pub fn uses_sha_extensions(&self) -> bool {
        self.shani
    }

    /// Appends the hash of every shingle of `doc` to `out`, in document order.
    pub fn hash_all(&self, doc: &Prepared<'_>, out: &mut Vec<u64>) {
        out.reserve(doc.spans.len());
        if self.shani {
            shani::hash_spans(doc.buf, doc.spans, out);
        } else {
            out.extend(doc.spans.iter().map(|&span| sha1_hash64(doc.shingle(span))));
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod shani {
    use std::arch::x86_64::*;

    const INIT: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];

    pub fn available() -> bool {
        is_x86_feature_detected!("sha")
            && is_x86_feature_detected!("sse2")
            && is_x86_feature_detected!("ssse3")
            && is_x86_feature_detected!("sse4.1")
    }

    /// Four rounds with the next message words folded into E.
    macro_rules! rounds4 {
        ($abcd:expr, $e:expr, $w:expr, $f:literal) => {
            _mm_sha1rnds4_epu32($abcd, _mm_sha1nexte_epu32($e, $w), $f)
        };
    }

    /// The next four message schedule words from the previous sixteen.
    macro_rules! schedule {
        ($w0:expr, $w1:expr, $w2:expr, $w3:expr) => {
            _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32($w0, $w1), $w2), $w3)
        };
    }

    /// One SHA-1 compression of the 64 bytes at `p` into (ABCD, E), E in the top lane.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn compress(abcd: __m128i, e: __m128i, p: *const u8) -> (__m128i, __m128i) {
        let be = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0A0B_0C0D_0E0F);
        // A macro, not a closure: the loads must be compiled with this function's features.
        macro_rules! load {
            ($k:literal) => {
                _mm_shuffle_epi8(_mm_loadu_si128(p.add(16 * $k) as *const __m128i), be)
            };
        }
        let (mut w0, mut w1, mut w2, mut w3) = (load!(0), load!(1), load!(2), load!(3));
        let mut w4;
        let mut h0 = abcd;
        let mut h1 = _mm_add_epi32(e, w0);
        // Rounds 0..20: the E input alternates between h0 and h1.
        h1 = _mm_sha1rnds4_epu32(h0, h1, 0);
        h0 = rounds4!(h1, h0, w1, 0);
        h1 = rounds4!(h0, h1, w2, 0);
        h0 = rounds4!(h1, h0, w3, 0);
        w4 = schedule!(w0, w1, w2, w3);
        h1 = rounds4!(h0, h1, w4, 0);
        // Rounds 20..40.
        w0 = schedule!(w1, w2, w3, w4);
        h0 = rounds4!(h1, h0, w0, 1);
        w1 = schedule!(w2, w3, w4, w0);
        h1 = rounds4!(h0, h1, w1, 1);
        w2 = schedule!(w3, w4, w0, w1);
        h0 = rounds4!(h1, h0, w2, 1);
        w3 = schedule!(w4, w0, w1, w2);
        h1 = rounds4!(h0, h1, w3, 1);
        w4 = schedule!(w0, w1, w2, w3);
        h0 = rounds4!(h1, h0, w4, 1);
        // Rounds 40..60.
        w0 = schedule!(w1, w2, w3, w4);
        h1 = rounds4!(h0, h1, w0, 2);
        w1 = schedule!(w2, w3, w4, w0);
        h0 = rounds4!(h1, h0, w1, 2);
        w2 = schedule!(w3, w4, w0, w1);
        h1 = rounds4!(h0, h1, w2, 2);
        w3 = schedule!(w4, w0, w1, w2);
        h0 = rounds4!(h1, h0, w3, 2);
        w4 = schedule!(w0, w1, w2, w3);
        h1 = rounds4!(h0, h1, w4, 2);
        // Rounds 60..80.
        w0 = schedule!(w1, w2, w3, w4);
        h0 = rounds4!(h1, h0, w0, 3);
        w1 = schedule!(w2, w3, w4, w0);
        h1 = rounds4!(h0, h1, w1, 3);
        w2 = schedule!(w3, w4, w0, w1);
        h0 = rounds4!(h1, h0, w2, 3);
        w3 = schedule!(w4, w0, w1, w2);
        h1 = rounds4!(h0, h1, w3, 3);
        w4 = schedule!(w0, w1, w2, w3);
        h0 = rounds4!(h1, h0, w4, 3);
        (_mm_add_epi32(abcd, h0), _mm_sha1nexte_epu32(h1, e))
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn init() -> (__m128i, __m128i) {
        (
            _mm_set_epi32(
                INIT[0] as i32,
                INIT[1] as i32,
                INIT[2] as i32,
                INIT[3] as i32,
            ),
            _mm_set_epi32(INIT[4] as i32, 0, 0, 0),
        )
    }

    /// The first eight digest bytes, little-endian: A and B, each big-endian.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn head64(abcd: __m128i) -> u64 {
        let a = _mm_extract_epi32(abcd, 3) as u32;
        let b = _mm_extract_epi32(abcd, 2) as u32;
        u64::from(a.swap_bytes()) | (u64::from(b.swap_bytes()) << 32)
    }

    /// Per length 0..=55: 0xFF over the message bytes, zero after them.
    static KEEP: [[u8; 64]; 56] = {
        let mut t = [[0u8; 64]; 56];
        let mut len = 0;
        while len < 56 {
            let mut i = 0;
            while i < len {
                t[len][i] = 0xFF;
                i += 1;
            }
            len += 1;
        }
        t
    };

    /// Per length 0..=55: the padding of a one-block message (0x80, zeros, bit length).
    static PADDING: [[u8; 64]; 56] = {
        let mut t = [[0u8; 64]; 56];
        let mut len = 0;
        while len < 56 {
            t[len][len] = 0x80;
            let bits = (len as u64 * 8).to_be_bytes();
            let mut i = 0;
            while i < 8 {
                t[len][56 + i] = bits[i];
                i += 1;
            }
            len += 1;
        }
        t
    };

    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn spans(buf: &[u8], spans: &[(usize, usize)], out: &mut Vec<u64>) {
        let (abcd0, e0) = init();
        for &(s, e) in spans {
            let len = e - s;
            if len > 55 {
                out.push(any(&buf[s..e]));
                continue;
            }
            assert!(s + 64 <= buf.len(), "shingle buffer lacks its padding");
            let p = buf.as_ptr().add(s);
            let (keep, pad) = (KEEP[len].as_ptr(), PADDING[len].as_ptr());
            let mut block = [0u8; 64];
            for k in 0..4 {
                let at = |q: *const u8| _mm_loadu_si128(q.add(16 * k) as *const __m128i);
                let v = _mm_or_si128(_mm_and_si128(at(p), at(keep)), at(pad));
                _mm_storeu_si128(block.as_mut_ptr().add(16 * k) as *mut __m128i, v);
            }
            let (abcd, _) = compress(abcd0, e0, block.as_ptr());
            out.push(head64(abcd));
        }
    }

    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn any(data: &[u8]) -> u64 {
        let (mut abcd, mut e) = init();
        let mut full = data.chunks_exact(64);
        for block in &mut full {
            (abcd, e) = compress(abcd, e, block.as_ptr());
        }
        let rest = full.remainder();
        let mut tail = [0u8; 128];
        tail[..rest.len()].copy_from_slice(rest);
        tail[rest.len()] = 0x80;
        let end = if rest.len() <= 55 { 64 } else { 128 };
        tail[end - 8..end].copy_from_slice(&((data.len() as u64) * 8).to_be_bytes());
        for block in tail[..end].chunks_exact(64) {
            (abcd, e) = compress(abcd, e, block.as_ptr());
        }
        head64(abcd)
    }

    /// Hashes of the shingles `spans` of `buf` (64 readable bytes after each start).
    pub fn hash_spans(buf: &[u8], spans_: &[(usize, usize)], out: &mut Vec<u64>) {
        assert!(available());
        // SAFETY: the SHA extensions are present (checked above).
        unsafe { spans(buf, spans_, out) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod shani {
    pub fn available() -> bool {
        false
    }

    pub fn hash_spans(_buf: &[u8], _spans: &[(usize, usize)], _out: &mut Vec<u64>) {
        unreachable!("no SHA extensions on this architecture")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_matches_the_sha1_crate_at_every_length() {
        // One buffer holding messages of every length 0..300 back to back, plus the
        // padding a prepared document has.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut buf = Vec::new();
        let mut spans = Vec::new();
        for len in 0..300usize {
            let start = buf.len();
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                buf.push(state as u8);
            }
            spans.push((start, start + len));
        }
        buf.resize(buf.len() + super::super::shingles::PAD, 0xAB);
        let doc = Prepared {
            buf: &buf,
            spans: &spans,
        };
        let (mut fast, mut reference) = (Vec::new(), Vec::new());
        ShingleHasher::new().hash_all(&doc, &mut fast);
        ShingleHasher::portable().hash_all(&doc, &mut reference);
        assert_eq!(fast, reference);
    }

    #[test]
    fn known_digest() {
        // SHA-1("abc") = a9993e36 4706816a ...
        assert_eq!(
            sha1_hash64(b"abc"),
            u64::from_le_bytes([0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a])
        );
    }
}
