//! Serving runtime engines (seed 000 0x0D): incremental decoding, stop matching,
//! prefix-cache block keys. No Python types here; `py/runtime.rs` binds them.

pub mod block_keys;
pub mod chain;
pub mod decode;
pub mod output;
pub mod stops;
pub mod stream_encode;
mod stream_guards;
mod stream_normalize;
mod stream_record;
mod stream_sentencepiece;
pub mod utf8;
