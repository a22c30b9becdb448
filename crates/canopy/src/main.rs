//! The `canopy` command: serve, import, export, reindex and passwd, like slapd and its slap* tools;
//! backup, restore and verify; and bench.
//!
//! Owns: the command line, logging and the offline tools. Must never: hold LDAP semantics of its own:
//! serving is `canopy-server`'s, databases are `canopy-directory`'s.

mod aclcheck;
mod backup;
mod configcmd;
mod migrate;
mod modify;
mod policycheck;
mod progress;
mod service;
mod tools;
mod verify;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use canopy_server::listener::Bound;
use canopy_server::Config;
use clap::{Parser, Subcommand};

/// mimalloc instead of the C library's allocator: the import and the search path allocate many short-lived
/// small buffers, and its thread-local free lists cut the allocator's share of the work (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "canopy", version, about = "An LDAPv3 directory server on LMDB")]
struct Cli {
    /// Configuration file (TOML); without it the embedded defaults apply.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Data directory (overrides the configuration).
    #[arg(long, global = true)]
    data: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve {
        /// Listener URL, e.g. ldap://127.0.0.1:3389 or ldapi://%2Ftmp%2Fcanopy.sock (repeatable).
        #[arg(long = "listen")]
        listen: Vec<String>,
        /// Check the configuration (schema, access rules, indexes, overlays, listeners, TLS files) and
        /// exit: 0 when it is good, 1 with the reason when not. Opens no database, binds no port.
        #[arg(long)]
        check: bool,
    },
    /// Bulk-load an LDIF file into an empty database, offline (like slapadd -q).
    Import {
        file: PathBuf,
        #[command(flatten)]
        which: Which,
        /// Skip the fsync at the end (for throwaway databases).
        #[arg(long)]
        no_sync: bool,
    },
    /// Apply LDIF change records (add, delete, modify, modrdn; a record without changetype adds its
    /// entry) from FILE or standard input to a database, offline (like slapmodify).
    Modify {
        file: Option<PathBuf>,
        #[command(flatten)]
        which: Which,
        /// Go on after a record that fails (the command still fails at the end), like slapmodify -c.
        #[arg(short = 'c', long = "continue")]
        keep_going: bool,
    },
    /// Write the database as LDIF (like slapcat), to FILE or standard output.
    Export {
        file: Option<PathBuf>,
        #[command(flatten)]
        which: Which,
        /// Only the chosen database, without the subordinate databases glued into it (slapcat -g).
        #[arg(short = 'g', long = "no-glue")]
        no_glue: bool,
    },
    /// Rebuild every index from the entries (like slapindex), offline.
    Reindex {
        #[command(flatten)]
        which: Which,
    },
    /// Copy the database into DIR (new or empty) while it may be serving: a consistent, compacted
    /// snapshot with a checksum manifest (like mdb_copy -c).
    Backup {
        dir: PathBuf,
        #[command(flatten)]
        which: Which,
    },
    /// Bring a backup made by `canopy backup` back into the data directory: checks the manifest,
    /// refuses while a server or tool has the database open.
    Restore {
        dir: PathBuf,
        /// Replace the database of a data directory that is not empty.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        which: Which,
    },
    /// Check that dn2id, id2entry, dn2children and every index agree (a fsck); exits 1 and names
    /// each wrong record when they do not. Safe beside a running server.
    Verify {
        #[command(flatten)]
        which: Which,
    },
    /// Hash a password for userPassword or root_password (like slappasswd).
    Passwd {
        /// Scheme, e.g. {SSHA}, {SSHA512}, {CRYPT}, {ARGON2}, {PBKDF2-SHA512}.
        #[arg(short = 'H', long = "scheme", default_value = "{SSHA}")]
        scheme: String,
        /// The secret; read from standard input when absent.
        #[arg(short = 's', long = "secret")]
        secret: Option<String>,
    },
    /// Explain an access decision offline (like slapacl): which rule and which `by` clause decide.
    /// Exits 0 when the level is granted, 1 when it is denied.
    AclCheck(aclcheck::Question),
    /// Print the password policy governing an entry and its account state, offline (ppolicy overlay).
    PolicyCheck {
        /// The entry's DN.
        #[arg(long)]
        user: String,
    },
    /// Measure any LDAP server: generate test data, run workloads, draw charts (docs/bench.md).
    Bench(canopy_bench::BenchArgs),
    /// The live configuration, cn=config (docs/configuration.md): export it as TOML, check a file.
    #[command(subcommand)]
    Config(configcmd::ConfigCommand),
    /// Translate an OpenLDAP slapd.conf or slapd.d into Canopy's TOML configuration (docs/migration.md).
    /// Exits 0 when everything was translated, 1 when something was left out (listed on standard error
    /// and at the top of the output), 2 when the input cannot be read.
    Migrate {
        /// slapd.conf to translate.
        #[arg(
            long = "slapd-conf",
            conflicts_with = "slapd_d",
            required_unless_present = "slapd_d"
        )]
        slapd_conf: Option<PathBuf>,
        /// slapd.d directory (cn=config as LDIF files) to translate.
        #[arg(long = "slapd-d")]
        slapd_d: Option<PathBuf>,
        /// Where to write the TOML; standard output when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Which database an offline tool works on (default: the first): by suffix, like slapcat's `-b`, or by
