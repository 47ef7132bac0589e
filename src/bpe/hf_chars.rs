//! Hugging Face BPE over characters (a `tokenizer.json` BPE without ByteLevel): the
//! vocabulary is UTF-8 strings, a word starts as its characters (later ones spelled with
//! `continuing_subword_prefix`, the last with `end_of_word_suffix`), characters missing
//! from the vocabulary become `<0xXX>` byte pieces (`byte_fallback`) or `unk_token`, and
//! merges apply in HF's priority-queue order (tokenizers `models/bpe/model.rs`
//! `merge_word`, `word.rs` `merge_all`).
//!
//! The merge loop is a port of HF's rather than "apply the best current pair": a queue
//! entry that went stale is still applied when the pair now at its position produces the
//! same token (two merges can build one piece, `a bc` and `ab c`), at the stale rank.
//! Reproducing the queue is what makes the IDs identical in that case.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{CoreError, CoreResult};

/// The model's options, as in the `model` node of `tokenizer.json`.
#[derive(Default, Clone)]
pub struct HfBpeOptions {
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub unk_token: Option<String>,
    pub fuse_unk: bool,
    pub byte_fallback: bool,
    pub ignore_merges: bool,
    /// Recorded, never applied: `encode` is deterministic (see docs/PIPELINE.md).
    pub dropout: Option<f64>,
}

pub struct HfCharBpe {
    /// UTF-8 spelling of every ID.
    pub vocab: Vec<Vec<u8>>,
    ids: FxHashMap<String, u32>,
    /// IDs of the one-character pieces: the common lookup without a prefix or suffix
    /// needs no string.
    char_ids: FxHashMap<char, u32>,
    /// `(left, right) -> (rank, new)`; a pair listed twice keeps its last rank, as HF's
    /// map does.
    merges: FxHashMap<(u32, u32), (u32, u32)>,
    unk: Option<u32>,
    byte_ids: [Option<u32>; 256],
    pub options: HfBpeOptions,
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: isize,
    next: isize,
    /// Bytes of the word covered; 0 marks a symbol merged into its left neighbour.
    len: usize,
}

/// A queue entry; the heap pops the lowest rank, then the leftmost position (HF's `Ord`).
#[derive(PartialEq, Eq)]
struct Merge {
    pos: usize,
    rank: u32,
    new_id: u32,
}

