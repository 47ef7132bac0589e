//! The Unigram segmentation lattice (seed 000, 0x08): Viterbi, forward-backward in log
//! space, n-best and forward-filtering backward-sampling.
//!
//! An edge `(start, end, id)` says piece `id` covers `chars[start..end]`. Edges are
//! generated in start order; that order is enough for both recurrences because every
//! edge points forward. A position without a one-character piece gets an unknown edge
//! (id `UNK`) so every string has at least one segmentation, as in SentencePiece.

use crate::rng;
use crate::sentencepiece::trie::PieceTrie;

pub const UNK: u32 = u32::MAX;

/// Trie over the pieces' UTF-8 bytes: the double array SentencePiece encoding uses, one
/// array read per byte, so the walks from every position of every word (the bulk of
/// the E-step and of pruning) stay cheap even with a million seed pieces.
pub struct Trie {
    bytes: PieceTrie,
    pub max_len: usize,
}

impl Trie {
    pub fn build<'a>(pieces: impl Iterator<Item = (&'a str, u32)>) -> Trie {
        // One key vector, no copies: training builds tries of a million seed pieces.
        let mut keys: Vec<(&[u8], i32, f32)> = pieces
            .map(|(p, id)| (p.as_bytes(), id as i32, 0.0))
            .collect();
        // Of equal pieces the lowest ID wins (the byte trie keeps the first of equal keys).
        keys.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
        let max_len = keys
            .iter()
            .map(|k| String::from_utf8_lossy(k.0).chars().count())
            .max()
            .unwrap_or(0);
        Trie {
            bytes: PieceTrie::unscored(&keys),
            max_len,
        }
    }

    /// Calls `f(end, id)` for every piece that is a prefix of `chars[start..]`.
    #[inline]
    pub fn prefixes(&self, chars: &[char], start: usize, mut f: impl FnMut(usize, u32)) {
        let mut node = 0usize;
        for (k, &c) in chars[start..].iter().enumerate() {
            let mut utf8 = [0u8; 4];
            for &b in c.encode_utf8(&mut utf8).as_bytes() {
                match self.bytes.step(node, b) {
                    Some(n) => node = n,
                    None => return,
                }
            }
            // Pieces are whole characters, so keys end only at character boundaries.
            let id = self.bytes.value(node);
            if id >= 0 {
                f(start + k + 1, id as u32);
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Edge {
    pub start: u32,
    pub end: u32,
    pub id: u32,
    pub logp: f64,
}

/// Builds the edges of `chars` into `out` (start order). `skip` (start, end, id) omits
/// one edge: pruning asks for a piece's best segmentation without the piece itself.
pub fn build_edges(
    trie: &Trie,
    logp: &[f64],
    unk_logp: f64,
    chars: &[char],
    skip: Option<(usize, usize, u32)>,
    out: &mut Vec<Edge>,
) {
    out.clear();
    for start in 0..chars.len() {
        let mut single = false;
        trie.prefixes(chars, start, |end, id| {
            if skip == Some((start, end, id)) || logp[id as usize] == f64::NEG_INFINITY {
                return;
            }
            single |= end == start + 1;
            out.push(Edge {
                start: start as u32,
                end: end as u32,
                id,
                logp: logp[id as usize],
            });
        });
        if !single && skip.is_none() {
            out.push(Edge {
                start: start as u32,
                end: start as u32 + 1,
                id: UNK,
                logp: unk_logp,
            });
        }
    }
}

#[inline]
fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// Best path as edge indices (empty when `n == 0` or no path) and its log score.
pub fn viterbi(edges: &[Edge], n: usize) -> (Vec<usize>, f64) {
    let mut score = vec![f64::NEG_INFINITY; n + 1];
    let mut back = vec![usize::MAX; n + 1];
    score[0] = 0.0;
    for (k, e) in edges.iter().enumerate() {
        let s = score[e.start as usize] + e.logp;
        // Strictly greater: among equal scores the first edge in start order wins.
        if s > score[e.end as usize] {
            score[e.end as usize] = s;
            back[e.end as usize] = k;
        }
    }
    if score[n] == f64::NEG_INFINITY {
        return (Vec::new(), f64::NEG_INFINITY);
    }
    let mut path = Vec::new();
    let mut pos = n;
    while pos > 0 {
        let k = back[pos];
        path.push(k);
        pos = edges[k].start as usize;
    }
    path.reverse();
    (path, score[n])
}

/// log alpha (forward) with piece scores multiplied by `temperature`.
pub fn forward(edges: &[Edge], n: usize, temperature: f64) -> Vec<f64> {
    let mut alpha = vec![f64::NEG_INFINITY; n + 1];
    alpha[0] = 0.0;
    for e in edges {
        let a = alpha[e.start as usize];
        if a != f64::NEG_INFINITY {
            alpha[e.end as usize] = log_add(alpha[e.end as usize], a + temperature * e.logp);
        }
    }
    alpha
}

/// Adds `weight * posterior` of every edge to `expected[id]`; returns log P(x).
pub fn accumulate_posteriors(edges: &[Edge], n: usize, weight: f64, expected: &mut [f64]) -> f64 {
    let alpha = forward(edges, n, 1.0);
    let z = alpha[n];
    if z == f64::NEG_INFINITY {
        return z;
    }
    let mut beta = vec![f64::NEG_INFINITY; n + 1];
    beta[n] = 0.0;
    for e in edges.iter().rev() {
        let b = beta[e.end as usize];
        if b != f64::NEG_INFINITY {
            beta[e.start as usize] = log_add(beta[e.start as usize], e.logp + b);
        }
    }
    for e in edges {
        if e.id == UNK {
            continue;
        }
        let g = alpha[e.start as usize] + e.logp + beta[e.end as usize] - z;
        expected[e.id as usize] += weight * g.exp();
    }
    z
}

/// The `k` best paths (edge indices, log score), best first; exact k-best dynamic
/// programming: every position keeps its `k` best partial paths.
pub fn nbest(edges: &[Edge], n: usize, k: usize) -> Vec<(Vec<usize>, f64)> {
    if k == 0 {
        return Vec::new();
    }
    // best[j]: (score, edge index, rank of the predecessor entry at edge.start)
    let mut best: Vec<Vec<(f64, usize, usize)>> = vec![Vec::new(); n + 1];
    best[0].push((0.0, usize::MAX, 0));
    let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (i, e) in edges.iter().enumerate() {
        incoming[e.end as usize].push(i);
    }
    for j in 1..=n {
        let mut cand: Vec<(f64, usize, usize)> = Vec::new();
        for &ei in &incoming[j] {
            let e = edges[ei];
            for (r, &(s, _, _)) in best[e.start as usize].iter().enumerate() {
                cand.push((s + e.logp, ei, r));
            }
        }
        cand.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        cand.truncate(k);
        best[j] = cand;
    }
    let mut out = Vec::new();
    for r in 0..best[n].len() {
        let mut path = Vec::new();
        let (mut pos, mut rank) = (n, r);
        while pos > 0 {
            let (_, ei, prev) = best[pos][rank];
            path.push(ei);
            pos = edges[ei].start as usize;
            rank = prev;
        }
        path.reverse();
        out.push((path, best[n][r].0));
    }
    out
}

/// Forward-filtering backward-sampling from q(z) proportional to P(z)^temperature.
///
/// Draw order (the replay contract): one draw per step, from the end of the text
/// backwards; the candidates at a position are its incoming edges in (start, trie)
/// order. Draw `t` of the text uses occurrence `first_occurrence + t`; returns the path
/// and the next unused occurrence.
pub fn sample(
    edges: &[Edge],
    n: usize,
    temperature: f64,
    key: u64,
    first_occurrence: u64,
) -> (Vec<usize>, u64) {
    let alpha = forward(edges, n, temperature);
    let mut occurrence = first_occurrence;
    if n == 0 || alpha[n] == f64::NEG_INFINITY {
        return (Vec::new(), occurrence);
    }
    let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (i, e) in edges.iter().enumerate() {
        incoming[e.end as usize].push(i);
    }
    let mut path = Vec::new();
    let mut pos = n;
    while pos > 0 {
        let u = rng::uniform(key, occurrence);
        occurrence += 1;
        let mut acc = 0.0;
        let mut chosen = usize::MAX;
        for &ei in &incoming[pos] {
            let e = edges[ei];
            let w = (alpha[e.start as usize] + temperature * e.logp - alpha[pos]).exp();
            if w > 0.0 {
                chosen = ei;
                acc += w;
                if u < acc {
                    break;
                }
            }
        }
        // Rounding can leave the weights summing just under u: the last viable edge.
        path.push(chosen);
        pos = edges[chosen].start as usize;
    }
    path.reverse();
    (path, occurrence)
}

/// The segmentation of `chars[..n]` at share `u` in [0, 1) of the exact inverse CDF of
/// q(z) proportional to P(z)^temperature, the segmentations taken in lexicographic
/// ID-path order (the `lcg64_v1` contract: one draw per segment). Walks forward: at each
/// position the outgoing edges in ascending ID order (unknown last) split the remaining
/// share by their mass (edge score plus the backward marginal of its end).
pub fn sample_lexicographic(edges: &[Edge], n: usize, temperature: f64, u: f64) -> Vec<usize> {
    let mut beta = vec![f64::NEG_INFINITY; n + 1];
    beta[n] = 0.0;
    for e in edges.iter().rev() {
        let b = beta[e.end as usize];
        if b != f64::NEG_INFINITY {
            beta[e.start as usize] = log_add(beta[e.start as usize], temperature * e.logp + b);
        }
    }
    if n == 0 || beta[0] == f64::NEG_INFINITY {
        return Vec::new();
    }
    let mut outgoing: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (i, e) in edges.iter().enumerate() {
        outgoing[e.start as usize].push(i);
    }
    let mut path = Vec::new();
    let (mut pos, mut u) = (0usize, u);
    while pos < n {
        let mut out = std::mem::take(&mut outgoing[pos]);
        out.sort_by_key(|&k| edges[k].id);
        let mut acc = 0.0;
        let mut chosen = None;
        for &k in &out {
            let e = edges[k];
            let w = (temperature * e.logp + beta[e.end as usize] - beta[pos]).exp();
            if w > 0.0 {
                chosen = Some((k, acc, w));
                if u < acc + w {
                    break;
                }
                acc += w;
            }
        }
        // Rounding can leave the masses summing just under u: the last viable edge.
        let (k, before, w) = chosen.expect("a reachable position has a viable edge");
        u = ((u - before) / w).clamp(0.0, 1.0 - f64::EPSILON);
        path.push(k);
        pos = edges[k].end as usize;
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn abab() -> (Trie, Vec<f64>) {
        let pieces = ["a", "b", "ab", "aba", "bab"];
        let probs = [0.25f64, 0.25, 0.35, 0.1, 0.05];
        let trie = Trie::build(pieces.iter().enumerate().map(|(i, p)| (*p, i as u32)));
        (trie, probs.iter().map(|p| p.ln()).collect())
    }

    #[test]
    fn seed_abab() {
        let (trie, logp) = abab();
        let chars: Vec<char> = "abab".chars().collect();
        let mut edges = Vec::new();
        build_edges(&trie, &logp, -20.0, &chars, None, &mut edges);
        let mut expected = vec![0.0; 5];
        let z = accumulate_posteriors(&edges, 4, 1.0, &mut expected);
        assert!((z.exp() - 1329.0 / 6400.0).abs() < 1e-12);
        assert!((expected[2] - 616.0 / 443.0).abs() < 1e-12);
        let (path, _) = viterbi(&edges, 4);
        let ids: Vec<u32> = path.iter().map(|&k| edges[k].id).collect();
        assert_eq!(ids, [2, 2]);
        let best = nbest(&edges, 4, 6);
        assert_eq!(best.len(), 6);
        assert!((best[0].1.exp() - 49.0 / 400.0).abs() < 1e-12);
        assert!((best[1].1.exp() - 1.0 / 40.0).abs() < 1e-12);
    }

    #[test]
    fn lexicographic_inverse_cdf() {
        // Cumulative shares of the six paths in ID order: 25, 165, 245, 385, 1169, 1329
        // (/1329); a share picks the first path whose cumulative share exceeds it.
        let (trie, logp) = abab();
        let chars: Vec<char> = "abab".chars().collect();
        let mut edges = Vec::new();
        build_edges(&trie, &logp, -20.0, &chars, None, &mut edges);
        let ids = |u: f64| -> Vec<u32> {
            sample_lexicographic(&edges, 4, 1.0, u)
                .iter()
                .map(|&k| edges[k].id)
                .collect()
        };
        assert_eq!(ids(0.0), [0, 1, 0, 1]);
        assert_eq!(ids(24.0 / 1329.0), [0, 1, 0, 1]);
        assert_eq!(ids(26.0 / 1329.0), [0, 1, 2]);
        assert_eq!(ids(200.0 / 1329.0), [0, 4]);
        assert_eq!(ids(300.0 / 1329.0), [2, 0, 1]);
        assert_eq!(ids(1000.0 / 1329.0), [2, 2]);
        assert_eq!(ids(1300.0 / 1329.0), [3, 1]);
    }
}
