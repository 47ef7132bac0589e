//! The `input_ids` column chunk of a Parquet shard, encoded here rather than by the
//! `parquet` crate's column writer: the token IDs are most of the file, so their bytes
//! are what the writer spends its time on (hashing and writing them).
//!
//! A column chunk is, per row group (one encoded chunk of documents):
//!
//! * **dictionary form** (the default): a dictionary page with the distinct IDs of the
//!   chunk in ascending order (PLAIN INT32), then data pages whose values are
//!   dictionary indices (`RLE_DICTIONARY`: one bit-width byte, then one bit-packed run of
//!   the RLE/bit-packed hybrid, `ceil(log2(distinct))` bits per token, at least 1: 14 for
//!   a vocabulary of 16,384 instead of 32). pyarrow writes integer columns this way by default, so
//!   every Parquet reader reads it. The dictionary is built with a direct table indexed
//!   by ID (no hashing): bounded by [`MAX_DICTIONARY_ID`].
//! * **PLAIN form** (the fallback): data pages with the IDs as little-endian INT32.
//!
//! [`choose_dictionary`] decides per chunk (the rule is documented there). Both forms use
//! data page v1 with the repetition and definition levels RLE-encoded (bit width 1; per
//! document one or two runs), pages of about [`PAGE_BYTES`] of values that end on document
//! boundaries, no statistics, no compression. The bytes depend only on the chunk.

use parquet::basic::{Compression, Encoding, EncodingMask, PageType};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, PageEncodingStats};
use parquet::schema::types::ColumnDescPtr;

use super::parquet_bit_pack::bit_pack;
use super::parquet_shard::TokenIds;

/// Values bytes after which a data page ends (at the next document boundary), about
/// what pyarrow and the `parquet` crate write (1 MiB).
pub const PAGE_BYTES: usize = 1 << 20;

/// IDs up to this bound (exclusive) can be dictionary-encoded: the direct ID -> index
/// table holds one `u32` per possible ID, so it is bounded at 4 MiB (every 16-bit ID, and
/// 32-bit vocabularies up to ~1 M entries); a chunk with a larger ID is written PLAIN.
pub const MAX_DICTIONARY_ID: u32 = 1 << 20;

// Thrift compact protocol type codes (parquet-format's page headers).
const T_I32: u8 = 5;
const T_STRUCT: u8 = 12;
const T_BOOL_TRUE: u8 = 1;

/// Reused buffers for encoding the list column (cleared before each chunk): bounded by
/// the chunk's size plus the 4 MiB table.
#[derive(Default)]
pub struct ListPageEncoder {
    /// The column chunk's bytes: page headers and pages.
    chunk: Vec<u8>,
    /// One page's RLE-encoded repetition and definition levels.
    levels: Vec<u8>,
    /// ID -> dictionary index (or presence mark while counting): 65,536 entries for
    /// 16-bit IDs, `max_id + 1` for 32-bit ones.
    table: Vec<u32>,
    /// The dictionary: distinct IDs, ascending.
    dict: Vec<u32>,
}

/// How a chunk's token values are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueEncoding {
    /// Dictionary page + `RLE_DICTIONARY` indices of this many bits.
    Dictionary { bit_width: u8 },
    /// PLAIN little-endian INT32.
    Plain,
}

/// The encoded column chunk: its bytes (from offset 0) and the metadata the row group
/// writer needs to splice it in (offsets relative to the bytes).
pub struct EncodedColumnChunk<'a> {
    pub bytes: &'a [u8],
    pub close: ColumnCloseResult,
    pub encoding: ValueEncoding,
}

const U16_TABLE: usize = 1 << 16;

/// The ID table of 16-bit IDs as a fixed-size array (it has [`U16_TABLE`] entries).
fn u16_table(table: &mut [u32]) -> &mut [u32; U16_TABLE] {
    (&mut table[..U16_TABLE])
        .try_into()
        .expect("a 16-bit ID table")
}

/// Minimum bits to store indices `0..n` (at least 1: readers expect a non-zero width).
fn bit_width(n: usize) -> u8 {
    if n <= 2 {
        1
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as u8
    }
}

