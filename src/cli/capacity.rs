//! Capacity-planning commands: `sweep`, `merge`, `plot`, `plan`. Thin: parse arguments, call
//! `sweep`, `charts` and `planner`, print, map errors to exit codes.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::args::{JobsArg, JsonArg, ProfileArg, SweepOutArgs};
use super::{CliError, ExitKind};
use crate::capacity::planner::{self, Goal, Objective, PlanRequest, PlanSpec};
use crate::capacity::slo::{self, SloSpec};
use crate::capacity::sweep::{self, Manifest, RunOptions, Sweep};
use crate::report::{charts, html};
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
    Sweep(SweepArgs),
    /// Join the outputs of all shards of a sweep into one result set and draw the charts.
    Merge(MergeArgs),
    /// Redraw the charts of a sweep output directory from its saved results.
    Plot(PlotArgs),
    /// Search clusters (node mix, count, fabric, wiring, engine, split) for a model and an
    /// objective; print the best, the Pareto front, why the others lost, and the cabling.
    Plan(PlanArgs),
    /// Write one self-contained HTML page for a sweep directory, a plan (`plan --out FILE`), an
    /// SLO plan (`plan --slo`'s directory or slo.json) or a run's JSON: question, answer,
    /// charts, candidates, cabling picture, extrapolations.
    Report(ReportArgs),
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A sweep output directory, a plan JSON (`plan --out FILE`), an SLO plan's directory or
    /// slo.json (`plan --slo`), or a run's JSON (`run` writes one under output/).
    pub path: PathBuf,
    /// The page to write (default: DIR/report.html for a sweep, FILE.html beside a JSON).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Arguments of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Scenario file with a [sweep] table.
    pub file: PathBuf,
    /// `--out` and `--no-charts` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub out: SweepOutArgs,
    /// `--jobs` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub jobs: JobsArg,
    /// Run one deterministic slice: points with index % N == I.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Number of shards when the index comes from JOB_COMPLETION_INDEX (Kubernetes Indexed Job).
    #[arg(long, value_name = "N")]
    pub shard_count: Option<u64>,
    /// Keep the points already in DIR/results.jsonl and run the rest.
    #[arg(long)]
    pub resume: bool,
    /// Override a key of the base scenario, e.g. --set workload.prompt_tokens=4096 (repeatable;
    /// like `run --set`; not a key the sweep varies).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// `--profile` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub profile: ProfileArg,
}

/// Arguments of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard output directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// `--out` and `--no-charts` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub out: SweepOutArgs,
}

/// Arguments of `plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Sweep output directory.
    pub dir: PathBuf,
    /// Only this chart: scaling, power, cost, memory-fit, ttft, equal-budget.
    #[arg(long)]
    pub chart: Option<String>,
}

/// Arguments of `plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A plan spec file (TOML: every key is a flag of this command; flags given here win).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Serving capacity under an SLO: for each cluster option of this spec (TOML: a serving
    /// scenario with `[slo]`, the axis `rate` or `users`, `[[option]]` overrides), the highest
    /// Poisson rate (or most users) meeting the targets, by bisection; writes the
    /// latency-vs-load chart (PNG, SVG) and slo.json to --out DIR (default `output/slo-<spec>`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["spec", "model", "target_tokens_per_s", "budget_usd", "max_power_w", "goal"])]
    pub slo: Option<PathBuf>,
    /// Model preset (required, here or in --spec).
    #[arg(long)]
    pub model: Option<String>,
    /// Quantization (default: the engine's format of the model's default).
    #[arg(long)]
    pub quant: Option<String>,
    /// Context the cluster must hold (prompt + 128 generated tokens; default 256).
    #[arg(long)]
    pub context: Option<u64>,
    /// Cheapest cluster reaching this decode rate.
    #[arg(long, value_name = "TOK/S")]
    pub target_tokens_per_s: Option<f64>,
    /// Fastest cluster costing at most this much hardware.
    #[arg(long, value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Fastest cluster drawing at most this much power during decode.
    #[arg(long, value_name = "W")]
    pub max_power_w: Option<f64>,
    /// What to maximize: speed (default), tokens-per-s-per-dollar, tokens-per-day-per-dollar.
    #[arg(long)]
    pub goal: Option<String>,
    /// Node presets allowed (comma-separated; default: the catalog's planner set, the reference
    /// box of each measured chip: `catalog nodes` marks the others).
    #[arg(long, value_delimiter = ',')]
    pub nodes: Vec<String>,
    /// Largest cluster considered (default 8).
    #[arg(long)]
    pub max_nodes: Option<usize>,
    /// Fabrics allowed (comma-separated; default: the catalog's planner set: `catalog fabrics`
    /// marks the add-in NICs and one box's own links left out).
    #[arg(long, value_delimiter = ',')]
    pub fabrics: Vec<String>,
    /// Engines allowed (comma-separated: exo, mlx-lm, llama-cpp, llama-cpp-rpc; default: all).
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<String>,
    /// Also mix chip families where the runtime allows it (llama.cpp RPC: any; exo: Macs).
    #[arg(long)]
    pub mixed_fleets: bool,
    /// Also vary engine options (all-reduce, macOS frame size, fast sync, prefill chunk).
    #[arg(long)]
    pub vary_options: bool,
    /// Simulate over-budget candidates too (only to measure what pruning saves).
    #[arg(long)]
    pub no_prune: bool,
    /// Also write the plan as JSON to this file (what `supernode report FILE` renders); with
    /// --slo, the directory for the chart and slo.json.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// How many of the best to list.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// List every candidate with the reason it lost.
    #[arg(long)]
    pub all: bool,
    /// `--json` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub json: JsonArg,
    /// `--jobs` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub jobs: JobsArg,
    /// `--profile` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub profile: ProfileArg,
}

