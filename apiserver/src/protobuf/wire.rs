//! The protobuf wire format: varints and length-delimited records, read field by field.
//! (<https://protobuf.dev/programming-guides/encoding/>; Kubernetes uses wire types 0, 1,
//! 2 and 5 only.)

/// One field read off the wire.
#[derive(Debug, PartialEq)]
pub(super) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// Reads the fields of one message in order.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// The next field's tag and value, `None` at the end of the message.
    pub(super) fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>, String> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).map_err(|_| format!("field number {} is too large", key >> 3))?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => Value::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().unwrap_or_default())),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "a length does not fit in memory".to_string())?;
                Value::Bytes(self.take(len)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().unwrap_or_default())),
            w => return Err(format!("field {tag}: unsupported wire type {w}")),
        };
        Ok(Some((tag, value)))
    }

    /// A base-128 varint (at most 10 bytes).
    pub(super) fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or("the message ends inside a varint")?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("a varint longer than 10 bytes".into())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&e| e <= self.buf.len())
            .ok_or("a field runs past the end of its message")?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// Whether every byte was read.
    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_records_read_as_protobuf_writes_them() {
        // field 1 varint 150; field 2 bytes "hi"; field 3 fixed32 1; field 4 fixed64 2
        let buf = [0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x1d, 1, 0, 0, 0, 0x21, 2, 0, 0, 0, 0, 0, 0, 0];
        let mut r = Reader::new(&buf);
        assert_eq!(r.next_field().unwrap(), Some((1, Value::Varint(150))));
        assert_eq!(r.next_field().unwrap(), Some((2, Value::Bytes(b"hi"))));
        assert_eq!(r.next_field().unwrap(), Some((3, Value::Fixed32(1))));
        assert_eq!(r.next_field().unwrap(), Some((4, Value::Fixed64(2))));
        assert_eq!(r.next_field().unwrap(), None);
        assert!(Reader::new(&[0x12, 0x05, b'x']).next_field().unwrap_err().contains("past the end"));
        assert!(Reader::new(&[0x08, 0x80]).next_field().unwrap_err().contains("inside a varint"));
        assert!(Reader::new(&[0x0b]).next_field().unwrap_err().contains("wire type 3"));
    }
}