/// The chunk's values in the dictionary form (`Some(bit width)`) or PLAIN (`None`).
///
/// Rule, per chunk: dictionary when the chunk has at least one ID, its largest ID is
/// below [`MAX_DICTIONARY_ID`], and the dictionary page plus the packed indices take at
/// most 3/4 of the PLAIN bytes (`4 * distinct + tokens * bit_width / 8 <= 3 * tokens`);
/// otherwise PLAIN. Building the dictionary costs a pass over the IDs and packing
/// another, while every byte saved is one less to hash and write: when the dictionary
/// saves less than a quarter (mostly distinct IDs, as in a tiny chunk), PLAIN is
/// cheaper. Fills `table` (ID -> index) and `dict` for the dictionary form.
fn choose_dictionary(ids: &TokenIds<'_>, table: &mut Vec<u32>, dict: &mut Vec<u32>) -> Option<u8> {
    let n = ids.len();
    if n == 0 {
        return None;
    }
    // Presence marks in bytes first (a 16k vocabulary's 16 KiB stay in L1; marking in
    // the u32 table took ~40% of the encoder), then the ID -> index table from them.
    let seen = match ids {
        TokenIds::U16(v) => {
            // Every 16-bit ID has a slot: the fixed-size view needs no bounds checks.
            let mut seen = vec![0u8; U16_TABLE];
            let slots: &mut [u8; U16_TABLE] = (&mut seen[..]).try_into().expect("16-bit IDs");
            v.iter().for_each(|&id| slots[usize::from(id)] = 1);
            seen
        }
        TokenIds::U32(v) => {
            let max = v.iter().copied().max().unwrap_or(0);
            if max >= MAX_DICTIONARY_ID {
                return None;
            }
            let mut seen = vec![0u8; max as usize + 1];
            v.iter().for_each(|&id| seen[id as usize] = 1);
            seen
        }
    };
    // Entries of unseen IDs keep stale values: they are never looked up.
    table.resize(seen.len(), 0);
    dict.clear();
    for (id, (&mark, slot)) in seen.iter().zip(table.iter_mut()).enumerate() {
        if mark != 0 {
            *slot = dict.len() as u32;
            dict.push(id as u32);
        }
    }
    let width = bit_width(dict.len());
    let dict_bytes = 4 * dict.len() as u64 + (n as u64 * u64::from(width)).div_ceil(8);
    (dict_bytes <= 3 * n as u64).then_some(width)
}

