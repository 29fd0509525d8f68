//! `gantt`: one decode step (or a window of a serving run) per node and resource, as PNG and SVG.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::args::{JsonArg, ProfileArg, Window, parse_window};
use super::run::{estimate_error, output_stem, read_source};
use super::{CliError, ExitKind};
use crate::estimate::{Gantt, GanttError, GanttSpan, TaskKind, gantt};
use crate::scenario;

/// Arguments of `gantt`.
#[derive(Debug, Args)]
pub struct GanttArgs {
    /// Scenario file (TOML), or `-` for standard input.
    pub file: PathBuf,
    /// Generate: decode step K (default 0, the first after prefill). Serve: the K-th pure
    /// decode forward after warm-up (default 0).
    #[arg(long, value_name = "K", conflicts_with = "window")]
    pub step: Option<u64>,
    /// Serve: every forward that starts in this window, seconds T0..T1 (e.g. 30..30.5).
    #[arg(long, value_name = "T0..T1", value_parser = parse_window)]
    pub window: Option<Window>,
    /// Directory for the chart files (`<scenario>-gantt.png` and `.svg`).
    #[arg(long, value_name = "DIR", default_value = "output")]
    pub out: PathBuf,
    /// `--json` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub json: JsonArg,
    /// Override any key, as for `run` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// `--profile` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub profile: ProfileArg,
}

/// Runs the scenario's estimate with the trace recorder, keeps the step (or window) asked for,
/// draws it, and prints each resource's busy and idle time (`--json`: one object).
pub fn gantt_command(args: GanttArgs) -> Result<(), CliError> {
    let profile = args.profile.load()?;
    let source = read_source(&args.file).map_err(CliError::scenario)?;
    let sc = scenario::overrides::parse_with_overrides(source, &args.set).map_err(CliError::scenario)?;
    let span = match (args.step, args.window) {
        (Some(k), _) => Some(GanttSpan::Step(k)),
        (None, Some(w)) => {
            let (a, b) = w.ns();
            Some(GanttSpan::Window(a, b))
        }
        (None, None) => None,
    };
    let g = gantt(&sc, &profile, span).map_err(|e| match e {
        GanttError::Estimate(e) => estimate_error(&sc, e),
        GanttError::Input(m) => CliError::input(m),
    })?;
    let stem = args.out.join(format!("{}-gantt", output_stem(&sc.name, &args.set)));
    let files = crate::report::charts::gantt_chart(&stem, &g).map_err(|e| CliError::failure(e.to_string()))?;
    let text = if args.json.json { format!("{}\n", to_json(&g, &files)) } else { to_text(&g, &files) };
    std::io::stdout().lock().write_all(text.as_bytes()).map_err(|_| CliError::silent(ExitKind::Failure))
}

/// ns as ms, rounded to the ns.
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The per-resource busy and idle totals as JSON.
fn to_json(g: &Gantt, files: &[PathBuf]) -> serde_json::Value {
    let by_kind = g.busy_by_kind();
    let resources: Vec<serde_json::Value> = g
        .rows
        .iter()
        .zip(g.busy_idle())
        .zip(&by_kind)
        .map(|((r, (busy, idle)), kinds)| {
            let mut k = serde_json::Map::new();
            for (i, kind) in TaskKind::ALL.iter().enumerate() {
                if kinds[i] > 0 {
                    k.insert(kind.name().into(), serde_json::json!(ms(kinds[i])));
                }
            }
            serde_json::json!({
                "node": r.node,
                "resource": r.resource,
                "busy_ms": ms(busy),
                "idle_ms": ms(idle),
                "busy_percent": crate::util::round3(busy as f64 / g.span().max(1) as f64 * 100.0),
                "busy_ms_by_kind": k,
            })
        })
        .collect();
    serde_json::json!({
        "scenario": g.scenario,
        "span": g.what,
        "start_s": g.start as f64 / 1e9,
        "span_ms": ms(g.span()),
        "tasks": g.tasks.len(),
        "resources": resources,
        "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
    })
}

/// The per-resource busy and idle totals as a table.
fn to_text(g: &Gantt, files: &[PathBuf]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}: {}, {:.3} ms from {:.6} s, {} tasks", g.scenario, g.what, ms(g.span()), g.start as f64 / 1e9, g.tasks.len());
    let _ = writeln!(s, "  {:<12} {:>10} {:>10} {:>7}", "resource", "busy ms", "idle ms", "busy %");
    for (r, (busy, idle)) in g.rows.iter().zip(g.busy_idle()) {
        let pct = busy as f64 / g.span().max(1) as f64 * 100.0;
        let _ = writeln!(s, "  {:<12} {:>10.3} {:>10.3} {:>7.1}", r.resource, ms(busy), ms(idle), pct);
    }
    for f in files {
        let _ = writeln!(s, "wrote {}", f.display());
    }
    s
}
