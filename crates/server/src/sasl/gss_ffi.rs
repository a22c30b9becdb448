//! The only `unsafe` of SASL GSSAPI: a small hand-written binding to the system's GSS-API library (MIT
//! krb5's libgssapi_krb5, RFC 2744's C interface) and safe owners of its handles.
//!
//! Audit notes: every buffer the library fills is copied into a `Vec` and released with
//! `gss_release_buffer` at once; every handle (credential, name, context) has exactly one Rust owner that
//! releases it on drop; input buffers only borrow Rust slices for the duration of one call, and the
//! library never writes through them. Handles are not shared between threads at once: each owner is
//! `Send` (MIT's handles may move between threads) but not `Sync`.

use std::ffi::{c_int, c_void, CString};
use std::fmt;
use std::path::Path;
use std::ptr;

type OmUint32 = u32;

#[repr(C)]
struct BufferDesc {
    length: usize,
    value: *mut c_void,
}

#[repr(C)]
struct OidDesc {
    length: OmUint32,
    elements: *mut c_void,
}

#[repr(C)]
struct OidSetDesc {
    count: usize,
    elements: *mut OidDesc,
}

#[repr(C)]
struct BufferSetDesc {
    count: usize,
    elements: *mut BufferDesc,
}

#[repr(C)]
struct KeyValueElement {
    key: *const std::ffi::c_char,
    value: *const std::ffi::c_char,
}

#[repr(C)]
struct KeyValueSet {
    count: OmUint32,
    elements: *mut KeyValueElement,
}

type Handle = *mut c_void;

const GSS_C_ACCEPT: c_int = 2;
const GSS_C_GSS_CODE: c_int = 1;
const GSS_C_MECH_CODE: c_int = 2;
const GSS_S_CONTINUE_NEEDED: OmUint32 = 1;
/// The calling and routine error bits of a major status (GSS_ERROR).
const ERROR_MASK: OmUint32 = 0xffff_0000;

/// {1 2 840 113554 1 2 2}: the Kerberos 5 mechanism (RFC 1964).
const KRB5_MECH: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";
/// {1 2 840 113554 1 2 1 4}: GSS_C_NT_HOSTBASED_SERVICE (`service@host`).
const NT_HOSTBASED_SERVICE: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04";
/// {1 2 840 113554 1 2 2 5 15}: MIT's GSS_C_SEC_CONTEXT_SASL_SSF, the context's strength for SASL.
const SEC_CONTEXT_SASL_SSF: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x05\x0f";

