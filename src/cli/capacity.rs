//! Capacity-planning commands: `sweep`, `merge`, `plot`, `plan`. Thin: parse arguments, call
//! `sweep`, `charts` and `planner`, print, map errors to exit codes.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::{EXIT_FAILURE, EXIT_INPUT, EXIT_OK, load_profile, print_diagnostic};
use crate::capacity::planner::{self, Objective, PlanRequest};
use crate::capacity::sweep::{self, Manifest, RunOptions, Sweep, SweepError};
use crate::report::charts::{self, ChartError};
use crate::util::slug;

/// Prints a line on stdout; a closed pipe (`| head`) is not an error worth a panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// Capacity-planning subcommands.
#[derive(Debug, Subcommand)]
pub enum CapacityCommand {
    /// Run a scenario file's [sweep] grid in parallel: results.jsonl, results.csv and charts.
    Sweep {
        /// Scenario file with a [sweep] table.
        file: PathBuf,
        /// Output directory (default: output/sweep-<name>, plus shard-<i>-of-<n> when sharded).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads (default: one per core).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
        /// Run one deterministic slice: points with index % N == I.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// Number of shards when the index comes from JOB_COMPLETION_INDEX (Kubernetes Indexed Job).
        #[arg(long, value_name = "N")]
        shard_count: Option<u64>,
        /// Keep the points already in DIR/results.jsonl and run the rest.
        #[arg(long)]
        resume: bool,
        /// Calibration profile (default: the embedded profile).
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Do not draw charts.
        #[arg(long)]
        no_charts: bool,
    },
    /// Join the outputs of all shards of a sweep into one result set and draw the charts.
    Merge {
        /// Shard output directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Output directory (default: output/sweep-<name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Do not draw charts.
        #[arg(long)]
        no_charts: bool,
    },
    /// Redraw the charts of a sweep output directory from its saved results.
    Plot {
        /// Sweep output directory.
        dir: PathBuf,
        /// Only this chart: scaling, power, cost, memory-fit, ttft, equal-budget.
        #[arg(long)]
        chart: Option<String>,
    },
    /// Search clusters (node mix, count, fabric, wiring, engine, split) for a model and an
    /// objective; print the best, the Pareto front, why the others lost, and the cabling.
    Plan {
        /// Model preset.
        #[arg(long)]
        model: String,
        /// Quantization (default: the engine's format of the model's default).
        #[arg(long)]
        quant: Option<String>,
        /// Context the cluster must hold (prompt + 128 generated tokens; default 256).
        #[arg(long, default_value_t = 256)]
        context: u64,
        /// Cheapest cluster reaching this decode rate.
        #[arg(long, value_name = "TOK/S")]
        target_tokens_per_s: Option<f64>,
        /// Fastest cluster costing at most this much hardware.
        #[arg(long, value_name = "USD")]
        budget_usd: Option<f64>,
        /// Fastest cluster drawing at most this much power during decode.
        #[arg(long, value_name = "W")]
        max_power_w: Option<f64>,
        /// Node presets allowed (comma-separated; default: all).
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// Largest cluster considered.
        #[arg(long, default_value_t = 8)]
        max_nodes: usize,
        /// Fabrics allowed (comma-separated; default: all).
        #[arg(long, value_delimiter = ',')]
        fabrics: Vec<String>,
        /// Engines allowed (comma-separated: exo, mlx-lm, llama-cpp, llama-cpp-rpc; default: all).
        #[arg(long, value_delimiter = ',')]
        engines: Vec<String>,
        /// How many of the best to list.
        #[arg(long, default_value_t = 5)]
        top: usize,
        /// List every candidate with the reason it lost.
        #[arg(long)]
        all: bool,
        /// Print one JSON object instead of the report.
        #[arg(long)]
        json: bool,
        /// Worker threads (default: one per core).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
        /// Calibration profile (default: the embedded profile).
        #[arg(long)]
        profile: Option<PathBuf>,
    },
}

/// Runs a capacity-planning command and returns the exit code.
pub fn dispatch(c: CapacityCommand) -> i32 {
    match c {
        CapacityCommand::Sweep { file, out, jobs, shard, shard_count, resume, profile, no_charts } => {
            run_sweep(&file, out, jobs.map(usize::from), shard.as_deref(), shard_count, resume, profile, no_charts)
        }
        CapacityCommand::Merge { dirs, out, no_charts } => run_merge(&dirs, out, no_charts),
        CapacityCommand::Plot { dir, chart } => match charts::draw_sweep(&dir, chart.as_deref()) {
            Ok(files) => {
                print_files(&files);
                EXIT_OK
            }
            Err(e) => chart_error(e),
        },
        CapacityCommand::Plan {
            model,
            quant,
            context,
            target_tokens_per_s,
            budget_usd,
            max_power_w,
            nodes,
            max_nodes,
            fabrics,
            engines,
            top,
            all,
            json,
            jobs,
            profile,
        } => {
            let profile = match load_profile(profile) {
                Ok(p) => p,
                Err(e) => return input_error(&e),
            };
            let objective = match Objective::new(target_tokens_per_s, budget_usd, max_power_w) {
                Ok(o) => o,
                Err(e) => return input_error(&e),
            };
            let req = PlanRequest { model, quant, context, objective, nodes, max_nodes, fabrics, engines, jobs: jobs.map(usize::from) };
            match planner::plan(&req, &profile) {
                Ok(p) => {
                    if json {
                        say!("{}", serde_json::to_string_pretty(&p.to_json(top)).expect("plan serializes"));
                    } else {
                        let _ = std::io::stdout().lock().write_all(p.report(top, all).as_bytes());
                    }
                    if p.winner.is_some() { EXIT_OK } else { EXIT_INPUT }
                }
                Err(e) => input_error(&e),
            }
        }
    }
}

