//! Unigram segmentation: Viterbi over the lattice of vocabulary pieces, exactly as
//! SentencePiece's `EncodeOptimized` computes it (in float, with its tie order).
//!
//! Where the vocabulary proves that every `▁` cuts the lattice, the text is segmented
//! one whitespace-delimited segment at a time and short segments are memoized (see
//! `segment_cuts` and `segment_cache`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::normalizer::one_char_len;
use super::segment_cache::{self, Entry, MAX_PIECES};
use super::segment_cuts::{next_space, Cuts};
use super::trie::PieceTrie;
use super::{Piece, PieceType};
use crate::bpe::piece_cache::pack_short;

/// Penalty below the lowest piece score given to an unknown character.
const UNK_PENALTY: f32 = 10.0;
/// |path score| beyond which sentencepiece re-centres the Viterbi scores.
const SCORE_RESET: f32 = 100_000.0;
/// `Best::id` of an unknown character (other entries hold the piece's trie node).
const UNK_NODE: u32 = u32::MAX;
/// Longest segment the cache holds (what `pack_short` packs).
const SHORT_MAX: usize = 15;

/// Segments whose cache lines are requested ahead of their use.
const LOOKAHEAD: usize = 8;

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

pub struct Unigram {
    min_score: f32,
    /// The pieces Viterbi may use (UNUSED ones left out), each with its effective score.
    trie: PieceTrie,
    /// Bytes a lattice edge can span at most (the longest piece, or a 4-byte character).
    reach: usize,
    /// The proven cuts and this model's key in the per-thread segment caches (None:
    /// always run Viterbi over the whole text).
    segments: Option<(Cuts, u64)>,
    /// Whether every `▁` the walk reaches cuts the lattice (`Cuts::prove`), whether or
    /// not segments are memoized: streaming encoders cut a sentence there (`encode_from`).
    space_cuts: bool,
}

#[derive(Clone, Copy)]
pub struct Best {
    score: f32,
    start: i32,
    /// The trie node of the piece ending here, or UNK_NODE.
    id: u32,
}

const UNREACHED: Best = Best {
    score: 0.0,
    start: -1,
    id: 0,
};

impl Unigram {
    /// `segment_cache`: allow the memo of segment segmentations (results are identical
    /// either way; tests turn it off to compare).
    pub fn new(
        pieces: &[Vec<u8>],
        types: &[PieceType],
        scores: &[f32],
        segment_cache: bool,
    ) -> Unigram {
        // SentencePiece starts from FLT_MAX / FLT_MIN (the smallest positive float, not
        // the most negative one), over NORMAL pieces only.
        let (mut min_score, mut max_score) = (f32::MAX, f32::MIN_POSITIVE);
        for (t, &s) in types.iter().zip(scores) {
            if *t == PieceType::Normal {
                min_score = min_score.min(s);
                max_score = max_score.max(s);
            }
        }
        let mut keys: Vec<(&[u8], i32, f32)> = Vec::new();
        for (id, (piece, t)) in pieces.iter().zip(types).enumerate() {
            let score = match t {
                PieceType::Normal => scores[id],
                // The bonus that makes a user-defined piece always win, in float.
                PieceType::UserDefined => (piece.len() as f32) * max_score - 0.1,
                _ => continue,
            };
            keys.push((piece, id as i32, score));
        }
        let reach = keys.iter().map(|k| k.0.len()).max().unwrap_or(0).max(4);
        let unk_score = min_score - UNK_PENALTY;
        let cuts = Cuts::prove(&keys, unk_score);
        let space_cuts = cuts.is_some();
        Unigram {
            min_score,
            reach,
            trie: PieceTrie::with_scores(&keys),
            segments: cuts
                .filter(|_| segment_cache)
                .map(|c| (c, NEXT_UID.fetch_add(1, Ordering::Relaxed))),
            space_cuts,
        }
    }

    /// Whether segments are memoized for this model.
    pub fn segment_cache(&self) -> bool {
        self.segments.is_some()
    }

    /// Best segmentation of `s` (normalized bytes) as pieces (start, end, id); unknown
    /// characters come out as single-character pieces with `unk_id`.
    pub fn encode(&self, unk_id: u32, s: &[u8], best: &mut Vec<Best>, out: &mut Vec<Piece>) {
        self.encode_from(unk_id, s, 0.0, best, out);
    }

    /// Whether every `▁` that Viterbi's walk reaches cuts the lattice (see `space_cuts`).
    pub fn space_cuts(&self) -> bool {
        self.space_cuts
    }

