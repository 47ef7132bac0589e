//! The naive Bayes language identifier of langid.py / py3langid, run natively over many
//! documents at once. The model (a byte DFA whose states emit feature IDs, per-feature
//! per-class log probabilities as float16, class priors as float32) is py3langid's own
//! file, handed over by Python; the arithmetic is defined, not BLAS's: per class, the
//! feature terms `log1p(count) * ptc[f][c]` are summed in float64 in ascending feature
//! order, the prior is added, scores are scaled by `1/sqrt(bytes)` and normalized with
//! `exp(s - max) / sum`, summed in class order. `tokenpact.data.cleaning.langid_model`
//! is the readable Python reference with the same arithmetic.

use crate::error::{CoreError, CoreResult};

/// float16 bits to f64 (exact).
fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1F);
    let frac = f64::from(bits & 0x3FF);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        0x1F if frac == 0.0 => sign * f64::INFINITY,
        0x1F => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("f16c") && std::is_x86_feature_detected!("avx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `acc[c] += w * row[c]` with the float16 entries widened by F16C: a product and a
/// sum, each rounded to f64 (no fused multiply-add), as the scalar loop computes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn accumulate_f16c(acc: &mut [f64], row: &[u16], w: f64) {
    use std::arch::x86_64::*;
    let wv = _mm256_set1_pd(w);
    for (a, h) in acc.chunks_exact_mut(8).zip(row.chunks_exact(8)) {
        let halves = _mm_loadu_si128(h.as_ptr().cast());
        let singles = _mm256_cvtph_ps(halves);
        let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(singles));
        let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(singles));
        let a_lo = _mm256_loadu_pd(a.as_ptr());
        let a_hi = _mm256_loadu_pd(a.as_ptr().add(4));
        _mm256_storeu_pd(a.as_mut_ptr(), _mm256_add_pd(a_lo, _mm256_mul_pd(wv, lo)));
        _mm256_storeu_pd(
            a.as_mut_ptr().add(4),
            _mm256_add_pd(a_hi, _mm256_mul_pd(wv, hi)),
        );
    }
}

/// One loaded model restricted to a set of classes (columns).
#[derive(Debug)]
pub struct NbModel {
    /// Distinct 256-entry transition rows, flattened.
    rows: Vec<u32>,
    /// Row of each DFA state.
    state_row: Vec<u32>,
    /// Feature emitted on entering each state (-1: none).
    output: Vec<i32>,
    /// The selected classes' columns of the feature table as float16 bits, one row of
    /// `stride` entries per feature (zero padded to a multiple of 8).
    ptc: Vec<u16>,
    stride: usize,
    /// Prior of each selected class.
    prior: Vec<f64>,
    /// Number of selected classes.
    classes: usize,
    /// (first, duplicate) selected-class positions of labels that occur twice.
    aliases: Vec<(usize, usize)>,
}

