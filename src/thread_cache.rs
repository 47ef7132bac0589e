//! Per-thread caches keyed by model: the selection both memo caches use (the BPE piece
//! cache and the SentencePiece segment cache). A thread keeps the caches of its
//! `MODELS_PER_THREAD` most recently used models, most recent first; a thread alternating
//! between more models than that reuses the oldest cache's memory for the new model
//! (after a reset), so memory per thread is bounded and results stay exact.

use std::cell::RefCell;
use std::thread::LocalKey;

/// Models whose caches one thread keeps at once.
pub const MODELS_PER_THREAD: usize = 4;

/// A cache that belongs to one model, identified by a unique model number.
pub trait ModelCache {
    /// A fresh, empty cache for model `uid`.
    fn new_for(uid: u64) -> Self;
    /// Empties the cache and gives it to model `uid`.
    fn reset_for(&mut self, uid: u64);
    /// The model the cache belongs to.
    fn model_uid(&self) -> u64;
}

/// Runs `f` with this thread's cache (from `caches`) for the model `uid`.
#[inline]
pub fn with_model_cache<C: ModelCache + 'static, R>(
    caches: &'static LocalKey<RefCell<Vec<C>>>,
    uid: u64,
    f: impl FnOnce(&mut C) -> R,
) -> R {
    with_bounded_cache(caches, uid, MODELS_PER_THREAD, f)
}

/// [`with_model_cache`] keeping at most `capacity` caches per thread (for small entries
/// a thread needs more of at once, such as the regex clones of `thread_regex`).
#[inline]
pub fn with_bounded_cache<C: ModelCache + 'static, R>(
    caches: &'static LocalKey<RefCell<Vec<C>>>,
    uid: u64,
    capacity: usize,
    f: impl FnOnce(&mut C) -> R,
) -> R {
    caches.with(|cell| {
        let mut caches = cell.borrow_mut();
        if caches.first().map(|c| c.model_uid()) != Some(uid) {
            match caches.iter().position(|c| c.model_uid() == uid) {
                Some(at) => caches[..=at].rotate_right(1),
                None if caches.len() < capacity => caches.insert(0, C::new_for(uid)),
                None => {
                    let mut oldest = caches.pop().unwrap_or_else(|| C::new_for(uid));
                    oldest.reset_for(uid);
                    caches.insert(0, oldest);
                }
            }
        }
        f(&mut caches[0])
    })
}
