//! Appending TLVs to a `Vec<u8>` with minimal definite lengths.

/// Number of length octets (after the tag) needed for `len`.
#[inline]
fn length_octets(len: usize) -> usize {
    if len < 0x80 {
        1
    } else {
        1 + (usize::BITS - len.leading_zeros()).div_ceil(8) as usize
    }
}

/// Bytes taken by a tag and minimal length header for contents of `len` bytes.
#[inline]
pub fn header_len(len: usize) -> usize {
    1 + length_octets(len)
}

/// Bytes taken by a whole TLV whose contents are `len` bytes.
#[inline]
pub fn encoded_len(len: usize) -> usize {
    header_len(len) + len
}

/// Contents octets of the minimal two's complement encoding of `value`: its significant bits and a sign
/// bit, in whole octets.
#[inline]
pub fn integer_len(value: i64) -> usize {
    let redundant = if value < 0 {
        value.leading_ones()
    } else {
        value.leading_zeros()
    };
    // 1..=64 bits: the significant ones and one sign bit (redundant >= 1 always holds).
    let bits = 64 - redundant + 1;
    bits.div_ceil(8) as usize
}

/// Appends `tag` and the minimal definite length `len`.
pub fn write_header(out: &mut Vec<u8>, tag: u8, len: usize) {
    out.push(tag);
    push_length(out, len);
}

fn push_length(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let n = length_octets(len) - 1;
        out.push(0x80 | n as u8);
        for i in (0..n).rev() {
            out.push((len >> (i * 8)) as u8);
        }
    }
}

/// A few BER headers and small INTEGERs gathered on the stack, then appended to a vector in one copy.
/// An encoder that writes several in a row (a SearchResultEntry starts with five) saves a call, a
/// capacity check and a length update per octet; the methods inline across crates.
#[derive(Debug, Clone)]
pub struct Headers {
    buf: [u8; Headers::CAPACITY],
    len: usize,
}

impl Default for Headers {
    fn default() -> Self {
        Self::new()
    }
}

impl Headers {
    /// Room for six headers or INTEGERs of at most ten octets each.
    pub const CAPACITY: usize = 60;

    #[inline]
    pub fn new() -> Self {
        Headers {
            buf: [0; Headers::CAPACITY],
            len: 0,
        }
    }

