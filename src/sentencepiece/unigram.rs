//! Unigram segmentation: Viterbi over the lattice of vocabulary pieces, exactly as
//! SentencePiece's `EncodeOptimized` computes it (in float, with its tie order).
//!
//! Where the vocabulary proves that every `▁` cuts the lattice, the text is segmented
//! one whitespace-delimited segment at a time and short segments are memoized (see
//! `segment_cut_proof` and `segment_cache`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::normalizer::one_char_len;
use super::segment_cache::{self, Entry, MAX_PIECES};
use super::trie::PieceTrie;
use super::{Piece, PieceType};
use crate::bpe::piece_cache::pack_short;

/// Penalty below the lowest piece score given to an unknown character.
const UNK_PENALTY: f32 = 10.0;
/// |path score| beyond which sentencepiece re-centres the Viterbi scores.
const SCORE_RESET: f32 = 100_000.0;
/// `Best::id` of an unknown character (other entries hold the piece's trie node).
const UNK_NODE: u32 = u32::MAX;
/// U+2581, SentencePiece's escaped space.
const SPACE: &[u8] = "\u{2581}".as_bytes();
/// Pieces whose |score| exceeds this disable the segment cache (its error bounds assume
/// scores of log-probability size; no trained model comes near).
const MAX_CACHED_SCORE: f32 = 1.0e6;

/// Segments whose cache lines are requested ahead of their use.
const LOOKAHEAD: usize = 8;

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

pub struct Unigram {
    min_score: f32,
    /// The pieces Viterbi may use (UNUSED ones left out), each with its effective score.
    trie: PieceTrie,
    /// Bytes a lattice edge can span at most (the longest piece, or a 4-byte character).
    reach: usize,
    /// This model's key in the per-thread segment caches, when `▁` provably cuts every
    /// lattice (None: always run Viterbi over the whole text).
    segment_uid: Option<u64>,
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
        let cut = segment_cache && segment_cut_proof(&keys, unk_score);
        Unigram {
            min_score,
            reach,
            trie: PieceTrie::with_scores(&keys),
            segment_uid: cut.then(|| NEXT_UID.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// Whether segments are memoized for this model.
    pub fn segment_cache(&self) -> bool {
        self.segment_uid.is_some()
    }

    /// Best segmentation of `s` (normalized bytes) as pieces (start, end, id); unknown
    /// characters come out as single-character pieces with `unk_id`.
    pub fn encode(&self, unk_id: u32, s: &[u8], best: &mut Vec<Best>, out: &mut Vec<Piece>) {
        if s.is_empty() {
            return;
        }
        if let Some(uid) = self.segment_uid {
            let first = out.len();
            if self.encode_segments(uid, unk_id, s, best, out) {
                return;
            }
            // Ill-formed UTF-8 put a character across a cut (only a damaged charsmap
            // can produce that): the proof does not apply, so segment the whole text.
            out.truncate(first);
        }
        self.viterbi(s, 0.0, best);
        self.backtrack(unk_id, 0, best, out);
    }

    /// Segment by segment: a cached, certified segmentation where one applies at the
    /// current running score, Viterbi otherwise (over each run of consecutive segments
    /// the cache cannot serve at once). Equal to Viterbi over the whole text
    /// (`segment_cut_proof`) when it returns true; false when a character of ill-formed
    /// text straddles a cut.
    fn encode_segments(
        &self,
        uid: u64,
        unk_id: u32,
        s: &[u8],
        best: &mut Vec<Best>,
        out: &mut Vec<Piece>,
    ) -> bool {
        let unk_score = self.min_score - UNK_PENALTY;
        segment_cache::with_cache(uid, |cache| {
            // Segments found but not yet segmented: (start, end, packed key). Their cache
            // lines are prefetched when found, LOOKAHEAD segments before they are needed.
            let mut ring = [(0usize, 0usize, 0u128); LOOKAHEAD];
            let (mut head, mut queued) = (0usize, 0usize);
            let mut found = 0; // where the next segment to find starts
                               // The score of the best path to `done`, the last cut segmented: what Viterbi
                               // carries over.
            let mut score = 0.0f32;
            let mut done = 0;
            loop {
                while queued < LOOKAHEAD && found < s.len() {
                    let q = next_cut(s, found);
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
                    match self.viterbi_run(unk_id, s, done, p, score, best, out) {
                        Some(end_score) => score = end_score,
                        None => return false,
                    }
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
                match self.viterbi_run(unk_id, s, done, s.len(), score, best, out) {
                    Some(_) => {}
                    None => return false,
                }
            }
            true
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
        debug_assert!(m < SHORT);
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

/// Bytes of a segment `certify` handles, plus one (`pack_short` takes at most 15).
const SHORT: usize = 16;

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

/// Whether the vocabulary proves that every `▁` of a normalized text cuts the lattice,
/// so that Viterbi over the whole text equals Viterbi segment by segment (each segment
/// starting at a `▁`), with the running score carried across cuts.
///
/// Proof. Let c be the byte offset of a `▁` in the text, reached by Viterbi's walk over
/// characters (`one_char_len` steps; `encode_segments` checks that each segment's walk
/// ends exactly at the next cut, which holds for every cut of well-formed UTF-8).
/// Lattice edges start where that walk goes. Trie edges are vocabulary pieces, which
/// here are well-formed UTF-8 and hold `▁` only as their first character, so an edge
/// starting before c and ending after it would contain the `▁` at c at an inner
/// position (in well-formed UTF-8 its lead byte 0xE2 starts a character); unknown
/// edges span one character of the walk. So no edge crosses c: every path passes
/// through c, nothing past c is reached before Viterbi starts from c, and what it
/// computes from c on depends on the text before c only through the score of c (the
/// re-centring at c, if any, only zeroes that score, as nothing past c is reached).
/// Backtracking from the end therefore walks back through each cut, and the pieces
/// between two cuts are Viterbi's best path of that segment from the carried score.
/// The cache's error bounds further need finite scores of log-probability size.
fn segment_cut_proof(keys: &[(&[u8], i32, f32)], unk_score: f32) -> bool {
    let small = |s: f32| s.is_finite() && s.abs() <= MAX_CACHED_SCORE;
    small(unk_score)
        && keys.iter().all(|&(piece, _, score)| {
            small(score)
                && std::str::from_utf8(piece).is_ok()
                && !piece[1..].windows(SPACE.len()).any(|w| w == SPACE)
        })
}

/// End of the segment starting at `p`: the next `▁` after it, or the end of `s`.
#[inline]
fn next_cut(s: &[u8], p: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let lead = LO * SPACE[0] as u64;
    let mut i = p + 1;
    // Eight bytes at a time: words without the lead byte 0xE2 are skipped whole.
    while i + 8 <= s.len() {
        let w = u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or_default()) ^ lead;
        let zero = w.wrapping_sub(LO) & !w & HI;
        if zero == 0 {
            i += 8;
            continue;
        }
        let at = i + (zero.trailing_zeros() / 8) as usize;
        if s.get(at + 1..at + 3) == Some(&SPACE[1..]) {
            return at;
        }
        i = at + 1;
    }
    while i + 2 < s.len() {
        if s[i] == SPACE[0] && s[i + 1] == SPACE[1] && s[i + 2] == SPACE[2] {
            return i;
        }
        i += 1;
    }
    s.len()
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
