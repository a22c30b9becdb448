//! Search result entries as the requester may read them: encoded from the stored, wire-ready bytes,
//! and the root DSE and cn=Subschema built in memory.

use super::*;

/// Encodes an entry access control cleared, with the attributes the requester may read.
pub(super) fn encode_stored(
    job: &SearchJob,
    selection: &Selection,
    cleared: &Cleared<'_, '_>,
    computed: &[Attribute],
    out: &mut Vec<u8>,
) {
    let (stored, readable) = (cleared.stored(), cleared.rights());
    let schema = job.state.databases.schema();
    let values_ruled = readable.is_some_and(|(access, _)| access.checker().acl().has_value_rules());
    let plain =
        !values_ruled && readable.is_none_or(|(_, view)| view.plain_allows(privileges::READ));
    let matched = job.ctl.values_return.as_deref();
    let reads = |desc: &str| {
        readable.is_none_or(|(access, view)| access.allows_attr(view, desc, privileges::READ))
    };
    if plain && selection.is_all_user_only() && !job.req.types_only && matched.is_none() {
        // The common answer is the stored bytes themselves, with the passwords the requester may read.
        let secret = readable.map_or(Some(true), |(_, view)| {
            view.secret.map(|m| m & privileges::READ != 0)
        });
        match secret {
            _ if stored.secret.is_empty() => {
                encode_search_result_entry_raw(out, job.message_id, stored.dn, stored.user);
            }
            Some(false) => {
                encode_search_result_entry_raw(out, job.message_id, stored.dn, stored.user);
            }
            // The root DN reads the whole password section as it is stored, where the entry was
            // written with its passwords last.
            Some(true) if readable.is_none() && stored.secret_follows_user() => {
                let parts = [stored.user, stored.secret];
                encode_search_result_entry_parts(out, job.message_id, stored.dn, &parts);
            }
            // Others attribute by attribute, in written order: reading userPassword never means
            // reading the SCRAM secrets in authPassword (acl::Checker::decide_with).
            Some(true) | None => {
                let mut attrs = Vec::with_capacity(stored.user.len() + stored.secret.len());
                for (section, desc, tlv, _) in
                    stored.in_order([true, true, false]).filter_map(Result::ok)
                {
                    if section == 0 || readable.is_none() || reads(desc) {
                        attrs.extend_from_slice(tlv);
                    }
                }
                encode_search_result_entry_raw(out, job.message_id, stored.dn, &attrs);
            }
        }
        return;
    }
    let mut attrs = Vec::with_capacity(512);
    for item in stored.in_order([true; 3]) {
        let Ok((index, desc, tlv, _)) = item else {
            continue;
        };
        let ruled = readable.filter(|(access, _)| values_ruled && access.value_ruled(desc));
        // slapd decides each value it sends, so an attribute under `val=` rules is decided value by
        // value (a whole-attribute check skips those rules); only a types-only answer asks for the
        // attribute as a whole.
        let whole = ruled.is_none() || job.req.types_only;
        if !selection.wants(schema, desc) || (whole && (index == 1 || !plain) && !reads(desc)) {
            continue;
        }
        let ruled = ruled.filter(|_| !job.req.types_only);
        match (ruled, matched) {
            (Some((access, view)), _) => encode_readable_values(
                &mut attrs,
                tlv,
                desc,
                |v| access.allows_value(view, desc, v, privileges::READ),
                matched,
                job,
            ),
            (None, Some(_)) => {
                encode_readable_values(&mut attrs, tlv, desc, |_| true, matched, job)
            }
            (None, None) if job.req.types_only => encode_partial_attribute(&mut attrs, desc, &[]),
            (None, None) => attrs.extend_from_slice(tlv),
        }
    }
    for attr in computed {
        if selection.wants_computed(&attr.desc) && (plain || reads(&attr.desc)) {
            let values = match added_after_matching(&attr.desc) {
                true => Some(matched_or_none(job, attr)),
                false => shown_values(job, attr),
            };
            if let Some(values) = values {
                encode_partial_attribute(&mut attrs, &attr.desc, &values);
            }
        }
    }
    encode_search_result_entry_raw(out, job.message_id, stored.dn, &attrs);
}

