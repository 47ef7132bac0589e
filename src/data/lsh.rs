//! LSH banding over MinHash signatures and near-duplicate clusters by union-find.
//!
//! Each band of `rows` signature slots is hashed to one 64-bit key; documents sharing a
//! key in any band form a candidate group. Every candidate pair is verified by the true
//! Jaccard similarity of its shingle sets, so banding can only miss pairs, never invent
//! them. Clusters are the connected components of the verified pairs; a component's root
//! is its smallest document index, so the caller keeps the smallest `doc_id` by passing
//! documents in `doc_id` order.

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::minhash::{jaccard, shingle_set, Shingling};
use crate::error::{CoreError, CoreResult};

/// splitmix64 finalizer: a cheap, well-mixed 64-bit step.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn check_bands(num_perm: usize, bands: usize, rows: usize) -> CoreResult<()> {
    if bands == 0 || rows == 0 || bands * rows > num_perm {
        return Err(CoreError::Config(format!(
            "LSH needs bands >= 1, rows >= 1 and bands * rows <= num_perm ({num_perm}); \
             got bands={bands}, rows={rows}"
        )));
    }
    Ok(())
}

/// One key per (document, band): row-major `[n_docs * bands]`.
pub fn band_keys(
    signatures: &[u32],
    num_perm: usize,
    bands: usize,
    rows: usize,
) -> CoreResult<Vec<u64>> {
    check_bands(num_perm, bands, rows)?;
    if num_perm == 0 || !signatures.len().is_multiple_of(num_perm) {
        return Err(CoreError::InvalidInput(
            "signature buffer is not a whole number of rows".into(),
        ));
    }
    let mut keys = vec![0u64; signatures.len() / num_perm * bands];
    keys.par_chunks_mut(bands)
        .zip(signatures.par_chunks(num_perm))
        .with_min_len(64)
        .for_each(|(out, sig)| {
            for (band, key) in out.iter_mut().enumerate() {
                let mut h = mix(band as u64 ^ 0x9E37_79B9_7F4A_7C15);
                for &v in &sig[band * rows..(band + 1) * rows] {
                    h = mix(h ^ v as u64);
                }
                *key = h;
            }
        });
    Ok(keys)
}

/// Candidate groups: the sets of documents sharing a band key (two or more members),
/// each sorted, deduplicated across bands, in ascending order. Returned flat as
/// `(members, offsets)` with `members[offsets[g]..offsets[g + 1]]` the group `g`.
pub fn candidate_groups(keys: &[u64], bands: usize) -> CoreResult<(Vec<u32>, Vec<u64>)> {
    if bands == 0 || !keys.len().is_multiple_of(bands) {
        return Err(CoreError::InvalidInput(
            "band key buffer is not a whole number of rows".into(),
        ));
    }
    let n_docs = keys.len() / bands;
    if n_docs > u32::MAX as usize {
        return Err(CoreError::InvalidInput(
            "more than 2^32 documents in one LSH index".into(),
        ));
    }
    let per_band: Vec<Vec<Vec<u32>>> = (0..bands)
        .into_par_iter()
        .map(|band| {
            let mut pairs: Vec<(u64, u32)> = (0..n_docs)
                .map(|d| (keys[d * bands + band], d as u32))
                .collect();
            pairs.par_sort_unstable();
            let mut groups = Vec::new();
            let mut start = 0;
            while start < pairs.len() {
                let mut stop = start + 1;
                while stop < pairs.len() && pairs[stop].0 == pairs[start].0 {
                    stop += 1;
                }
                if stop - start > 1 {
                    groups.push(pairs[start..stop].iter().map(|p| p.1).collect());
                }
                start = stop;
            }
            groups
        })
        .collect();
    let mut unique: FxHashSet<Vec<u32>> = FxHashSet::default();
    for groups in per_band {
        unique.extend(groups);
    }
    let mut groups: Vec<Vec<u32>> = unique.into_iter().collect();
    groups.sort_unstable();
    let mut members = Vec::with_capacity(groups.iter().map(Vec::len).sum());
    let mut offsets = Vec::with_capacity(groups.len() + 1);
    offsets.push(0u64);
    for g in groups {
        members.extend(g);
        offsets.push(members.len() as u64);
    }
    Ok((members, offsets))
}

