//! Tests across the parsers of the crate.

use crate::codec::frame_len;
use crate::control::PagedResults;
use crate::decoding::DecodeLimits;
use crate::dn::{Dn, Rdn};
use crate::exop::PasswdModifyRequest;
use crate::filter::Filter;
use crate::ldif::LdifReader;
use crate::message::LdapMessage;
use crate::testutil::Gen;

#[test]
fn random_input_never_panics_any_parser() {
    let mut g = Gen::new(1);
    const ALPHABET: &[u8] = b"()&|!=*~<>:\\#+,;\" abcdn0123456789.-\n\r\0\xff\xc3\xa9";
    for _ in 0..20_000 {
        let len = g.below(40);
        let text: Vec<u8> = (0..len)
            .map(|_| ALPHABET[g.below(ALPHABET.len())])
            .collect();
        let _ = Dn::parse(&text);
        let _ = Rdn::parse(&text);
        let _ = Filter::parse(&String::from_utf8_lossy(&text));
        let _ = LdifReader::new(&text[..]).count();
        let binary: Vec<u8> = (0..len).map(|_| g.next() as u8).collect();
        let _ = LdapMessage::decode(&binary, &DecodeLimits::default());
        let _ = frame_len(&binary, 1 << 16);
        let _ = PagedResults::decode(&binary);
        let _ = PasswdModifyRequest::decode(&binary);
    }
}
