//! `validate`: predict every measured case and report the error of each.

use std::path::PathBuf;

use clap::Args;

use super::args::{JsonArg, ProfileArg};
use super::{CliError, ExitKind, calibration};
use crate::calibrate::validate::{self as v, SkippedRow, ValidatedRow};
use crate::calibrate::{Dataset, HarnessUse, TargetSource};
use crate::profile::Profile;

/// Arguments of `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Measurement CSV (the format of shared/data/measurements.csv) or harness JSON.
    #[arg(long, value_name = "FILE")]
    pub against: PathBuf,
    /// `--profile` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub profile: ProfileArg,
    /// `--json` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub json: JsonArg,
    /// Only rows whose id starts with this prefix (repeatable).
    #[arg(long = "rows", value_name = "PREFIX")]
    pub rows: Vec<String>,
    /// Exit with code 3 when the mean absolute percentage error exceeds this.
    #[arg(long)]
    pub max_mape: Option<f64>,
    /// Also run leave-one-out cross-validation (refit without each row, predict it).
    #[arg(long)]
    pub loo: bool,
    /// Prior weight of the leave-one-out refits (as `calibrate --prior-weight`).
    #[arg(long, default_value_t = crate::calibrate::PRIOR_WEIGHT, value_parser = crate::calibrate::parse_prior_weight)]
    pub prior_weight: f64,
    /// Draw a predicted-vs-measured parity chart (PNG and SVG) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

/// The report being assembled: the text table and the JSON object, section by section.
struct Output {
    text: String,
    json: serde_json::Value,
}

/// Predicts the selected rows, prints the report; exit 3 when the MAPE is above `--max-mape`.
pub fn validate(args: ValidateArgs) -> Result<(), CliError> {
    let profile = crate::calibrate::with_host_chip(&args.profile.load()?);
    let data = calibration::load_dataset(std::slice::from_ref(&args.against), &profile, HarnessUse::Validate).map_err(CliError::input)?;
    if args.loo && args.against.extension().is_some_and(|e| e == "json") {
        return Err(CliError::input("--loo refits the profile without each row; it needs a measurement CSV"));
    }
    let keep = |id: &str| args.rows.is_empty() || args.rows.iter().any(|p| id.starts_with(p.as_str()));
    let selected: Vec<usize> = (0..data.targets.len()).filter(|&i| keep(&data.targets[i].id)).collect();
    if selected.is_empty() {
        return Err(CliError::input(format!("no predictable rows selected in {}", args.against.display())));
    }
    let predictions = data.predict(&profile).map_err(|e| CliError::failure(e.to_string()))?;
    let skipped: Vec<SkippedRow> =
        data.skipped.iter().filter(|(id, _)| keep(id)).map(|(id, reason)| SkippedRow { id: id.clone(), reason: reason.clone() }).collect();
    let report = v::report(selected.iter().map(|&i| validated_row(&data, i, predictions[i])).collect(), skipped);
    let mut out = Output { text: v::table(&report), json: serde_json::to_value(&report).expect("report serializes") };
    harness_notes(&data, &mut out);
    let loo = args.loo.then(|| loo_section(&data, &profile, &selected, args.prior_weight, &mut out));
    if let Some(dir) = &args.plot {
        plot_section(&report, false, dir, &args, &mut out)?;
        // With --loo, a second chart of the held-out predictions (each row fitted without it).
        if let Some(l) = &loo {
            plot_section(l, true, dir, &args, &mut out)?;
        }
    }
    if args.json.json {
        println!("{}", serde_json::to_string_pretty(&out.json).expect("serializes"));
    } else {
        print!("{}", out.text);
    }
    match args.max_mape {
        Some(m) if report.mape_percent > m => {
            Err(CliError::note(ExitKind::OverBound, format!("MAPE {:.2}% exceeds --max-mape {m}", report.mape_percent)))
        }
        _ => Ok(()),
    }
}

