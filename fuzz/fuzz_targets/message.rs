//! Fuzz target: LDAPMessage decode → encode → decode must give back the same message, and never panic.
#![no_main]

use canopy_proto::{DecodeLimits, LdapMessage};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = DecodeLimits {
        max_filter_depth: 64,
    };
    let Ok(message) = LdapMessage::decode(data, &limits) else {
        return;
    };
    let mut encoded = Vec::new();
    message.encode(&mut encoded);
    let again = LdapMessage::decode(&encoded, &limits)
        .unwrap_or_else(|e| panic!("re-encoded message does not decode: {e}\n{message:?}"));
    assert_eq!(again, message, "decode(encode(m)) differs from m");
    // The framer agrees with the encoder about where the message ends.
    assert_eq!(
        canopy_proto::frame_len(&encoded, usize::MAX),
        Ok(Some(encoded.len()))
    );
});