impl ListPageEncoder {
    /// Encodes the list column of one chunk: `offsets` `[n + 1]` from 0 into `ids`
    /// (checked by the caller). `descr` is the column's descriptor.
    pub fn encode(
        &mut self,
        descr: ColumnDescPtr,
        ids: &TokenIds<'_>,
        offsets: &[i64],
    ) -> Result<EncodedColumnChunk<'_>, ParquetError> {
        self.chunk.clear();
        let width = choose_dictionary(ids, &mut self.table, &mut self.dict);
        let mut stats = Vec::with_capacity(2);
        let mut mask = EncodingMask::new_from_encodings([Encoding::RLE].iter());
        let dictionary_page_offset = match width {
            Some(_) => {
                let body = 4 * self.dict.len();
                page_header(
                    &mut self.chunk,
                    PageType::DICTIONARY_PAGE,
                    body,
                    self.dict.len(),
                    Encoding::PLAIN,
                )?;
                for &id in &self.dict {
                    self.chunk.extend_from_slice(&id.to_le_bytes());
                }
                mask.insert(Encoding::PLAIN);
                stats.push(PageEncodingStats {
                    page_type: PageType::DICTIONARY_PAGE,
                    encoding: Encoding::PLAIN,
                    count: 1,
                });
                Some(0)
            }
            None => None,
        };
        let data_page_offset = self.chunk.len() as i64;
        let encoding = match width {
            Some(_) => Encoding::RLE_DICTIONARY,
            None => Encoding::PLAIN,
        };
        mask.insert(encoding);
        let per_value_bits = width.map_or(32, usize::from);
        let n_docs = offsets.len() - 1;
        let (mut pages, mut num_values, mut doc) = (0i32, 0i64, 0usize);
        while doc < n_docs {
            // The page's documents: at least one, then whole documents until the values
            // reach PAGE_BYTES (a longer document is one page).
            let start = doc;
            let first = offsets[doc] as usize;
            doc += 1;
            while doc < n_docs && (offsets[doc] as usize - first) * per_value_bits / 8 < PAGE_BYTES
            {
                doc += 1;
            }
            let docs = &offsets[start..=doc];
            let levels = encode_levels(&mut self.levels, docs);
            num_values += levels as i64;
            let (a, b) = (first, offsets[doc] as usize);
            self.write_data_page(ids, a, b, levels, width)?;
            pages += 1;
        }
        if pages > 0 {
            stats.push(PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding,
                count: pages,
            });
        }
        let size = self.chunk.len() as i64;
        let metadata = ColumnChunkMetaData::builder(descr)
            .set_compression(Compression::UNCOMPRESSED)
            .set_encodings_mask(mask)
            .set_page_encoding_stats(stats)
            .set_total_compressed_size(size)
            .set_total_uncompressed_size(size)
            .set_num_values(num_values)
            .set_data_page_offset(data_page_offset)
            .set_dictionary_page_offset(dictionary_page_offset)
            .build()?;
        Ok(EncodedColumnChunk {
            bytes: &self.chunk,
            close: ColumnCloseResult {
                bytes_written: size as u64,
                rows_written: n_docs as u64,
                metadata,
                bloom_filter: None,
                column_index: None,
                offset_index: None,
            },
            encoding: match width {
                Some(bit_width) => ValueEncoding::Dictionary { bit_width },
                None => ValueEncoding::Plain,
            },
        })
    }

    /// Appends one data page (header, the levels in `self.levels`, then the values
    /// `ids[a..b]`) to the chunk.
    fn write_data_page(
        &mut self,
        ids: &TokenIds<'_>,
        a: usize,
        b: usize,
        levels: usize,
        width: Option<u8>,
    ) -> Result<(), ParquetError> {
        let count = b - a;
        let values_bytes = match width {
            Some(w) => {
                let groups = count.div_ceil(8);
                1 + if count == 0 {
                    0
                } else {
                    varint_len(((groups as u64) << 1) | 1) + groups * usize::from(w)
                }
            }
            None => 4 * count,
        };
        let body = self.levels.len() + values_bytes;
        let encoding = match width {
            Some(_) => Encoding::RLE_DICTIONARY,
            None => Encoding::PLAIN,
        };
        page_header(&mut self.chunk, PageType::DATA_PAGE, body, levels, encoding)?;
        self.chunk.extend_from_slice(&self.levels);
        let start = self.chunk.len();
        match width {
            Some(w) => {
                self.chunk.push(w);
                if count > 0 {
                    let groups = count.div_ceil(8);
                    put_varint(&mut self.chunk, ((groups as u64) << 1) | 1);
                    let table = &mut self.table;
                    match ids {
                        TokenIds::U16(v) => {
                            let slots = u16_table(table);
                            bit_pack(&mut self.chunk, w, groups, &v[a..b], |id| {
                                slots[usize::from(id)]
                            })
                        }
                        TokenIds::U32(v) => bit_pack(&mut self.chunk, w, groups, &v[a..b], |id| {
                            table[id as usize]
                        }),
                    }
                }
            }
            None => match ids {
                TokenIds::U16(v) => v[a..b]
                    .iter()
                    .for_each(|&id| self.chunk.extend_from_slice(&u32::from(id).to_le_bytes())),
                TokenIds::U32(v) => v[a..b]
                    .iter()
                    .for_each(|&id| self.chunk.extend_from_slice(&id.to_le_bytes())),
            },
        }
        debug_assert_eq!(self.chunk.len() - start, values_bytes);
        Ok(())
    }
}

