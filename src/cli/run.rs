//! `run`: one scenario file, its predictions as a table or JSON, an optional Perfetto trace.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use clap::Args;

use super::args::{JsonArg, ProfileArg};
use super::{CliError, ExitKind};
use crate::engine::PlanError;
use crate::estimate::{EstimateError, estimate};
use crate::profile::Profile;
use crate::report;
use crate::scenario::{self, Scenario, ScenarioError, Source, WorkloadKind};

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML), or `-` to read it from standard input (relative paths in it, such
    /// as `model.hf_config`, then resolve against the current directory).
    pub file: PathBuf,
    /// `--json` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub json: JsonArg,
    /// Override any key, e.g. --set workload.prompt_tokens=32768 (repeatable). The value is
    /// typed by the key: --set engine.macos=26.3 is the string "26.3". Result files are named
    /// after the scenario with the overrides.
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
    /// Skip the 90% prediction intervals (one re-estimate per calibrated parameter that can move
    /// the scenario): the headlines alone, without `<key>_interval` keys, for scripts.
    #[arg(long)]
    pub no_intervals: bool,
    /// Also write a Perfetto / chrome://tracing trace of the run (every prefill chunk and the first decode steps) to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Decode steps the trace records (1 to 1024; the trace also holds every prefill chunk, and
    /// at most 1,000,000 tasks in all).
    #[arg(long, default_value_t = 4, requires = "trace", value_parser = clap::value_parser!(u64).range(1..=crate::estimate::MAX_TRACE_STEPS))]
    pub trace_steps: u64,
    /// Serving runs: the window whose forwards the trace records, seconds T0..T1 (default: 1 s
    /// from the end of warm-up); every request whose lifecycle overlaps it gets a track.
    #[arg(long, value_name = "T0..T1", requires = "trace", value_parser = super::args::parse_window)]
    pub trace_window: Option<super::args::Window>,
    /// Most tasks the trace holds (tests set a small cap; the default is the documented one).
    #[arg(long, hide = true, default_value_t = crate::estimate::MAX_TRACE_EVENTS, requires = "trace")]
    pub trace_max_tasks: u64,
}

/// Runs the scenario. With `--json`, a scenario that cannot be loaded or run is also reported on
/// stdout as `{"fits": false, "error": ...}` (`main_with_args` prints it).
pub fn run(args: RunArgs) -> Result<(), CliError> {
    let profile = args.profile.load()?;
    let source = read_source(&args.file).map_err(CliError::scenario)?;
    let sc = scenario::overrides::parse_with_overrides(source, &args.set).map_err(CliError::scenario)?;
    tracing::debug!("run: `{}` with profile `{}`", sc.name, profile.meta.name);
    if let Some(w) = sc.size_warning() {
        eprintln!("{w}");
    }
    let t0 = std::time::Instant::now();
    // A serving run keeps its step timings when intervals will replay it (the same estimate).
    let (est, serve_base) = match (args.no_intervals, sc.workload.serve.is_some()) {
        (false, true) => match crate::estimate::estimate_serve_base(&sc, &profile).map_err(|e| estimate_error(&sc, e))? {
            Some((est, base)) => (est, Some(base)),
            None => (estimate(&sc, &profile).map_err(|e| estimate_error(&sc, e))?, None),
        },
        _ => (estimate(&sc, &profile).map_err(|e| estimate_error(&sc, e))?, None),
    };
    tracing::debug!("run: estimated in {:.3} s", t0.elapsed().as_secs_f64());
    if let Some(path) = &args.trace {
        if sc.workload.kind == WorkloadKind::Serve {
            write_serve_trace(&sc, &profile, path, args.trace_window, args.trace_max_tasks)?;
        } else {
            write_trace(&sc, &profile, path, args.trace_steps, args.trace_max_tasks)?;
        }
    }
    let intervals = match (&serve_base, args.no_intervals) {
        (_, true) => Default::default(),
        (Some(base), false) => crate::calibrate::interval::intervals_replaying(&sc, &profile, &est, base),
        (None, false) => crate::calibrate::interval::intervals(&sc, &profile, &est),
    };
    let body = report::to_json_with(&est, &intervals);
    if !args.no_write {
        let path = args.out.join(format!("{}.json", output_stem(&est.name, &args.set)));
        crate::util::write_atomic(&path, format!("{body}\n").as_bytes())
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
    }
    let warnings = est.serve.as_ref().map(|sv| sv.warnings()).unwrap_or_default();
    let text = if args.json.json {
        for w in &warnings {
            eprintln!("{w}");
        }
        format!("{body}\n")
    } else {
        let mut table = report::run_table_with(&est, &intervals);
        for w in &warnings {
            table.push_str(&format!("  {w}\n"));
        }
        table
    };
    // A closed pipe (`| head`) ends the command quietly.
    std::io::stdout().lock().write_all(text.as_bytes()).map_err(|_| CliError::silent(ExitKind::Failure))
}

