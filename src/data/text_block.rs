//! A block of documents as one UTF-8 buffer plus `n + 1` byte offsets: the form in which
//! the Ray engine ships documents to its workers (two flat arrays, read in place from
//! the object store, instead of one Python string per document).

use crate::error::{CoreError, CoreResult};

/// The documents of `buf` delimited by `offsets` (`offsets[0] == 0`, non-decreasing,
/// last `== buf.len()`, every offset on a character boundary).
pub fn block_texts<'a>(buf: &'a [u8], offsets: &[u64]) -> CoreResult<Vec<&'a str>> {
    let text = std::str::from_utf8(buf)
        .map_err(|e| CoreError::InvalidInput(format!("a text block is not UTF-8: {e}")))?;
    let (first, last) = match (offsets.first(), offsets.last()) {
        (Some(&f), Some(&l)) => (f, l),
        _ => {
            return Err(CoreError::InvalidInput(
                "a text block needs n + 1 offsets (at least [0])".into(),
            ))
        }
    };
    if first != 0 || last != buf.len() as u64 {
        return Err(CoreError::InvalidInput(format!(
            "text block offsets must run from 0 to the buffer length {}, got {first}..{last}",
            buf.len()
        )));
    }
    offsets
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            let (start, end) = (w[0] as usize, w[1] as usize);
            if start > end {
                return Err(CoreError::InvalidInput(format!(
                    "text block offsets decrease at document {i}"
                )));
            }
            text.get(start..end).ok_or_else(|| {
                CoreError::InvalidInput(format!(
                    "document {i} of a text block does not start and end on character boundaries"
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_offsets() {
        let buf = "héllo wörld".as_bytes();
        let texts = block_texts(buf, &[0, 6, 6, buf.len() as u64]).unwrap();
        assert_eq!(texts, vec!["héllo", "", " wörld"]);
    }

    #[test]
    fn refuses_bad_offsets() {
        let buf = "héllo".as_bytes();
        assert!(block_texts(buf, &[]).is_err());
        assert!(block_texts(buf, &[1, buf.len() as u64]).is_err());
        assert!(block_texts(buf, &[0, 2, buf.len() as u64]).is_err()); // inside 'é'
        assert!(block_texts(buf, &[0, 4, 3, buf.len() as u64]).is_err());
        assert!(block_texts(&[0xff], &[0, 1]).is_err());
    }
}
