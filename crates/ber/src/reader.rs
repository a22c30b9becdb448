//! Reading TLVs out of a borrowed buffer without copying.

use crate::BerError;

/// A decoded tag and length header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub tag: u8,
    /// Bytes taken by the tag and length octets.
    pub header_len: usize,
    /// Bytes of contents that follow the header.
    pub content_len: usize,
}

/// Parses the tag and length at the start of `buf`. `Ok(None)` means `buf` ends inside the header;
/// the contents are not required to be present.
pub fn parse_header(buf: &[u8]) -> Result<Option<Header>, BerError> {
    let Some((&tag, rest)) = buf.split_first() else {
        return Ok(None);
    };
    if tag & 0x1f == 0x1f {
        return Err(BerError::MultiByteTag);
    }
    let Some((&first, rest)) = rest.split_first() else {
        return Ok(None);
    };
    if first < 0x80 {
        return Ok(Some(Header {
            tag,
            header_len: 2,
            content_len: usize::from(first),
        }));
    }
    let count = usize::from(first & 0x7f);
    if count == 0 {
        return Err(BerError::IndefiniteLength);
    }
    if count > 4 {
        return Err(BerError::LengthTooLong);
    }
    let Some(octets) = rest.get(..count) else {
        return Ok(None);
    };
    // Non-minimal long forms are accepted: older libldap always wrote 4-octet lengths.
    let content_len = octets
        .iter()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    Ok(Some(Header {
        tag,
        header_len: 2 + count,
        content_len,
    }))
}

/// Sequential reader over the TLVs in a buffer.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    pub fn peek_tag(&self) -> Option<u8> {
        self.buf.first().copied()
    }

    /// Reads one TLV of any tag and returns the tag and its contents.
    pub fn read_tlv(&mut self) -> Result<(u8, &'a [u8]), BerError> {
        let header = parse_header(self.buf)?.ok_or(BerError::UnexpectedEnd)?;
        let rest = self
            .buf
            .get(header.header_len..)
            .ok_or(BerError::UnexpectedEnd)?;
        if header.content_len > rest.len() {
            return Err(BerError::LengthOverrun {
                len: header.content_len,
                remaining: rest.len(),
            });
        }
        let (contents, after) = rest.split_at(header.content_len);
        self.buf = after;
        Ok((header.tag, contents))
    }

    /// Reads one TLV whose tag must be `tag` and returns its contents.
    pub fn read_expected(&mut self, tag: u8) -> Result<&'a [u8], BerError> {
        match self.peek_tag() {
            None => Err(BerError::UnexpectedEnd),
            Some(found) if found != tag => Err(BerError::UnexpectedTag {
                expected: tag,
                found,
            }),
            Some(_) => self.read_tlv().map(|(_, contents)| contents),
        }
    }

    pub fn read_octet_string(&mut self, tag: u8) -> Result<&'a [u8], BerError> {
        self.read_expected(tag)
    }

    /// Reads an INTEGER or ENUMERATED (two's complement, at most 8 octets).
    pub fn read_integer(&mut self, tag: u8) -> Result<i64, BerError> {
        let contents = self.read_expected(tag)?;
        decode_integer(contents)
    }

    /// Reads a BOOLEAN; any non-zero octet is TRUE as BER (not DER) allows.
    pub fn read_bool(&mut self, tag: u8) -> Result<bool, BerError> {
        match self.read_expected(tag)? {
            [b] => Ok(*b != 0),
            other => Err(BerError::BadBoolean(other.len())),
        }
    }

    /// Reads a constructed TLV and returns a reader over its contents.
    pub fn read_constructed(&mut self, tag: u8) -> Result<Reader<'a>, BerError> {
        self.read_expected(tag).map(Reader::new)
    }

    /// Reads the TLV only when the next tag is `tag`.
    pub fn read_optional(&mut self, tag: u8) -> Result<Option<&'a [u8]>, BerError> {
        if self.peek_tag() == Some(tag) {
            self.read_tlv().map(|(_, contents)| Some(contents))
        } else {
            Ok(None)
        }
    }
}