/// An attribute under `val=` rules or the Matched Values control: only the values the requester may
/// read (`readable`) and one of the control's items matches, nothing when no value is left (as slapd
/// leaves out an attribute the control matched no value of).
fn encode_readable_values(
    attrs: &mut Vec<u8>,
    tlv: &[u8],
    desc: &str,
    readable: impl Fn(&[u8]) -> bool,
    matched: Option<&[Filter]>,
    job: &SearchJob,
) {
    let Some(Ok((_, values))) =
        canopy_core::wire::attributes(tlv).find(|a| a.as_ref().is_ok_and(|(d, _)| *d == desc))
    else {
        return;
    };
    let kept: Vec<&[u8]> = values
        .into_iter()
        .filter(|v| readable(v))
        .filter(|v| matched.is_none_or(|items| matches_item(job, items, desc, v)))
        .collect();
    if kept.is_empty() {
        return;
    }
    encode_partial_attribute(attrs, desc, if job.req.types_only { &[] } else { &kept });
}

/// The values of an attribute built in memory (a computed one, the root DSE's, cn=Subschema's) as
/// the answer shows them: none with typesOnly, those the Matched Values control's items match; None
/// when the control leaves no value, and with it the attribute.
fn shown_values<'a>(job: &SearchJob, attr: &'a Attribute) -> Option<Vec<&'a [u8]>> {
    shown_values_with(job, attr, job.ctl.values_return.as_deref())
}

/// The attributes slapd computes for each entry sent (`backend_operational`: entryDN,
/// hasSubordinates, subschemaSubentry). It filters their values by the Matched Values control too, but
/// sends such an attribute even when no value is left, as a type with no values, where a stored
/// attribute left without values is not sent (found by the conformance tester's generated Matched
/// Values cases). contextCSN, stored in slapd, is treated as stored.
fn added_after_matching(desc: &str) -> bool {
    ["entryDN", "hasSubordinates", "subschemaSubentry"]
        .iter()
        .any(|name| name.eq_ignore_ascii_case(desc))
}

/// The values of a computed attribute that the Matched Values control's items match (all of them
/// without the control; none with typesOnly), perhaps none.
fn matched_or_none<'a>(job: &SearchJob, attr: &'a Attribute) -> Vec<&'a [u8]> {
    if job.req.types_only {
        return Vec::new();
    }
    let items = job.ctl.values_return.as_deref();
    attr.values
        .iter()
        .map(Vec::as_slice)
        .filter(|v| items.is_none_or(|items| matches_item(job, items, &attr.desc, v)))
        .collect()
}

/// [`shown_values`] with the Matched Values items `matched` (None: every value).
fn shown_values_with<'a>(
    job: &SearchJob,
    attr: &'a Attribute,
    matched: Option<&[Filter]>,
) -> Option<Vec<&'a [u8]>> {
    let values: Vec<&[u8]> = match matched {
        None => attr.values.iter().map(Vec::as_slice).collect(),
        Some(items) => {
            let kept: Vec<&[u8]> = attr
                .values
                .iter()
                .map(Vec::as_slice)
                .filter(|v| matches_item(job, items, &attr.desc, v))
                .collect();
            if kept.is_empty() {
                return None;
            }
            kept
        }
    };
    Some(if job.req.types_only {
        Vec::new()
    } else {
        values
    })
}

/// Whether one of the Matched Values control's simple filter items (RFC 3876) matches `value` of
/// `desc`: each item is tested on the value alone, so an item about another attribute type (not a
/// supertype of it) matches none of its values.
fn matches_item(job: &SearchJob, items: &[Filter], desc: &str, value: &[u8]) -> bool {
    let schema = job.state.databases.schema();
    let one = Entry {
        dn: Default::default(),
        ndn: NormDn::root(),
        attrs: vec![Attribute {
            desc: desc.to_string(),
            values: vec![value.to_vec()],
        }],
    };
    items
        .iter()
        .any(|item| evaluate(schema, &one, &[], item) == Ternary::True)
}

/// The root DSE and cn=Subschema: built in memory, selected and filtered like any entry.
pub(super) fn send_special(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    selection: &Selection,
    entry: &Entry,
) -> Result<(), Stop> {
    let schema = job.state.databases.schema();
    if evaluate(schema, entry, &[], &as_slapd_sees(schema, &job.req.filter)) != Ternary::True {
        return Ok(());
    }
    let mut attrs = Vec::new();
    for attr in &entry.attrs {
        if !selection.wants(schema, &attr.desc) || (is_secret(schema, &attr.desc) && !job.who.root)
        {
            continue;
        }
        if let Some(values) = shown_values(job, attr) {
            encode_partial_attribute(&mut attrs, &attr.desc, &values);
        }
    }
    let mut out = Vec::new();
    encode_search_result_entry_raw(
        &mut out,
        job.message_id,
        entry.dn.to_string().as_bytes(),
        &attrs,
    );
    sink.push(out)?;
    job.tally.entry();
    Ok(())
}
