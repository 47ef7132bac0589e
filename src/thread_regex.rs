//! A compiled regex that each thread searches through its own clone.
//!
//! The regex crate keeps the scratch caches of its searches in a pool: the first thread to
//! search gets a slot of its own, and every other thread takes a cache from a mutex-guarded
//! stack and puts it back, once per search. A pre-tokenizer searches once per pre-token,
//! so on two encoding threads that mutex and its cache lines bounced between cores on
//! every pre-token (DeepSeek-V3's and Qwen's patterns spent 40-80% more CPU on two
//! threads than on one). Cloning a regex gives it a fresh pool (the compiled program is
//! shared or copied, the caches are not), so each thread here searches its own clone.
//!
//! A thread keeps the clones of its `CLONES_PER_THREAD` most recently used regexes (the
//! per-thread selection of `thread_cache`, which the memo caches use too), so memory per
//! thread stays bounded however many tokenizers a process loads; an evicted clone is
//! rebuilt on next use (a cheap copy, caches start empty).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use fancy_regex::Regex;

use crate::thread_cache::{with_bounded_cache, ModelCache};

/// Regexes whose clones one thread keeps at once (a tokenizer may hold several: DeepSeek-V3
/// has three split patterns).
pub const CLONES_PER_THREAD: usize = 8;

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// One thread's clone of the regex `uid`, made on first use.
struct RegexClone {
    uid: u64,
    re: Option<Rc<Regex>>,
}

impl ModelCache for RegexClone {
    fn new_for(uid: u64) -> RegexClone {
        RegexClone { uid, re: None }
    }

    fn reset_for(&mut self, uid: u64) {
        self.uid = uid;
        self.re = None;
    }

    fn model_uid(&self) -> u64 {
        self.uid
    }
}

thread_local! {
    static CLONES: RefCell<Vec<RegexClone>> = const { RefCell::new(Vec::new()) };
}

/// A regex shared by threads; `with` hands each thread its own clone.
pub struct ThreadRegex {
    uid: u64,
    re: Regex,
}

impl ThreadRegex {
    pub fn new(re: Regex) -> ThreadRegex {
        ThreadRegex {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            re,
        }
    }

    /// Runs `f` with this thread's clone of the regex. The thread-local list is not
    /// borrowed while `f` runs, so `f` may search other `ThreadRegex`es.
    pub fn with<R>(&self, f: impl FnOnce(&Regex) -> R) -> R {
        let clone = with_bounded_cache(&CLONES, self.uid, CLONES_PER_THREAD, |entry| {
            Rc::clone(entry.re.get_or_insert_with(|| Rc::new(self.re.clone())))
        });
        f(&clone)
    }

    /// Clones this thread holds (for tests of the bound).
    pub fn clones_on_this_thread() -> usize {
        CLONES.with(|cell| cell.borrow().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_all(re: &ThreadRegex, text: &str) -> Vec<(usize, usize)> {
        re.with(|r| {
            r.find_iter(text)
                .map(|m| m.map(|m| (m.start(), m.end())).unwrap_or((0, 0)))
                .collect()
        })
    }

    #[test]
    fn clones_search_like_the_original() {
        let pattern = r"\p{N}{1,3}|\s+(?!\S)|\s+|[^\s\p{N}]+";
        let original = Regex::new(pattern).unwrap();
        let shared = std::sync::Arc::new(ThreadRegex::new(Regex::new(pattern).unwrap()));
        let text = "abc 12345  x\n\n Ünïcödé 7 ";
        let expected: Vec<(usize, usize)> = original
            .find_iter(text)
            .map(|m| m.map(|m| (m.start(), m.end())).unwrap())
            .collect();
        assert_eq!(find_all(&shared, text), expected);
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let shared = std::sync::Arc::clone(&shared);
                std::thread::spawn(move || find_all(&shared, "abc 12345  x\n\n Ünïcödé 7 "))
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), expected);
        }
    }

    #[test]
    fn a_thread_keeps_a_bounded_number_of_clones() {
        std::thread::spawn(|| {
            let regexes: Vec<ThreadRegex> = (0..CLONES_PER_THREAD + 5)
                .map(|k| ThreadRegex::new(Regex::new(&format!("a{{{}}}", k + 1)).unwrap()))
                .collect();
            for (k, re) in regexes.iter().enumerate() {
                assert_eq!(find_all(re, &"a".repeat(k + 1)), vec![(0, k + 1)]);
                assert!(ThreadRegex::clones_on_this_thread() <= CLONES_PER_THREAD);
            }
            assert_eq!(ThreadRegex::clones_on_this_thread(), CLONES_PER_THREAD);
            // The first regex's clone was evicted; it is rebuilt and still exact.
            assert_eq!(find_all(&regexes[0], "a"), vec![(0, 1)]);
            // Nested use: the list is not borrowed while the closure runs.
            let nested = regexes[1].with(|outer| {
                let inner = find_all(&regexes[2], "aaa");
                (outer.is_match("aa").unwrap(), inner)
            });
            assert_eq!(nested, (true, vec![(0, 3)]));
        })
        .join()
        .unwrap();
    }
}
