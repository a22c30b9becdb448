//! X.509 certificates (DER) as LDAP sees them: the subject as an RFC 4514 DN string (SASL EXTERNAL over
//! TLS), and the serial number and issuer that RFC 4523's certificateExactMatch compares.

use canopy_ber::Reader;

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const VERSION: u8 = 0xa0;
const INTEGER: u8 = 0x02;

/// The certificate's subject as slapd shows it: RDNs most specific first, short names for the usual
/// attribute types, strings escaped (RFC 4514 §2.4), other values as `#` and the hex of their BER.
/// None when the certificate cannot be read.
pub fn subject_dn(cert_der: &[u8]) -> Option<String> {
    let mut outer = Reader::new(cert_der);
    let mut cert = outer.read_constructed(SEQUENCE).ok()?;
    let mut tbs = cert.read_constructed(SEQUENCE).ok()?;
    if tbs.peek_tag() == Some(VERSION) {
        tbs.read_tlv().ok()?;
    }
    tbs.read_tlv().ok()?; // serialNumber
    tbs.read_tlv().ok()?; // signature algorithm
    tbs.read_tlv().ok()?; // issuer
    tbs.read_tlv().ok()?; // validity
    let subject = tbs.read_constructed(SEQUENCE).ok()?;
    name_to_string(subject)
}

/// The certificate's serial number (its two's-complement content octets) and its issuer as an RFC 4514
/// string (as [`subject_dn`] writes names). None when the certificate cannot be read.
pub fn serial_and_issuer(cert_der: &[u8]) -> Option<(Vec<u8>, String)> {
    let mut outer = Reader::new(cert_der);
    let mut cert = outer.read_constructed(SEQUENCE).ok()?;
    let mut tbs = cert.read_constructed(SEQUENCE).ok()?;
    if tbs.peek_tag() == Some(VERSION) {
        tbs.read_tlv().ok()?;
    }
    let serial = tbs.read_expected(INTEGER).ok()?.to_vec();
    tbs.read_tlv().ok()?; // signature algorithm
    let issuer = tbs.read_constructed(SEQUENCE).ok()?;
    Some((serial, name_to_string(issuer)?))
}

fn name_to_string(mut name: Reader<'_>) -> Option<String> {
    let mut rdns = Vec::new();
    while !name.is_empty() {
        let mut set = name.read_constructed(SET).ok()?;
        let mut parts = Vec::new();
        while !set.is_empty() {
            let mut atv = set.read_constructed(SEQUENCE).ok()?;
            let oid = atv.read_expected(OID).ok()?;
            let before = atv.remaining();
            let (tag, contents) = atv.read_tlv().ok()?;
            let whole = before.get(..before.len() - atv.remaining().len())?;
            parts.push(format!(
                "{}={}",
                type_name(oid)?,
                value_text(tag, contents, whole)
            ));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// The short name slapd uses, or the dotted OID.
fn type_name(oid: &[u8]) -> Option<String> {
    let dotted = dotted_oid(oid)?;
    let short = match dotted.as_str() {
        "2.5.4.3" => "CN",
        "2.5.4.4" => "SN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        "1.2.840.113549.1.9.1" => "emailAddress",
        _ => return Some(dotted),
    };
    Some(short.to_string())
}

fn dotted_oid(oid: &[u8]) -> Option<String> {
    let (&first, rest) = oid.split_first()?;
    let mut arcs = vec![u64::from(first / 40).min(2), 0];
    arcs[1] = u64::from(first) - arcs[0] * 40;
    let mut value: u64 = 0;
    for &b in rest {
        value = value.checked_mul(128)? | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            arcs.push(value);
            value = 0;
        }
    }
    if first & 0x80 != 0 || rest.last().is_some_and(|b| b & 0x80 != 0) {
        return None;
    }
    Some(
        arcs.iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// A directory string value escaped for a DN, or `#hex` of the whole TLV for anything else.
fn value_text(tag: u8, contents: &[u8], whole: &[u8]) -> String {
    let text = match tag {
        // UTF8String, PrintableString, TeletexString (as Latin-1 is rare: taken as UTF-8), IA5String
        0x0c | 0x13 | 0x14 | 0x16 => std::str::from_utf8(contents).ok().map(str::to_string),
        // BMPString: UCS-2 big endian
        0x1e => {
            let units: Vec<u16> = contents
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    };
    match text {
        Some(text) => escape(&text),
        None => {
            let hex: String = whole.iter().map(|b| format!("{b:02x}")).collect();
            format!("#{hex}")
        }
    }
}

/// RFC 4514 §2.4 escaping.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            '\0' => out.push_str("\\00"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atv(oid: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        let mut inner = vec![OID, oid.len() as u8];
        inner.extend_from_slice(oid);
        inner.extend_from_slice(&[tag, value.len() as u8]);
        inner.extend_from_slice(value);
        let mut seq = vec![SEQUENCE, inner.len() as u8];
        seq.extend(inner);
        seq
    }

    fn rdn(atvs: &[Vec<u8>]) -> Vec<u8> {
        let inner: Vec<u8> = atvs.concat();
        let mut set = vec![SET, inner.len() as u8];
        set.extend(inner);
        set
    }

    fn name(rdns: &[Vec<u8>]) -> Vec<u8> {
        let inner: Vec<u8> = rdns.concat();
        let mut seq = vec![SEQUENCE, inner.len() as u8];
        seq.extend(inner);
        seq
    }

    const CN: &[u8] = &[0x55, 0x04, 0x03];
    const OU: &[u8] = &[0x55, 0x04, 0x0b];
    const DC: &[u8] = &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19];

    #[test]
    fn name_reads_most_specific_first() {
        let der = name(&[
            rdn(&[atv(DC, 0x16, b"com")]),
            rdn(&[atv(DC, 0x16, b"example")]),
            rdn(&[atv(OU, 0x0c, b"people")]),
            rdn(&[atv(CN, 0x0c, b"alice")]),
        ]);
        let text = name_to_string(Reader::new(&der).read_constructed(SEQUENCE).unwrap());
        assert_eq!(
            text.as_deref(),
            Some("CN=alice,OU=people,DC=example,DC=com")
        );
    }

    #[test]
    fn escapes_and_unknown_types() {
        let der = name(&[rdn(&[
            atv(CN, 0x0c, b"Smith, J"),
            atv(&[0x55, 0x04, 0x2a], 0x02, &[0x05]),
        ])]);
        let text = name_to_string(Reader::new(&der).read_constructed(SEQUENCE).unwrap());
        assert_eq!(text.as_deref(), Some("CN=Smith\\, J+2.5.4.42=#020105"));
        assert_eq!(escape(" #a "), "\\ #a\\ ");
        assert_eq!(escape("#a"), "\\#a");
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(subject_dn(b"\x30\x03\x02\x01"), None);
        assert_eq!(subject_dn(b""), None);
    }
}
