//! The reading primitives of `Reader`: varints, lengths, raw bytes, strings, array/map block
//! counts, floats and booleans, each checked against what is left of the body before anything
//! is taken.

use super::Reader;

impl<'a> Reader<'a, '_> {
    fn truncated(&self, what: &str) -> String {
        format!("truncated body: {what} at byte {}", self.pos)
    }

    pub(super) fn long(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.truncated("a varint runs past the end"));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(format!(
            "a varint longer than 10 bytes at byte {}",
            self.pos
        ))
    }

    pub(super) fn int(&mut self) -> Result<i32, String> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| format!("int out of range: {v}"))
    }

    pub(super) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if n > self.bytes.len() - self.pos {
            return Err(self.truncated(&format!("{what} of {n} bytes")));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn len(&mut self, what: &str) -> Result<usize, String> {
        let n = self.long()?;
        let n = usize::try_from(n).map_err(|_| format!("negative {what} length {n}"))?;
        if n > self.bytes.len() - self.pos {
            return Err(self.truncated(&format!("{what} of {n} bytes")));
        }
        Ok(n)
    }

    pub(super) fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.len("bytes")?;
        self.take(n, "bytes")
    }

    pub(super) fn string(&mut self) -> Result<&'a str, String> {
        let n = self.len("string")?;
        let s = self.take(n, "string")?;
        std::str::from_utf8(s)
            .map_err(|_| format!("a string that is not UTF-8 before byte {}", self.pos))
    }

    /// The item count of the next array/map block (0 = the end); a negative count is followed
    /// by the block's size in bytes, which is skipped. A count is not bounded by the bytes
    /// left: items of zero-width types (`null`, empty records, zero-size fixed) take none, and
    /// writers do put thousands of them in one block. What bounds a forged count is the output
    /// (`datum_output_limit`): every item writes at least two bytes of JSON.
    pub(super) fn block(&mut self) -> Result<usize, String> {
        let n = self.long()?;
        let n = if n < 0 {
            self.long()?; // block size in bytes
            n.checked_neg().ok_or("bad block count")?
        } else {
            n
        };
        usize::try_from(n).map_err(|_| format!("a block of {n} items"))
    }

    /// A float: 4 little-endian bytes.
    pub(super) fn single(&mut self) -> Result<f32, String> {
        let b = self.take(4, "float")?;
        Ok(f32::from_le_bytes(b.try_into().unwrap()))
    }

    /// A double: 8 little-endian bytes.
    pub(super) fn double(&mut self) -> Result<f64, String> {
        let b = self.take(8, "double")?;
        Ok(f64::from_le_bytes(b.try_into().unwrap()))
    }

    /// A boolean: one byte, 0 or 1.
    pub(super) fn boolean(&mut self) -> Result<bool, String> {
        match self.take(1, "boolean")?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!("a boolean byte {b} (not 0 or 1)")),
        }
    }
}