/// Runs a capacity-planning command.
pub fn dispatch(c: CapacityCommand) -> Result<(), CliError> {
    match c {
        CapacityCommand::Sweep(a) => run_sweep(a),
        CapacityCommand::Merge(a) => run_merge(&a),
        CapacityCommand::Plot(a) => {
            print_files(&charts::draw_sweep(&a.dir, a.chart.as_deref())?);
            Ok(())
        }
        CapacityCommand::Plan(a) => run_plan(a),
        CapacityCommand::Report(a) => run_report(&a),
    }
}

/// The request of `plan`: the spec file's keys, overridden by the flags given.
fn plan_request(a: &PlanArgs) -> Result<PlanRequest, CliError> {
    let spec = match &a.spec {
        Some(p) => PlanSpec::load(p).map_err(CliError::input)?,
        None => PlanSpec::default(),
    };
    let or_list = |flag: &Vec<String>, file: &Vec<String>| if flag.is_empty() { file.clone() } else { flag.clone() };
    let goal_name = a.goal.clone().or(spec.goal.clone()).unwrap_or_else(|| "speed".into());
    let goal =
        Goal::parse(&goal_name).ok_or_else(|| CliError::input(format!("unknown goal `{goal_name}`; goals: {}", Goal::NAMES.join(", "))))?;
    let objective = Objective::new(
        a.target_tokens_per_s.or(spec.target_tokens_per_s),
        a.budget_usd.or(spec.budget_usd),
        a.max_power_w.or(spec.max_power_w),
        goal,
    )
    .map_err(CliError::input)?;
    let model = a.model.clone().or(spec.model.clone()).ok_or_else(|| CliError::input("give --model M (or `model` in --spec)"))?;
    // A name as people write it (`meta-llama/Llama-3.3-70B-Instruct`, `llama3.3:70b`) resolves
    // to its preset as in a scenario (`Catalog::find_model`); an unknown one is left for the
    // planner's own error, which lists the known models.
    let model = match crate::catalog::catalog().find_model(&model) {
        Ok((preset, _)) => preset.id.clone(),
        Err(crate::catalog::names::ModelNameError::Unknown(_)) => model,
        Err(e) => return Err(CliError::input(e.to_string())),
    };
    let mut req = PlanRequest::new(model, objective);
    req.question = spec.question.clone();
    req.quant = a.quant.clone().or(spec.quant.clone());
    req.context = a.context.or(spec.context).unwrap_or(256);
    req.nodes = or_list(&a.nodes, &spec.nodes);
    req.max_nodes = a.max_nodes.or(spec.max_nodes).unwrap_or(8);
    req.fabrics = or_list(&a.fabrics, &spec.fabrics);
    req.engines = or_list(&a.engines, &spec.engines);
    req.mixed_fleets = a.mixed_fleets || spec.mixed_fleets;
    req.vary_options = a.vary_options || spec.vary_options;
    req.prune = !a.no_prune;
    req.jobs = a.jobs.get();
    Ok(req)
}

