//! The corpus's sort and VLV controls (`sort=KEYS`, `vlv=...` in ldapsearch's `-E sss=` and
//! `-E vlv=` notation) and the comparable summary of their response controls.

use canopy_proto::sort::{
    encode_sort_request, SortKey, SortResult, VlvRequest, VlvResponse, VlvTarget,
    CONTROL_SORT_REQUEST, CONTROL_SORT_RESPONSE, CONTROL_VLV_REQUEST, CONTROL_VLV_RESPONSE,
};
use canopy_proto::Control;

/// `sort=[-]attr[:rule][/...]`: a critical sort request control.
pub fn sort_control(text: &str) -> Result<Control, String> {
    let keys: Vec<SortKey> = text
        .split('/')
        .map(|key| {
            let (reverse, key) = match key.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, key),
            };
            let (attribute, rule) = match key.split_once(':') {
                Some((a, r)) => (a, Some(r.to_string())),
                None => (key, None),
            };
            if attribute.is_empty() {
                return Err(format!("sort={text}: a key without attribute"));
            }
            Ok(SortKey {
                attribute: attribute.to_string(),
                ordering_rule: rule,
                reverse,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Control {
        oid: CONTROL_SORT_REQUEST.into(),
        critical: true,
        value: Some(encode_sort_request(&keys)),
    })
}

/// `vlv=BEFORE/AFTER/OFFSET/COUNT` or `vlv=BEFORE/AFTER:VALUE`: a critical VLV request control.
pub fn vlv_control(text: &str) -> Result<Control, String> {
    let bad = || format!("vlv={text}: expected B/A/OFFSET/COUNT or B/A:VALUE");
    let number = |s: &str| s.parse::<u32>().map_err(|_| bad());
    let (counts, value) = match text.split_once(':') {
        Some((counts, value)) => (counts, Some(value)),
        None => (text, None),
    };
    let parts: Vec<&str> = counts.split('/').collect();
    let request = match (parts.as_slice(), value) {
        ([before, after], Some(value)) => VlvRequest {
            before: number(before)?,
            after: number(after)?,
            target: VlvTarget::GreaterOrEqual(value.as_bytes().to_vec()),
            context: None,
        },
        ([before, after, offset, count], None) => VlvRequest {
            before: number(before)?,
            after: number(after)?,
            target: VlvTarget::ByOffset {
                offset: number(offset)?,
                content_count: number(count)?,
            },
            context: None,
        },
        _ => return Err(bad()),
    };
    Ok(Control {
        oid: CONTROL_VLV_REQUEST.into(),
        critical: true,
        value: Some(request.encode()),
    })
}

/// The comparable part of a sort or VLV response control (the VLV context is opaque and left
/// out), None for other controls.
pub fn response_summary(oid: &str, value: Option<&[u8]>) -> Option<String> {
    let value = value.unwrap_or_default();
    match oid {
        CONTROL_SORT_RESPONSE => Some(match SortResult::decode(value) {
            Ok(r) => format!("sortResult={} attribute={:?}", r.code, r.attribute),
            Err(_) => "<undecodable sort result>".into(),
        }),
        CONTROL_VLV_RESPONSE => Some(match VlvResponse::decode(value) {
            Ok(r) => format!(
                "targetPosition={} contentCount={} result={}",
                r.target_position, r.content_count, r.result
            ),
            Err(_) => "<undecodable VLV response>".into(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation() {
        let sort = sort_control("-uidNumber/cn:caseIgnoreOrderingMatch").unwrap();
        assert_eq!(
            canopy_proto::sort::decode_sort_request(sort.value.as_deref().unwrap()).unwrap(),
            vec![
                SortKey {
                    attribute: "uidNumber".into(),
                    ordering_rule: None,
                    reverse: true
                },
                SortKey {
                    attribute: "cn".into(),
                    ordering_rule: Some("caseIgnoreOrderingMatch".into()),
                    reverse: false
                },
            ]
        );
        let vlv = vlv_control("1/2:jo").unwrap();
        let decoded = VlvRequest::decode(vlv.value.as_deref().unwrap()).unwrap();
        assert_eq!(decoded.target, VlvTarget::GreaterOrEqual(b"jo".to_vec()));
        assert!(vlv_control("1/2/3/4").is_ok());
        for bad in ["1/2", "1/2/3", "a/b/1/1", "1/2/3/4:x"] {
            assert!(vlv_control(bad).is_err(), "{bad}");
        }
        assert!(sort_control("-").is_err());
    }
}
