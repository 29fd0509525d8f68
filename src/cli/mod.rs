//! Command-line interface: clap commands, exit codes, terminal policy. No physics here.

use std::io::Write as _;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::catalog::catalog;
use crate::estimate::estimate;
use crate::profile::Profile;
use crate::report;
use crate::scenario;

pub mod calibration;
pub mod capacity;

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: internal or I/O failure.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: bad input (scenario, arguments) or a scenario that cannot run.
pub const EXIT_INPUT: i32 = 2;

/// supernode: predict throughput, latency, power and cost of LLM inference on desktop AI
/// clusters (Mac Studio over Thunderbolt 5 RDMA, DGX Spark, Ryzen AI Max+).
#[derive(Debug, Parser)]
#[command(name = "supernode", version, about, long_about = None)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one scenario file and print its predictions.
    Run {
        /// Scenario file (TOML).
        file: PathBuf,
        /// Print one JSON object on stdout instead of the table.
        #[arg(long)]
        json: bool,
        /// Override any key, e.g. --set workload.prompt_tokens=32768 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Calibration profile (default: the embedded M3 Ultra profile).
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Directory for result files.
        #[arg(long, default_value = "output")]
        out: PathBuf,
        /// Do not write result files.
        #[arg(long)]
        no_write: bool,
        /// Also write a Perfetto / chrome://tracing trace of the run (every prefill chunk and the first decode steps) to this file.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Decode steps the trace records.
        #[arg(long, default_value_t = 4, requires = "trace")]
        trace_steps: u64,
    },
    /// Predict every row of a measurement CSV and report the error of each.
    Validate {
        /// Measurement CSV (the format of shared/data/measurements.csv).
        #[arg(long)]
        against: PathBuf,
        /// Calibration profile (default: the embedded profile).
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
        /// Only rows whose id starts with this prefix (repeatable).
        #[arg(long = "rows", value_name = "PREFIX")]
        rows: Vec<String>,
        /// Exit with code 3 when the mean absolute percentage error exceeds this.
        #[arg(long)]
        max_mape: Option<f64>,
        /// Also run leave-one-out cross-validation (refit without each row, predict it).
        #[arg(long)]
        loo: bool,
        /// Prior weight of the leave-one-out refits (as `calibrate --prior-weight`).
        #[arg(long, default_value_t = crate::calibrate::PRIOR_WEIGHT, value_parser = crate::calibrate::parse_prior_weight)]
        prior_weight: f64,
        /// Draw a predicted-vs-measured parity chart (PNG and SVG) into this directory.
        #[arg(long)]
        plot: Option<PathBuf>,
    },
    /// Capacity planning: sweep, merge, plot, plan.
    #[command(flatten)]
    Capacity(capacity::CapacityCommand),
    /// Calibration: calibrate.
    #[command(flatten)]
    Calibration(calibration::CalibrationCommand),
    /// List the built-in nodes, fabrics, models and quantizations with their sources.
    Catalog {
        /// Only one section: nodes, fabrics, models or quants.
        section: Option<String>,
    },
}

/// Runs the CLI and returns the process exit code.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    // Long lines stay whole so that file:line:column and messages are greppable in logs; colour
    // and unicode only on a terminal (miette checks the stream itself).
    let _ = miette::set_hook(Box::new(|_| Box::new(miette::MietteHandlerOpts::new().wrap_lines(false).build())));
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_INPUT } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Run { file, json, set, profile, out, no_write, trace, trace_steps } => {
            run(RunArgs { file, json, set, profile, out, no_write, trace: trace.map(|t| (t, trace_steps)) })
        }
        Command::Capacity(c) => capacity::dispatch(c),
        Command::Calibration(c) => calibration::dispatch(c),
        Command::Validate { against, profile, json, rows, max_mape, loo, prior_weight, plot } => {
            validate(ValidateArgs { against, profile, json, rows, max_mape, loo, prior_weight, plot })
        }
        Command::Catalog { section } => {
            if let Some(s) = &section {
                if !["nodes", "fabrics", "models", "quants"].contains(&s.as_str()) {
                    eprintln!("error: unknown catalog section `{s}` (use nodes, fabrics, models or quants)");
                    return EXIT_INPUT;
                }
            }
            print!("{}", report::catalog_table(catalog(), section.as_deref()));
            EXIT_OK
        }
    }
}

