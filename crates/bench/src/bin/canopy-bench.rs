//! Standalone `canopy-bench` binary: the same subcommands as `canopy bench`.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "canopy-bench",
    version,
    about = "LDAP benchmark tool: gen, run, chart"
)]
struct Cli {
    #[command(flatten)]
    args: canopy_bench::BenchArgs,
}

fn main() {
    if let Err(e) = canopy_bench::main(Cli::parse().args) {
        eprintln!("canopy-bench: {e:#}");
        std::process::exit(1);
    }
}
