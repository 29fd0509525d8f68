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
        Command::Run { file, json, set, profile, out, no_write } => run(file, json, &set, profile, out, no_write),
        Command::Capacity(c) => capacity::dispatch(c),
        Command::Calibration(c) => calibration::dispatch(c),
        Command::Validate { against, profile, json, rows, max_mape } => validate(against, profile, json, &rows, max_mape),
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

fn run(file: PathBuf, json: bool, set: &[String], profile: Option<PathBuf>, out: PathBuf, no_write: bool) -> i32 {
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
    let body = report::to_json(&est);
    if !no_write {
        let path = out.join(format!("{}.json", report::slug(&est.name)));
        if let Err(e) = report::write_atomic(&path, format!("{body}\n").as_bytes()) {
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

/// Exit code: validation error above `--max-mape`.
pub const EXIT_OVER_BOUND: i32 = 3;

fn validate(against: PathBuf, profile: Option<PathBuf>, json: bool, prefixes: &[String], max_mape: Option<f64>) -> i32 {
    let profile = match load_profile(profile) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    let rows = match crate::validate::read_csv(&against) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    let selected: Vec<_> = if prefixes.is_empty() {
        rows.clone()
    } else {
        rows.iter().filter(|r| prefixes.iter().any(|p| r.id.starts_with(p.as_str()))).cloned().collect()
    };
    if selected.is_empty() {
        eprintln!("error: no rows selected in {}", against.display());
        return EXIT_INPUT;
    }
    // Sibling rows (for quant assumptions) come from the whole file.
    let mut report = crate::validate::validate(&rows, &profile);
    let keep: std::collections::BTreeSet<&str> = selected.iter().map(|r| r.id.as_str()).collect();
    if !prefixes.is_empty() {
        report = crate::validate::restrict(report, &keep);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report).expect("report serializes"));
    } else {
        print!("{}", crate::validate::table(&report));
    }
    match max_mape {
        Some(m) if report.mape_percent > m => {
            eprintln!("MAPE {:.2}% exceeds --max-mape {m}", report.mape_percent);
            EXIT_OVER_BOUND
        }
        _ => EXIT_OK,
    }
}