    /// `encode` of the part of a text that starts at a cut, where the best path's score
    /// is `start_score` (0 at the text's start); returns the best path's score at the end
    /// of `s`, which the part after it starts from. Where `s` ends at a cut of the whole
    /// text, `encode_from(a, 0) ++ encode_from(b, score of a)` is `encode(a ++ b)`:
    /// Viterbi from a cut on depends on the text before it only through that score (the
    /// module documentation of `segment_cuts`), and the parts here are computed with
    /// the same f32 operations as the whole (the score of a cached segment is summed
    /// along its path as Viterbi sums it).
    pub fn encode_from(
        &self,
        unk_id: u32,
        s: &[u8],
        start_score: f32,
        best: &mut Vec<Best>,
        out: &mut Vec<Piece>,
    ) -> f32 {
        if s.is_empty() {
            return start_score;
        }
        if let Some((cuts, uid)) = &self.segments {
            let first = out.len();
            if let Some(score) = self.encode_segments(cuts, *uid, unk_id, s, start_score, best, out)
            {
                return score;
            }
            // Ill-formed UTF-8 put a character across a cut (only a damaged charsmap
            // can produce that): the proof does not apply, so segment the whole text.
            out.truncate(first);
        }
        let (score, _) = self.viterbi(s, start_score, best);
        self.backtrack(unk_id, 0, best, out);
        score
    }

    /// Segment by segment: a cached, certified segmentation where one applies at the
    /// current running score, Viterbi otherwise (over each run of consecutive segments
    /// the cache cannot serve at once). Equal to Viterbi over the whole text
    /// (`segment_cuts`) when it returns the best path's score at the end (Viterbi's,
    /// from `start_score`); None when a character of ill-formed text straddles a cut.
    #[allow(clippy::too_many_arguments)]
    fn encode_segments(
        &self,
        cuts: &Cuts,
        uid: u64,
        unk_id: u32,
        s: &[u8],
        start_score: f32,
        best: &mut Vec<Best>,
        out: &mut Vec<Piece>,
    ) -> Option<f32> {
        let unk_score = self.min_score - UNK_PENALTY;
        segment_cache::with_cache(uid, |cache| {
            // Segments found but not yet segmented: (start, end, packed key). Their cache
            // lines are prefetched when found, LOOKAHEAD segments before they are needed.
            let mut ring = [(0usize, 0usize, 0u128); LOOKAHEAD];
            let (mut head, mut queued) = (0usize, 0usize);
            // Where the next segment to find starts, and the end of the `▁`-delimited
            // stretch it lies in; a stretch too long to cache is split further at class
            // cuts (short stretches stay whole: one lookup each).
            let (mut found, mut stretch, mut split) = (0, 0, false);
            // The score of the best path to `done`, the last cut segmented: what Viterbi
            // carries over.
            let mut score = start_score;
            let mut done = 0;
            loop {
                while queued < LOOKAHEAD && found < s.len() {
                    if found == stretch {
                        stretch = next_space(s, found);
                        split = stretch - found > SHORT_MAX;
                    }
                    let q = if split {
                        cuts.next_class_cut(s, found, stretch)
                    } else {
                        stretch
                    };
                    // Segments too long to cache go to Viterbi with their neighbours.
                    if let Some(key) = pack_short(&s[found..q]) {
                        cache.prefetch(key);
                        ring[(head + queued) % LOOKAHEAD] = (found, q, key);
                        queued += 1;
                    }
                    found = q;
                }
                if queued == 0 {
                    break;
                }
                let (p, q, key) = ring[head];
                head = (head + 1) % LOOKAHEAD;
                queued -= 1;
                if done < p {
                    // The run of uncached segments before this one.
                    score = self.viterbi_run(unk_id, s, done, p, score, best, out)?;
                    done = p;
                }
                // Viterbi re-centres at a start whose score is out of range; nothing past
                // a cut is reached yet, so at a cut that only zeroes the score.
                let base = if (-SCORE_RESET..=SCORE_RESET).contains(&score) {
                    score
                } else {
                    0.0
                };
                let entry = match cache.get(key) {
                    Some(e) => e,
                    None => {
                        let e = self.certify(&s[p..q], unk_id, unk_score);
                        cache.put(key, e)
                    }
                };
                // (A certified entry's characters end exactly at the segment's end.)
                if base.abs() < entry.max_base {
                    score = base;
                    let mut begin = p as u32;
                    for k in 0..entry.len as usize {
                        let end = (p + entry.ends[k] as usize) as u32;
                        out.push((begin, end, entry.ids[k]));
                        // The same f32 additions Viterbi makes along this path.
                        score += entry.scores[k];
                        begin = end;
                    }
                    done = q;
                }
            }
            if done < s.len() {
                score = self.viterbi_run(unk_id, s, done, s.len(), score, best, out)?;
            }
            Some(score)
        })
    }