/// number, like its `-n` (1 is the first data database, the top-level keys; `[[database]]` tables are
/// 2, 3, ... in file order; slapd's 0, cn=config, has no counterpart).
#[derive(clap::Args, Default)]
struct Which {
    /// The suffix of the database to work on.
    #[arg(short = 'b', long = "suffix", conflicts_with = "database")]
    suffix: Option<String>,
    /// The number of the database to work on (1 = the first).
    #[arg(short = 'n', long = "database")]
    database: Option<usize>,
}

impl Which {
    /// The chosen database's number and configuration (`Config::database_view`) and, for a database
    /// outside the data directory (any but the first, or a first one added live in a directory of
    /// its own), the data directory's lock when `role` writes: the server and the writing tools
    /// exclude each other through the data directory's one lock, whichever database they touch.
    fn select(
        &self,
        config: &Config,
        role: Option<&str>,
    ) -> Result<(usize, Config, Option<service::DataLock>)> {
        let number = match (&self.suffix, self.database) {
            (Some(suffix), _) => config.database_by_suffix(suffix).with_context(|| {
                format!(
                    "no database has the suffix {suffix:?} (see `suffix` and [[database]] tables)"
                )
            })?,
            (None, Some(0)) => bail!(
                "database 0 is slapd's cn=config; Canopy's data databases are numbered from 1"
            ),
            (None, Some(n)) => n,
            (None, None) => 1,
        };
        let Some(view) = config.database_view(number) else {
            bail!(
                "database {number}: the configuration has {} database{}",
                config.database_count(),
                if config.database_count() == 1 {
                    ""
                } else {
                    "s"
                }
            );
        };
        let lock = match role {
            Some(role) if number > 1 || view.data_dir != config.data_dir => {
                Some(service::lock_data_dir(&config.data_dir, role)?)
            }
            _ => None,
        };
        Ok((number, view, lock))
    }
}