impl Ord for Merge {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.pos.cmp(&self.pos))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl HfCharBpe {
    /// `vocab[id]`: the UTF-8 piece of each model ID; `records`: `(left, right, new)` in
    /// rank order (merge strings resolved by the loader, prefix rule included).
    pub fn new(
        vocab: Vec<Vec<u8>>,
        records: &[(u32, u32, u32)],
        options: HfBpeOptions,
    ) -> CoreResult<HfCharBpe> {
        let mut ids = FxHashMap::default();
        for (i, piece) in vocab.iter().enumerate() {
            let s = std::str::from_utf8(piece).map_err(|_| {
                CoreError::Artifact(format!("model.vocab: ID {i} is not UTF-8 text"))
            })?;
            ids.insert(s.to_owned(), i as u32);
        }
        let size = vocab.len() as u32;
        let mut merges = FxHashMap::default();
        for (rank, &(a, b, c)) in records.iter().enumerate() {
            if a >= size || b >= size || c >= size {
                return Err(CoreError::Artifact(format!(
                    "model.merges[{rank}]: an ID is outside the vocabulary of {size}"
                )));
            }
            merges.insert((a, b), (rank as u32, c));
        }
        let unk = match &options.unk_token {
            None => None,
            Some(u) => Some(*ids.get(u.as_str()).ok_or_else(|| {
                CoreError::Artifact(format!(
                    "model.unk_token: {u:?} is not in the vocabulary; add it"
                ))
            })?),
        };
        let char_ids = ids
            .iter()
            .filter_map(|(s, &id)| {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Some((c, id)),
                    _ => None,
                }
            })
            .collect();
        let mut byte_ids = [None; 256];
        for (b, slot) in byte_ids.iter_mut().enumerate() {
            *slot = ids.get(&format!("<0x{b:02X}>")).copied();
        }
        Ok(HfCharBpe {
            vocab,
            ids,
            char_ids,
            merges,
            unk,
            byte_ids,
            options,
        })
    }

    /// Makes the IDs in `controls` unreachable from text (`Model::forbid`): no merge
    /// creates them and no character or whole-word lookup finds them, so their text falls
    /// to smaller pieces, `unk` or byte fallback, as for any piece the vocabulary lacks.
    pub fn forbid(&mut self, controls: &FxHashSet<u32>) {
        self.ids.retain(|_, id| !controls.contains(id));
        self.char_ids.retain(|_, id| !controls.contains(id));
        self.merges.retain(|_, (_, new)| !controls.contains(new));
    }

    /// IDs of one pre-token with each token's byte span inside it.
    pub fn encode_spans(&self, piece: &[u8], ids: &mut Vec<u32>, spans: &mut Vec<(u32, u32)>) {
        let word = String::from_utf8_lossy(piece);
        if word.is_empty() {
            return;
        }
        if self.options.ignore_merges {
            if let Some(&id) = self.ids.get(word.as_ref()) {
                ids.push(id);
                spans.push((0, piece.len() as u32));
                return;
            }
        }
        let mut symbols = self.initial_symbols(&word);
        self.merge_all(&mut symbols);
        // HF counts one byte per fallback byte, prefix and suffix bytes included, so a
        // fallback piece with a prefix can run past the word; spans are clamped to it.
        let end = piece.len();
        let mut at = 0usize;
        for s in symbols.iter().filter(|s| s.len != 0) {
            ids.push(s.id);
            let next = at + s.len;
            spans.push((at.min(end) as u32, next.min(end) as u32));
            at = next;
        }
    }

    pub fn encode_piece(&self, piece: &[u8], ids: &mut Vec<u32>) {
        let mut spans = Vec::new();
        self.encode_spans(piece, ids, &mut spans);
    }

    /// The word's characters as symbols, unknown ones as byte pieces or `unk` (HF's
    /// `merge_word` before the merge loop).
    fn initial_symbols(&self, word: &str) -> Vec<Symbol> {
        let o = &self.options;
        let mut symbols: Vec<Symbol> = Vec::with_capacity(word.len());
        let push = |symbols: &mut Vec<Symbol>, id: u32, len: usize| {
            let n = symbols.len() as isize;
            if let Some(last) = symbols.last_mut() {
                last.next = n;
            }
            symbols.push(Symbol {
                id,
                prev: n - 1,
                next: -1,
                len,
            });
        };
        let mut pending_unk: Option<(u32, usize)> = None;
        let mut spelled = String::new();
        let mut chars = word.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let is_last = chars.peek().is_none();
            let byte_len = c.len_utf8();
            let prefix = o.continuing_subword_prefix.as_deref().filter(|_| i != 0);
            let suffix = o.end_of_word_suffix.as_deref().filter(|_| is_last);
            spelled.clear();
            spelled.push_str(prefix.unwrap_or(""));
            spelled.push(c);
            spelled.push_str(suffix.unwrap_or(""));
            let found = if prefix.is_none() && suffix.is_none() {
                self.char_ids.get(&c)
            } else {
                self.ids.get(spelled.as_str())
            };
            if let Some(&id) = found {
                if let Some((unk, len)) = pending_unk.take() {
                    push(&mut symbols, unk, len);
                }
                push(&mut symbols, id, byte_len);
                continue;
            }
            if o.byte_fallback {
                let bytes: Option<Vec<u32>> =
                    spelled.bytes().map(|b| self.byte_ids[b as usize]).collect();
                if let Some(bytes) = bytes {
                    // As HF: a pending unknown is not flushed before the byte pieces.
                    for id in bytes {
                        push(&mut symbols, id, 1);
                    }
                    continue;
                }
            }
            if let Some(unk) = self.unk {
                pending_unk = match pending_unk {
                    Some((id, len)) if o.fuse_unk => Some((id, len + byte_len)),
                    Some((id, len)) => {
                        push(&mut symbols, id, len);
                        Some((unk, byte_len))
                    }
                    None => Some((unk, byte_len)),
                };
            }
            // No unk token: HF drops the character.
        }
        if let Some((unk, len)) = pending_unk {
            push(&mut symbols, unk, len);
        }
        symbols
    }

    /// HF's `Word::merge_all` without dropout.
    fn merge_all(&self, symbols: &mut [Symbol]) {
        let mut queue: BinaryHeap<Merge> = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(pos, w)| {
                self.merges
                    .get(&(w[0].id, w[1].id))
                    .map(|&(rank, new_id)| Merge { pos, rank, new_id })
            })
            .collect();
        while let Some(top) = queue.pop() {
            let cur = symbols[top.pos];
            if cur.len == 0 || cur.next == -1 {
                continue;
            }
            let next_pos = cur.next as usize;
            let right = symbols[next_pos];
            match self.merges.get(&(cur.id, right.id)) {
                Some(&(_, new_id)) if new_id == top.new_id => {}
                _ => continue, // stale entry
            }
            symbols[top.pos].id = top.new_id;
            symbols[top.pos].len += right.len;
            symbols[top.pos].next = right.next;
            symbols[next_pos].len = 0;
            if right.next > -1 && (right.next as usize) < symbols.len() {
                symbols[right.next as usize].prev = top.pos as isize;
            }
            let current = symbols[top.pos];
            if current.prev >= 0 {
                let prev = current.prev as usize;
                if let Some(&(rank, new_id)) = self.merges.get(&(symbols[prev].id, current.id)) {
                    queue.push(Merge {
                        pos: prev,
                        rank,
                        new_id,
                    });
                }
            }
            if current.next >= 0 && (current.next as usize) < symbols.len() {
                let next = symbols[current.next as usize];
                if let Some(&(rank, new_id)) = self.merges.get(&(current.id, next.id)) {
                    queue.push(Merge {
                        pos: top.pos,
                        rank,
                        new_id,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(pieces: &[&str], merges: &[(&str, &str, &str)], o: HfBpeOptions) -> HfCharBpe {
        let vocab: Vec<Vec<u8>> = pieces.iter().map(|p| p.as_bytes().to_vec()).collect();
        let id = |s: &str| pieces.iter().position(|p| *p == s).unwrap() as u32;
        let records: Vec<_> = merges
            .iter()
            .map(|&(a, b, c)| (id(a), id(b), id(c)))
            .collect();
        HfCharBpe::new(vocab, &records, o).unwrap()
    }

    fn encode(m: &HfCharBpe, w: &str) -> (Vec<u32>, Vec<(u32, u32)>) {
        let (mut ids, mut spans) = (Vec::new(), Vec::new());
        m.encode_spans(w.as_bytes(), &mut ids, &mut spans);
        (ids, spans)
    }

    #[test]
    fn merges_by_rank_with_prefix() {
        let o = HfBpeOptions {
            continuing_subword_prefix: Some("##".into()),
            ..Default::default()
        };
        let m = model(
            &["a", "##b", "##c", "ab", "abc"],
            &[("a", "##b", "ab"), ("ab", "##c", "abc")],
            o,
        );
        assert_eq!(encode(&m, "abc"), (vec![4], vec![(0, 3)]));
        assert_eq!(encode(&m, "ab"), (vec![3], vec![(0, 2)]));
    }

    #[test]
    fn unknowns_fuse_or_not() {
        let fused = HfBpeOptions {
            unk_token: Some("<unk>".into()),
            fuse_unk: true,
            ..Default::default()
        };
        let m = model(&["<unk>", "a", "b"], &[], fused.clone());
        assert_eq!(encode(&m, "accb").0, vec![1, 0, 2]);
        let m = model(
            &["<unk>", "a", "b"],
            &[],
            HfBpeOptions {
                fuse_unk: false,
                ..fused
            },
        );
        assert_eq!(encode(&m, "accb").0, vec![1, 0, 0, 2]);
    }

    #[test]
    fn byte_fallback_pieces() {
        let o = HfBpeOptions {
            unk_token: Some("<unk>".into()),
            byte_fallback: true,
            ..Default::default()
        };
        let m = model(&["<unk>", "<0xC3>", "<0xA9>", "a"], &[], o);
        assert_eq!(
            encode(&m, "éa"),
            (vec![1, 2, 3], vec![(0, 1), (1, 2), (2, 3)])
        );
        assert_eq!(encode(&m, "z").0, vec![0]);
    }
}
