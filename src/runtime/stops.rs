//! Stop strings over decoded text: one Aho-Corasick automaton over characters, stepped
//! as text arrives. After each character the state's depth is the length of the longest
//! suffix of the text that is still a prefix of some stop string (the seed's `h(y)`,
//! 0x0D): only that suffix may be held back. The first character at which a stop string
//! ends decides (the earliest completing match); among the stop strings ending there the
//! longest wins, or with `first_listed` the one listed first (vLLM's rule).

use rustc_hash::FxHashMap;

pub struct StopScanner {
    goto: FxHashMap<(u32, char), u32>,
    fail: Vec<u32>,
    depth: Vec<u32>,
    /// The longest pattern ending at each state (following suffix links), or u32::MAX.
    out: Vec<u32>,
    /// Characters that leave the root: text without any of them keeps the root state.
    starts: FxHashMap<char, u32>,
    state: u32,
}

const NONE: u32 = u32::MAX;

impl StopScanner {
    pub fn new(patterns: &[String], first_listed: bool) -> StopScanner {
        let mut goto: FxHashMap<(u32, char), u32> = FxHashMap::default();
        let mut depth = vec![0u32];
        let mut out = vec![NONE];
        let mut children: Vec<Vec<(char, u32)>> = vec![Vec::new()];
        for (index, pattern) in patterns.iter().enumerate() {
            let mut state = 0u32;
            for c in pattern.chars() {
                state = match goto.get(&(state, c)) {
                    Some(&next) => next,
                    None => {
                        let next = depth.len() as u32;
                        goto.insert((state, c), next);
                        children[state as usize].push((c, next));
                        children.push(Vec::new());
                        depth.push(depth[state as usize] + 1);
                        out.push(NONE);
                        next
                    }
                };
            }
            if state != 0 && out[state as usize] == NONE {
                out[state as usize] = index as u32;
            }
        }
        let mut fail = vec![0u32; depth.len()];
        let mut queue: std::collections::VecDeque<u32> =
            children[0].iter().map(|&(_, s)| s).collect();
        while let Some(state) = queue.pop_front() {
            // The fail state (shallower, so already final in BFS order) holds the
            // patterns that are proper suffixes of this state's text.
            let inherited = out[fail[state as usize] as usize];
            if out[state as usize] == NONE || (first_listed && inherited < out[state as usize]) {
                out[state as usize] = inherited;
            }
            for &(c, next) in &children[state as usize] {
                queue.push_back(next);
                let mut f = fail[state as usize];
                let target = loop {
                    if let Some(&t) = goto.get(&(f, c)) {
                        if t != next {
                            break t;
                        }
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = fail[f as usize];
                };
                fail[next as usize] = target;
            }
        }
        let starts = children[0].iter().copied().collect();
        StopScanner {
            goto,
            fail,
            depth,
            out,
            starts,
            state: 0,
        }
    }

    #[inline]
    fn step(&self, mut state: u32, c: char) -> u32 {
        loop {
            if state == 0 {
                return self.starts.get(&c).copied().unwrap_or(0);
            }
            if let Some(&next) = self.goto.get(&(state, c)) {
                return next;
            }
            state = self.fail[state as usize];
        }
    }

    /// Feeds `text`; on the first completed stop returns (characters of `text` consumed
    /// through the end of the match, pattern index) and stops there.
    pub fn feed(&mut self, text: &str) -> Option<(usize, usize)> {
        let mut state = self.state;
        for (k, c) in text.chars().enumerate() {
            if state == 0 && !self.starts.contains_key(&c) {
                continue;
            }
            state = self.step(state, c);
            let hit = self.out[state as usize];
            if hit != NONE {
                self.state = state;
                return Some((k + 1, hit as usize));
            }
        }
        self.state = state;
        None
    }

    /// Length (characters) of the live stop prefix at the end of the text fed so far.
    pub fn depth(&self) -> usize {
        self.depth[self.state as usize] as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_then_longest() {
        let pats: Vec<String> = ["STOPX", "TO", "OK S", "P", "OP", "STOP"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut s = StopScanner::new(&pats, false);
        assert_eq!(s.feed("OK S"), Some((4, 2)));
        let mut s = StopScanner::new(&pats[3..], false);
        assert_eq!(s.feed("xST"), None);
        assert_eq!(s.depth(), 2);
        assert_eq!(s.feed("OP"), Some((2, 2)));
        // "P", "OP" and "STOP" all end here: the first listed wins under vLLM's rule.
        let mut s = StopScanner::new(&pats[3..], true);
        assert_eq!(s.feed("xSTOP"), Some((5, 0)));
    }
}