#[link(name = "gssapi_krb5")]
extern "C" {
    fn gss_acquire_cred_from(
        minor: *mut OmUint32,
        desired_name: Handle,
        time_req: OmUint32,
        desired_mechs: *mut OidSetDesc,
        cred_usage: c_int,
        cred_store: *const KeyValueSet,
        output_cred: *mut Handle,
        actual_mechs: *mut *mut OidSetDesc,
        time_rec: *mut OmUint32,
    ) -> OmUint32;
    fn gss_release_cred(minor: *mut OmUint32, cred: *mut Handle) -> OmUint32;
    fn gss_accept_sec_context(
        minor: *mut OmUint32,
        context: *mut Handle,
        acceptor_cred: Handle,
        input_token: *mut BufferDesc,
        channel_bindings: *mut c_void,
        src_name: *mut Handle,
        mech_type: *mut *mut OidDesc,
        output_token: *mut BufferDesc,
        ret_flags: *mut OmUint32,
        time_rec: *mut OmUint32,
        delegated_cred: *mut Handle,
    ) -> OmUint32;
    fn gss_delete_sec_context(
        minor: *mut OmUint32,
        context: *mut Handle,
        output_token: *mut BufferDesc,
    ) -> OmUint32;
    fn gss_import_name(
        minor: *mut OmUint32,
        input: *mut BufferDesc,
        name_type: *mut OidDesc,
        output: *mut Handle,
    ) -> OmUint32;
    fn gss_display_name(
        minor: *mut OmUint32,
        name: Handle,
        output: *mut BufferDesc,
        output_type: *mut *mut OidDesc,
    ) -> OmUint32;
    fn gss_compare_name(
        minor: *mut OmUint32,
        name1: Handle,
        name2: Handle,
        equal: *mut c_int,
    ) -> OmUint32;
    fn gss_release_name(minor: *mut OmUint32, name: *mut Handle) -> OmUint32;
    fn gss_wrap(
        minor: *mut OmUint32,
        context: Handle,
        conf_req: c_int,
        qop_req: OmUint32,
        input: *mut BufferDesc,
        conf_state: *mut c_int,
        output: *mut BufferDesc,
    ) -> OmUint32;
    fn gss_unwrap(
        minor: *mut OmUint32,
        context: Handle,
        input: *mut BufferDesc,
        output: *mut BufferDesc,
        conf_state: *mut c_int,
        qop_state: *mut OmUint32,
    ) -> OmUint32;
    fn gss_wrap_size_limit(
        minor: *mut OmUint32,
        context: Handle,
        conf_req: c_int,
        qop_req: OmUint32,
        req_output_size: OmUint32,
        max_input_size: *mut OmUint32,
    ) -> OmUint32;
    fn gss_inquire_sec_context_by_oid(
        minor: *mut OmUint32,
        context: Handle,
        desired_object: *mut OidDesc,
        data_set: *mut *mut BufferSetDesc,
    ) -> OmUint32;
    fn gss_release_buffer_set(minor: *mut OmUint32, set: *mut *mut BufferSetDesc) -> OmUint32;
    fn gss_release_buffer(minor: *mut OmUint32, buffer: *mut BufferDesc) -> OmUint32;
    fn gss_display_status(
        minor: *mut OmUint32,
        status: OmUint32,
        status_type: c_int,
        mech_type: *mut OidDesc,
        message_context: *mut OmUint32,
        status_string: *mut BufferDesc,
    ) -> OmUint32;
}

/// A failed GSS-API call: which one, its major and minor status, and the library's words for both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssError {
    pub call: &'static str,
    pub major: u32,
    pub minor: u32,
    pub message: String,
}

impl fmt::Display for GssError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.call, self.message)
    }
}

impl std::error::Error for GssError {}

fn empty_buffer() -> BufferDesc {
    BufferDesc {
        length: 0,
        value: ptr::null_mut(),
    }
}

/// A borrowed input buffer: valid while `data` is, and only read by the library.
fn borrowed(data: &[u8]) -> BufferDesc {
    BufferDesc {
        length: data.len(),
        value: data.as_ptr() as *mut c_void,
    }
}

fn oid(bytes: &'static [u8]) -> OidDesc {
    OidDesc {
        length: bytes.len() as OmUint32,
        elements: bytes.as_ptr() as *mut c_void,
    }
}

/// Copies a buffer the library filled and releases it.
fn take_buffer(buffer: &mut BufferDesc) -> Vec<u8> {
    let data = if buffer.value.is_null() || buffer.length == 0 {
        Vec::new()
    } else {
        // SAFETY: the library filled `buffer` with `length` readable bytes at `value`.
        unsafe { std::slice::from_raw_parts(buffer.value as *const u8, buffer.length) }.to_vec()
    };
    let mut minor = 0;
    // SAFETY: `buffer` came from the library (or is empty), and is released once.
    unsafe { gss_release_buffer(&mut minor, buffer) };
    data
}

/// The library's text for one kind of status code (all its messages, joined).
fn status_text(code: OmUint32, kind: c_int) -> String {
    let mut parts = Vec::new();
    let mut context: OmUint32 = 0;
    let mut mech = oid(KRB5_MECH);
    // Bounded: the library ends its list by setting `context` back to 0.
    for _ in 0..8 {
        let mut minor = 0;
        let mut text = empty_buffer();
        // SAFETY: every pointer is valid for the call; `text` is released by take_buffer.
        let major = unsafe {
            gss_display_status(&mut minor, code, kind, &mut mech, &mut context, &mut text)
        };
        if major & ERROR_MASK != 0 {
            break;
        }
        parts.push(String::from_utf8_lossy(&take_buffer(&mut text)).into_owned());
        if context == 0 {
            break;
        }
    }
    parts.join("; ")
}