/// Union-find whose root is always the smallest index of its component.
pub struct MinRootUnionFind {
    parent: Vec<u32>,
}

impl MinRootUnionFind {
    pub fn new(n: usize) -> MinRootUnionFind {
        MinRootUnionFind {
            parent: (0..n as u32).collect(),
        }
    }

    pub fn find(&mut self, mut x: u32) -> u32 {
        let mut root = x;
        while self.parent[root as usize] != root {
            root = self.parent[root as usize];
        }
        while self.parent[x as usize] != root {
            let next = self.parent[x as usize];
            self.parent[x as usize] = root;
            x = next;
        }
        root
    }

    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi as usize] = lo;
        }
    }

    pub fn roots(mut self) -> Vec<u32> {
        (0..self.parent.len() as u32)
            .map(|i| self.find(i))
            .collect()
    }
}

/// What verification did: its roots (cluster representative per document) and counts.
pub struct Clusters {
    pub roots: Vec<u32>,
    pub pairs_checked: u64,
    pub pairs_similar: u64,
}

/// Verifies every pair inside each candidate group by true Jaccard (>= `threshold`) and
/// returns the connected components. A pair already in one component is skipped: its
/// edge cannot change the components, so the result equals verifying all pairs.
pub fn verify_groups<S: AsRef<str> + Sync>(
    texts: &[S],
    members: &[u32],
    offsets: &[u64],
    shingling: &Shingling,
    threshold: f64,
) -> CoreResult<Clusters> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(CoreError::Config(format!(
            "Jaccard threshold must be in [0, 1], got {threshold}"
        )));
    }
    if offsets.is_empty()
        || offsets[0] != 0
        || *offsets.last().unwrap_or(&0) as usize != members.len()
    {
        return Err(CoreError::InvalidInput(
            "group offsets must start at 0 and end at len(members)".into(),
        ));
    }
    if let Some(&bad) = members.iter().find(|&&m| m as usize >= texts.len()) {
        return Err(CoreError::InvalidInput(format!(
            "group member {bad} is outside the {} documents given",
            texts.len()
        )));
    }
    let mut involved: Vec<u32> = members.to_vec();
    involved.sort_unstable();
    involved.dedup();
    let sets: FxHashMap<u32, Vec<u64>> = involved
        .par_iter()
        .map(|&d| (d, shingle_set(texts[d as usize].as_ref(), shingling)))
        .collect();
    let mut uf = MinRootUnionFind::new(texts.len());
    let (mut checked, mut similar) = (0u64, 0u64);
    for g in offsets.windows(2) {
        let group = &members[g[0] as usize..g[1] as usize];
        for (i, &a) in group.iter().enumerate() {
            for &b in &group[i + 1..] {
                if uf.find(a) == uf.find(b) {
                    continue;
                }
                checked += 1;
                if jaccard(&sets[&a], &sets[&b]) >= threshold {
                    similar += 1;
                    uf.union(a, b);
                }
            }
        }
    }
    Ok(Clusters {
        roots: uf.roots(),
        pairs_checked: checked,
        pairs_similar: similar,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_find_roots_are_minimum_indices() {
        let mut uf = MinRootUnionFind::new(5);
        uf.union(4, 2);
        uf.union(3, 4);
        uf.union(1, 0);
        assert_eq!(uf.roots(), vec![0, 0, 2, 2, 2]);
    }

    #[test]
    fn identical_rows_share_every_band() {
        let sigs = vec![1, 2, 3, 4, 1, 2, 3, 4, 9, 9, 9, 9];
        let keys = band_keys(&sigs, 4, 2, 2).unwrap();
        let (members, offsets) = candidate_groups(&keys, 2).unwrap();
        assert_eq!(members, vec![0, 1]);
        assert_eq!(offsets, vec![0, 2]);
    }
}