    /// Viterbi over the segments `s[p..q]` from the carried `score`, appending its best
    /// path; returns the path's score at q, or None when ill-formed text puts a
    /// character across the cut at q.
    #[allow(clippy::too_many_arguments)]
    fn viterbi_run(
        &self,
        unk_id: u32,
        s: &[u8],
        p: usize,
        q: usize,
        score: f32,
        best: &mut Vec<Best>,
        out: &mut Vec<Piece>,
    ) -> Option<f32> {
        let (end_score, whole_chars) = self.viterbi(&s[p..q], score, best);
        if !whole_chars && q < s.len() {
            return None;
        }
        self.backtrack(unk_id, p, best, out);
        Some(end_score)
    }

    /// SentencePiece's Viterbi over `s`, starting from path score `start_score` (0 for a
    /// whole text; the carried score for a segment). Fills `best[0..=s.len()]` and
    /// returns the best path's score at the end, and whether the last character ends
    /// exactly at the end of `s` (always so in well-formed UTF-8).
    fn viterbi(&self, s: &[u8], start_score: f32, best: &mut Vec<Best>) -> (f32, bool) {
        let n = s.len();
        let unk_score = self.min_score - UNK_PENALTY;
        let trie = &self.trie;
        best.clear();
        best.resize(n + 1, UNREACHED);
        best[0].score = start_score;
        let mut start = 0usize;
        let mut whole_chars = true;
        while start < n {
            let mut here = best[start].score;
            if !(-SCORE_RESET..=SCORE_RESET).contains(&here) {
                // sentencepiece re-centres long paths so float precision does not erode
                // tie-breaking: every reached node from here on is shifted by the same
                // offset. Reproduced exactly, since it decides ties in long documents.
                // Nodes reached so far end before start + the longest piece (or an
                // unknown character), which bounds sentencepiece's frontier.
                let offset = here;
                let last = (start + self.reach).min(n);
                best[start].score -= offset;
                for b in &mut best[start + 1..=last] {
                    if b.start != -1 {
                        b.score -= offset;
                    }
                }
                here = 0.0;
            }
            let char_len = one_char_len(s[start]);
            whole_chars = char_len <= n - start;
            let mblen = char_len.min(n - start);
            let mut has_single = false;
            let mut unit = trie.root();
            // best[start + len] for the piece of `len` bytes: zipping the bytes with the
            // targets keeps bounds checks out of the hot loop (a piece never ends past n).
            let targets = &mut best[start + 1..=n];
            for (k, (&b, target)) in s[start..n].iter().zip(targets).enumerate() {
                let Some((node, u)) = trie.child(unit, b) else {
                    break;
                };
                unit = u;
                if let Some(score) = trie.unit_score(node, u) {
                    let cand = score + here;
                    // The trie node stands for the piece: its ID is read only for the
                    // nodes on the final path, not for every winning candidate.
                    if target.start == -1 || cand > target.score {
                        *target = Best {
                            score: cand,
                            start: start as i32,
                            id: node as u32,
                        };
                    }
                    has_single |= k + 1 == mblen;
                }
            }
            if !has_single {
                update(&mut best[start + mblen], unk_score + here, start, UNK_NODE);
            }
            start += mblen;
        }
        (best[n].score, whole_chars)
    }

    /// Appends the best path that `viterbi` left in `best`, shifted by `base` bytes.
    fn backtrack(&self, unk_id: u32, base: usize, best: &[Best], out: &mut Vec<Piece>) {
        let first = out.len();
        let mut end = best.len() - 1;
        while end > 0 {
            let b = best[end];
            let begin = b.start.max(0) as usize;
            let id = if b.id == UNK_NODE {
                unk_id
            } else {
                self.trie.value(b.id as usize) as u32
            };
            out.push(((base + begin) as u32, (base + end) as u32, id));
            if begin >= end {
                break; // unreachable for valid lattices; never loop forever
            }
            end = begin;
        }
        out[first..].reverse();
    }

