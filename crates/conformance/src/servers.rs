//! The two servers under comparison: Debian's slapd (the reference) and canopy, each imported
//! offline from the same LDIF in its own scratch directory, and a connection per identity.

use crate::case::{Case, Identity, Request};
use crate::client::{ClientError, Conn, Outcome};
use canopy_harness::{Server, Target};
use canopy_proto::{
    oid, BindAuth, BindRequest, Control, ExtendedRequest, PagedResults, ProtocolOp, SearchRequest,
};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("writing {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{server} import failed (exit {code}):\n{stderr}{stdout}")]
    Import {
        server: &'static str,
        code: i32,
        stdout: String,
        stderr: String,
    },
    #[error("{server} did not start: {reason}")]
    Start {
        server: &'static str,
        reason: String,
    },
}

/// Both servers sort (slapd's sssvlv overlay), with room for every VLV list the corpus opens on a
/// connection (each VLV request without a context keeps one).
const SORTING: (&str, &str) = (
    "overlay sssvlv\nsssvlv-max 1000\nsssvlv-maxperconn 1000\n",
    "[[overlay]]\nname = \"sssvlv\"\nmax = 1000\nmaxperconn = 1000\n",
);

/// One running server and its open connections.
pub struct Endpoint {
    pub name: &'static str,
    server: Server,
    conns: HashMap<Identity, Conn>,
}

impl Endpoint {
    /// Imports `ldif` (written to a file in `scratch`) and starts the server.
    pub fn start(target: Target, ldif: &Path) -> Result<Endpoint, SetupError> {
        let name = match target {
            Target::Slapd => "slapd",
            Target::Canopy => "canopy",
        };
        // The harness reports a server that does not come up by panicking.
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            // Answers are compared, durability is not: no fsync per write on either side.
            Server::start_imported_target_nosync(target, ldif, SORTING)
        }));
        match started {
            Ok(Ok(server)) => Ok(Endpoint {
                name,
                server,
                conns: HashMap::new(),
            }),
            Ok(Err(out)) => Err(SetupError::Import {
                server: name,
                code: out.code,
                stdout: out.stdout,
                stderr: out.stderr,
            }),
            Err(panic) => {
                let reason = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                Err(SetupError::Start {
                    server: name,
                    reason,
                })
            }
        }
    }

    pub fn url(&self) -> String {
        self.server.ldap_url()
    }

    pub fn dir(&self) -> &Path {
        self.server.dir()
    }

    /// Whether the process is still running (a crash shows as a transport difference first).
    pub fn alive(&self) -> bool {
        self.server.alive()
    }

    /// Runs one case; transport problems become `Outcome::Failed` and drop the connection.
    pub fn run(&mut self, case: &Case) -> Outcome {
        match self.try_run(case) {
            Ok(o) => o,
            Err(e) => {
                self.conns.remove(&case.identity);
                Outcome::Failed(e.to_string())
            }
        }
    }

    fn try_run(&mut self, case: &Case) -> Result<Outcome, ClientError> {
        let op = match &case.request {
            Request::Bind { dn, pw } => {
                let mut conn = Conn::connect(self.server.port())?;
                return Ok(Outcome::Done(conn.bind(dn, pw)?));
            }
            Request::RawSearch { req, filter_ber } => {
                let conn = self.conn(&case.identity)?;
                let id = conn.take_id();
                let pdu = crate::rawber::search_pdu(id, req, filter_ber, &case.controls);
                let outcome = conn.request_raw(id, &pdu);
                // A malformed filter may end the connection; never reuse it afterwards.
                self.conns.remove(&case.identity);
                return outcome;
            }
            Request::PagedSearch { req, size } => return self.paged(case, req, *size),
            Request::SaslBind {
                mechanism,
                credentials,
                ldapi,
            } => {
                let mut conn = if *ldapi {
                    Conn::connect_unix(&self.server.ldapi_path())?
                } else {
                    Conn::connect(self.server.port())?
                };
                let bind = ProtocolOp::BindRequest(BindRequest {
                    version: 3,
                    name: Vec::new(),
                    auth: BindAuth::Sasl {
                        mechanism: mechanism.clone(),
                        credentials: credentials.clone(),
                    },
                });
                let outcome = conn.request(bind, Vec::new())?;
                // Who the connection now is: WhoAmI's answer joins the bind's status.
                return Ok(match outcome {
                    Outcome::Done(mut status) if status.code == 0 => {
                        let whoami = ProtocolOp::ExtendedRequest(ExtendedRequest {
                            name: oid::EXOP_WHO_AM_I.to_string(),
                            value: None,
                        });
                        if let Outcome::Done(who) = conn.request(whoami, Vec::new())? {
                            status.extended = who.extended;
                        }
                        Outcome::Done(status)
                    }
                    other => other,
                });
            }
            Request::Extended { name, value } => ProtocolOp::ExtendedRequest(ExtendedRequest {
                name: name.clone(),
                value: value.clone(),
            }),
            Request::Search(r) => ProtocolOp::SearchRequest(r.clone()),
            Request::Compare(c) => ProtocolOp::CompareRequest(c.clone()),
            Request::Change(rec) => crate::write::change_op(rec),
        };
        self.conn(&case.identity)?
            .request(op, case.controls.clone())
    }

    /// Runs a paged search to its last page (at most `MAX_PAGES`), each page with the cookie of the one
    /// before; a page that is not a success, or carries no paged-results control, ends it.
    fn paged(
        &mut self,
        case: &Case,
        req: &SearchRequest,
        size: i32,
    ) -> Result<Outcome, ClientError> {
        const MAX_PAGES: usize = 200;
        let conn = self.conn(&case.identity)?;
        let mut pages = Vec::new();
        let mut cookie = Vec::new();
        while pages.len() < MAX_PAGES {
            let mut controls = case.controls.clone();
            controls.push(Control {
                oid: oid::CONTROL_PAGED_RESULTS.to_string(),
                critical: true,
                value: Some(PagedResults { size, cookie }.encode()),
            });
            let page = conn.request(ProtocolOp::SearchRequest(req.clone()), controls)?;
            let next = match &page {
                Outcome::Search { status, .. } if status.code == 0 => status
                    .controls
                    .iter()
                    .find(|c| c.oid == oid::CONTROL_PAGED_RESULTS)
                    .and_then(|c| c.value.as_deref())
                    .and_then(|v| PagedResults::decode(v).ok())
                    .map(|p| p.cookie)
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            pages.push(page);
            if next.is_empty() {
                break;
            }
            cookie = next;
        }
        Ok(Outcome::Pages(pages))
    }

    fn conn(&mut self, who: &Identity) -> Result<&mut Conn, ClientError> {
        if !self.conns.contains_key(who) {
            let mut conn = Conn::connect(self.server.port())?;
            if let Some((dn, pw)) = who.credentials() {
                let status = conn.bind(&dn, &pw)?;
                if status.code != 0 {
                    return Err(ClientError::Decode(format!(
                        "bind as {} failed with code {}",
                        String::from_utf8_lossy(&dn),
                        status.code
                    )));
                }
            }
            self.conns.insert(who.clone(), conn);
        }
        self.conns
            .get_mut(who)
            .ok_or_else(|| ClientError::Decode("connection vanished".into()))
    }
}

/// Writes the combined LDIF to `dir/data.ldif` and returns its path.
pub fn write_ldif(dir: &Path, ldif: &[u8]) -> Result<std::path::PathBuf, SetupError> {
    let path = dir.join("data.ldif");
    std::fs::write(&path, ldif).map_err(|source| SetupError::Write {
        path: path.display().to_string(),
        source,
    })?;
    Ok(path)
}