impl NbModel {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rows: Vec<u32>,
        state_row: Vec<u32>,
        output: Vec<i32>,
        ptc: Vec<u16>,
        all_classes: usize,
        prior: Vec<f32>,
        columns: Vec<usize>,
        aliases: Vec<(usize, usize)>,
    ) -> CoreResult<Self> {
        let bad = |m: &str| Err(CoreError::Artifact(format!("language model: {m}")));
        if !rows.len().is_multiple_of(256) || rows.is_empty() {
            return bad("transition rows are not 256 wide");
        }
        let n_rows = rows.len() / 256;
        let states = state_row.len();
        if output.len() != states || states == 0 {
            return bad("one output per DFA state is required");
        }
        if state_row.iter().any(|r| *r as usize >= n_rows) {
            return bad("a state names a missing transition row");
        }
        if rows.iter().any(|s| *s as usize >= states) {
            return bad("a transition leads to a missing state");
        }
        if all_classes == 0 || !ptc.len().is_multiple_of(all_classes) {
            return bad("the feature table is not [features, classes]");
        }
        let features = ptc.len() / all_classes;
        if output.iter().any(|f| *f >= 0 && *f as usize >= features) {
            return bad("a state emits a missing feature");
        }
        if prior.len() != columns.len() || columns.iter().any(|c| *c >= all_classes) {
            return bad("class columns and priors disagree");
        }
        if columns.is_empty() {
            return bad("no classes selected");
        }
        if aliases
            .iter()
            .any(|(a, b)| *a >= columns.len() || *b >= columns.len())
        {
            return bad("alias pair out of range");
        }
        let stride = columns.len().div_ceil(8) * 8;
        let mut table = vec![0u16; features * stride];
        for f in 0..features {
            let row = &ptc[f * all_classes..(f + 1) * all_classes];
            for (k, &c) in columns.iter().enumerate() {
                table[f * stride + k] = row[c];
            }
        }
        Ok(Self {
            rows,
            state_row,
            output,
            ptc: table,
            stride,
            prior: prior.into_iter().map(f64::from).collect(),
            classes: columns.len(),
            aliases,
        })
    }

    /// Sorted (feature, count) pairs of the DFA walk over `bytes`.
    fn features(&self, bytes: &[u8]) -> Vec<(u32, u32)> {
        let mut found: Vec<u32> = Vec::new();
        let mut state = 0usize;
        for &b in bytes {
            let row = self.state_row[state] as usize;
            state = self.rows[row * 256 + b as usize] as usize;
            let f = self.output[state];
            if f >= 0 {
                found.push(f as u32);
            }
        }
        found.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::new();
        for f in found {
            match out.last_mut() {
                Some((g, n)) if *g == f => *n += 1,
                _ => out.push((f, 1)),
            }
        }
        out
    }

    fn prefetch_row(&self, f: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let row = &self.ptc[f * self.stride..(f + 1) * self.stride];
            for line in row.chunks(32) {
                // SAFETY: a prefetch never faults or changes memory.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        line.as_ptr().cast(),
                    );
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = f;
    }

    /// (selected-class index, normalized probability) of the best class for `bytes`
    /// (already lowered when all upper case, NFC-normalized and UTF-8 encoded).
    pub fn classify(&self, bytes: &[u8]) -> (usize, f64) {
        let k = self.classes;
        let feats = self.features(bytes);
        let mut scores = vec![0.0f64; k];
        if !feats.is_empty() {
            let mut acc = vec![0.0f64; self.stride];
            let f16c = has_f16c();
            const AHEAD: usize = 4;
            for &(f, _) in feats.iter().take(AHEAD) {
                self.prefetch_row(f as usize);
            }
            for (i, &(f, count)) in feats.iter().enumerate() {
                if let Some(&(next, _)) = feats.get(i + AHEAD) {
                    self.prefetch_row(next as usize);
                }
                let w = f64::from(count).ln_1p();
                let base = f as usize * self.stride;
                let row = &self.ptc[base..base + self.stride];
                if f16c {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: F16C and AVX were detected at run time; `row` and `acc`
                    // have `stride` (a multiple of 8) entries.
                    unsafe {
                        accumulate_f16c(&mut acc, row, w)
                    };
                } else {
                    for (a, &h) in acc.iter_mut().zip(row) {
                        *a += w * f16_to_f64(h);
                    }
                }
            }
            for ((s, a), p) in scores.iter_mut().zip(&acc).zip(&self.prior) {
                *s = a + p;
            }
        }
        let inv = 1.0 / (bytes.len().max(1) as f64).sqrt();
        for s in scores.iter_mut() {
            *s *= inv;
        }
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut total = 0.0;
        for s in scores.iter_mut() {
            *s = (*s - max).exp();
            total += *s;
        }
        for s in scores.iter_mut() {
            *s /= total;
        }
        for &(i, j) in &self.aliases {
            scores[i] += scores[j];
            scores[j] = 0.0;
        }
        let mut best = 0;
        for (i, s) in scores.iter().enumerate() {
            if *s > scores[best] {
                best = i;
            }
        }
        (best, scores[best])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_is_exact() {
        assert_eq!(f16_to_f64(0x3C00), 1.0);
        assert_eq!(f16_to_f64(0xC000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(f16_to_f64(0x7BFF), 65504.0);
    }

    #[test]
    fn two_class_model_prefers_the_feature_class() {
        // States: 0 start; byte b'a' -> state 1 (feature 0), anything else -> state 0.
        let mut rows = vec![0u32; 256];
        rows[b'a' as usize] = 1;
        let model = NbModel::new(
            rows,
            vec![0, 0],
            vec![-1, 0],
            vec![0x3C00, 0xBC00], // feature 0: +1 for class 0, -1 for class 1
            2,
            vec![0.0, 0.0],
            vec![0, 1],
            vec![],
        )
        .unwrap();
        let (c, p) = model.classify(b"aaaa");
        assert_eq!(c, 0);
        assert!(p > 0.5 && p < 1.0);
        let (_, q) = model.classify(b"");
        assert_eq!(q, 0.5);
        assert!(NbModel::new(
            vec![5; 256],
            vec![0],
            vec![-1],
            vec![0],
            1,
            vec![0.0],
            vec![0],
            vec![]
        )
        .is_err());
    }
}
