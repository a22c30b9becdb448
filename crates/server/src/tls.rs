//! TLS: the server certificate (PEM files, or a self-signed one in the data directory), its reload on SIGHUP
//! and on file changes, and client-certificate verification. The stream a connection upgrades in place is
//! `crate::transport`'s.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::config::{Config, VerifyClient};
use crate::session::TlsFacts;

/// How often the certificate files' modification times are checked.
const POLL_INTERVAL: Duration = Duration::from_secs(3);

/// Why TLS could not be set up or reloaded. Texts name files, never key material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{0}: {1}")]
    File(String, String),
    #[error("TLS setup: {0}")]
    Setup(String),
}

/// The configured certificate and key, or the self-signed pair in the data directory (made at the
/// first start without them).
fn files_for(config: &Config) -> Result<Files, TlsError> {
    Ok(match (&config.tls.cert_file, &config.tls.key_file) {
        (Some(cert), Some(key)) => Files {
            cert: cert.clone(),
            key: key.clone(),
            ca: config.tls.ca_file.clone(),
        },
        _ => {
            let (cert, key) = self_signed(&config.data_dir)?;
            Files {
                cert,
                key,
                ca: config.tls.ca_file.clone(),
            }
        }
    })
}

/// Where the certificate, key and client CAs come from.
#[derive(Debug, Clone)]
struct Files {
    cert: PathBuf,
    key: PathBuf,
    ca: Option<PathBuf>,
}

impl Files {
    fn all(&self) -> Vec<&Path> {
        let mut paths = vec![self.cert.as_path(), self.key.as_path()];
        paths.extend(self.ca.as_deref());
        paths
    }

    fn stamps(&self) -> Vec<Option<SystemTime>> {
        self.all()
            .iter()
            .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
            .collect()
    }
}

/// One loaded certificate set: what handshakes use, and the CA check for client certificates.
struct Loaded {
    server: Arc<ServerConfig>,
    client_check: Option<Arc<dyn ClientCertVerifier>>,
}

/// The server's TLS state, shared by listeners and connections.
pub struct Tls {
    /// Swapped by a change of cn=config's olcTLSCertificateFile/olcTLSCertificateKeyFile (`switch`).
    files: RwLock<Files>,
    verify: VerifyClient,
    handshake_timeout: Duration,
    current: RwLock<Arc<Loaded>>,
    stamps: Mutex<Vec<Option<SystemTime>>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("files", &self.files()).finish()
    }
}

impl Tls {
    /// Loads the configured certificate, or makes (first start) or reuses the self-signed one.
    pub fn setup(config: &Config) -> Result<Tls, TlsError> {
        let files = files_for(config)?;
        let stamps = files.stamps();
        let loaded = load(&files, config.tls.verify_client)?;
        log_certificate(&files.cert);
        Ok(Tls {
            files: RwLock::new(files),
            verify: config.tls.verify_client,
            handshake_timeout: Duration::from_secs(config.tls.handshake_timeout),
            current: RwLock::new(Arc::new(loaded)),
            stamps: Mutex::new(stamps),
        })
    }

    fn files(&self) -> Files {
        self.files.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether `config`'s certificate and key load (for a change of cn=config, before it is stored).
    pub fn check_files(config: &Config, verify: VerifyClient) -> Result<(), TlsError> {
        load(&files_for(config)?, verify).map(|_| ())
    }

    /// Serves `config`'s certificate and key from the next handshake on (a change of cn=config). A
    /// failure keeps the certificate in use.
    pub fn switch(&self, config: &Config) -> Result<(), TlsError> {
        let files = files_for(config)?;
        let loaded = load(&files, self.verify)?;
        *self.stamps.lock().unwrap_or_else(|e| e.into_inner()) = files.stamps();
        log_certificate(&files.cert);
        *self.files.write().unwrap_or_else(|e| e.into_inner()) = files;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(loaded);
        tracing::info!("TLS certificate switched (cn=config)");
        Ok(())
    }

    /// Reloads the files. A failure keeps the certificate in use and is logged.
    pub fn reload(&self) {
        let files = self.files();
        *self.stamps.lock().unwrap_or_else(|e| e.into_inner()) = files.stamps();
        match load(&files, self.verify) {
            Ok(loaded) => {
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(loaded);
                tracing::info!("TLS certificate reloaded");
                log_certificate(&files.cert);
            }
            Err(error) => {
                tracing::warn!(%error, "TLS reload failed; keeping the certificate in use");
            }
        }
    }

    /// Reloads when any of the files changed since the last load.
    pub fn reload_if_changed(&self) {
        let now = self.files().stamps();
        let changed = *self.stamps.lock().unwrap_or_else(|e| e.into_inner()) != now;
        if changed {
            self.reload();
        }
    }

    /// Reloads on SIGHUP and when the files change, until the runtime ends.
    pub fn spawn_reloader(self: &Arc<Self>) -> io::Result<()> {
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        let tls = self.clone();
        tokio::spawn(async move {
            let mut poll = tokio::time::interval(POLL_INTERVAL);
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    signal = hangup.recv() => {
                        if signal.is_none() {
                            return;
                        }
                        tracing::info!("SIGHUP: reloading the TLS certificate");
                        tls.reload();
                    }
                    _ = poll.tick() => tls.reload_if_changed(),
                }
            }
        });
        Ok(())
    }

    /// The TLS handshake as the server, within the handshake timeout; the stream and what it tells about
    /// the client.
    pub async fn accept<S>(
        &self,
        stream: S,
    ) -> io::Result<(tokio_rustls::server::TlsStream<S>, TlsFacts)>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let loaded = self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let acceptor = tokio_rustls::TlsAcceptor::from(loaded.server.clone());
        let stream = tokio::time::timeout(self.handshake_timeout, acceptor.accept(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
        let facts = facts(&loaded, stream.get_ref().1);
        Ok((stream, facts))
    }
}

