//! Byte tries for SentencePiece: a reader of the Darts-clone double arrays stored in
//! precompiled charsmaps, and a double-array trie over vocabulary pieces built here.

use crate::error::{CoreError, CoreResult};

/// A Darts-clone double array as SentencePiece serializes it (little-endian u32 units).
pub struct DartsArray {
    units: Vec<u32>,
}

impl DartsArray {
    pub fn from_bytes(blob: &[u8]) -> CoreResult<DartsArray> {
        if blob.len() % 4 != 0 || blob.is_empty() {
            return Err(CoreError::Artifact(format!(
                "precompiled_charsmap: the double-array trie has {} bytes, not a positive \
                 multiple of 4; the charsmap is damaged, re-export the model",
                blob.len()
            )));
        }
        let units = blob
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(DartsArray { units })
    }

    #[inline]
    fn offset(unit: u32) -> usize {
        ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize
    }

    /// Longest key that is a prefix of `key`: (length, value). Darts-clone's
    /// commonPrefixSearch keeping the longest result, which is all SentencePiece uses.
    pub fn longest_prefix(&self, key: &[u8]) -> Option<(usize, u32)> {
        let units = &self.units;
        let mut pos = Self::offset(units[0]);
        let mut found = None;
        for (i, &b) in key.iter().enumerate() {
            pos ^= b as usize;
            let unit = *units.get(pos)?;
            // label(): the byte stored in the unit plus the leaf flag bit 31.
            if unit & ((1 << 31) | 0xFF) != b as u32 {
                return found;
            }
            pos ^= Self::offset(unit);
            if (unit >> 8) & 1 == 1 {
                let leaf = *units.get(pos)?;
                found = Some((i + 1, leaf & ((1 << 31) - 1)));
            }
        }
        found
    }
}

#[derive(Clone, Copy)]
struct Unit {
    base: u32,
    /// Parent index + 1 (0 marks a free slot; the root is its own parent).
    check: u32,
    value: i32,
}

/// A double-array trie over byte strings with an i32 value per key: one array read and
/// one compare per input byte, the shape SentencePiece's own Darts trie has.
pub struct PieceTrie {
    units: Vec<Unit>,
}

impl PieceTrie {
    pub fn new(keys: &[(&[u8], i32)]) -> PieceTrie {
        // A plain pointer trie first; children sorted by byte.
        let mut children: Vec<Vec<(u8, usize)>> = vec![Vec::new()];
        let mut values: Vec<i32> = vec![-1];
        for &(key, value) in keys {
            let mut node = 0;
            for &b in key {
                node = match children[node].binary_search_by_key(&b, |c| c.0) {
                    Ok(i) => children[node][i].1,
                    Err(i) => {
                        children.push(Vec::new());
                        values.push(-1);
                        let id = children.len() - 1;
                        children[node].insert(i, (b, id));
                        id
                    }
                };
            }
            values[node] = value;
        }
        let free = Unit {
            base: 0,
            check: 0,
            value: -1,
        };
        let mut units = vec![free; 256];
        units[0].check = 1;
        units[0].value = values[0];
        let mut slot_of = vec![0usize; children.len()];
        let mut queue = std::collections::VecDeque::from([0usize]);
        // Bases are searched from the first slot that may still be free, so placement
        // stays near-linear in the number of nodes.
        let mut first_free = 1usize;
        while let Some(node) = queue.pop_front() {
            let kids = &children[node];
            if kids.is_empty() {
                continue;
            }
            while first_free < units.len() && units[first_free].check != 0 {
                first_free += 1;
            }
            let low = kids[0].0 as usize;
            let mut base = first_free.saturating_sub(low).max(1);
            loop {
                let need = base + 255 + 1;
                if units.len() < need {
                    units.resize(need, free);
                }
                if kids.iter().all(|&(b, _)| units[base + b as usize].check == 0) {
                    break;
                }
                base += 1;
            }
            let slot = slot_of[node];
            units[slot].base = base as u32;
            for &(b, child) in kids {
                let s = base + b as usize;
                units[s].check = slot as u32 + 1;
                units[s].value = values[child];
                slot_of[child] = s;
                queue.push_back(child);
            }
        }
        while units.len() > 1 && units.last().is_some_and(|u| u.check == 0) {
            units.pop();
        }
        PieceTrie { units }
    }

    /// The node reached from `node` by byte `b`, if any.
    #[inline(always)]
    pub fn step(&self, node: usize, b: u8) -> Option<usize> {
        let next = self.units[node].base as usize + b as usize;
        match self.units.get(next) {
            Some(u) if u.check as usize == node + 1 => Some(next),
            _ => None,
        }
    }

    /// The value stored at `node` (-1 when no key ends there).
    #[inline(always)]
    pub fn value(&self, node: usize) -> i32 {
        self.units[node].value
    }

    /// Length of the longest key that is a prefix of `text` (0 when none).
    pub fn longest_prefix(&self, text: &[u8]) -> usize {
        let (mut node, mut best) = (0, 0);
        for (i, &b) in text.iter().enumerate() {
            match self.step(node, b) {
                Some(n) => node = n,
                None => break,
            }
            if self.value(node) >= 0 {
                best = i + 1;
            }
        }
        best
    }

    /// Value of exactly `key`, if it is a key.
    pub fn get(&self, key: &[u8]) -> Option<i32> {
        let mut node = 0;
        for &b in key {
            node = self.step(node, b)?;
        }
        let v = self.value(node);
        (v >= 0).then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trie_finds_keys_and_prefixes() {
        let keys: Vec<(&[u8], i32)> = vec![(b"a", 0), (b"ab", 1), (b"abc", 2), (b"b", 3), (b"\xff", 4)];
        let t = PieceTrie::new(&keys);
        for (k, v) in &keys {
            assert_eq!(t.get(k), Some(*v));
        }
        assert_eq!(t.get(b"abd"), None);
        assert_eq!(t.get(b""), None);
        assert_eq!(t.longest_prefix(b"abcd"), 3);
        assert_eq!(t.longest_prefix(b"abx"), 2);
        assert_eq!(t.longest_prefix(b"x"), 0);
    }
}
