//! Fuzz target: RFC 4515 filter strings and their BER form: parse → print → parse and encode → decode agree.
#![no_main]

use canopy_ber::{Reader, Writer};
use canopy_proto::{DecodeLimits, Filter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = DecodeLimits {
        max_filter_depth: 64,
    };
    // The raw bytes as a BER filter: decoding never panics, and what decodes survives a round trip.
    if let Ok(filter) = Filter::decode_ber(&mut Reader::new(data), &limits) {
        round_trip_ber(&filter, &limits);
    }
    // The bytes as a filter string.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(filter) = Filter::parse(text) else {
        return;
    };
    let printed = filter.to_string();
    let reparsed = Filter::parse(&printed)
        .unwrap_or_else(|e| panic!("printed filter {printed:?} does not parse: {e}"));
    assert_eq!(reparsed, filter, "parse(print(f)) differs for {printed:?}");
    round_trip_ber(&filter, &limits);
});

fn round_trip_ber(filter: &Filter, limits: &DecodeLimits) {
    let mut out = Vec::new();
    filter.encode_ber(&mut Writer::new(&mut out));
    let decoded = Filter::decode_ber(&mut Reader::new(&out), limits)
        .unwrap_or_else(|e| panic!("encoded filter does not decode: {e}\n{filter:?}"));
    assert_eq!(&decoded, filter, "decode(encode(f)) differs");
}
