//! The bounded ID space: every table indexed by token ID is sized by the largest ID, so
//! a file's IDs are checked against its number of entries before anything is allocated
//! (docs/SECURITY.md). IDs must be dense up to a bounded number of holes: Hugging Face
//! files leave a few unused IDs between the model vocabulary and added tokens, but an ID
//! of 4,000,000,000 in a ten-entry file would make a 96 GB table.

use crate::error::{CoreError, CoreResult};

/// Holes tolerated in any ID space, beyond one hole per entry (see [`check`]).
pub const MIN_GAP_TOLERANCE: usize = 65_536;

/// The largest ID space (`max_id + 1`) allowed for `entries` IDs: the entries plus
/// `max(entries, MIN_GAP_TOLERANCE)` holes, so a table is at most about twice as large
/// as the file that drives it.
pub fn limit(entries: usize) -> usize {
    entries
        .saturating_add(entries.max(MIN_GAP_TOLERANCE))
        .min(u32::MAX as usize)
}

/// Fails unless `max_id` lies within [`limit`] of `entries`. `what` names the field.
pub fn check(entries: usize, max_id: u32, what: &str) -> CoreResult<()> {
    let space = max_id as usize + 1;
    if space > limit(entries) {
        return Err(CoreError::Artifact(format!(
            "{what}: ID {max_id} is far beyond the {entries} entries (at most {} IDs are \
             allowed for them: IDs must be dense up to a bounded number of unused IDs); \
             renumber the tokens from 0 without large gaps",
            limit(entries)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_small_gaps_pass() {
        assert!(check(10, 9, "x").is_ok());
        assert!(check(10, 65_545, "x").is_ok());
        assert!(check(200_000, 399_999, "x").is_ok());
    }

    #[test]
    fn huge_ids_fail_before_allocation() {
        assert!(check(10, 65_546, "x").is_err());
        assert!(check(10, 4_000_000_000, "x").is_err());
        assert!(check(200_000, 400_000, "x").is_err());
    }
}