    /// The segmentation of a short segment (at most 15 bytes) with the range of starting
    /// scores over which f32 Viterbi provably makes it.
    ///
    /// Viterbi is run here in f64 with the exact edge scores (each an f32, so sums of a
    /// few stay exact), keeping at every node the best and second-best candidate. Let T_j
    /// be the exact best score of the segment's prefix up to j, d the number of its
    /// characters, B the largest |candidate score| met, and X the f32 score the segment
    /// starts from. With |X| + B + 1 = M, every f32 addition errs by at most
    /// u = M 2^-24, so by induction f32 Viterbi holds X + T_j within k u at a node k
    /// edges deep (k <= d), and each candidate within d u of its exact value. Where the
    /// exact winner at each node of the best path beats every other candidate there by
    /// more than 2 d u, f32 Viterbi picks the same edge whatever its order of
    /// candidates, so it takes this path. With u taken as M 2^-23 (covering the f64
    /// rounding as well), that holds while |X| < gap 2^22 / (d + 1) - B - 1. Scores also
    /// stay within |X| + B + 1, so no re-centring happens inside the segment while that
    /// is at most 100000. An exact tie (gap 0) or more than MAX_PIECES pieces gives
    /// `Entry::UNCACHEABLE`.
    fn certify(&self, seg: &[u8], unk_id: u32, unk_score: f32) -> Entry {
        let m = seg.len();
        debug_assert!(m <= SHORT_MAX);
        let trie = &self.trie;
        let mut lat = ShortLattice::new();
        let mut chars = 0usize;
        let mut start = 0;
        while start < m {
            chars += 1;
            let here = lat.top[start];
            let mblen = one_char_len(seg[start]);
            if mblen > m - start {
                // Ill-formed text: a character would straddle the cut.
                return Entry::UNCACHEABLE;
            }
            let mut has_single = false;
            let mut unit = trie.root();
            for (k, &b) in seg[start..].iter().enumerate() {
                let Some((node, u)) = trie.child(unit, b) else {
                    break;
                };
                unit = u;
                if let Some(score) = trie.unit_score(node, u) {
                    // As in `viterbi`, the node stands for the piece until the path is known.
                    lat.offer(
                        start + k + 1,
                        here + score as f64,
                        start,
                        node as u32,
                        score,
                    );
                    has_single |= k + 1 == mblen;
                }
            }
            if !has_single {
                lat.offer(
                    start + mblen,
                    here + unk_score as f64,
                    start,
                    UNK_NODE,
                    unk_score,
                );
            }
            start += mblen;
        }
        // The best path, back to front, and the smallest winning margin along it.
        let mut path = [0usize; MAX_PIECES];
        let mut len = 0;
        let mut gap = f64::INFINITY;
        let mut end = m;
        while end > 0 {
            if len == MAX_PIECES {
                return Entry::UNCACHEABLE;
            }
            gap = gap.min(lat.top[end] - lat.second[end]);
            path[len] = end;
            len += 1;
            end = lat.from[end] as usize;
        }
        let bound = lat.bound;
        let d = chars as f64;
        let max_base = (gap * 2f64.powi(22) / (d + 1.0) - bound - 1.0)
            .min(SCORE_RESET as f64 - bound - 2.0)
            // f32 rounds to nearest: shrink first so the stored bound never grows.
            * (1.0 - 1e-6);
        if max_base.is_nan() || max_base <= 0.0 {
            return Entry::UNCACHEABLE;
        }
        let mut entry = Entry::UNCACHEABLE;
        entry.max_base = max_base as f32;
        entry.len = len as u8;
        for k in 0..len {
            let j = path[len - 1 - k];
            entry.ends[k] = j as u8;
            entry.ids[k] = match lat.node[j] {
                UNK_NODE => unk_id,
                node => trie.value(node as usize) as u32,
            };
            entry.scores[k] = lat.edge[j];
        }
        entry
    }
}

/// Lattice nodes of a segment `certify` handles.
const SHORT: usize = SHORT_MAX + 1;

/// The lattice of a short segment in f64, with each node's runner-up (`certify`).
struct ShortLattice {
    /// Best and second-best candidate score per node (exact: sums of a few f32s).
    top: [f64; SHORT],
    second: [f64; SHORT],
    /// The winner's start, trie node (or UNK_NODE) and f32 edge score.
    from: [u8; SHORT],
    node: [u32; SHORT],
    edge: [f32; SHORT],
    /// The largest |candidate score| offered.
    bound: f64,
}

impl ShortLattice {
    fn new() -> ShortLattice {
        let mut top = [f64::NEG_INFINITY; SHORT];
        top[0] = 0.0;
        ShortLattice {
            top,
            second: [f64::NEG_INFINITY; SHORT],
            from: [0; SHORT],
            node: [0; SHORT],
            edge: [0.0; SHORT],
            bound: 0.0,
        }
    }

