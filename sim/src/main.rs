//! `dovetail`: run scenarios in the deterministic world, or serve a simulated cluster to
//! kubectl.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Dovetail's simulator.
#[derive(Parser)]
#[command(name = "dovetail", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario with one seed and print its report.
    Run {
        /// The scenario file.
        scenario: PathBuf,
        /// Root seed: the same seed replays the same run, byte for byte.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write the machine-readable report here.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Write the full trace here.
        #[arg(long)]
        trace: Option<PathBuf>,
    },
    /// Serve a simulated API server on 127.0.0.1 for kubectl and other clients.
    Serve {
        /// Port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 6443)]
        port: u16,
        /// Where to write a kubeconfig for the server.
        #[arg(long, default_value = "dovetail.kubeconfig")]
        kubeconfig: PathBuf,
    },
    /// Measure the simulator's speed.
    Bench {
        /// What to measure.
        #[arg(value_enum)]
        what: cli::bench::Target,
        /// Repetitions (the median is reported).
        #[arg(long, default_value_t = 5)]
        samples: usize,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { scenario, seed, report, trace } => {
            cli::run::run(&scenario, seed, report.as_deref(), trace.as_deref())
        }
        Command::Serve { port, kubeconfig } => cli::serve::serve(port, &kubeconfig),
        Command::Bench { what, samples } => cli::bench::bench(what, samples),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