fn check(call: &'static str, major: OmUint32, minor: OmUint32) -> Result<OmUint32, GssError> {
    if major & ERROR_MASK == 0 {
        return Ok(major);
    }
    let mut message = status_text(major, GSS_C_GSS_CODE);
    if minor != 0 {
        message = format!("{message} ({})", status_text(minor, GSS_C_MECH_CODE));
    }
    Err(GssError {
        call,
        major,
        minor,
        message,
    })
}

/// A GSS-API name (a principal).
pub struct Name(Handle);

// SAFETY: a name handle is a heap object the library never ties to a thread; one owner uses it at a time.
unsafe impl Send for Name {}

impl Name {
    fn import(text: &str, name_type: Option<&'static [u8]>) -> Result<Name, GssError> {
        let mut minor = 0;
        let mut handle: Handle = ptr::null_mut();
        let mut input = borrowed(text.as_bytes());
        let mut kind = name_type.map(oid);
        let kind_ptr = kind.as_mut().map_or(ptr::null_mut(), |k| k as *mut OidDesc);
        // SAFETY: `input` borrows `text` for the call; `handle` receives a name we then own.
        let major = unsafe { gss_import_name(&mut minor, &mut input, kind_ptr, &mut handle) };
        check("gss_import_name", major, minor)?;
        Ok(Name(handle))
    }

    /// A Kerberos principal name as text, parsed with the library's default realm when it has none.
    pub fn principal(text: &str) -> Result<Name, GssError> {
        Name::import(text, None)
    }

    /// A host-based service name, `service@host` (RFC 2743 §4.1).
    pub fn host_service(service: &str, host: &str) -> Result<Name, GssError> {
        Name::import(&format!("{service}@{host}"), Some(NT_HOSTBASED_SERVICE))
    }

    /// The name as the library prints it (`alice@EXAMPLE.TEST` for a Kerberos principal).
    pub fn display(&self) -> Result<String, GssError> {
        let mut minor = 0;
        let mut text = empty_buffer();
        // SAFETY: `self.0` is a live name; `text` is released by take_buffer.
        let major = unsafe { gss_display_name(&mut minor, self.0, &mut text, ptr::null_mut()) };
        check("gss_display_name", major, minor)?;
        Ok(String::from_utf8_lossy(&take_buffer(&mut text)).into_owned())
    }

    /// Whether both name the same principal.
    pub fn same_as(&self, other: &Name) -> Result<bool, GssError> {
        let mut minor = 0;
        let mut equal: c_int = 0;
        // SAFETY: both handles are live names.
        let major = unsafe { gss_compare_name(&mut minor, self.0, other.0, &mut equal) };
        check("gss_compare_name", major, minor)?;
        Ok(equal != 0)
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        if !self.0.is_null() {
            let mut minor = 0;
            // SAFETY: the handle is ours and released once.
            unsafe { gss_release_name(&mut minor, &mut self.0) };
        }
    }
}

/// An acceptor credential: the service keys of a keytab.
pub struct Credential(Handle);

// SAFETY: as for `Name`.
unsafe impl Send for Credential {}

