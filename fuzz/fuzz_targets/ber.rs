//! Fuzz target: the BER reader and the LDAPMessage framer on arbitrary bytes: no panic, lengths in bounds.
#![no_main]

use canopy_ber::Reader;
use libfuzzer_sys::fuzz_target;

/// Walks every TLV, descending into constructed ones, as deep as the input allows (bounded).
fn walk(buf: &[u8], depth: usize) {
    if depth > 64 {
        return;
    }
    let mut reader = Reader::new(buf);
    while !reader.is_empty() {
        let Ok((tag, contents)) = reader.read_tlv() else {
            return;
        };
        assert!(
            contents.len() <= buf.len(),
            "contents longer than the input"
        );
        if tag & 0x20 != 0 {
            walk(contents, depth + 1);
        } else {
            let _ = canopy_ber::decode_integer(contents);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    walk(data, 0);
    for max in [0usize, 7, 4096, usize::MAX] {
        if let Ok(Some(len)) = canopy_proto::frame_len(data, max) {
            assert!(
                len <= data.len() && len <= max,
                "frame longer than input or limit"
            );
        }
    }
});