pub(crate) fn load_profile(path: Option<PathBuf>) -> Result<Profile, String> {
    match path {
        Some(p) => Profile::load(&p).map_err(|e| e.to_string()),
        None => Ok(Profile::default_profile()),
    }
}

fn print_diagnostic(d: miette::Report) {
    eprintln!("{d:?}");
}

fn json_error(message: &str) {
    println!("{}", serde_json::json!({"fits": false, "error": message}));
}

/// Arguments of `run`.
struct RunArgs {
    file: PathBuf,
    json: bool,
    set: Vec<String>,
    profile: Option<PathBuf>,
    out: PathBuf,
    no_write: bool,
    /// Trace file and decode steps to record.
    trace: Option<(PathBuf, u64)>,
}

fn run(args: RunArgs) -> i32 {
    let RunArgs { file, json, set, profile, out, no_write, trace } = args;
    let set = set.as_slice();
    let profile = match load_profile(profile) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            if json {
                json_error(&e);
            }
            return EXIT_INPUT;
        }
    };
    let sc = match scenario::load(&file, set) {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("{e}{}", e.help.as_ref().map(|h| format!(" (help: {h})")).unwrap_or_default());
            print_diagnostic(miette::Report::new(e));
            if json {
                json_error(&msg);
            }
            return EXIT_INPUT;
        }
    };
    let est = match estimate(&sc, &profile) {
        Ok(e) => e,
        Err(err) => {
            let crate::estimate::EstimateError::Plan(pe) = &err;
            let span = match pe {
                crate::engine::PlanError::DoesNotFit { .. } => sc.spans.model.clone(),
                crate::engine::PlanError::Uncalibrated { .. } => sc.spans.cluster_nodes.clone(),
                crate::engine::PlanError::TooManyStages { .. } => sc.spans.cluster_nodes.clone(),
            };
            let e = sc.error_at(&span, err.to_string(), Some(pe.fix()));
            let msg = format!("{e} (help: {})", pe.fix());
            print_diagnostic(miette::Report::new(e));
            if json {
                json_error(&msg);
            }
            return EXIT_INPUT;
        }
    };
    if let Some((path, steps)) = &trace {
        if sc.workload.kind != crate::scenario::WorkloadKind::Generate {
            eprintln!("error: --trace records generate workloads (prefill and decode steps), not HPL");
            return EXIT_INPUT;
        }
        let written = crate::estimate::trace(&sc, &profile, *steps).map_err(|e| e.to_string()).and_then(|(plan, tr)| {
            crate::util::write_atomic(path, report::trace_json(&plan, &tr).as_bytes()).map_err(|e| e.to_string()).map(|_| tr)
        });
        match written {
            Ok(tr) => eprintln!("trace: {} tasks written to {} (open in ui.perfetto.dev)", tr.events.len(), path.display()),
            Err(e) => {
                eprintln!("error: cannot write the trace {}: {e}", path.display());
                return EXIT_FAILURE;
            }
        }
    }
    let body = report::to_json(&est);
    if !no_write {
        let path = out.join(format!("{}.json", crate::util::slug(&est.name)));
        if let Err(e) = crate::util::write_atomic(&path, format!("{body}\n").as_bytes()) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return EXIT_FAILURE;
        }
    }
    let mut stdout = std::io::stdout().lock();
    let text = if json { format!("{body}\n") } else { report::run_table(&est) };
    if stdout.write_all(text.as_bytes()).is_err() {
        return EXIT_FAILURE;
    }
    EXIT_OK
}

/// Arguments of `validate`.
struct ValidateArgs {
    against: PathBuf,
    profile: Option<PathBuf>,
    json: bool,
    rows: Vec<String>,
    max_mape: Option<f64>,
    loo: bool,
    prior_weight: f64,
    plot: Option<PathBuf>,
}

