//! Unigram segmentation time in Rust alone (no Python, no normalizer): Viterbi over
//! the whole text against the segment cache, on normalized texts, in thread CPU time.
//!
//! python benchmarks/dump_unigram_texts.py MODEL.model MB DUMP
//! cargo run --release --example profile_unigram -- DUMP [ROUNDS]

use tokenpact::sentencepiece::unigram::Unigram;
use tokenpact::sentencepiece::PieceType;

/// On-CPU time of this thread (seconds), as in profile_encode.
fn cpu_now() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split(' ')
        .next()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0) as f64
        / 1e9
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        head
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("dump file");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let mut r = Reader(&data);
    let count = r.u32() as usize;
    let (mut pieces, mut scores, mut types) = (vec![], vec![], vec![]);
    for _ in 0..count {
        let len = r.u32() as usize;
        scores.push(f32::from_le_bytes(r.take(4).try_into().unwrap()));
        types.push(PieceType::from_proto(r.take(1)[0]).expect("piece type"));
        pieces.push(r.take(len).to_vec());
    }
    let texts: Vec<Vec<u8>> = (0..r.u32())
        .map(|_| {
            let len = r.u32() as usize;
            r.take(len).to_vec()
        })
        .collect();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let unk = types
        .iter()
        .position(|t| *t == PieceType::Unknown)
        .unwrap_or(0) as u32;
    let mut best_s = [f64::MAX; 2];
    let mut outputs: Vec<Vec<(u32, u32, u32)>> = vec![vec![]; 2];
    for round in 0..rounds {
        // Built per round: each round starts with an empty cache, as one pass does.
        let models = [
            (
                "whole-text Viterbi",
                Unigram::new(&pieces, &types, &scores, false),
            ),
            (
                "segment cache",
                Unigram::new(&pieces, &types, &scores, true),
            ),
        ];
        let only: Option<usize> = std::env::var("ONLY").ok().and_then(|v| v.parse().ok());
        for (i, (name, model)) in models.iter().enumerate() {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            let (mut best, mut out) = (Vec::new(), Vec::new());
            let mut all = Vec::new();
            let t = cpu_now();
            for text in &texts {
                out.clear();
                model.encode(unk, text, &mut best, &mut out);
                if round == 0 {
                    all.extend_from_slice(&out);
                }
            }
            let dt = cpu_now() - t;
            best_s[i] = best_s[i].min(dt);
            if round == 0 {
                outputs[i] = all;
            }
            println!("round {round} {name}: {:.1} MB/s", bytes as f64 / dt / 1e6);
        }
    }
    println!(
        "best: whole {:.1} MB/s, cached {:.1} MB/s ({:.2}x); identical pieces: {}",
        bytes as f64 / best_s[0] / 1e6,
        bytes as f64 / best_s[1] / 1e6,
        best_s[0] / best_s[1],
        outputs[0] == outputs[1]
    );
}
