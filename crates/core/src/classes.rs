//! Object classes as entry checks, filters and index keys walk them: objectClass's own OID and a
//! class with its superclasses.

use canopy_schema::{ObjectClass, Schema};

/// OID of objectClass, whose values compare by the class they name rather than by their spelling.
pub(crate) const OBJECT_CLASS_OID: &str = "2.5.4.0";

/// Depth bound when walking SUP chains, so a cyclic schema cannot loop.
const MAX_CLASS_DEPTH: usize = 64;

/// `class` followed by all its superclasses (each once).
pub fn with_superclasses<'s>(schema: &'s Schema, class: &'s ObjectClass) -> Vec<&'s ObjectClass> {
    let mut out: Vec<&ObjectClass> = vec![class];
    let mut index = 0;
    while let Some(current) = out.get(index).copied() {
        if index >= MAX_CLASS_DEPTH * 4 {
            break;
        }
        for sup in &current.sup {
            if let Some(next) = schema.object_class(sup) {
                if !out.iter().any(|c| c.oid == next.oid) {
                    out.push(next);
                }
            }
        }
        index += 1;
    }
    out
}