/// Exit code: validation error above `--max-mape`.
pub const EXIT_OVER_BOUND: i32 = 3;

fn validate(args: ValidateArgs) -> i32 {
    let ValidateArgs { against, profile, json, rows: prefixes, max_mape, loo, prior_weight, plot } = args;
    let profile = match load_profile(profile) {
        Ok(p) => crate::calibrate::with_host_chip(&p),
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    let is_json = against.extension().is_some_and(|e| e == "json");
    let data = match calibration::load_dataset(std::slice::from_ref(&against), &profile, crate::calibrate::HarnessUse::Validate) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    let keep = |id: &str| prefixes.is_empty() || prefixes.iter().any(|p| id.starts_with(p.as_str()));
    let selected: Vec<usize> = (0..data.targets.len()).filter(|&i| keep(&data.targets[i].id)).collect();
    if selected.is_empty() {
        eprintln!("error: no predictable rows selected in {}", against.display());
        return EXIT_INPUT;
    }
    let predictions = match data.predict(&profile) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let row = |i: usize, predicted: f64| -> crate::calibrate::validate::ValidatedRow {
        match &data.sources[i] {
            crate::calibrate::TargetSource::Row(p) => crate::calibrate::validate::validated(p, predicted),
            crate::calibrate::TargetSource::Harness(h, k) => crate::calibrate::validate::ValidatedRow {
                id: data.targets[i].id.clone(),
                metric: if h.benchmarks[*k].kind == crate::calibrate::HarnessKind::E2eDecode {
                    "decode_tokens_per_s".into()
                } else {
                    "prefill_tokens_per_s".into()
                },
                measured: data.targets[i].measured,
                predicted: crate::util::round3(predicted),
                error_percent: crate::util::round3((predicted - data.targets[i].measured) / data.targets[i].measured * 100.0),
                assumptions: vec![],
            },
        }
    };
    let skipped: Vec<crate::calibrate::validate::SkippedRow> = data
        .skipped
        .iter()
        .filter(|(id, _)| keep(id))
        .map(|(id, reason)| crate::calibrate::validate::SkippedRow { id: id.clone(), reason: reason.clone() })
        .collect();
    let report = crate::calibrate::validate::report(selected.iter().map(|&i| row(i, predictions[i])).collect(), skipped);
    let mut out = serde_json::to_value(&report).expect("report serializes");
    let mut text = crate::calibrate::validate::table(&report);
    let harness = data.sources.iter().find_map(|s| match s {
        crate::calibrate::TargetSource::Harness(h, _) => Some(h),
        crate::calibrate::TargetSource::Row(_) => None,
    });
    for b in harness.map(|h| h.benchmarks.as_slice()).unwrap_or_default() {
        let per_round = b.round_tokens_per_s();
        if b.kind.usage() == crate::calibrate::HarnessUse::Validate && per_round.len() > 1 {
            let list: Vec<String> = per_round.iter().map(|v| format!("{v:.2}")).collect();
            text.push_str(&format!("\n{}, each repeat: {} tok/s (the best is the measured value)", b.kind, list.join(", ")));
            out["rounds_tokens_per_s"][b.kind.id()] = serde_json::json!(per_round);
            if let Some(mean) = b.mean_tokens_per_s_all_rounds() {
                text.push_str(&format!("; over every step of every repeat: {mean:.2} tok/s"));
                out["mean_tokens_per_s_all_rounds"][b.kind.id()] = serde_json::json!(mean);
            }
        }
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if let Some(drift) = harness.and_then(|h| crate::calibrate::pace_drift_percent(h)) {
        let repeated = harness.is_some_and(|h| h.benchmarks.iter().any(|b| !b.rounds.is_empty()));
        text.push_str(&format!(
            "pace probe: on average the machine ran {:.0}% {} during the e2e decode than around the microbenchmarks{}\n",
            drift.abs(),
            if drift >= 0.0 { "slower" } else { "faster" },
            if repeated {
                " (every case and the e2e run report their best repeat, which compares them at the machine's undisturbed speed)"
            } else {
                " (a profile fitted to them carries that error)"
            }
        ));
        out["pace_drift_percent"] = serde_json::json!(crate::util::round3(drift));
    }
    if loo {
        if is_json {
            eprintln!("error: --loo refits the profile without each row; it needs a measurement CSV");
            return EXIT_INPUT;
        }
        eprintln!("validate --loo: refitting without each of {} rows...", selected.len());
        let (loo_rows, loo_skipped) = leave_one_out(&data, &profile, &selected, prior_weight, &row);
        let loo_report = crate::calibrate::validate::report(loo_rows, loo_skipped);
        text.push_str("\nleave-one-out (each row predicted by a profile fitted without it):\n");
        // The assumptions were listed under the first table.
        let mut bare = loo_report.clone();
        bare.rows.iter_mut().for_each(|r| r.assumptions.clear());
        text.push_str(&crate::calibrate::validate::table(&bare));
        out["loo"] = serde_json::to_value(&loo_report).expect("serializes");
    }
    if let Some(dir) = plot {
        let points: Vec<(String, f64, f64)> = report.rows.iter().map(|r| (r.id.clone(), r.measured, r.predicted)).collect();
        let stem = dir.join("parity");
        if let Err(e) = std::fs::create_dir_all(&dir).map_err(|e| e.to_string()).and_then(|_| {
            crate::report::charts::parity_chart(&stem, &format!("supernode: predicted vs measured ({})", against.display()), &points)
                .map_err(|e| e.to_string())
        }) {
            eprintln!("error: cannot draw the parity chart: {e}");
            return EXIT_FAILURE;
        }
        text.push_str(&format!("\nparity chart: {}.png, {}.svg\n", stem.display(), stem.display()));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out).expect("serializes"));
    } else {
        print!("{text}");
    }
    match max_mape {
        Some(m) if report.mape_percent > m => {
            eprintln!("MAPE {:.2}% exceeds --max-mape {m}", report.mape_percent);
            EXIT_OVER_BOUND
        }
        _ => EXIT_OK,
    }
}