/// What a finished handshake says about the client: the subject of a certificate that the CAs verify.
fn facts(loaded: &Loaded, conn: &rustls::ServerConnection) -> TlsFacts {
    let client_subject = match (conn.peer_certificates(), &loaded.client_check) {
        (Some([end, intermediates @ ..]), Some(check)) => {
            match check.verify_client_cert(end, intermediates, UnixTime::now()) {
                Ok(_) => canopy_schema::x509::subject_dn(end),
                Err(error) => {
                    tracing::info!(%error, "client certificate not verified; ignored");
                    None
                }
            }
        }
        _ => None,
    };
    TlsFacts { client_subject }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Loads the configured certificate, key and CA files as a start would, generating nothing: for
/// `canopy serve --check`. Without `cert_file`/`key_file` a start makes a self-signed certificate, so only
/// a CA file is left to check.
pub fn check(config: &Config) -> Result<(), TlsError> {
    match (&config.tls.cert_file, &config.tls.key_file) {
        (Some(cert), Some(key)) => {
            let files = Files {
                cert: cert.clone(),
                key: key.clone(),
                ca: config.tls.ca_file.clone(),
            };
            load(&files, config.tls.verify_client).map(|_| ())
        }
        _ => match &config.tls.ca_file {
            Some(ca) => ca_verifier(ca, false).map(|_| ()),
            None => Ok(()),
        },
    }
}

/// Reads the PEM files and builds the handshake configuration.
fn load(files: &Files, verify: VerifyClient) -> Result<Loaded, TlsError> {
    let certs = read_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| TlsError::File(files.key.display().to_string(), pem_problem(&e)))?;
    let client_check = match &files.ca {
        Some(ca) => Some(ca_verifier(ca, false)?),
        None => None,
    };
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup(e.to_string()))?;
    let builder = match (verify, &files.ca, &client_check) {
        (VerifyClient::Never, _, _) | (_, None, _) | (_, _, None) => builder.with_no_client_auth(),
        (VerifyClient::Allow, _, Some(check)) => {
            builder.with_client_cert_verifier(Arc::new(AllowAny(check.clone())))
        }
        (VerifyClient::Try, Some(ca), _) => {
            builder.with_client_cert_verifier(ca_verifier(ca, true)?)
        }
        (VerifyClient::Demand, _, Some(check)) => builder.with_client_cert_verifier(check.clone()),
    };
    let server = builder
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::File(files.key.display().to_string(), key_problem(&e)))?;
    Ok(Loaded {
        server: Arc::new(server),
        client_check,
    })
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let name = || path.display().to_string();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| TlsError::File(name(), pem_problem(&e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::File(name(), pem_problem(&e)))?;
    if certs.is_empty() {
        return Err(TlsError::File(name(), "no CERTIFICATE in the file".into()));
    }
    Ok(certs)
}

fn ca_verifier(path: &Path, allow_none: bool) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in read_certs(path)? {
        roots
            .add(cert)
            .map_err(|e| TlsError::File(path.display().to_string(), e.to_string()))?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
    let builder = if allow_none {
        builder.allow_unauthenticated()
    } else {
        builder
    };
    builder
        .build()
        .map_err(|e| TlsError::File(path.display().to_string(), e.to_string()))
}

/// A PEM problem in words that quote nothing of the file (it may be a key).
fn pem_problem(e: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(io) => format!("cannot read: {io}"),
        Error::NoItemsFound => "no PEM item of the expected kind".to_string(),
        _ => "malformed PEM".to_string(),
    }
}

fn key_problem(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InconsistentKeys(_) => {
            "the private key does not match the certificate".to_string()
        }
        _ => "unusable private key or certificate".to_string(),
    }
}

/// The self-signed certificate in `DATA/tls/`: made on first start, reused afterwards.
fn self_signed(data_dir: &Path) -> Result<(PathBuf, PathBuf), TlsError> {
    let dir = data_dir.join("tls");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    if cert.exists() && key.exists() {
        return Ok((cert, key));
    }
    let dir_err = |e: io::Error| TlsError::File(dir.display().to_string(), e.to_string());
    std::fs::create_dir_all(&dir).map_err(dir_err)?;
    let host = host_name();
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    names.extend(host.clone().filter(|h| !names.contains(h)));
    let (cert_pem, key_pem) = generate(names.clone(), host.as_deref().unwrap_or("localhost"))
        .map_err(|e| TlsError::Setup(format!("generating a certificate: {e}")))?;
    write_file(&key, key_pem.as_bytes(), 0o600)?;
    write_file(&cert, cert_pem.as_bytes(), 0o644)?;
    tracing::info!(cert = %cert.display(), key = %key.display(), names = ?names,
        "generated a self-signed TLS certificate");
    Ok((cert, key))
}

