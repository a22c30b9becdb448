//! Fuzz target: RFC 4514 DN parsing, printing and schema normalization: round trips, never a panic.
#![no_main]

use std::sync::OnceLock;

use canopy_proto::Dn;
use canopy_schema::Schema;
use libfuzzer_sys::fuzz_target;

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(Schema::builtin)
}

fuzz_target!(|data: &[u8]| {
    let Ok(dn) = Dn::parse(data) else {
        return;
    };
    let printed = dn.to_string();
    let reparsed = Dn::parse(printed.as_bytes())
        .unwrap_or_else(|e| panic!("printed DN {printed:?} does not parse: {e}"));
    assert_eq!(reparsed, dn, "parse(print(dn)) differs for {printed:?}");
    // Normalization is a function of the DN: the printed form normalizes to the same key.
    if let Ok(norm) = schema().normalize_dn(&dn) {
        let again = schema()
            .normalize_dn(&reparsed)
            .expect("a DN that normalized once normalizes again");
        assert_eq!(norm, again);
    }
});
