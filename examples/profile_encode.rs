//! Phase timings of byte-level BPE encoding in Rust alone (no Python):
//! pre-tokenizer scan, then scan + piece encoding, on a JSON Lines corpus.
//!
//! cargo run --release --example profile_encode -- TOKENIZER.model CORPUS.jsonl.gz [MB]

use std::io::Read;

/// On-CPU time of this thread (seconds): unlike wall time, it does not count the time
/// other processes hold the CPU on a shared machine.
struct Instant(u64);

impl Instant {
    fn now() -> Instant {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        Instant(
            s.split(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        )
    }

    fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(Instant::now().0 - self.0)
    }
}

use base64::Engine;
use tokenpact::bpe::model::BpeModel;
use tokenpact::pretok::builtin::Builtin;
use tokenpact::pretok::chain::PretokChain;
use tokenpact::pretok::Pretokenizer;
use tokenpact::runtime::stream_encode::{CutRule, StreamEncoder};
use tokenpact::special::Untrusted;
use tokenpact::tokenizer::CoreTokenizer;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model_text = std::fs::read_to_string(&args[1]).expect("model file");
    let mut ranks: Vec<Vec<u8>> = Vec::new();
    for line in model_text.lines().filter(|l| !l.is_empty()) {
        let mut it = line.split(' ');
        let piece = base64::engine::general_purpose::STANDARD
            .decode(it.next().unwrap())
            .unwrap();
        let rank: usize = it.next().unwrap().parse().unwrap();
        assert_eq!(rank, ranks.len());
        ranks.push(piece);
    }
    let limit_mb: usize = args.get(3).map_or(1000, |s| s.parse().unwrap());
    let mut raw = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&args[2]).unwrap())
        .read_to_string(&mut raw)
        .unwrap();
    let mut texts: Vec<String> = Vec::new();
    let mut total = 0;
    for line in raw.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(t) = v.get("text").and_then(|t| t.as_str()) {
            total += t.len();
            texts.push(t.to_string());
            if total >= limit_mb << 20 {
                break;
            }
        }
    }
    let model = BpeModel::from_ranks(ranks).unwrap();
    let tok = CoreTokenizer::new(
        model,
        PretokChain::single(Pretokenizer::Builtin(Builtin::Llama3)),
        vec![],
    )
    .unwrap();
    let core = std::sync::Arc::new(tok);
    let tok = core.as_ref();
    let mb = total as f64 / 1e6;
    println!("{} docs, {:.1} MB", texts.len(), mb);
    if std::env::var("STATS").is_ok() {
        let bpe = tok.model.as_bpe().unwrap();
        let whole = bpe.whole_piece.as_ref().unwrap();
        let (mut pieces, mut wholes, mut short, mut many, mut long_bytes, mut bytes) =
            (0, 0, 0, 0, 0, 0);
        let mut distinct = std::collections::HashSet::new();
        let mut ids = Vec::new();
        for text in &texts {
            Builtin::Llama3.split(text, |s, e| {
                let p = &text.as_bytes()[s..e];
                pieces += 1;
                bytes += p.len();
                if whole.get(p).is_some() {
                    wholes += 1;
                    return;
                }
                distinct.insert(p.to_vec());
                if p.len() <= 15 {
                    short += 1;
                    ids.clear();
                    bpe.encode_piece(p, &mut ids);
                    if ids.len() > 4 {
                        many += 1;
                    }
                } else {
                    long_bytes += p.len();
                }
            });
        }
        println!("pieces {pieces} whole {wholes} short-nonwhole {short} (>4 ids {many}) long bytes {long_bytes} of {bytes}; distinct nonwhole {}", distinct.len());
    }
    let reps = 3;
    let mut ids = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let mut n = 0usize;
        for text in &texts {
            Builtin::Llama3.split(text, |s, e| n += e - s);
        }
        let scan = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut ntok = 0;
        for text in &texts {
            ids.clear();
            tok.encode_ordinary_serial(text, &mut ids).unwrap();
            ntok += ids.len();
        }
        let full = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut offs = Vec::new();
        for text in &texts {
            ids.clear();
            offs.clear();
            tok.encode_with_offsets(text, None, &Untrusted::none(), &mut ids, &mut offs)
                .unwrap();
        }
        let with_offsets = t.elapsed().as_secs_f64();
        // The runtime's streaming encode over 64-byte pushes (the same IDs as `encode`).
        let t = Instant::now();
        // One text streamed in 64-byte pushes into `ids`.
        let stream = |text: &str, ids: &mut Vec<u32>| {
            ids.clear();
            let rule = CutRule::Pretokens(Builtin::Llama3);
            let engine = tokenpact::engine::Engine::Pipeline(core.clone());
            let mut enc = StreamEncoder::new(&engine, rule, None, true, 0).unwrap();
            for chunk in text.as_bytes().chunks(64) {
                enc.push_bytes(chunk, ids).unwrap();
            }
            enc.finish(ids).unwrap();
        };
        for _ in 0..std::env::var("STREAM_REPS").map_or(0, |v| v.parse().unwrap()) {
            for text in &texts {
                stream(text, &mut ids);
            }
        }
        let mut nstream = 0;
        for text in &texts {
            stream(text, &mut ids);
            nstream += ids.len();
        }
        let streamed = t.elapsed().as_secs_f64();
        assert_eq!(nstream, ntok);
        println!(
            "scan {:.1} MB/s ({:.3}s)  encode {:.1} MB/s ({:.3}s, {} tokens)  offsets {:.1} MB/s  \
             stream64 {:.1} MB/s ({:.3}s, {:.2}x)  [{}]",
            mb / scan,
            scan,
            mb / full,
            full,
            ntok,
            mb / with_offsets,
            mb / streamed,
            streamed,
            streamed / full,
            n
        );
    }
}
