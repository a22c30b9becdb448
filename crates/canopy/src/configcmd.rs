//! `canopy config export` and `canopy config check FILE`: the live configuration (cn=config, kept in
//! `DATA/config`) written back as TOML, and a configuration file validated offline against it
//! (docs/configuration.md, docs/design/config-tree.md).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use canopy_server::Config;

#[derive(clap::Subcommand)]
pub enum ConfigCommand {
    /// Print the live configuration as TOML: the file given with --config (or the defaults) with every
    /// setting that cn=config changes live set to its live value. Works beside a running server.
    Export {
        /// Write here (mode 0600: it holds the root passwords) instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check FILE offline (with --data, against that data directory): syntax, schema, access rules, indexes, overlays, listeners and TLS files, as
    /// `serve --check`; then, when its data directory holds a live configuration, list the live
    /// settings that differ from the file and what the next start does with each. Exits 0 when FILE is
    /// good, 1 when not.
    Check {
        /// The configuration file to check.
        file: PathBuf,
    },
}

pub fn run(
    command: ConfigCommand,
    config_path: Option<&Path>,
    data: Option<&Path>,
    config: &Config,
) -> Result<()> {
    match command {
        ConfigCommand::Export { out } => export(config_path, config, out.as_deref()),
        ConfigCommand::Check { file } => check(&file, data),
    }
}

fn export(config_path: Option<&Path>, config: &Config, out: Option<&Path>) -> Result<()> {
    let file = match config_path {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read", path.display()))?,
        ),
        None => None,
    };
    let Some((live, password)) = canopy_server::config_tree::read_live(config)? else {
        bail!(
            "{}: no live configuration yet (DATA/config is made at the first start of the server)",
            config.data_dir.display()
        );
    };
    let body = canopy_server::config_tree::export::export_text(file.as_deref(), &live, &password)
        .map_err(|e| anyhow!("cannot write TOML: {e}"))?;
    let text = format!(
        "# The live configuration of {} (canopy config export).\n{body}",
        config.data_dir.display(),
    );
    match out {
        None => std::io::stdout().write_all(text.as_bytes())?,
        Some(path) => {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode_private()
                .open(path)
                .with_context(|| format!("{}: cannot write", path.display()))?;
            file.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

/// Private files for the exported configuration (it holds passwords).
trait ModePrivate {
    fn mode_private(&mut self) -> &mut Self;
}

impl ModePrivate for std::fs::OpenOptions {
    fn mode_private(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600)
    }
}

/// `data`: the data directory given with `--data`, in place of the file's.
fn check(path: &Path, data: Option<&Path>) -> Result<()> {
    let mut config = Config::load(path)?;
    if let Some(data) = data {
        config.data_dir = data.to_path_buf();
    }
    let source = path.display().to_string();
    canopy_server::load_schema(&config)
        .map_err(anyhow::Error::from)
        .and_then(|schema| Ok(canopy_server::access_list(&schema, &config)?))
        .with_context(|| format!("{source}: configuration refused"))?;
    canopy_server::check_config(&config)
        .with_context(|| format!("{source}: configuration refused"))?;
    match canopy_server::config_tree::read_live(&config)
        .with_context(|| format!("{source}: the live configuration"))?
    {
        None => println!(
            "{source}: configuration OK (no live configuration in {} yet: the file will seed it)",
            config.data_dir.display()
        ),
        Some((live, password)) => {
            let differences = canopy_server::config_tree::differences(&config, &live, &password);
            if differences.is_empty() {
                println!("{source}: configuration OK, the same as the live configuration");
            } else {
                println!(
                    "{source}: configuration OK; it differs from the live configuration in (and the next start):"
                );
                for (dn, attr, outcome) in differences {
                    println!("  {dn} {attr}: {outcome}");
                }
            }
        }
    }
    Ok(())
}
