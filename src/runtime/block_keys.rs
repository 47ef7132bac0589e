//! Prefix-cache block keys: a parent chain over complete blocks of IDs (seed 000 0x0D).
//!
//! `K_{-1} = ROOT` (32 zero bytes), `K_i = H_D(z || K_{i-1} || ids of block i)`, where
//! `H_D` is the contract's framed SHA-256 (`PROTOCOL_PREFIX || u32 len D || D || u64
//! len payload || payload`, lengths big-endian) with domain `prefix-cache-block-v1`, `z`
//! the 32-byte namespace digest and each ID a big-endian u32. Only complete blocks are
//! keyed; the tail belongs to the request alone.
//!
//! `vllm_chain` reproduces vLLM's `hash_block_tokens` with `sha256_cbor`:
//! `K_i = SHA256(cbor((K_{i-1}, tuple(ids), extra_keys)))`, `K_{-1} = NONE_HASH`.

use sha2::{Digest, Sha256};

use crate::error::{CoreError, CoreResult};

pub const PROTOCOL_PREFIX: &[u8] = b"TOKENPACT-CONTRACT\x00";
pub const BLOCK_DOMAIN: &str = "prefix-cache-block-v1";

fn check_block_size(block_size: usize) -> CoreResult<()> {
    if block_size == 0 {
        return Err(CoreError::Config(
            "block_size must be at least 1 (vLLM uses 16 by default)".into(),
        ));
    }
    Ok(())
}

/// Keys of the complete blocks of `ids`, 32 bytes each, concatenated.
pub fn tokenpact_chain(
    ids: &[u32],
    block_size: usize,
    namespace: &[u8; 32],
) -> CoreResult<Vec<u8>> {
    check_block_size(block_size)?;
    let blocks = ids.len() / block_size;
    let mut out = Vec::with_capacity(blocks * 32);
    let mut parent = [0u8; 32];
    let domain = BLOCK_DOMAIN.as_bytes();
    let payload_len = (64 + 4 * block_size) as u64;
    // The framing up to the payload is the same for every block: hash it once.
    let mut prefix = Sha256::new();
    prefix.update(PROTOCOL_PREFIX);
    prefix.update((domain.len() as u32).to_be_bytes());
    prefix.update(domain);
    prefix.update(payload_len.to_be_bytes());
    prefix.update(namespace);
    let mut buf = Vec::with_capacity(32 + 4 * block_size);
    for block in ids.chunks_exact(block_size) {
        buf.clear();
        buf.extend_from_slice(&parent);
        for &id in block {
            buf.extend_from_slice(&id.to_be_bytes());
        }
        let mut h = prefix.clone();
        h.update(&buf);
        parent = h.finalize().into();
        out.extend_from_slice(&parent);
    }
    Ok(out)
}

/// CBOR head of major type `major` with argument `n` (RFC 8949 shortest form, which is
/// what cbor2 writes for ints and lengths, canonical or not).
fn cbor_head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xFF => out.extend_from_slice(&[m | 24, n as u8]),
        0x100..=0xFFFF => {
            out.push(m | 25);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xFFFF_FFFF => {
            out.push(m | 26);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

/// vLLM's chain. `none_hash`: the root parent (vLLM's NONE_HASH); `extra_first` and
/// `extra_rest`: the CBOR encoding of `extra_keys` for the first block and for the others
/// (vLLM adds the cache salt to the first block only; `None` is `f6`).
pub fn vllm_chain(
    ids: &[u32],
    block_size: usize,
    none_hash: &[u8],
    extra_first: &[u8],
    extra_rest: &[u8],
) -> CoreResult<Vec<u8>> {
    check_block_size(block_size)?;
    let blocks = ids.len() / block_size;
    let mut out = Vec::with_capacity(blocks * 32);
    let mut parent: Vec<u8> = none_hash.to_vec();
    let mut buf = Vec::with_capacity(48 + 5 * block_size);
    for (i, block) in ids.chunks_exact(block_size).enumerate() {
        buf.clear();
        cbor_head(&mut buf, 4, 3); // a 3-tuple
        cbor_head(&mut buf, 2, parent.len() as u64);
        buf.extend_from_slice(&parent);
        cbor_head(&mut buf, 4, block.len() as u64);
        for &id in block {
            cbor_head(&mut buf, 0, u64::from(id));
        }
        buf.extend_from_slice(if i == 0 { extra_first } else { extra_rest });
        let digest: [u8; 32] = Sha256::digest(&buf).into();
        parent.clear();
        parent.extend_from_slice(&digest);
        out.extend_from_slice(&digest);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbor_heads_are_shortest() {
        let mut v = Vec::new();
        for n in [0u64, 23, 24, 255, 256, 65535, 65536, 1 << 32] {
            cbor_head(&mut v, 0, n);
        }
        assert_eq!(
            v,
            [
                0x00, 0x17, 0x18, 0x18, 0x18, 0xff, 0x19, 0x01, 0x00, 0x19, 0xff, 0xff, 0x1a, 0x00,
                0x01, 0x00, 0x00, 0x1b, 0, 0, 0, 1, 0, 0, 0, 0
            ]
        );
    }

    #[test]
    fn tail_is_not_keyed_and_parents_chain() {
        let ns = [7u8; 32];
        let ids: Vec<u32> = (0..60).collect();
        let keys = tokenpact_chain(&ids, 8, &ns).unwrap();
        assert_eq!(keys.len(), 7 * 32);
        let mut changed = ids.clone();
        changed[18] = 999;
        let other = tokenpact_chain(&changed, 8, &ns).unwrap();
        let same = (0..7)
            .take_while(|&i| keys[i * 32..(i + 1) * 32] == other[i * 32..(i + 1) * 32])
            .count();
        assert_eq!(same, 2);
    }
}
