//! Pre-token counts as a flat table (all pieces in one byte buffer, `n + 1` offsets, `n`
//! counts): how a worker returns its block's counts, and how the driver adds many of
//! them without making one object per piece. The corpus totals (documents, bytes,
//! digest) travel beside the table; addition here covers the counts only.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::count::merge_counts;
use crate::error::{CoreError, CoreResult};

/// One flat count table, borrowed (`offsets.len() == counts.len() + 1`).
#[derive(Clone, Copy)]
pub struct CountTableRef<'a> {
    pub pieces: &'a [u8],
    pub offsets: &'a [u64],
    pub counts: &'a [u64],
}

/// The pieces of a count map, flattened in the map's order (any order is valid).
pub fn flatten(counts: &FxHashMap<Vec<u8>, u64>) -> (Vec<u8>, Vec<u64>, Vec<u64>) {
    let total: usize = counts.keys().map(Vec::len).sum();
    let mut pieces = Vec::with_capacity(total);
    let mut offsets = Vec::with_capacity(counts.len() + 1);
    let mut values = Vec::with_capacity(counts.len());
    offsets.push(0);
    for (piece, &count) in counts {
        pieces.extend_from_slice(piece);
        offsets.push(pieces.len() as u64);
        values.push(count);
    }
    (pieces, offsets, values)
}

fn check(table: &CountTableRef<'_>, index: usize) -> CoreResult<()> {
    let bad = |what: &str| {
        Err(CoreError::InvalidInput(format!(
            "count table {index}: {what}; pass the arrays a block count returned"
        )))
    };
    if table.offsets.len() != table.counts.len() + 1 {
        return bad("needs one more offset than counts");
    }
    if table.offsets[0] != 0 || *table.offsets.last().unwrap_or(&0) != table.pieces.len() as u64 {
        return bad("offsets must run from 0 to the piece buffer's length");
    }
    if table.offsets.windows(2).any(|w| w[0] > w[1]) {
        return bad("offsets decrease");
    }
    Ok(())
}

/// The table as a map keyed by slices of its own buffer (no copy of any piece).
fn to_map<'a>(table: &CountTableRef<'a>) -> FxHashMap<&'a [u8], u64> {
    let mut map = FxHashMap::default();
    map.reserve(table.counts.len());
    for (w, &count) in table.offsets.windows(2).zip(table.counts) {
        *map.entry(&table.pieces[w[0] as usize..w[1] as usize])
            .or_insert(0) += count;
    }
    map
}

/// The sum of all tables as `(piece, count)` sorted by piece (the order `count_pretokens`
/// returns), the pieces borrowed from the tables. Tables are read and added in parallel
/// in the current rayon pool; addition commutes, so the result does not depend on the
/// order or the thread count.
pub fn sum_tables<'a>(tables: &[CountTableRef<'a>]) -> CoreResult<Vec<(&'a [u8], u64)>> {
    for (i, t) in tables.iter().enumerate() {
        check(t, i)?;
    }
    let total = tables
        .par_iter()
        .map(to_map)
        .reduce(FxHashMap::default, merge_counts);
    let mut entries: Vec<(&[u8], u64)> = total.into_iter().collect();
    entries.par_sort_unstable();
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_tables_add_up() {
        let mut a = FxHashMap::default();
        a.insert(b"the".to_vec(), 3);
        a.insert(b" cat".to_vec(), 1);
        let mut b = FxHashMap::default();
        b.insert(b" cat".to_vec(), 2);
        b.insert(b"".to_vec(), 5);
        let (pa, oa, ca) = flatten(&a);
        let (pb, ob, cb) = flatten(&b);
        let tables = [
            CountTableRef {
                pieces: &pa,
                offsets: &oa,
                counts: &ca,
            },
            CountTableRef {
                pieces: &pb,
                offsets: &ob,
                counts: &cb,
            },
        ];
        let sum = sum_tables(&tables).unwrap();
        let expected: Vec<(&[u8], u64)> = vec![(b"", 5), (b" cat", 3), (b"the", 3)];
        assert_eq!(sum, expected);
        assert!(sum_tables(&[CountTableRef {
            pieces: &pa,
            offsets: &oa[1..],
            counts: &ca
        }])
        .is_err());
    }
}
