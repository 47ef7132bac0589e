//! Character classes used by the built-in pre-tokenizers.
//!
//! The table is generated from Python's `regex` module (scripts/gen_unicode_tables.py),
//! so `\p{L}`, `\p{N}`, `\s`, the letter subcategories and `\p{M}` agree with the
//! oracle the differential tests compare against, whatever Unicode version Rust uses.

use std::sync::OnceLock;

pub const L: u16 = 1;
pub const N: u16 = 2;
pub const WS: u16 = 4;
pub const LU: u16 = 8;
pub const LL: u16 = 16;
pub const LT: u16 = 32;
pub const LM: u16 = 64;
pub const LO: u16 = 128;
pub const M: u16 = 256;

static RAW: &[u8] = include_bytes!("unicode_classes.bin");

pub struct Classes {
    class_flags: Vec<u16>,
    block_index: Vec<u16>,
    blocks: &'static [u8],
    /// Flags of the ASCII characters (the scanners' fast path reads it directly).
    pub ascii: [u16; 128],
}

fn read_u32(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
}

fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl Classes {
    fn parse() -> Classes {
        // The file is generated and embedded at compile time; a wrong layout is a build
        // defect, caught by the first unit test, not a user-input error.
        assert_eq!(&RAW[0..4], b"TPUC", "corrupt embedded unicode table");
        let n_classes = read_u32(RAW, 8);
        let n_blocks = read_u32(RAW, 12);
        let vlen = read_u32(RAW, 16);
        let mut at = 20 + vlen;
        let class_flags: Vec<u16> = (0..n_classes).map(|i| read_u16(RAW, at + 2 * i)).collect();
        at += 2 * n_classes;
        let block_index: Vec<u16> = (0..0x1100).map(|i| read_u16(RAW, at + 2 * i)).collect();
        at += 2 * 0x1100;
        let blocks = &RAW[at..at + n_blocks * 256];
        let mut c = Classes {
            class_flags,
            block_index,
            blocks,
            ascii: [0; 128],
        };
        for b in 0..128u32 {
            c.ascii[b as usize] = c.lookup(b);
        }
        c
    }

    #[inline]
    fn lookup(&self, cp: u32) -> u16 {
        let block = self.block_index[(cp >> 8) as usize] as usize;
        self.class_flags[self.blocks[block * 256 + (cp & 0xFF) as usize] as usize]
    }

    #[inline]
    pub fn flags(&self, c: char) -> u16 {
        let cp = c as u32;
        if cp < 128 {
            self.ascii[cp as usize]
        } else {
            self.lookup(cp)
        }
    }
}

/// Version of Python's `regex` module the embedded tables were generated from.
pub fn tables_version() -> &'static str {
    let vlen = read_u32(RAW, 16);
    std::str::from_utf8(&RAW[20..20 + vlen]).unwrap_or("unknown")
}

pub fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(Classes::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_classes() {
        let c = classes();
        assert_eq!(c.flags('a'), L | LL);
        assert_eq!(c.flags('A'), L | LU);
        assert_eq!(c.flags('7'), N);
        assert_eq!(c.flags(' '), WS);
        assert_eq!(c.flags('\u{3000}'), WS);
        assert_eq!(c.flags('中'), L | LO);
        assert_eq!(c.flags('\u{0301}'), M);
        assert_eq!(c.flags('.'), 0);
    }
}