/// RLE-encodes the repetition then the definition levels of the documents whose bounds
/// are `docs` (each level section: 4-byte length, then runs) into `out`; returns the
/// number of levels (tokens plus empty documents).
fn encode_levels(out: &mut Vec<u8>, docs: &[i64]) -> usize {
    out.clear();
    let mut levels = 0usize;
    // Repetition: a document of n >= 1 tokens is 0 then (n - 1) x 1; an empty one is 0.
    let section = start_section(out);
    let mut runs = Runs::default();
    for w in docs.windows(2) {
        let n = (w[1] - w[0]) as u64;
        runs.push(out, 0, 1);
        if n > 1 {
            runs.push(out, 1, n - 1);
        }
        levels += n.max(1) as usize;
    }
    runs.finish(out);
    end_section(out, section);
    // Definition: n x 1 for a document of n >= 1 tokens, 0 for an empty one.
    let section = start_section(out);
    let mut runs = Runs::default();
    for w in docs.windows(2) {
        let n = (w[1] - w[0]) as u64;
        if n == 0 {
            runs.push(out, 0, 1);
        } else {
            runs.push(out, 1, n);
        }
    }
    runs.finish(out);
    end_section(out, section);
    levels
}

fn start_section(out: &mut Vec<u8>) -> usize {
    out.extend_from_slice(&[0; 4]);
    out.len()
}

fn end_section(out: &mut [u8], start: usize) {
    let len = (out.len() - start) as u32;
    out[start - 4..start].copy_from_slice(&len.to_le_bytes());
}

/// Merges consecutive equal levels into RLE runs (`varint(count << 1)`, one value byte).
#[derive(Default)]
struct Runs {
    value: u8,
    count: u64,
}