fn input_error(msg: &str) -> i32 {
    eprintln!("error: {msg}");
    EXIT_INPUT
}

fn sweep_error(e: SweepError) -> i32 {
    match e {
        SweepError::Scenario(e) => {
            print_diagnostic(miette::Report::new(*e));
            EXIT_INPUT
        }
        SweepError::Input(m) => input_error(&m),
        SweepError::Io(m) => {
            eprintln!("error: {m}");
            EXIT_FAILURE
        }
    }
}

fn chart_error(e: ChartError) -> i32 {
    match e {
        ChartError::Input(m) => input_error(&m),
        ChartError::Draw(m) => {
            eprintln!("error: {m}");
            EXIT_FAILURE
        }
    }
}

fn print_files(files: &[PathBuf]) {
    for f in files {
        say!("  {}", f.display());
    }
}

#[allow(clippy::too_many_arguments)]
fn run_sweep(
    file: &Path,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    shard: Option<&str>,
    shard_count: Option<u64>,
    resume: bool,
    profile: Option<PathBuf>,
    no_charts: bool,
) -> i32 {
    let profile = match load_profile(profile) {
        Ok(p) => p,
        Err(e) => return input_error(&e),
    };
    let shard = match sweep::resolve_shard(shard, shard_count, |k| std::env::var(k).ok()) {
        Ok(s) => s,
        Err(e) => return input_error(&e),
    };
    let sw = match Sweep::load(file, &profile) {
        Ok(s) => s,
        Err(e) => return sweep_error(e),
    };
    let out = out.unwrap_or_else(|| {
        let base = PathBuf::from("output").join(format!("sweep-{}", slug(&sw.name)));
        if shard.count > 1 { base.join(format!("shard-{}-of-{}", shard.index, shard.count)) } else { base }
    });
    let opts = RunOptions { out: out.clone(), jobs, shard, resume, progress: std::io::stderr().is_terminal() };
    let summary = match sweep::run(&sw, &profile, &opts) {
        Ok(s) => s,
        Err(e) => return sweep_error(e),
    };
    let shard_text = if shard.count > 1 { format!(" (shard {}/{} of {})", shard.index, shard.count, sw.total) } else { String::new() };
    let resumed = if summary.resumed > 0 { format!(", {} resumed", summary.resumed) } else { String::new() };
    say!(
        "swept {} points{shard_text} in {:.2} s{resumed}: {} run, {} rows with reasons (does not fit, illegal split, ...)",
        summary.points,
        summary.seconds,
        summary.fits,
        summary.points - summary.fits
    );
    say!("  {}", out.join(sweep::RESULTS_JSONL).display());
    say!("  {}", out.join(sweep::RESULTS_CSV).display());
    say!("  {}", out.join(sweep::MANIFEST).display());
    if shard.count > 1 {
        say!("charts: after all {} shards finish, run `supernode merge` on their directories", shard.count);
        return EXIT_OK;
    }
    draw_unless(&out, no_charts)
}

/// Draws the charts of a finished result set unless `--no-charts`.
fn draw_unless(out: &std::path::Path, no_charts: bool) -> i32 {
    if no_charts {
        return EXIT_OK;
    }
    match charts::draw_sweep(out, None) {
        Ok(files) => {
            print_files(&files);
            EXIT_OK
        }
        Err(e) => chart_error(e),
    }
}

fn run_merge(dirs: &[PathBuf], out: Option<PathBuf>, no_charts: bool) -> i32 {
    let out = match out {
        Some(o) => o,
        None => match Manifest::read(&dirs[0]) {
            Ok(m) => PathBuf::from("output").join(format!("sweep-{}", slug(&m.name))),
            Err(e) => return sweep_error(e),
        },
    };
    let summary = match sweep::merge(dirs, &out) {
        Ok(s) => s,
        Err(e) => return sweep_error(e),
    };
    say!(
        "merged {} shards: {} points, {} run, {} rows with reasons",
        summary.manifest.merged_from,
        summary.points,
        summary.fits,
        summary.points - summary.fits
    );
    say!("  {}", out.join(sweep::RESULTS_JSONL).display());
    say!("  {}", out.join(sweep::RESULTS_CSV).display());
    draw_unless(&out, no_charts)
}