/// Searches clusters; no cluster meeting the objective is exit 2 (the report says which came closest).
fn run_plan(a: PlanArgs) -> Result<(), CliError> {
    if let Some(spec) = &a.slo {
        return run_slo(spec, &a);
    }
    let profile = a.profile.load()?;
    let req = plan_request(&a)?;
    let pb = super::progress_bar(0, "candidates");
    let p = planner::plan_with_progress(&req, &profile, &|done, total| {
        pb.set_length(total);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let p = p.map_err(CliError::input)?;
    if let Some(path) = &a.out {
        let text = serde_json::to_string(&p.to_report_json()).expect("plan serializes");
        crate::util::write_atomic(path, text.as_bytes()).map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
        super::note!("plan written to {} (render it with `supernode report {}`)", path.display(), path.display());
    }
    if a.json.json {
        say!("{}", serde_json::to_string_pretty(&p.to_json(a.top)).expect("plan serializes"));
    } else {
        let _ = std::io::stdout().lock().write_all(p.report(a.top, a.all).as_bytes());
    }
    if p.winner.is_some() { Ok(()) } else { Err(CliError::silent(ExitKind::Input)) }
}

/// `plan --slo`: searches every option, prints the table (or JSON), writes the chart and
/// slo.json; an option with no load meeting the SLO is still an answer (exit 0), a spec or
/// scenario that cannot be read is exit 2.
fn run_slo(path: &Path, a: &PlanArgs) -> Result<(), CliError> {
    let profile = a.profile.load()?;
    let spec = SloSpec::load(path).map_err(CliError::input)?;
    let stem = path.file_stem().map_or("plan".into(), |s| s.to_string_lossy().into_owned());
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("output").join(format!("slo-{}", slug(&stem))));
    let pb = super::progress_bar((spec.options.len() * slo::MAX_PROBES_PER_OPTION) as u64, "probes (at most)");
    let plan = slo::plan_slo(&spec, &profile, a.jobs.get(), &|| pb.inc(1));
    pb.finish_and_clear();
    let plan = plan.map_err(|e| CliError::input(e.to_string()))?;
    let json = serde_json::to_string_pretty(&plan).expect("an SLO plan serializes");
    std::fs::create_dir_all(&out).map_err(|e| CliError::failure(format!("cannot create {}: {e}", out.display())))?;
    let json_path = out.join("slo.json");
    crate::util::write_atomic(&json_path, format!("{json}\n").as_bytes())
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", json_path.display())))?;
    let files = charts::slo_chart(&plan, &out).map_err(|e| CliError::failure(e.to_string()))?;
    if a.json.json {
        say!("{json}");
    } else {
        let _ = std::io::stdout().lock().write_all(plan.report().as_bytes());
        say!("  {}", json_path.display());
        print_files(&files);
    }
    Ok(())
}

/// Writes the report page; bad input is exit 2, a failed write exit 1.
fn run_report(a: &ReportArgs) -> Result<(), CliError> {
    let out = a.out.clone().unwrap_or_else(|| html::default_out(&a.path));
    let bytes = html::write(&a.path, &out).map_err(|e| match e {
        html::ReportError::Input(m) => CliError::input(m),
        html::ReportError::Io(m) => CliError::failure(m),
    })?;
    say!("report: {} ({} KB, self-contained; open it in a browser)", out.display(), bytes.div_ceil(1024));
    Ok(())
}

fn print_files(files: &[PathBuf]) {
    for f in files {
        say!("  {}", f.display());
    }
}

fn run_sweep(a: SweepArgs) -> Result<(), CliError> {
    let profile = a.profile.load()?;
    let shard = sweep::resolve_shard(a.shard.as_deref(), a.shard_count, |k| std::env::var(k).ok()).map_err(CliError::input)?;
    let sw = Sweep::load_with_overrides(&a.file, &a.set, &profile)?;
    let out = a.out.out.clone().unwrap_or_else(|| {
        let base = PathBuf::from("output").join(format!("sweep-{}", slug(&sw.name)));
        if shard.count > 1 { base.join(format!("shard-{}-of-{}", shard.index, shard.count)) } else { base }
    });
    let opts = RunOptions {
        out: out.clone(),
        jobs: a.jobs.get(),
        shard,
        resume: a.resume,
        progress: std::io::stderr().is_terminal() && !super::quiet(),
    };
    let summary = sweep::run(&sw, &profile, &opts)?;
    if let Some(n) = &summary.note {
        super::note!("note: {n}");
    }
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
        return Ok(());
    }
    draw_unless(&out, a.out.no_charts)
}

/// Draws the charts of a finished result set unless `--no-charts`.
fn draw_unless(out: &Path, no_charts: bool) -> Result<(), CliError> {
    if !no_charts {
        print_files(&charts::draw_sweep(out, None)?);
    }
    Ok(())
}

fn run_merge(a: &MergeArgs) -> Result<(), CliError> {
    let out = match &a.out.out {
        Some(o) => o.clone(),
        None => PathBuf::from("output").join(format!("sweep-{}", slug(&Manifest::read(&a.dirs[0])?.name))),
    };
    let summary = sweep::merge(&a.dirs, &out)?;
    say!(
        "merged {} shards: {} points, {} run, {} rows with reasons",
        summary.manifest.merged_from,
        summary.points,
        summary.fits,
        summary.points - summary.fits
    );
    say!("  {}", out.join(sweep::RESULTS_JSONL).display());
    say!("  {}", out.join(sweep::RESULTS_CSV).display());
    draw_unless(&out, a.out.no_charts)
}