impl Credential {
    /// The acceptor credential for `service` (any principal of the keytab when None) from the keytab
    /// at `keytab`, for the Kerberos 5 mechanism only.
    pub fn acceptor(keytab: &Path, service: Option<&Name>) -> Result<Credential, GssError> {
        let invalid = |what: &str| GssError {
            call: "gss_acquire_cred_from",
            major: 0,
            minor: 0,
            message: format!("keytab path {what}"),
        };
        let path = keytab.to_str().ok_or_else(|| invalid("is not UTF-8"))?;
        let path = CString::new(path).map_err(|_| invalid("contains NUL"))?;
        let key = c"keytab";
        let mut element = KeyValueElement {
            key: key.as_ptr(),
            value: path.as_ptr(),
        };
        let store = KeyValueSet {
            count: 1,
            elements: &mut element,
        };
        let mut mech = oid(KRB5_MECH);
        let mut mechs = OidSetDesc {
            count: 1,
            elements: &mut mech,
        };
        let mut minor = 0;
        let mut handle: Handle = ptr::null_mut();
        let name = service.map_or(ptr::null_mut(), |n| n.0);
        // SAFETY: every input lives across the call; `handle` receives a credential we then own.
        let major = unsafe {
            gss_acquire_cred_from(
                &mut minor,
                name,
                0,
                &mut mechs,
                GSS_C_ACCEPT,
                &store,
                &mut handle,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check("gss_acquire_cred_from", major, minor)?;
        Ok(Credential(handle))
    }
}

impl Drop for Credential {
    fn drop(&mut self) {
        if !self.0.is_null() {
            let mut minor = 0;
            // SAFETY: the handle is ours and released once.
            unsafe { gss_release_cred(&mut minor, &mut self.0) };
        }
    }
}

/// One step of `Context::accept`.
pub struct Accepted {
    /// The token for the client (may be empty).
    pub token: Vec<u8>,
    /// The client's name once the context is established; None while it needs more tokens.
    pub client: Option<Name>,
}

/// An acceptor's security context, from the first token to its deletion.
pub struct Context(Handle);

// SAFETY: as for `Name`; wrap and unwrap calls on one context never run at once (`&mut self`).
unsafe impl Send for Context {}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("gss::Context")
    }
}

impl Default for Context {
    fn default() -> Context {
        Context::new()
    }
}

impl Context {
    /// A context that has seen no token yet.
    pub fn new() -> Context {
        Context(ptr::null_mut())
    }