    #[inline]
    fn put(&mut self, byte: u8) {
        debug_assert!(self.len < Headers::CAPACITY, "Headers overflow");
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    /// `tag` and the minimal definite length `len`, as [`write_header`].
    #[inline]
    pub fn header(&mut self, tag: u8, len: usize) {
        self.put(tag);
        if len < 0x80 {
            self.put(len as u8);
        } else {
            let n = length_octets(len) - 1;
            self.put(0x80 | n as u8);
            for i in (0..n).rev() {
                self.put((len >> (i * 8)) as u8);
            }
        }
    }

    /// An INTEGER or ENUMERATED (pass the tag), as [`Writer::integer`].
    #[inline]
    pub fn integer(&mut self, tag: u8, value: i64) {
        let n = integer_len(value);
        self.header(tag, n);
        for i in (0..n).rev() {
            self.put((value >> (i * 8)) as u8);
        }
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

/// Appends BER encodings to a borrowed vector.
#[derive(Debug)]
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Writer { out }
    }

    pub fn octet_string(&mut self, tag: u8, value: &[u8]) {
        write_header(self.out, tag, value.len());
        self.out.extend_from_slice(value);
    }

    /// Writes an INTEGER or ENUMERATED (pass the tag) in minimal two's complement form.
    pub fn integer(&mut self, tag: u8, value: i64) {
        let n = integer_len(value);
        write_header(self.out, tag, n);
        for i in (0..n).rev() {
            self.out.push((value >> (i * 8)) as u8);
        }
    }

    /// Writes a BOOLEAN; TRUE is 0xFF as RFC 4511 §5.1 requires.
    pub fn boolean(&mut self, tag: u8, value: bool) {
        self.out
            .extend_from_slice(&[tag, 1, if value { 0xff } else { 0 }]);
    }

    /// Appends bytes that are already a complete encoding.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// Writes `tag`, runs `f` for the contents, then fixes the definite length (minimal length encoding).
    pub fn constructed(&mut self, tag: u8, f: impl FnOnce(&mut Writer<'_>)) {
        self.out.push(tag);
        let len_pos = self.out.len();
        // One placeholder octet fits every length below 128, the common case; longer contents are
        // shifted right in place once, which costs a memmove but no allocation.
        self.out.push(0);
        f(&mut Writer { out: self.out });
        let content_start = len_pos + 1;
        let len = self.out.len() - content_start;
        let n = length_octets(len);
        if n > 1 {
            let old_end = self.out.len();
            self.out.resize(old_end + n - 1, 0);
            self.out
                .copy_within(content_start..old_end, content_start + n - 1);
        }
        let mut header = [0u8; 9];
        if n == 1 {
            header[0] = len as u8;
        } else {
            header[0] = 0x80 | (n - 1) as u8;
            for (i, octet) in header.iter_mut().skip(1).take(n - 1).enumerate() {
                *octet = (len >> ((n - 2 - i) * 8)) as u8;
            }
        }
        if let (Some(dst), Some(src)) = (self.out.get_mut(len_pos..len_pos + n), header.get(..n)) {
            dst.copy_from_slice(src);
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn integer_len_is_the_fewest_octets_that_hold_the_value() {
        let fits = |value: i64, n: usize| {
            n >= 8 || {
                let half = 1i128 << (8 * n - 1);
                (-half..half).contains(&i128::from(value))
            }
        };
        let mut values = vec![0i64, 1, -1, i64::MIN, i64::MAX, i64::MIN + 1, i64::MAX - 1];
        for shift in 0..63 {
            let p = 1i64 << shift;
            values.extend([p, p - 1, p + 1, -p, -p - 1, -p + 1]);
        }
        for value in values {
            let n = integer_len(value);
            assert!(fits(value, n), "{value} does not fit in {n} octets");
            assert!(
                n == 1 || !fits(value, n - 1),
                "{value} fits in fewer than {n} octets"
            );
        }
    }

    #[test]
    fn headers_match_the_vector_writer() {
        for len in [
            0usize,
            1,
            0x7f,
            0x80,
            0xff,
            0x100,
            0xffff,
            0x10000,
            0xff_ffff,
            0x1_0000_0000,
        ] {
            for value in [
                0i64,
                1,
                -1,
                127,
                128,
                -128,
                -129,
                65535,
                i64::from(i32::MAX),
                i64::MIN,
            ] {
                let mut expected = Vec::new();
                write_header(&mut expected, 0x30, len);
                Writer::new(&mut expected).integer(0x02, value);
                let mut headers = Headers::new();
                headers.header(0x30, len);
                headers.integer(0x02, value);
                assert_eq!(headers.as_bytes(), &expected[..], "len {len} value {value}");
            }
        }
    }

    use super::*;
    use crate::Reader;

    fn hex(bytes: &[u8]) -> String {
        bytes
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn integers() {
        let cases: &[(i64, &str)] = &[
            (0, "02 01 00"),
            (1, "02 01 01"),
            (127, "02 01 7f"),
            (128, "02 02 00 80"),
            (255, "02 02 00 ff"),
            (256, "02 02 01 00"),
            (-1, "02 01 ff"),
            (-128, "02 01 80"),
            (-129, "02 02 ff 7f"),
            (2147483647, "02 04 7f ff ff ff"),
            (i64::MAX, "02 08 7f ff ff ff ff ff ff ff"),
            (i64::MIN, "02 08 80 00 00 00 00 00 00 00"),
        ];
        for &(value, expected) in cases {
            let mut out = Vec::new();
            Writer::new(&mut out).integer(0x02, value);
            assert_eq!(hex(&out), expected, "value {value}");
            assert_eq!(Reader::new(&out).read_integer(0x02).unwrap(), value);
        }
    }

    #[test]
    fn headers() {
        let cases: &[(usize, &str)] = &[
            (0, "04 00"),
            (127, "04 7f"),
            (128, "04 81 80"),
            (255, "04 81 ff"),
            (256, "04 82 01 00"),
            (65535, "04 82 ff ff"),
            (65536, "04 83 01 00 00"),
            (0x0100_0000, "04 84 01 00 00 00"),
        ];
        for &(len, expected) in cases {
            let mut out = Vec::new();
            write_header(&mut out, 0x04, len);
            assert_eq!(hex(&out), expected, "len {len}");
            assert_eq!(out.len(), header_len(len));
        }
    }

    #[test]
    fn constructed_backpatches_minimal_lengths() {
        for len in [0usize, 1, 125, 126, 127, 128, 300, 70000] {
            let value = vec![0x5a; len];
            let mut out = vec![0xee];
            Writer::new(&mut out).constructed(0x30, |w| {
                w.constructed(0x31, |w| w.octet_string(0x04, &value));
                w.boolean(0x01, true);
            });
            let mut expected = vec![0xee];
            let inner = encoded_len(encoded_len(len));
            write_header(&mut expected, 0x30, inner + 3);
            write_header(&mut expected, 0x31, encoded_len(len));
            write_header(&mut expected, 0x04, len);
            expected.extend_from_slice(&value);
            expected.extend_from_slice(&[0x01, 0x01, 0xff]);
            assert_eq!(out, expected, "len {len}");
        }
    }
}