/// Decodes the contents octets of an INTEGER.
pub fn decode_integer(contents: &[u8]) -> Result<i64, BerError> {
    let Some(&first) = contents.first() else {
        return Err(BerError::BadInteger(0));
    };
    if contents.len() > 8 {
        return Err(BerError::BadInteger(contents.len()));
    }
    let init: i64 = if first & 0x80 != 0 { -1 } else { 0 };
    Ok(contents
        .iter()
        .fold(init, |acc, &b| (acc << 8) | i64::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    type Expected = Result<Option<(u8, usize, usize)>, BerError>;

    #[test]
    fn headers() {
        let cases: &[(&str, Expected)] = &[
            ("", Ok(None)),
            ("30", Ok(None)),
            ("30 05", Ok(Some((0x30, 2, 5)))),
            ("30 7f", Ok(Some((0x30, 2, 127)))),
            ("30 81", Ok(None)),
            ("30 81 80", Ok(Some((0x30, 3, 128)))),
            ("30 82 01", Ok(None)),
            ("30 82 01 00", Ok(Some((0x30, 4, 256)))),
            ("30 84 00 00 00 05", Ok(Some((0x30, 6, 5)))),
            ("30 84 7f ff ff ff", Ok(Some((0x30, 6, 0x7fff_ffff)))),
            ("30 80", Err(BerError::IndefiniteLength)),
            ("30 85 00 00 00 00 01", Err(BerError::LengthTooLong)),
            ("30 ff", Err(BerError::LengthTooLong)),
            ("1f 01", Err(BerError::MultiByteTag)),
            ("bf 01", Err(BerError::MultiByteTag)),
        ];
        for (input, expected) in cases {
            let got =
                parse_header(&hex(input)).map(|h| h.map(|h| (h.tag, h.header_len, h.content_len)));
            assert_eq!(&got, expected, "input {input}");
        }
    }

    #[test]
    fn integers() {
        let cases: &[(&str, Result<i64, BerError>)] = &[
            ("02 01 00", Ok(0)),
            ("02 01 7f", Ok(127)),
            ("02 02 00 80", Ok(128)),
            ("02 01 80", Ok(-128)),
            ("02 01 ff", Ok(-1)),
            ("02 02 ff 7f", Ok(-129)),
            ("02 04 7f ff ff ff", Ok(i64::from(i32::MAX))),
            ("02 08 80 00 00 00 00 00 00 00", Ok(i64::MIN)),
            ("02 03 00 00 05", Ok(5)),
            ("02 00", Err(BerError::BadInteger(0))),
            (
                "02 09 00 00 00 00 00 00 00 00 01",
                Err(BerError::BadInteger(9)),
            ),
            (
                "04 01 00",
                Err(BerError::UnexpectedTag {
                    expected: 2,
                    found: 4,
                }),
            ),
            (
                "02 02 00",
                Err(BerError::LengthOverrun {
                    len: 2,
                    remaining: 1,
                }),
            ),
            ("", Err(BerError::UnexpectedEnd)),
        ];
        for (input, expected) in cases {
            let bytes = hex(input);
            assert_eq!(
                &Reader::new(&bytes).read_integer(0x02),
                expected,
                "input {input}"
            );
        }
    }

    #[test]
    fn booleans() {
        let cases: &[(&str, Result<bool, BerError>)] = &[
            ("01 01 ff", Ok(true)),
            ("01 01 01", Ok(true)),
            ("01 01 00", Ok(false)),
            ("01 00", Err(BerError::BadBoolean(0))),
            ("01 02 00 00", Err(BerError::BadBoolean(2))),
        ];
        for (input, expected) in cases {
            let bytes = hex(input);
            assert_eq!(
                &Reader::new(&bytes).read_bool(0x01),
                expected,
                "input {input}"
            );
        }
    }

    #[test]
    fn nested_reading() {
        let bytes = hex("30 0a 04 03 61 62 63 a0 03 02 01 05 04 00");
        let mut outer = Reader::new(&bytes);
        let mut seq = outer.read_constructed(0x30).unwrap();
        assert_eq!(outer.peek_tag(), Some(0x04));
        assert_eq!(seq.read_octet_string(0x04).unwrap(), b"abc");
        assert_eq!(seq.read_optional(0x81).unwrap(), None);
        let mut ctx = seq.read_constructed(0xa0).unwrap();
        assert_eq!(ctx.read_integer(0x02).unwrap(), 5);
        assert!(ctx.is_empty() && seq.is_empty());
        assert_eq!(outer.read_octet_string(0x04).unwrap(), b"");
        assert!(outer.is_empty());
        assert_eq!(outer.read_tlv(), Err(BerError::UnexpectedEnd));
    }

    #[test]
    fn length_beyond_buffer_is_an_error() {
        let bytes = hex("04 84 7f ff ff ff 00");
        assert_eq!(
            Reader::new(&bytes).read_tlv(),
            Err(BerError::LengthOverrun {
                len: 0x7fff_ffff,
                remaining: 1
            })
        );
    }
}
