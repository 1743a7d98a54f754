//! `dovetail import`: a cluster dump as a scenario (see [`dovetail_sim::import`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use dovetail_sim::import::{self, Input, Options};

use super::failure::Failure;

/// The command line.
#[derive(Clone, Debug)]
pub struct ImportArgs {
    /// Dump files (`kubectl get ... -A -o yaml` or `-o json`), read in order.
    pub dumps: Vec<PathBuf>,
    /// A kubeconfig to read the same kinds from, live (after the dumps).
    pub kubeconfig: Option<PathBuf>,
    /// Where to write the scenario (default: stdout).
    pub out: Option<PathBuf>,
    /// The scenario's name (default: the output file's stem, else `imported`).
    pub name: Option<String>,
    /// Leave the default fault mix out.
    pub no_faults: bool,
}

/// Reads the dumps, imports them, prints the findings on stderr and writes the scenario.
pub fn import(args: &ImportArgs) -> Result<(), Failure> {
    let mut inputs = Vec::new();
    for path in &args.dumps {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the dump", path.display()))
            .map_err(Failure::invalid)?;
        inputs.push(Input { path: path.clone(), text });
    }
    if let Some(kubeconfig) = &args.kubeconfig {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the runtime for the live read")
            .map_err(Failure::crash)?;
        let fetched = rt.block_on(import::live::fetch(kubeconfig)).map_err(Failure::invalid)?;
        if !fetched.not_served.is_empty() {
            eprintln!("not served by the cluster (skipped): {}", fetched.not_served.join(", "));
        }
        inputs.push(fetched.input);
    }
    let name = args.name.clone().unwrap_or_else(|| {
        args.out
            .as_deref()
            .and_then(Path::file_stem)
            .map_or_else(|| "imported".to_string(), |s| s.to_string_lossy().into_owned())
    });
    let target = args.out.clone().unwrap_or_else(|| PathBuf::from("<stdout>"));
    let imported = import::import(&inputs, &Options { name, faults: !args.no_faults }, &target)
        .map_err(|e| Failure::invalid(anyhow::anyhow!("{e}")))?;
    eprint!("{}", imported.findings.render(""));
    let counts: Vec<String> = imported.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    match &args.out {
        Some(out) => {
            import::output::write_atomic(out, &imported.text)
                .with_context(|| format!("{}: cannot write the scenario", out.display()))
                .map_err(Failure::crash)?;
            eprintln!(
                "wrote {} ({}); run it: dovetail run {} --seed 1",
                out.display(),
                counts.join(", "),
                out.display()
            );
        }
        None => {
            std::io::stdout().write_all(imported.text.as_bytes()).context("writing stdout").map_err(Failure::crash)?;
            eprintln!("imported {}", counts.join(", "));
        }
    }
    Ok(())
}
