//! The record of every ID a stream committed (`StreamingEncoder.committed`), kept in
//! fixed blocks: a `Vec` that doubles would copy the whole record at every doubling
//! (megabytes on a long stream, callgrind: about 2% of a 64-byte-push stream's
//! instructions on a Unigram model), a cost one-shot `encode` never pays.

/// IDs per block (64 KiB: below the allocator's mmap threshold, so freed blocks are
/// reused instead of mapped and faulted in again).
const BLOCK: usize = 1 << 14;

#[derive(Default)]
pub(super) struct Record {
    blocks: Vec<Vec<u32>>,
    len: usize,
}

impl Record {
    pub(super) fn extend(&mut self, mut ids: &[u32]) {
        self.len += ids.len();
        while !ids.is_empty() {
            match self.blocks.last_mut() {
                Some(block) if block.len() < BLOCK => {
                    let n = (BLOCK - block.len()).min(ids.len());
                    block.extend_from_slice(&ids[..n]);
                    ids = &ids[n..];
                }
                _ => self.blocks.push(Vec::with_capacity(BLOCK)),
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.blocks.clear();
        self.len = 0;
    }

    /// The IDs in order, as one vector (read rarely: `StreamingEncoder.committed`).
    pub(super) fn to_vec(&self) -> Vec<u32> {
        let mut all = Vec::with_capacity(self.len);
        for block in &self.blocks {
            all.extend_from_slice(block);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_the_order_across_their_bounds() {
        let mut record = Record::default();
        let ids: Vec<u32> = (0..(3 * BLOCK as u32 + 17)).collect();
        for part in ids.chunks(1000) {
            record.extend(part);
        }
        record.extend(&[]);
        assert_eq!(record.to_vec(), ids);
        assert!(record.blocks.iter().all(|b| b.capacity() == BLOCK));
        record.clear();
        assert!(record.to_vec().is_empty());
    }
}
