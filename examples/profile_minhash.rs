//! Phase timings of MinHash signatures in Rust alone (no Python), per shingle: word
//! shingling, SHA-1 shingle hashing (the `sha1` crate per shingle vs the batched SHA
//! extension path), and the 128 permutations of each scheme on each instruction set.
//!
//! cargo run --release --example profile_minhash -- CORPUS.jsonl.gz [MB]
//!
//! Times are on-CPU time of this thread, best of five rounds, so other processes on a
//! shared machine inflate them less than wall time would (they still share caches).

use std::io::Read;

use tokenpact::data::minhash::{MinHasher, Permutations, ShingleKind, Shingling};
use tokenpact::data::permute::Simd;
use tokenpact::data::shingle_hash::ShingleHasher;
use tokenpact::data::shingles::ShingleScratch;

/// On-CPU nanoseconds of this thread.
fn thread_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Best of five rounds of `f`, in nanoseconds per shingle.
fn per_shingle(shingles: usize, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = thread_ns();
            f();
            (thread_ns() - t) as f64
        })
        .fold(f64::INFINITY, f64::min)
        / shingles as f64
}

/// One result line: the step, a tab, its cost (the benchmark script parses these).
fn row(step: &str, ns: f64) {
    println!("{step:<55}\t{ns:6.1} ns/shingle");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let limit_mb: usize = args.get(2).map_or(20, |s| s.parse().unwrap());
    let mut raw = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&args[1]).expect("corpus"))
        .read_to_string(&mut raw)
        .unwrap();
    let mut texts: Vec<String> = Vec::new();
    let mut total = 0;
    for line in raw.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(t) = v.get("text").and_then(|t| t.as_str()) {
            total += t.len();
            texts.push(t.to_string());
            if total >= limit_mb * 1_000_000 {
                break;
            }
        }
    }
    let shingling = Shingling::new(ShingleKind::Word, 5).unwrap();
    let mut scratch = ShingleScratch::default();
    let count: usize = texts
        .iter()
        .map(|t| shingling.prepare(t, &mut scratch).spans.len())
        .sum();
    println!(
        "{} docs, {:.1} MB, {} 5-word shingles ({:.2} bytes of text each)",
        texts.len(),
        total as f64 / 1e6,
        count,
        total as f64 / count as f64
    );

    let mut sink = 0u64;
    let ns = per_shingle(count, || {
        for t in &texts {
            sink += shingling.prepare(t, &mut scratch).spans.len() as u64;
        }
    });
    row("shingling (word scan + join)", ns);
    let mut hashes = Vec::new();
    for (name, hasher) in [
        ("sha1 crate per shingle", ShingleHasher::portable()),
        ("batched, SHA extensions", ShingleHasher::new()),
    ] {
        if name.starts_with("batched") && !hasher.uses_sha_extensions() {
            println!("hashing: no SHA extensions on this CPU");
            continue;
        }
        let ns = per_shingle(count, || {
            for t in &texts {
                hashes.clear();
                hasher.hash_all(&shingling.prepare(t, &mut scratch), &mut hashes);
                sink ^= hashes.first().copied().unwrap_or(0);
            }
        });
        row(&format!("shingling + hashing, {name}"), ns);
    }

    let per_doc: Vec<Vec<u64>> = {
        let mut m = MinHasher::new();
        texts
            .iter()
            .map(|t| m.shingle_hashes(t, &shingling).to_vec())
            .collect()
    };
    // Parameters shaped like datasketch's (a odd for affine32, a, b < 2^61 for legacy).
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let a: Vec<u64> = (0..128).map(|_| next() % ((1 << 61) - 2) + 1).collect();
    let b: Vec<u64> = (0..128).map(|_| next() % ((1 << 61) - 1)).collect();
    let a32: Vec<u64> = a.iter().map(|&x| u64::from(x as u32 | 1)).collect();
    let b32: Vec<u64> = b.iter().map(|&x| u64::from(x as u32)).collect();
    for (scheme, pa, pb) in [("affine32", &a32, &b32), ("legacy", &a, &b)] {
        let base = Permutations::new(scheme, pa, pb).unwrap();
        for simd in [Simd::Scalar, Simd::Avx2, Simd::Avx512] {
            let perms = base.clone().with_simd(simd);
            if perms.simd() != simd {
                continue;
            }
            let mut sig = vec![0u32; 128];
            let mut mixed = Vec::new();
            let ns = per_shingle(count, || {
                for h in &per_doc {
                    sig.fill(u32::MAX);
                    perms.update(h, &mut mixed, &mut sig);
                    sink ^= u64::from(sig[0]);
                }
            });
            row(&format!("128 permutations, {scheme}, {simd:?}"), ns);
        }
        // One document after another on this thread (what each rayon worker does).
        let mut worker = MinHasher::new();
        let mut sig = vec![0u32; 128];
        let ns = per_shingle(count, || {
            for t in &texts {
                worker.signature_into(t, &shingling, &base, &mut sig);
                sink ^= u64::from(sig[0]);
            }
        });
        row(
            &format!(
                "signatures end to end, {scheme} ({:.0} MB per CPU-second)",
                total as f64 / count as f64 / ns * 1e3
            ),
            ns,
        );
    }
    println!("(checksum {sink})");
}
