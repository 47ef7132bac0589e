//! Byte-level BPE: the model (merge map + vocabulary), the encoder and the trainer.

pub mod count;
pub mod dropout;
pub mod encode;
pub mod hf;
pub mod model;
pub mod train;

#[inline]
pub(crate) fn pair_key(left: u32, right: u32) -> u64 {
    ((left as u64) << 32) | right as u64
}

#[inline]
pub(crate) fn unpack(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}