/// The scenario text: the file, or standard input for `-` (relative paths then resolve against
/// the current directory).
// Scenario errors carry the source text for rendering; they are the cold path.
#[allow(clippy::result_large_err)]
pub(super) fn read_source(file: &Path) -> Result<Source, ScenarioError> {
    if file.as_os_str() == "-" {
        let mut text = String::new();
        // Bounded like a file: at most MAX_INPUT_BYTES (+1 to tell "too large" apart).
        let mut stdin = std::io::stdin().take(crate::util::MAX_INPUT_BYTES + 1);
        return match stdin.read_to_string(&mut text).and_then(|n| {
            if n as u64 > crate::util::MAX_INPUT_BYTES {
                Err(std::io::Error::other(format!("more than {} bytes", crate::util::MAX_INPUT_BYTES)))
            } else {
                Ok(n)
            }
        }) {
            Ok(_) => Ok(Source { path: "<stdin>".into(), dir: PathBuf::new(), text }),
            Err(e) => Err(Source { path: "<stdin>".into(), dir: PathBuf::new(), text: String::new() }.error(
                0..0,
                format!("cannot read the scenario from standard input: {e}"),
                Some("pipe a TOML scenario, e.g. `supernode run - < scenario.toml`".into()),
            )),
        };
    }
    let shown = file.display().to_string();
    let text = crate::util::read_bounded(file, crate::util::MAX_INPUT_BYTES).map_err(|e| {
        Source { path: shown.clone(), dir: PathBuf::new(), text: String::new() }.error(
            0..0,
            format!("cannot read scenario file: {e}"),
            Some("check the path".into()),
        )
    })?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(Source { path: shown, dir, text })
}

/// Longest result-file stem before it is cut and given a hash (file systems allow 255 bytes).
const MAX_STEM: usize = 120;

/// The result file's stem: the scenario's name and the `--set` overrides (but `name`, which is
/// in the name already), as a slug; never empty, never hidden, never too long (cut, plus a hash
/// of the whole so that two long names stay apart).
pub fn output_stem(name: &str, sets: &[String]) -> String {
    let mut full = name.to_string();
    for s in sets.iter().filter(|s| s.split_once('=').is_none_or(|(k, _)| k.trim() != "name")) {
        full.push(' ');
        full.push_str(s);
    }
    let slug = crate::util::slug(&full);
    let slug = slug.trim_matches(['.', '-']);
    let hash = format!("{:08x}", fnv1a(full.as_bytes()) as u32);
    if slug.is_empty() {
        return format!("scenario-{hash}");
    }
    if slug.len() > MAX_STEM {
        // A slug is ASCII: any byte index is a char boundary.
        return format!("{}-{hash}", slug[..MAX_STEM - 9].trim_end_matches(['.', '-']));
    }
    slug.to_string()
}

/// FNV-1a, 64 bits: a stable hash (the same in every build) for file names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A scenario that cannot run, located at the part of the file to change.
pub(super) fn estimate_error(sc: &Scenario, err: EstimateError) -> CliError {
    let EstimateError::Plan(pe) = &err;
    let span = match pe {
        PlanError::DoesNotFit { .. } => &sc.spans.model,
        PlanError::Uncalibrated { .. } | PlanError::TooManyStages { .. } => &sc.spans.cluster_nodes,
    };
    CliError::scenario(sc.error_at(span, err.to_string(), Some(pe.fix())).with_kind(err.kind()))
}