/// Advances a progress bar when dropped (whichever way a fold ends).
struct Tick<'a>(&'a indicatif::ProgressBar);

impl Drop for Tick<'_> {
    fn drop(&mut self) {
        self.0.inc(1);
    }
}

/// Refits the default parameters without each selected row and predicts it. Rows run in
/// parallel; each fit is single-threaded and results are collected in row order.
fn leave_one_out(
    data: &crate::calibrate::Dataset,
    profile: &crate::profile::Profile,
    selected: &[usize],
    prior_weight: f64,
    row: &(dyn Fn(usize, f64) -> crate::calibrate::validate::ValidatedRow + Sync),
) -> (Vec<crate::calibrate::validate::ValidatedRow>, Vec<crate::calibrate::validate::SkippedRow>) {
    use rayon::prelude::*;
    // Progress on stderr (indicatif hides it when stderr is not a terminal): a refit per row.
    let pb = indicatif::ProgressBar::with_draw_target(Some(selected.len() as u64), indicatif::ProgressDrawTarget::stderr());
    pb.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} refits  ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let results: Vec<Result<crate::calibrate::validate::ValidatedRow, crate::calibrate::validate::SkippedRow>> = selected
        .par_iter()
        .map(|&i| {
            let _tick = Tick(&pb);
            let skip = |reason: String| crate::calibrate::validate::SkippedRow { id: data.targets[i].id.clone(), reason };
            let rest = data.without(i);
            let (fitted, _, _) = crate::calibrate::calibrate(&rest, profile, None, prior_weight)
                .map_err(|e| skip(format!("refit without it failed: {e}")))?;
            let one = crate::calibrate::Dataset {
                targets: vec![data.targets[i].clone()],
                sources: vec![data.sources[i].clone()],
                ..Default::default()
            };
            let p = one.predict(&fitted).map_err(|e| skip(e.to_string()))?;
            Ok(row(i, p[0]))
        })
        .collect();
    pb.finish_and_clear();
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for r in results {
        match r {
            Ok(x) => rows.push(x),
            Err(s) => skipped.push(s),
        }
    }
    (rows, skipped)
}