    /// Passes the client's `token` to gss_accept_sec_context.
    pub fn accept(&mut self, credential: &Credential, token: &[u8]) -> Result<Accepted, GssError> {
        let mut minor = 0;
        let mut input = borrowed(token);
        let mut output = empty_buffer();
        let mut name: Handle = ptr::null_mut();
        // SAFETY: `self.0` is null (first call) or the library's context; `input` borrows `token`; the
        // output buffer and name become ours.
        let major = unsafe {
            gss_accept_sec_context(
                &mut minor,
                &mut self.0,
                credential.0,
                &mut input,
                ptr::null_mut(),
                &mut name,
                ptr::null_mut(),
                &mut output,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let token = take_buffer(&mut output);
        let name = Name(name);
        let major = check("gss_accept_sec_context", major, minor)?;
        let complete = major & GSS_S_CONTINUE_NEEDED == 0;
        Ok(Accepted {
            token,
            client: (complete && !name.0.is_null()).then_some(name),
        })
    }

    /// gss_wrap: integrity protection, and confidentiality when `confidential`.
    pub fn wrap(&mut self, confidential: bool, data: &[u8]) -> Result<Vec<u8>, GssError> {
        let mut minor = 0;
        let mut input = borrowed(data);
        let mut output = empty_buffer();
        let mut conf_state: c_int = 0;
        // SAFETY: live context (or null, which the library refuses); buffers as above.
        let major = unsafe {
            gss_wrap(
                &mut minor,
                self.0,
                c_int::from(confidential),
                0,
                &mut input,
                &mut conf_state,
                &mut output,
            )
        };
        let token = take_buffer(&mut output);
        check("gss_wrap", major, minor)?;
        if confidential && conf_state == 0 {
            return Err(GssError {
                call: "gss_wrap",
                major: 0,
                minor: 0,
                message: "confidentiality not available".into(),
            });
        }
        Ok(token)
    }

    /// gss_unwrap: the message and whether it was encrypted.
    pub fn unwrap(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), GssError> {
        let mut minor = 0;
        let mut input = borrowed(token);
        let mut output = empty_buffer();
        let mut conf_state: c_int = 0;
        let mut qop: OmUint32 = 0;
        // SAFETY: as for wrap.
        let major = unsafe {
            gss_unwrap(
                &mut minor,
                self.0,
                &mut input,
                &mut output,
                &mut conf_state,
                &mut qop,
            )
        };
        let data = take_buffer(&mut output);
        check("gss_unwrap", major, minor)?;
        Ok((data, conf_state != 0))
    }

    /// The largest message whose wrapped token fits in `max_output` bytes.
    pub fn wrap_size_limit(&self, confidential: bool, max_output: u32) -> Result<u32, GssError> {
        let mut minor = 0;
        let mut max_input: OmUint32 = 0;
        // SAFETY: live context; plain integers in and out.
        let major = unsafe {
            gss_wrap_size_limit(
                &mut minor,
                self.0,
                c_int::from(confidential),
                0,
                max_output,
                &mut max_input,
            )
        };
        check("gss_wrap_size_limit", major, minor)?;
        Ok(max_input)
    }

    /// The established context's strength as the library rates it for SASL (MIT: the session key's
    /// bits); None when the library does not say.
    pub fn sasl_ssf(&self) -> Option<u32> {
        let mut minor = 0;
        let mut set: *mut BufferSetDesc = ptr::null_mut();
        let mut what = oid(SEC_CONTEXT_SASL_SSF);
        // SAFETY: live context; `set` becomes ours and is released below.
        let major =
            unsafe { gss_inquire_sec_context_by_oid(&mut minor, self.0, &mut what, &mut set) };
        if major & ERROR_MASK != 0 || set.is_null() {
            return None;
        }
        // SAFETY: a non-null set the library made, with `count` buffers at `elements`.
        let value = unsafe {
            let set_ref = &*set;
            if set_ref.count >= 1 && !set_ref.elements.is_null() {
                let first = &*set_ref.elements;
                (first.length == 4 && !first.value.is_null()).then(|| {
                    let bytes = std::slice::from_raw_parts(first.value as *const u8, 4);
                    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
                })
            } else {
                None
            }
        };
        // SAFETY: released once.
        unsafe { gss_release_buffer_set(&mut minor, &mut set) };
        value
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if !self.0.is_null() {
            let mut minor = 0;
            // SAFETY: the handle is ours and deleted once.
            unsafe { gss_delete_sec_context(&mut minor, &mut self.0, ptr::null_mut()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_print_as_imported_with_the_realm() {
        let name = Name::principal("alice@EXAMPLE.TEST").unwrap();
        assert_eq!(name.display().unwrap(), "alice@EXAMPLE.TEST");
        let same = Name::principal("alice@EXAMPLE.TEST").unwrap();
        let other = Name::principal("bob@EXAMPLE.TEST").unwrap();
        assert!(name.same_as(&same).unwrap());
        assert!(!name.same_as(&other).unwrap());
        let service = Name::host_service("ldap", "localhost").unwrap();
        assert_eq!(service.display().unwrap(), "ldap@localhost");
    }

    #[test]
    fn a_missing_keytab_is_an_error_with_words() {
        let dir = tempfile::tempdir().unwrap();
        let service = Name::host_service("ldap", "localhost").unwrap();
        let path = dir.path().join("none.keytab");
        // Acquisition of an acceptor credential may be deferred by the library; a missing keytab then
        // fails the first accept instead.
        match Credential::acceptor(&path, Some(&service)) {
            Err(e) => assert!(!e.message.is_empty(), "{e:?}"),
            Ok(cred) => {
                let err = Context::new().accept(&cred, b"\x60\x01\x00").err().unwrap();
                assert!(err.major & ERROR_MASK != 0, "{err:?}");
            }
        }
        let bad = Credential::acceptor(Path::new("a\0b"), None).err().unwrap();
        assert_eq!(bad.message, "keytab path contains NUL");
    }

    #[test]
    fn unestablished_contexts_refuse_to_wrap_and_garbage_tokens_fail() {
        let mut context = Context::new();
        let err = context.wrap(true, b"data").err().unwrap();
        assert_eq!(err.call, "gss_wrap");
        assert!(context.unwrap(b"junk").is_err());
        assert_eq!(context.sasl_ssf(), None);
        let dir = tempfile::tempdir().unwrap();
        // An empty keytab file: the credential may be deferred, the garbage token fails either way.
        let path = dir.path().join("empty.keytab");
        std::fs::write(&path, b"\x05\x02").unwrap();
        if let Ok(cred) = Credential::acceptor(&path, None) {
            let err = Context::new().accept(&cred, b"not a token").err().unwrap();
            assert_eq!(err.call, "gss_accept_sec_context");
            assert!(!err.message.is_empty());
        }
    }
}