/// Writes the Perfetto trace of a generate workload's run, streamed to a temporary file beside
/// `path` and moved into place when complete (memory flat in the trace's length). At most
/// `max_tasks` tasks ([`crate::estimate::MAX_TRACE_EVENTS`] by default) are written; the note says when the cap cut it.
fn write_trace(sc: &Scenario, profile: &Profile, path: &Path, steps: u64, max_tasks: u64) -> Result<(), CliError> {
    match sc.workload.kind {
        WorkloadKind::Generate => {}
        WorkloadKind::BatchedBench => {
            return Err(CliError::input(
                "--trace records generate workloads (prefill and decode steps) and serving runs, not batched-bench (use kind = \"generate\", or \"serve\" with `concurrency`)",
            ));
        }
        _ => return Err(CliError::input("--trace records generate workloads (prefill and decode steps) and serving runs, not HPL")),
    }
    let cannot = |e: String| CliError::failure(format!("cannot write the trace {}: {e}", path.display()));
    let plan = crate::estimate::trace_plan(sc, profile).map_err(|e| cannot(e.to_string()))?;
    let file = crate::util::AtomicFile::create(path).map_err(|e| cannot(e.to_string()))?;
    let mut out = report::TraceWriter::begin(file, &plan);
    let steps = steps.min(sc.workload.generate_tokens);
    let tally = {
        let mut sink = |e: &crate::estimate::TraceEvent<'_>| out.event(e);
        let mut tr = crate::estimate::Trace::new(steps, max_tasks, &mut sink);
        crate::estimate::trace_run(sc, &plan, &mut tr);
        report::TraceTally {
            decode_steps: steps,
            written: tr.recorded,
            not_written: tr.dropped,
            steps_simulated: tr.steps,
            steps_not_simulated: tr.skipped,
        }
    };
    let file = out.finish(&plan, &tally).map_err(|e| cannot(e.to_string()))?;
    file.commit().map_err(|e| cannot(e.to_string()))?;
    super::note!("trace: {} tasks written to {} (open in ui.perfetto.dev)", tally.written, path.display());
    if tally.not_written + tally.steps_not_simulated > 0 {
        super::note!(
            "trace: capped at {max_tasks} tasks: the trace stops after {} of {} prefill chunks and decode steps (trace fewer decode steps with --trace-steps, or a shorter prompt)",
            tally.steps_simulated,
            tally.steps_simulated + tally.steps_not_simulated
        );
    }
    Ok(())
}

/// Writes the Perfetto trace of a serving run: the resource tasks of every forward that starts
/// in the window (at most `max_tasks`) and one track per request whose lifecycle overlaps it,
/// streamed like [`write_trace`].
fn write_serve_trace(
    sc: &Scenario,
    profile: &Profile,
    path: &Path,
    window: Option<super::args::Window>,
    max_tasks: u64,
) -> Result<(), CliError> {
    let sv = sc.workload.serve.as_ref().expect("a serving workload has its section");
    let window = window.unwrap_or(super::args::Window { from_s: sv.warmup_s, to_s: sv.warmup_s + 1.0 });
    let (from, to) = window.ns();
    let cannot = |e: String| CliError::failure(format!("cannot write the trace {}: {e}", path.display()));
    let plan = crate::estimate::trace_plan(sc, profile).map_err(|e| cannot(e.to_string()))?;
    let file = crate::util::AtomicFile::create(path).map_err(|e| cannot(e.to_string()))?;
    let mut out = report::TraceWriter::begin(file, &plan);
    let (written, dropped, forwards, run) = {
        let mut sink = |e: &crate::estimate::TraceEvent<'_>| out.event(e);
        let mut tr = crate::estimate::Trace::new(0, max_tasks, &mut sink);
        let run = crate::estimate::trace_serve(sc, &plan, (from, to), &mut tr);
        (tr.recorded, tr.dropped, tr.steps, run)
    };
    let requests = run.log.unwrap_or_default();
    out.requests(plan.n() as u32, &requests, (from, to.min(run.end_ns.max(from))), forwards);
    let tally = report::TraceTally { decode_steps: 0, written, not_written: dropped, steps_simulated: forwards, steps_not_simulated: 0 };
    let file = out.finish(&plan, &tally).map_err(|e| cannot(e.to_string()))?;
    file.commit().map_err(|e| cannot(e.to_string()))?;
    super::note!(
        "trace: {written} tasks of {forwards} forwards in {}..{} s and {} request tracks written to {} (open in ui.perfetto.dev)",
        window.from_s,
        window.to_s,
        requests.len(),
        path.display()
    );
    if dropped > 0 {
        super::note!("trace: capped at {max_tasks} tasks; {dropped} more were not written (trace a shorter --trace-window)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14 item 5: result file names are safe for any scenario name.
    #[test]
    fn output_stems_are_safe_for_any_name() {
        assert_eq!(output_stem("Geerling 4x", &[]), "geerling-4x");
        assert!(output_stem("", &[]).starts_with("scenario-"));
        assert!(output_stem("🦀🦀", &[]).starts_with("scenario-"));
        assert!(output_stem("..", &[]).starts_with("scenario-"));
        let long = "x".repeat(300);
        let s = output_stem(&long, &[]);
        assert!(s.len() <= MAX_STEM && s.starts_with("xxxx"), "{s}");
        assert_ne!(s, output_stem(&"x".repeat(301), &[]), "two long names stay apart");
        assert_eq!(output_stem("a", &["model.name=llama-3.2-3b".into()]), "a-model.name-llama-3.2-3b");
        assert_eq!(output_stem("b", &["name=b".into()]), "b");
    }
}
