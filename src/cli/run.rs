//! `run`: one scenario file, its predictions as a table or JSON, an optional Perfetto trace.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use super::args::{JsonArg, ProfileArg};
use super::{CliError, ExitKind};
use crate::engine::PlanError;
use crate::estimate::{EstimateError, estimate};
use crate::profile::Profile;
use crate::report;
use crate::scenario::{self, Scenario, WorkloadKind};

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML).
    pub file: PathBuf,
    /// `--json` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub json: JsonArg,
    /// Override any key, e.g. --set workload.prompt_tokens=32768 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// `--profile` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub profile: ProfileArg,
    /// Directory for result files.
    #[arg(long, value_name = "DIR", default_value = "output")]
    pub out: PathBuf,
    /// Do not write result files.
    #[arg(long)]
    pub no_write: bool,
    /// Also write a Perfetto / chrome://tracing trace of the run (every prefill chunk and the first decode steps) to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Decode steps the trace records.
    #[arg(long, default_value_t = 4, requires = "trace")]
    pub trace_steps: u64,
}

/// Runs the scenario. With `--json`, a scenario that cannot be loaded or run is also reported on
/// stdout as `{"fits": false, "error": ...}`.
pub fn run(args: RunArgs) -> Result<(), CliError> {
    let json = args.json.json;
    let profile = args.profile.load().map_err(|e| e.with_json(json))?;
    let sc = scenario::load(&args.file, &args.set).map_err(|e| CliError::scenario(e).with_json(json))?;
    tracing::debug!("run: `{}` with profile `{}`", sc.name, profile.meta.name);
    let t0 = std::time::Instant::now();
    let est = estimate(&sc, &profile).map_err(|e| estimate_error(&sc, e).with_json(json))?;
    tracing::debug!("run: estimated in {:.3} s", t0.elapsed().as_secs_f64());
    if let Some(path) = &args.trace {
        write_trace(&sc, &profile, path, args.trace_steps)?;
    }
    let body = report::to_json(&est);
    if !args.no_write {
        let path = args.out.join(format!("{}.json", crate::util::slug(&est.name)));
        crate::util::write_atomic(&path, format!("{body}\n").as_bytes())
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
    }
    let text = if args.json.json { format!("{body}\n") } else { report::run_table(&est) };
    // A closed pipe (`| head`) ends the command quietly.
    std::io::stdout().lock().write_all(text.as_bytes()).map_err(|_| CliError::silent(ExitKind::Failure))
}

/// A scenario that cannot run, located at the part of the file to change.
fn estimate_error(sc: &Scenario, err: EstimateError) -> CliError {
    let EstimateError::Plan(pe) = &err;
    let span = match pe {
        PlanError::DoesNotFit { .. } => &sc.spans.model,
        PlanError::Uncalibrated { .. } | PlanError::TooManyStages { .. } => &sc.spans.cluster_nodes,
    };
    CliError::scenario(sc.error_at(span, err.to_string(), Some(pe.fix())).with_kind(err.kind()))
}

/// Writes the Perfetto trace of a generate workload's run.
fn write_trace(sc: &Scenario, profile: &Profile, path: &Path, steps: u64) -> Result<(), CliError> {
    if sc.workload.kind != WorkloadKind::Generate {
        return Err(CliError::input("--trace records generate workloads (prefill and decode steps), not HPL"));
    }
    let cannot = |e: String| CliError::failure(format!("cannot write the trace {}: {e}", path.display()));
    let (plan, tr) = crate::estimate::trace(sc, profile, steps).map_err(|e| cannot(e.to_string()))?;
    crate::util::write_atomic(path, report::trace_json(&plan, &tr).as_bytes()).map_err(|e| cannot(e.to_string()))?;
    eprintln!("trace: {} tasks written to {} (open in ui.perfetto.dev)", tr.events.len(), path.display());
    Ok(())
}
