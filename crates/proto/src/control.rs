//! Values of the request and response controls Canopy understands.

use canopy_ber::{tag, Reader, Writer};

use crate::codec::DecodeError;

/// RFC 2696 realSearchControlValue of the simple paged results control.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PagedResults {
    /// Requested page size in a request; estimated total (or 0) in a response.
    pub size: i32,
    /// Opaque server cookie; empty on the first request and on the last response.
    pub cookie: Vec<u8>,
}

impl PagedResults {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let size = seq.read_integer(tag::INTEGER)?;
        let size = i32::try_from(size)
            .ok()
            .filter(|s| *s >= 0)
            .ok_or_else(|| DecodeError::new(format!("paged results size {size} out of range")))?;
        let cookie = seq.read_octet_string(tag::OCTET_STRING)?.to_vec();
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in paged results control"));
        }
        Ok(PagedResults { size, cookie })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.cookie.len() + 12);
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            w.integer(tag::INTEGER, i64::from(self.size));
            w.octet_string(tag::OCTET_STRING, &self.cookie);
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::tests::{hex, unhex};

    #[test]
    fn paged_results_vectors() {
        let cases: &[(i32, &[u8], &str)] = &[
            (100, b"", "30 05 02 01 64 04 00"),
            (0, b"\x01\x02", "30 07 02 01 00 04 02 01 02"),
            (1000, b"ab", "30 08 02 02 03 e8 04 02 61 62"),
        ];
        for &(size, cookie, expected) in cases {
            let value = PagedResults {
                size,
                cookie: cookie.to_vec(),
            };
            assert_eq!(hex(&value.encode()), expected);
            assert_eq!(PagedResults::decode(&unhex(expected)).unwrap(), value);
        }
    }

    #[test]
    fn paged_results_rejects() {
        for bad in [
            "",
            "30 03 02 01 05",
            "30 05 02 01 ff 04 00",
            "30 06 02 01 05 04 00 00",
            "04 00",
        ] {
            assert!(PagedResults::decode(&unhex(bad)).is_err(), "{bad}");
        }
    }
}