/// The validated row of target `i` predicted at `predicted`.
fn validated_row(data: &Dataset, i: usize, predicted: f64) -> ValidatedRow {
    match &data.sources[i] {
        TargetSource::Row(p) => v::validated(p, predicted),
        TargetSource::Harness(h, k) => ValidatedRow {
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
}

/// For a harness file: every repeat of the end-to-end runs and the machine's pace drift.
fn harness_notes(data: &Dataset, out: &mut Output) {
    let harness = data.sources.iter().find_map(|s| match s {
        TargetSource::Harness(h, _) => Some(h),
        TargetSource::Row(_) => None,
    });
    for b in harness.map(|h| h.benchmarks.as_slice()).unwrap_or_default() {
        let per_round = b.round_tokens_per_s();
        if b.usage() == crate::calibrate::HarnessUse::Validate && per_round.len() > 1 {
            let list: Vec<String> = per_round.iter().map(|v| format!("{v:.2}")).collect();
            out.text.push_str(&format!("\n{}, each repeat: {} tok/s (the best is the measured value)", b.kind, list.join(", ")));
            out.json["rounds_tokens_per_s"][b.kind.id()] = serde_json::json!(per_round);
            if let Some(mean) = b.mean_tokens_per_s_all_rounds() {
                out.text.push_str(&format!("; over every step of every repeat: {mean:.2} tok/s"));
                out.json["mean_tokens_per_s_all_rounds"][b.kind.id()] = serde_json::json!(mean);
            }
        }
    }
    if !out.text.ends_with('\n') {
        out.text.push('\n');
    }
    if let Some(drift) = harness.and_then(|h| crate::calibrate::pace_drift_percent(h)) {
        let repeated = harness.is_some_and(|h| h.benchmarks.iter().any(|b| !b.rounds.is_empty()));
        out.text.push_str(&format!(
            "pace probe: on average the machine ran {:.0}% {} during the e2e decode than around the microbenchmarks{}\n",
            drift.abs(),
            if drift >= 0.0 { "slower" } else { "faster" },
            if repeated {
                " (every case and the e2e run report their best repeat, which compares them at the machine's undisturbed speed)"
            } else {
                " (a profile fitted to them carries that error)"
            }
        ));
        out.json["pace_drift_percent"] = serde_json::json!(crate::util::round3(drift));
    }
}

/// `--loo`: each row predicted by a profile refitted without it.
fn loo_section(data: &Dataset, profile: &Profile, selected: &[usize], prior_weight: f64, out: &mut Output) -> v::Report {
    super::note!("validate --loo: refitting without each of {} rows...", selected.len());
    let (loo_rows, loo_skipped) = leave_one_out(data, profile, selected, prior_weight);
    let loo_report = v::report(loo_rows, loo_skipped);
    out.text.push_str("\nleave-one-out (each row predicted by a profile fitted without it):\n");
    // The assumptions were listed under the first table.
    let mut bare = loo_report.clone();
    bare.rows.iter_mut().for_each(|r| r.assumptions.clear());
    out.text.push_str(&v::table(&bare));
    out.json["loo"] = serde_json::to_value(&loo_report).expect("serializes");
    loo_report
}

/// `--plot DIR`: the predicted-vs-measured parity chart.
fn plot_section(report: &v::Report, held_out: bool, dir: &std::path::Path, args: &ValidateArgs, out: &mut Output) -> Result<(), CliError> {
    use crate::report::charts::{ParityPoint, unit_of};
    let points: Vec<ParityPoint> = report
        .rows
        .iter()
        .map(|r| ParityPoint { label: r.id.clone(), unit: unit_of(&r.metric), measured: r.measured, predicted: r.predicted })
        .collect();
    let stem = dir.join(if held_out { "parity-loo" } else { "parity" });
    let title = match held_out {
        true => format!("supernode: leave-one-out (held-out) predictions vs measured ({})", args.against.display()),
        false => format!("supernode: predicted (in-sample fit) vs measured ({})", args.against.display()),
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| e.to_string())
        .and_then(|_| crate::report::charts::parity_chart(&stem, &title, &points).map_err(|e| e.to_string()))
        .map_err(|e| CliError::failure(format!("cannot draw the parity chart: {e}")))?;
    out.text.push_str(&format!("\nparity chart: {}.png, {}.svg\n", stem.display(), stem.display()));
    Ok(())
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
fn leave_one_out(data: &Dataset, profile: &Profile, selected: &[usize], prior_weight: f64) -> (Vec<ValidatedRow>, Vec<SkippedRow>) {
    use rayon::prelude::*;
    // Progress on stderr (indicatif hides it when stderr is not a terminal): a refit per row.
    let pb = super::progress_bar(selected.len() as u64, "refits");
    let results: Vec<Result<ValidatedRow, SkippedRow>> = selected
        .par_iter()
        .map(|&i| {
            let _tick = Tick(&pb);
            let skip = |reason: String| SkippedRow { id: data.targets[i].id.clone(), reason };
            let rest = data.without(i);
            let (fitted, _, _) = crate::calibrate::calibrate(&rest, profile, None, prior_weight)
                .map_err(|e| skip(format!("refit without it failed: {e}")))?;
            let one = Dataset { targets: vec![data.targets[i].clone()], sources: vec![data.sources[i].clone()], ..Default::default() };
            let p = one.predict(&fitted).map_err(|e| skip(e.to_string()))?;
            Ok(validated_row(data, i, p[0]))
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
