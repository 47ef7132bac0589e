//! Counter-based randomness for stochastic segmentation (seed 000, 0x08 "Reproducing
//! stochastic segmentation").
//!
//! A draw is a pure function of (base seed, epoch, sample id, view, occurrence): no
//! generator state is carried between samples, so worker count, prefetch depth or a
//! restart cannot change which segmentation a sample receives. The Python twin in
//! `tokenpact/stochastic.py` must compute the same bits; `RNG_NAME` is recorded in
//! training records and manifests.

pub const RNG_NAME: &str = "splitmix64-counter/1";

#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stream key of one (seed, epoch, sample, view): a chained mix, so changing any
/// field gives an unrelated stream.
pub fn stream_key(seed: u64, epoch: u64, sample: u64, view: u64) -> u64 {
    [seed, epoch, sample, view]
        .iter()
        .fold(0u64, |h, &field| splitmix64(h ^ field))
}

/// The `occurrence`-th uniform draw in [0, 1) of a stream (53 random bits).
#[inline]
pub fn uniform(key: u64, occurrence: u64) -> f64 {
    let bits = splitmix64(key ^ splitmix64(occurrence));
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The `lcg64_v1` generator: a 64-bit linear congruential sequence with Knuth's MMIX
/// constants started at the seed; a draw is the new state's top 53 bits over 2**53.
/// Sequential (the Python twin is `tokenpact.stochastic.Lcg64`).
pub struct Lcg64 {
    state: u64,
}

pub const LCG64_NAME: &str = "lcg64_v1";
const LCG64_MULTIPLIER: u64 = 6_364_136_223_846_793_005;
const LCG64_INCREMENT: u64 = 1_442_695_040_888_963_407;

impl Lcg64 {
    pub fn new(seed: u64) -> Lcg64 {
        Lcg64 { state: seed }
    }

    /// The next draw in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.state = self
            .state
            .wrapping_mul(LCG64_MULTIPLIER)
            .wrapping_add(LCG64_INCREMENT);
        (self.state >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_values() {
        // Pinned so the Python twin (tests/unit/test_stochastic.py) checks the same bits.
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        let k = stream_key(7, 0, 0, 0);
        assert_ne!(k, stream_key(7, 1, 0, 0));
        let u = uniform(k, 0);
        assert!((0.0..1.0).contains(&u));
    }
}