    #[inline]
    fn offer(&mut self, j: usize, cand: f64, start: usize, node: u32, score: f32) {
        self.bound = self.bound.max(cand.abs());
        if cand > self.top[j] {
            self.second[j] = self.top[j];
            self.top[j] = cand;
            self.from[j] = start as u8;
            self.node[j] = node;
            self.edge[j] = score;
        } else if cand > self.second[j] {
            self.second[j] = cand;
        }
    }
}

/// SentencePiece's update rule. Float arithmetic throughout, as sentencepiece 0.2.3
/// computes it: ties between equal-scoring splits are decided by f32 rounding, so a
/// wider type would pick different (equally good) paths; the first candidate wins ties.
#[inline(always)]
fn update(target: &mut Best, cand: f32, start: usize, id: u32) {
    if target.start == -1 || cand > target.score {
        *target = Best {
            score: cand,
            start: start as i32,
            id,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(pieces: &[(&str, f32)], cache: bool) -> Unigram {
        let mut bytes = vec![b"<unk>".to_vec()];
        let mut types = vec![PieceType::Unknown];
        let mut scores = vec![0.0];
        for &(p, s) in pieces {
            bytes.push(p.as_bytes().to_vec());
            types.push(PieceType::Normal);
            scores.push(s);
        }
        Unigram::new(&bytes, &types, &scores, cache)
    }

    fn encode(m: &Unigram, s: &[u8]) -> Vec<Piece> {
        let (mut best, mut out) = (Vec::new(), Vec::new());
        m.encode(0, s, &mut best, &mut out);
        out
    }

    #[test]
    fn near_ties_follow_the_running_score_as_whole_text_viterbi() {
        // "▁ab" scores one f32 step below "▁a" + "b": the split wins from a score of 0,
        // but from -40000 both sums round alike and the first candidate ("▁ab") wins.
        let whole = f32::from_bits((-2.0f32).to_bits() + 1);
        let pieces = [("▁a", -1.0), ("b", -1.0), ("▁ab", whole), ("▁z", -20000.0)];
        let (cached, plain) = (model(&pieces, true), model(&pieces, false));
        assert!(cached.segment_cache() && !plain.segment_cache());
        let text = "▁ab▁z▁ab▁z▁z▁ab▁z▁z▁z▁z▁ab▁ab▁z▁z▁z▁z▁z▁ab".repeat(4);
        let got = encode(&cached, text.as_bytes());
        assert_eq!(got, encode(&plain, text.as_bytes()));
        let ids: Vec<u32> = got.iter().map(|p| p.2).collect();
        assert!(ids.windows(2).any(|w| w == [1, 2]), "split form");
        assert!(ids.contains(&3), "whole form");
    }

    #[test]
    fn ill_formed_text_across_a_space_falls_back_to_whole_text() {
        let pieces = [("▁a", -1.0), ("b", -1.5), ("▁", -3.0), ("a", -2.0)];
        let (cached, plain) = (model(&pieces, true), model(&pieces, false));
        for s in [
            &b"\xe2\x96\x81a\xf0\xe2\x96\x81b"[..],
            b"\xe2\x96\x81ab\xe2\xe2\x96\x81\xe2\x96\x81a",
            b"a\xe2\x96",
            b"\xe2\x96\x81\xe2\x96\x81",
        ] {
            assert_eq!(encode(&cached, s), encode(&plain, s), "{s:?}");
        }
    }

    #[test]
    fn certified_margin_shrinks_with_the_gap() {
        // Gap 0.001 over 3 characters: usable while |score| < 0.001 2^22 / 4 - 3.
        let m = model(
            &[("▁a", -1.0), ("b", -1.0), ("▁ab", -2.001), ("▁ac", -1.0)],
            true,
        );
        let unk = m.min_score - UNK_PENALTY;
        let tight = m.certify("▁ab".as_bytes(), 0, unk);
        assert!(
            (1000.0..1050.0).contains(&tight.max_base),
            "{}",
            tight.max_base
        );
        let clear = m.certify("▁ac".as_bytes(), 0, unk);
        assert!(clear.max_base > 50_000.0, "{}", clear.max_base);
        // An exact tie, or a gap of one f32 step, is never cached.
        let near = f32::from_bits((-2.0f32).to_bits() + 1);
        for whole in [-2.0, near] {
            let tie = model(&[("▁a", -1.0), ("b", -1.0), ("▁ab", whole)], true);
            assert_eq!(tie.certify("▁ab".as_bytes(), 0, unk).max_base, -1.0);
        }
    }
}