impl Runs {
    fn push(&mut self, out: &mut Vec<u8>, value: u8, count: u64) {
        if self.count > 0 && self.value != value {
            self.finish(out);
        }
        self.value = value;
        self.count += count;
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.count > 0 {
            put_varint(out, self.count << 1);
            out.push(self.value);
            self.count = 0;
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Thrift compact i32 field (zigzag varint) with a field-id delta of 1..=15.
fn put_i32_field(out: &mut Vec<u8>, delta: u8, v: i32) {
    out.push((delta << 4) | T_I32);
    put_varint(out, u64::from(((v << 1) ^ (v >> 31)) as u32));
}

/// A page header (parquet-format `PageHeader`, thrift compact): a data page v1
/// (`DataPageHeader`: values, encoding, RLE levels) or a dictionary page
/// (`DictionaryPageHeader`: values, PLAIN, sorted); no CRC, no statistics.
fn page_header(
    out: &mut Vec<u8>,
    page_type: PageType,
    body: usize,
    num_values: usize,
    encoding: Encoding,
) -> Result<(), ParquetError> {
    let size = i32::try_from(body)
        .map_err(|_| ParquetError::General(format!("page of {body} bytes is over 2 GiB")))?;
    let values = i32::try_from(num_values)
        .map_err(|_| ParquetError::General(format!("page of {num_values} values")))?;
    let dictionary = page_type == PageType::DICTIONARY_PAGE;
    put_i32_field(out, 1, if dictionary { 2 } else { 0 }); // 1: type
    put_i32_field(out, 1, size); // 2: uncompressed_page_size
    put_i32_field(out, 1, size); // 3: compressed_page_size
                                 // 5: data_page_header or 7: dictionary_page_header (deltas from field 3).
    out.push(((if dictionary { 4 } else { 2 }) << 4) | T_STRUCT);
    put_i32_field(out, 1, values); // 1: num_values
    put_i32_field(out, 1, encoding_code(encoding)); // 2: encoding
    if dictionary {
        out.push((1 << 4) | T_BOOL_TRUE); // 3: is_sorted = true
    } else {
        put_i32_field(out, 1, 3); // 3: definition_level_encoding = RLE
        put_i32_field(out, 1, 3); // 4: repetition_level_encoding = RLE
    }
    out.push(0); // end of the nested struct
    out.push(0); // end of PageHeader
    Ok(())
}

fn encoding_code(encoding: Encoding) -> i32 {
    match encoding {
        Encoding::RLE_DICTIONARY => 8,
        Encoding::RLE => 3,
        _ => 0, // PLAIN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::column::page::{CompressedPage, Page, PageWriter};
    use parquet::file::writer::{SerializedPageWriter, TrackedWrite};

    /// Our header bytes equal the `parquet` crate's serialization of the same page.
    fn crate_header(page: Page) -> Vec<u8> {
        let body = page.buffer().len();
        let mut sink = TrackedWrite::new(Vec::new());
        {
            let mut writer = SerializedPageWriter::new(&mut sink);
            writer.write_page(CompressedPage::new(page, body)).unwrap();
        }
        let mut bytes = sink.into_inner().unwrap();
        bytes.truncate(bytes.len() - body);
        bytes
    }

    #[test]
    fn page_headers_match_the_crate() {
        for (levels, body) in [(0usize, 0usize), (5, 17), (1 << 20, 3 << 20), (70_000, 1)] {
            let buf = vec![0u8; body];
            let expected = crate_header(Page::DataPage {
                buf: buf.clone().into(),
                num_values: levels as u32,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            });
            let mut ours = Vec::new();
            page_header(
                &mut ours,
                PageType::DATA_PAGE,
                body,
                levels,
                Encoding::RLE_DICTIONARY,
            )
            .unwrap();
            assert_eq!(ours, expected);
            let expected = crate_header(Page::DictionaryPage {
                buf: buf.into(),
                num_values: levels as u32,
                encoding: Encoding::PLAIN,
                is_sorted: true,
            });
            let mut ours = Vec::new();
            page_header(
                &mut ours,
                PageType::DICTIONARY_PAGE,
                body,
                levels,
                Encoding::PLAIN,
            )
            .unwrap();
            assert_eq!(ours, expected);
        }
    }

    #[test]
    fn levels_are_runs_per_document() {
        let mut out = Vec::new();
        // Documents of 3, 0 and 1 tokens: rep 0 1 1 | 0 | 0, def 1 1 1 | 0 | 1.
        assert_eq!(encode_levels(&mut out, &[0, 3, 3, 4]), 5);
        let rep = [2u8, 0, 4, 1, 4, 0]; // (1 x 0) (2 x 1) (2 x 0)
        let def = [6u8, 1, 2, 0, 2, 1]; // (3 x 1) (1 x 0) (1 x 1)
        let mut expected = vec![6, 0, 0, 0];
        expected.extend_from_slice(&rep);
        expected.extend_from_slice(&[6, 0, 0, 0]);
        expected.extend_from_slice(&def);
        assert_eq!(out, expected);
    }

    #[test]
    fn the_rule_picks_plain_for_empty_distinct_or_large_ids() {
        let (mut table, mut dict) = (Vec::new(), Vec::new());
        assert_eq!(
            choose_dictionary(&TokenIds::U16(&[]), &mut table, &mut dict),
            None
        );
        let distinct: Vec<u32> = (0..100).collect();
        assert_eq!(
            choose_dictionary(&TokenIds::U32(&distinct), &mut table, &mut dict),
            None
        );
        let big = [MAX_DICTIONARY_ID, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
        assert_eq!(
            choose_dictionary(&TokenIds::U32(&big), &mut table, &mut dict),
            None
        );
        let repeated = [7u16; 40];
        assert_eq!(
            choose_dictionary(&TokenIds::U16(&repeated), &mut table, &mut dict),
            Some(1)
        );
        assert_eq!(dict, [7]);
        let ids: Vec<u16> = (0..4000)
            .map(|i| (i * 7919 % 1000) as u16 + 65_000)
            .collect();
        assert_eq!(
            choose_dictionary(&TokenIds::U16(&ids), &mut table, &mut dict),
            Some(10)
        );
        assert_eq!(dict.len(), 1000);
        assert!(dict.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(table[dict[999] as usize], 999);
    }

    #[test]
    fn varints() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::from(u32::MAX)] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
        }
    }
}
