//! Fuzz target: the RFC 2849 LDIF reader on arbitrary input: records or clear errors, never a panic or a hang.
#![no_main]

use canopy_proto::LdifReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Each record consumes input, so at most one record per byte (plus the end) can come out.
    let records = LdifReader::new(data).take(data.len() + 2).count();
    assert!(
        records <= data.len() + 1,
        "more LDIF records than input bytes"
    );
});
