//! `dovetail`: run scenarios in the deterministic world, or serve a simulated cluster to
//! kubectl.
//!
//! Exit codes: 0 success, 1 an invariant was violated, 2 invalid input, 3 the simulation
//! crashed or timed out ([`cli::failure::Failure`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cli::failure::Failure;

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
        /// Write the run's timeline here: one self-contained HTML page (nodes by NodePool,
        /// pending pods, cost rate against the LP bound, disruptions, faults, violations).
        #[arg(long)]
        html: Option<PathBuf>,
    },
    /// Run every scenario × seed in parallel child processes; list every failing seed.
    Sweep {
        /// Scenario files or directories of `*.yaml` scenarios (with --merge: the shards'
        /// `--out` directories).
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Seeds: `1..200` (both ends included), `7`, or a list like `1..10,42` (default
        /// 1..10; with --merge: the seeds every scenario must have, default the sweep's).
        #[arg(long)]
        seeds: Option<cli::sweep::Seeds>,
        /// Merge the `--out` directories of a sharded sweep into one summary (and, with
        /// --out, one directory) instead of running; fails if they miss or repeat a run.
        #[arg(long, conflicts_with_all = ["shard", "jobs", "timeout_secs"])]
        merge: bool,
        /// Parallel runs (default: the number of cores).
        #[arg(long, short)]
        jobs: Option<usize>,
        /// Run only slice i of n (0-based: 0/4 to 3/4, as a Kubernetes Indexed Job's
        /// $JOB_COMPLETION_INDEX), to split a sweep across machines.
        #[arg(long)]
        shard: Option<cli::sweep::Shard>,
        /// Report directory: `<out>/<scenario>/<seed>.json` (default target/dovetail-sweep;
        /// with --merge: where the merged sweep goes, default none).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Kill and fail a run that takes longer than this many wall-clock seconds.
        #[arg(long)]
        timeout_secs: Option<u64>,
    },
    /// Compare two sweep directories; exit 1 if the candidate adds an invariant violation.
    Compare {
        /// The baseline sweep's `--out` directory.
        base: PathBuf,
        /// The candidate sweep's `--out` directory.
        candidate: PathBuf,
        /// Show unchanged seeds too.
        #[arg(long)]
        all: bool,
    },
    /// Serve a live simulated cluster on 127.0.0.1 for kubectl, paced at real time × speed.
    Serve {
        /// A scenario to play live (default: an empty cluster).
        scenario: Option<PathBuf>,
        /// Root seed of the world.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Simulated seconds per real second (`inf`: as fast as it goes).
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Freeze simulated time at this moment (e.g. `12m30s`) for inspection.
        #[arg(long, value_parser = dovetail_sim::scenario::SimDuration::parse)]
        pause_at: Option<dovetail_sim::scenario::SimDuration>,
        /// Also run the fake cloud and the controller, with Karpenter's CRDs and a default
        /// NodePool, so pending pods get nodes.
        #[arg(long)]
        karpenter: bool,
        /// Port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 6443)]
        port: u16,
        /// Where to write a kubeconfig for the server.
        #[arg(long, default_value = "dovetail.kubeconfig")]
        kubeconfig: PathBuf,
    },
    /// Shrink a failing run to a minimal scenario, seed held fixed; writes it and its
    /// reproduce line.
    Shrink {
        /// The failing scenario file.
        scenario: PathBuf,
        /// The seed it fails with (held fixed while the scenario shrinks).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Keep this invariant failing (default: the run's first failure).
        #[arg(long)]
        invariant: Option<String>,
        /// Where to write the shrunk scenario (default `<stem>.shrunk.yaml` beside it).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Most candidate runs.
        #[arg(long, default_value_t = 200)]
        max_runs: usize,
    },
    /// Explain a run at a simulated time (default: its end): why every node is or is not
    /// being disrupted, why every pending pod is pending, and the disruption decisions so far.
    Explain {
        /// The scenario file.
        scenario: PathBuf,
        /// Root seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The simulated time to explain, e.g. `45m` (default: the end of the run).
        #[arg(long, value_parser = dovetail_sim::scenario::SimDuration::parse)]
        at: Option<dovetail_sim::scenario::SimDuration>,
    },
    /// Turn a cluster dump (`kubectl get nodepools,ec2nodeclasses,nodeoverlays,deployments,
    /// statefulsets,daemonsets,jobs,pdbs,priorityclasses -A -o yaml`) into a scenario; what
    /// the format cannot hold is listed on stderr and at the top of the scenario.
    Import {
        /// Dump files (YAML `kind: List`, a multi-document stream, or JSON).
        #[arg(required_unless_present = "kubeconfig")]
        dumps: Vec<PathBuf>,
        /// Also read the same kinds live from the cluster this kubeconfig points at.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Write the scenario here (atomically; default stdout).
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// The scenario's name (default: the output file's stem).
        #[arg(long)]
        name: Option<String>,
        /// Leave out the default fault mix (spot storm, API-server errors).
        #[arg(long)]
        no_faults: bool,
    },
    /// Print generated story `seed` (the stories `tests/generated.rs` runs) as a scenario;
    /// run it with `dovetail run <file> --seed <seed>` to replay that test's story.
    Generate {
        /// The story's seed (`generate::story(seed)`).
        seed: u64,
    },
    /// Measure the simulator's speed.
    Bench {
        /// What to measure.
        #[arg(value_enum)]
        what: cli::bench::Target,
        /// Repetitions (the median is reported).
        #[arg(long, default_value_t = 5)]
        samples: usize,
        /// The scenario `split` runs.
        #[arg(long, default_value = "scenarios/batch-burst.yaml")]
        scenario: std::path::PathBuf,
        /// The seed `split` runs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Explain { scenario, seed, at } => cli::explain::explain(&scenario, seed, at.map(|at| at.0)),
        Command::Run { scenario, seed, report, trace, html } => cli::run::run(
            &scenario,
            seed,
            &cli::run::Outputs { report: report.as_deref(), trace: trace.as_deref(), html: html.as_deref() },
        ),
        Command::Sweep { scenarios, merge: true, seeds, out, .. } => {
            cli::merge::merge(&cli::merge::MergeArgs { dirs: scenarios, seeds, out })
        }
        Command::Sweep { scenarios, seeds, jobs, shard, out, timeout_secs, merge: false } => {
            let seeds = seeds.unwrap_or_else(|| cli::sweep::Seeds((1..=10).collect()));
            let out = out.unwrap_or_else(|| PathBuf::from("target/dovetail-sweep"));
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
            cli::sweep::sweep(&cli::sweep::SweepArgs {
                paths: scenarios,
                seeds,
                jobs,
                shard,
                out,
                timeout: timeout_secs.map(std::time::Duration::from_secs),
            })
        }
        Command::Compare { base, candidate, all } => cli::compare::compare(&base, &candidate, all),
        Command::Serve { scenario, seed, speed, pause_at, karpenter, port, kubeconfig } => {
            cli::serve::serve(&cli::serve::ServeArgs { scenario, seed, speed, pause_at, port, kubeconfig, karpenter })
        }
        Command::Shrink { scenario, seed, invariant, out, max_runs } => {
            cli::shrink::shrink(&cli::shrink::ShrinkArgs { scenario, seed, invariant, out, max_runs })
        }
        Command::Import { dumps, kubeconfig, out, name, no_faults } => {
            cli::import::import(&cli::import::ImportArgs { dumps, kubeconfig, out, name, no_faults })
        }
        Command::Generate { seed } => {
            print!(
                "# Generated story {seed}; replay: dovetail run <this file> --seed {seed}\n{}",
                dovetail_sim::generate::to_yaml(&dovetail_sim::generate::story(seed))
            );
            Ok(())
        }
        Command::Bench { what, samples, scenario, seed } => cli::bench::bench(what, samples, &scenario, seed),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Invariant) => ExitCode::from(Failure::INVARIANT),
        Err(failure) => {
            eprintln!("error: {failure}");
            ExitCode::from(failure.exit_code())
        }
    }
}