fn main() {
    if let Err(error) = run() {
        eprintln!("canopy: {error:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    // The translator reads slapd's files, not Canopy's configuration, and has its own exit statuses.
    if let Command::Migrate {
        slapd_conf,
        slapd_d,
        out,
    } = &cli.command
    {
        std::process::exit(migrate::run(
            slapd_conf.as_deref(),
            slapd_d.as_deref(),
            out.as_deref(),
        ));
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env("CANOPY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour codes only on a terminal: a log file or a pipe gets plain text.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // The filter sits behind a reload handle: cn=config's olcLogLevel changes it while serving.
    let (filter, log_handle) = tracing_subscriber::reload::Layer::new(filter);
    {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        tracing_subscriber::registry()
            .with(filter)
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(terminal),
            )
            .init();
    }
    let log_control: canopy_server::state::LogControl =
        std::sync::Arc::new(move |directive: &str| {
            let filter =
                tracing_subscriber::EnvFilter::try_new(directive).map_err(|e| e.to_string())?;
            log_handle.reload(filter).map_err(|e| e.to_string())
        });

    let mut config = match &cli.config {
        Some(path) => {
            let config = Config::load(path)?;
            // Access rules name schema elements, so they are checked once the schema is known.
            canopy_server::load_schema(&config)
                .map_err(anyhow::Error::from)
                .and_then(|schema| Ok(canopy_server::access_list(&schema, &config)?))
                .with_context(|| path.display().to_string())?;
            config
        }
        None => Config::default(),
    };
    if let Some(data) = &cli.data {
        config.data_dir = data.clone();
    }
    // The file's configuration, before the live one takes its place: a restore of the cn=config
    // store works out from it the configuration the restored store runs.
    let file_config = config.clone();
    // The offline tools see the databases as the server runs them: the file with the live settings of
    // cn=config in place (databases added live, their indexes, ...; docs/design/config-tree.md).
    let offline_tool = !matches!(
        cli.command,
        Command::Serve { .. }
            | Command::Config(_)
            | Command::Passwd { .. }
            | Command::Bench(_)
            | Command::Migrate { .. }
    );
    if offline_tool {
        if let Some(aside) = canopy_server::config_tree::set_aside_stale(&config)
            .context("reading the live configuration (cn=config in DATA/config)")?
        {
            eprintln!(
                "canopy: the stored cn=config belonged to removed databases and does not run with \
                 the configuration file: moved to {}",
                aside.display()
            );
        }
        if let Some((live, _)) = canopy_server::config_tree::read_live(&config)
            .context("reading the live configuration (cn=config in DATA/config)")?
        {
            config = live;
        }
    }
    match cli.command {
        Command::Serve { listen, check } => {
            if !listen.is_empty() {
                config.listen = listen;
            }
            if check {
                let source = cli
                    .config
                    .as_ref()
                    .map_or("the built-in defaults".to_string(), |p| {
                        p.display().to_string()
                    });
                canopy_server::check_config(&config)
                    .with_context(|| format!("{source}: configuration refused"))?;
                let more = match config.database_count() {
                    1 => String::new(),
                    n => format!(
                        " and {} more database{}",
                        n - 1,
                        if n == 2 { "" } else { "s" }
                    ),
                };
                println!(
                    "{source}: configuration OK (suffix {}{more}, data directory {}, {} listener{})",
                    config.suffix,
                    config.data_dir.display(),
                    config.listen.len(),
                    if config.listen.len() == 1 { "" } else { "s" }
                );
                return Ok(());
            }
            purge_freed_memory();
            serve(config, log_control)
        }
        Command::Import {
            file,
            no_sync,
            which,
        } => {
            let (_, view, _lock) = which.select(&config, Some("import"))?;
            tools::import(&view, &file, !no_sync)
        }
        Command::Modify {
            file,
            which,
            keep_going,
        } => {
            let (_, view, _lock) = which.select(&config, Some("modify"))?;
            modify::modify(&view, file.as_deref(), keep_going)
        }
        Command::Export {
            file,
            which,
            no_glue,
        } => {
            let (_, view, _) = which.select(&config, None)?;
            tools::export(&view, file.as_deref(), !no_glue)
        }
        Command::Reindex { which } => {
            let (_, view, _lock) = which.select(&config, Some("reindex"))?;
            tools::reindex(&view)
        }
        Command::Backup { dir, which } => {
            let (number, view, _) = which.select(&config, None)?;
            // The first database's data directory holds the cn=config store and the files kept
            // beside it, wherever the database itself lies.
            let home = (number == 1).then_some(config.data_dir.as_path());
            backup::backup(&view, &dir, home)
        }
        Command::Restore { dir, force, which } => {
            // The restore takes the data directory's lock itself for the first database, whose
            // data and cn=config store it may bring back into two directories.
            let (number, view, _) = which.select(&config, None)?;
            let _lock = match number {
                1 => None,
                _ => Some(service::lock_data_dir(&config.data_dir, "restore")?),
            };
            let first = (number == 1).then_some(&file_config);
            backup::restore(&view, &dir, force, first)
        }
        Command::Verify { which } => {
            let (_, view, _) = which.select(&config, None)?;
            if !verify::verify(&view)? {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Passwd { scheme, secret } => tools::passwd(&scheme, secret),
        Command::AclCheck(question) => {
            // The database that holds the entry asked about, with its rules and root DN.
            let number = config.database_holding(&question.entry);
            let view = config.database_view(number).unwrap_or(config);
            if !aclcheck::acl_check(&view, &question)? {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::PolicyCheck { user } => {
            let number = config.database_holding(&user);
            let view = config.database_view(number).unwrap_or(config);
            policycheck::policy_check(&view, &user)
        }
        Command::Bench(args) => canopy_bench::main(args),
        // Run (and exited) before the configuration was read.
        Command::Migrate { .. } => Ok(()),
        Command::Config(command) => {
            configcmd::run(command, cli.config.as_deref(), cli.data.as_deref(), &config)
        }
    }
}

/// mimalloc hands memory freed in bulk back to the OS only when the allocator runs again, so what a burst
/// freed (the start-up Argon2id check and every Argon2 bind: 19 MiB each) would stay resident on a quiet
/// server. A thread that sleeps asks it every few seconds to purge what has been free long enough.
fn purge_freed_memory() {
    let spawned = std::thread::Builder::new()
        .name("canopy-purge".into())
        .spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_secs(2));
            collect_freed_memory(false);
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "no memory purge thread: freed memory stays resident longer");
    }
}

/// Asks mimalloc to return freed memory to the OS: what has been free past its delay, or with `force` all
/// of it (and this thread's cached pages).
fn collect_freed_memory(force: bool) {
    // SAFETY: mi_collect takes no pointers; it only walks mimalloc's own free lists and arenas.
    unsafe { libmimalloc_sys::mi_collect(force) };
}

/// The root password: configuration, then CANOPY_ROOTPW, then one generated on first start whose hash is
/// kept in the data directory (the cleartext is printed once).
fn root_password(config: &Config) -> Result<Vec<u8>> {
    if let Some(pw) = &config.root_password {
        return Ok(pw.clone().into_bytes());
    }
    if let Ok(pw) = std::env::var("CANOPY_ROOTPW") {
        if !pw.is_empty() {
            return Ok(pw.into_bytes());
        }
    }
    let stored = config.data_dir.join("rootpw");
    if let Ok(hash) = std::fs::read_to_string(&stored) {
        return Ok(hash.trim().as_bytes().to_vec());
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
    let password = canopy_password::generate_password();
    let hash = canopy_password::hash(canopy_password::Scheme::Ssha, password.as_bytes())
        .map_err(|e| anyhow::anyhow!("hashing the root password: {e}"))?;
    write_private(&stored, &hash).with_context(|| format!("writing {}", stored.display()))?;
    println!("Generated a password for {}: {password}", config.root_dn);
    println!(
        "(shown once; its hash is in {}; set CANOPY_ROOTPW or root_password to choose one)",
        stored.display()
    );
    Ok(hash.into_bytes())
}

fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")
}

/// SIGHUP reopens the access log (and the audit logs, through their overlays) under their configured
/// names, so logrotate can move them away.
fn spawn_log_reopener(state: canopy_server::State) -> Result<()> {
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            if let Err(error) = canopy_server::reopen_logs(&state) {
                tracing::warn!(%error, "reopening the logs");
            }
        }
    });
    Ok(())
}

fn serve(config: Config, log_control: canopy_server::state::LogControl) -> Result<()> {
    if config.listen.is_empty() {
        bail!("no listeners configured");
    }
    // Held until the server has stopped: restore, import and reindex refuse to touch the data meanwhile.
    let _lock = service::lock_data_dir(&config.data_dir, "serve")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(canopy_server::limits::thread_stack_size(&config.limits))
        .build()?;
    let password = root_password(&config)?;
    let listen = config.listen.clone();
    let metrics_listen = config.metrics_listen.clone();
    let state = runtime.block_on(canopy_server::build_live_state(
        config,
        password,
        Some(log_control),
    ))?;
    // The start-up Argon2id check (the dummy hash of failed binds) just freed 19 MiB on this thread.
    collect_freed_memory(true);
    runtime.block_on(async move {
        if let Some(tls) = &state.tls {
            tls.spawn_reloader()?;
        }
        let mut tasks = Vec::new();
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        for url in &listen {
            let bound = Bound::bind(url).await?;
            tracing::info!(url = %bound.url(), "listening");
            let mut stop = stop_rx.clone();
            let state = state.clone();
            tasks.push(tokio::spawn(async move {
                bound
                    .run(state, async move {
                        let _ = stop.wait_for(|s| *s).await;
                    })
                    .await
            }));
        }
        if let Some(addr) = &metrics_listen {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("metrics_listen {addr}"))?;
            tracing::info!(addr = %listener.local_addr()?, "serving /metrics");
            let mut stop = stop_rx.clone();
            let state = state.clone();
            tasks.push(tokio::spawn(async move {
                canopy_server::exporter::serve(listener, state, async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await
            }));
        }
        spawn_log_reopener(state.clone())?;
        // Each consumer finds its own database (by its directory) in the current snapshot.
        let current: canopy_server::syncrepl::Current = {
            let state = state.clone();
            std::sync::Arc::new(move |directory| {
                canopy_server::syncrepl::database_in(state.current().databases.iter(), directory)
            })
        };
        canopy_server::syncrepl::start(&current, &state.syncrepl);
        // Checked with the configuration; a failure here cannot happen.
        if let Ok(purge) = state.config.tombstone_purge() {
            let multi = canopy_server::consumers::multiprovider_directories(&state.config);
            canopy_server::syncrepl::start_purge(&current, multi, purge);
        }
        canopy_server::logdb::start(&state.accesslog);
        canopy_server::dds::start(state.clone());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        service::notify(&format!(
            "READY=1\nSTATUS=serving {}\nMAINPID={}",
            state.config.suffix,
            std::process::id()
        ));
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down: no new connections; finishing the requests in progress");
        service::notify("STOPPING=1");
        let _ = stop_tx.send(true);
        for task in tasks {
            let _ = task.await;
        }
        // Connections stop reading and end once their outstanding operations have answered: every
        // write already received is committed and acknowledged before the process exits.
        state.connections.close_all();
        let drained = async {
            while state.connections.total() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            _ = drained => tracing::info!("all connections closed"),
            _ = tokio::time::sleep(SHUTDOWN_GRACE) => tracing::warn!(
                open = state.connections.total(),
                "connections still busy after {SHUTDOWN_GRACE:?}; stopping anyway"
            ),
            _ = tokio::signal::ctrl_c() => tracing::warn!("second interrupt: stopping at once"),
            _ = term.recv() => tracing::warn!("second SIGTERM: stopping at once"),
        }
        Ok::<(), anyhow::Error>(())
    })?;
    // Dropping the runtime and the state closes the store; its writer thread commits what is queued.
    Ok(())
}

/// How long a shutdown waits for outstanding operations (a long search, a slow client) to finish.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);