/// A self-signed certificate for `names` (subject CN = `host`): its PEM and its key's PEM.
fn generate(names: Vec<String>, host: &str) -> Result<(String, String), rcgen::Error> {
    let mut params = rcgen::CertificateParams::new(names)?;
    let mut subject = rcgen::DistinguishedName::new();
    subject.push(rcgen::DnType::CommonName, host);
    subject.push(rcgen::DnType::OrganizationName, "Canopy self-signed");
    params.distinguished_name = subject;
    let key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: io::Error| TlsError::File(path.display().to_string(), e.to_string());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(err)?;
    // The mode given to open applies only to a new file: an old key file gets it too.
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(err)?;
    file.write_all(bytes).map_err(err)
}

fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = std::str::from_utf8(buf.get(..end)?)
        .ok()?
        .trim()
        .to_string();
    (!name.is_empty()).then_some(name)
}

/// Logs where the certificate in use is and its SHA-256 fingerprint.
fn log_certificate(path: &Path) {
    use sha2::Digest;
    if let Ok(certs) = read_certs(path) {
        if let Some(leaf) = certs.first() {
            let digest = sha2::Sha256::digest(leaf.as_ref());
            let fingerprint: Vec<String> = digest.iter().map(|b| format!("{b:02X}")).collect();
            tracing::info!(cert = %path.display(), sha256 = %fingerprint.join(":"), "TLS certificate");
        }
    }
}

/// `verify_client = "allow"`: a certificate is asked for, and the handshake goes on whether or not the CAs
/// verify it (the client must still prove it holds the key). Only a verified one names the client.
#[derive(Debug)]
struct AllowAny(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for AllowAny {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_in(dir: &Path) -> Config {
        Config {
            data_dir: dir.to_path_buf(),
            ..Config::default()
        }
    }

    fn current(tls: &Tls) -> Arc<Loaded> {
        tls.current.read().unwrap().clone()
    }

    #[test]
    fn self_signed_is_made_once_with_a_private_key_file() {
        let dir = tempfile::tempdir().unwrap();
        let tls = Tls::setup(&config_in(dir.path())).unwrap();
        let cert = std::fs::read(dir.path().join("tls/cert.pem")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("tls/key.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(tls.files().cert, dir.path().join("tls/cert.pem"));
        Tls::setup(&config_in(dir.path())).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("tls/cert.pem")).unwrap(),
            cert
        );
    }

    #[test]
    fn failed_reload_keeps_the_certificate_and_a_good_one_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let tls = Tls::setup(&config_in(dir.path())).unwrap();
        let before = current(&tls);
        let cert_path = dir.path().join("tls/cert.pem");
        let good = std::fs::read(&cert_path).unwrap();
        std::fs::write(&cert_path, "-----BEGIN CERTIFICATE-----\nnot base64!\n").unwrap();
        tls.reload();
        assert!(
            Arc::ptr_eq(&before, &current(&tls)),
            "kept after a bad file"
        );
        std::fs::write(&cert_path, &good).unwrap();
        tls.reload();
        assert!(!Arc::ptr_eq(&before, &current(&tls)), "reloaded");
    }

    #[test]
    fn mismatched_key_is_named_without_its_contents() {
        let dir = tempfile::tempdir().unwrap();
        let one = rcgen::generate_simple_self_signed(vec!["a".to_string()]).unwrap();
        let two = rcgen::generate_simple_self_signed(vec!["b".to_string()]).unwrap();
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&cert, one.cert.pem()).unwrap();
        let key_pem = two.signing_key.serialize_pem();
        std::fs::write(&key, &key_pem).unwrap();
        let files = Files {
            cert,
            key,
            ca: None,
        };
        let err = load(&files, VerifyClient::Never).err().unwrap().to_string();
        assert!(err.contains("k.pem"), "{err}");
        assert!(
            !err.contains("PRIVATE") && !err.contains(&key_pem[40..60]),
            "{err}"
        );
    }

    #[test]
    fn subject_of_a_real_certificate() {
        let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).unwrap();
        let dc = rcgen::DnType::CustomDnType(vec![0, 9, 2342, 19200300, 100, 1, 25]);
        let mut name = rcgen::DistinguishedName::new();
        name.push(
            dc.clone(),
            rcgen::DnValue::Ia5String("com".try_into().unwrap()),
        );
        name.push(rcgen::DnType::OrganizationName, "Example, Inc.");
        name.push(rcgen::DnType::CommonName, "alice");
        params.distinguished_name = name;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            canopy_schema::x509::subject_dn(cert.der()).as_deref(),
            Some("CN=alice,O=Example\\, Inc.,DC=com")
        );
    }
}
