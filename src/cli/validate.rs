//! `validate`: predict every measured case and report the error of each.

use std::path::PathBuf;

use clap::Args;

use super::args::{JsonArg, ProfileArg};
use super::{CliError, ExitKind, calibration};
use crate::calibrate::cv::{self, FoldMethod, Grouping};
use crate::calibrate::validate::{self as v, SkippedRow};
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
    /// Also cross-validate: leave each group of rows out in turn (a row, or every row of a
    /// model, engine or system), refit without it and predict it, with 90% intervals.
    #[arg(long, value_enum, value_name = "GROUPING")]
    pub cv: Option<Grouping>,
    /// Leave-one-out cross-validation: the same as `--cv row`.
    #[arg(long, conflicts_with = "cv")]
    pub loo: bool,
    /// Gauss-Newton steps each cross-validation fold takes from the full fit (with the
    /// Jacobian taken once at the full fit).
    #[arg(long, default_value_t = crate::calibrate::cv::FOLD_STEPS as u64, value_parser = clap::value_parser!(u64).range(1..=50))]
    pub cv_steps: u64,
    /// Refit every cross-validation fold with the full Levenberg-Marquardt fit instead (minutes
    /// per fold: for checking the fast folds, whose difference it reports).
    #[arg(long)]
    pub cv_exact: bool,
    /// As `--cv-exact`, each refit started from the prior's centre instead of the full fit (a
    /// fold that never sees the fit of the rows it predicts; slowest).
    #[arg(long, conflicts_with = "cv_exact")]
    pub cv_cold: bool,
    /// Prior weight of the cross-validation refits (as `calibrate --prior-weight`).
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
    let grouping = if args.loo { Some(Grouping::Row) } else { args.cv };
    if grouping.is_some() && args.against.extension().is_some_and(|e| e == "json") {
        return Err(CliError::input("--cv / --loo refit the profile without each group of rows; they need a measurement CSV"));
    }
    let keep = |id: &str| args.rows.is_empty() || args.rows.iter().any(|p| id.starts_with(p.as_str()));
    let selected: Vec<usize> = (0..data.targets.len()).filter(|&i| keep(&data.targets[i].id)).collect();
    if selected.is_empty() {
        return Err(CliError::input(format!("no predictable rows selected in {}", args.against.display())));
    }
    let predictions = data.predict(&profile).map_err(|e| CliError::failure(e.to_string()))?;
    let skipped: Vec<SkippedRow> =
        data.skipped.iter().filter(|(id, _)| keep(id)).map(|(id, reason)| SkippedRow { id: id.clone(), reason: reason.clone() }).collect();
    let mut rows: Vec<v::ValidatedRow> = selected.iter().map(|&i| data.validated(i, predictions[i])).collect();
    let coverage = row_intervals(&data, &profile, &selected, &predictions, &mut rows);
    let report = v::report(rows, skipped);
    let mut out = Output { text: v::table(&report), json: serde_json::to_value(&report).expect("report serializes") };
    if let Some(c) = coverage {
        out.text.push_str(&c.text);
        out.json["interval_coverage"] = c.json;
    }
    harness_notes(&data, &mut out);
    fit_budget(&profile, &mut out);
    let cv = match grouping {
        Some(g) => Some(cv_section(&data, &profile, g, &selected, &args, &mut out)?),
        None => None,
    };
    if let Some(dir) = &args.plot {
        plot_section(&report, None, dir, &args, &mut out)?;
        // With --cv, a second chart of the held-out predictions (each group fitted without it).
        if let Some(c) = &cv {
            plot_section(&c.report, Some(&c.grouping), dir, &args, &mut out)?;
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

/// The coverage lines of [`row_intervals`].
struct CoverageNote {
    text: String,
    json: serde_json::Value,
}

/// Fills each published row's 90% interval under the profile (the interval `run` prints for the
/// row's scenario: parameter covariance plus the scatter of its metric) and says how many
/// measured values fall inside, split into rows the profile was fitted on (in-sample: the
/// intervals were drawn around them) and rows it never saw (the coverage a user can expect),
/// and by the calibrated envelope (inside / extrapolation). `None` when the profile carries no
/// uncertainty (a hand-set profile).
fn row_intervals(
    data: &Dataset,
    profile: &Profile,
    selected: &[usize],
    predictions: &[f64],
    rows: &mut [v::ValidatedRow],
) -> Option<CoverageNote> {
    use rayon::prelude::*;
    crate::calibrate::interval::uncertainty(profile)?;
    let fitted: std::collections::BTreeSet<&str> =
        profile.fit.as_ref().map(|f| f.residuals.iter().map(|r| r.id.as_str()).collect()).unwrap_or_default();
    // Independent rows, collected in row order: the same at any thread count.
    let found: Vec<(Option<crate::calibrate::interval::Interval>, bool)> = selected
        .par_iter()
        .map(|&i| {
            let iv = crate::calibrate::interval::target_interval(data, i, profile, predictions[i]);
            let inside = match &data.sources[i] {
                TargetSource::Row(p) => crate::estimate::envelope(&p.scenario, profile).status == "inside",
                TargetSource::Harness(..) => true,
            };
            (iv, inside)
        })
        .collect();
    // (rows with an interval, rows whose measured value is inside it) per class.
    let mut tally: std::collections::BTreeMap<&str, (usize, usize)> = std::collections::BTreeMap::new();
    for (row, (iv, in_envelope)) in rows.iter_mut().zip(&found) {
        let Some(iv) = iv else { continue };
        row.p5 = Some(iv.p5);
        row.p95 = Some(iv.p95);
        let hit = usize::from((iv.p5..=iv.p95).contains(&row.measured));
        let sample = if fitted.contains(row.id.as_str()) { "fitted" } else { "unseen" };
        let envelope = if *in_envelope { "inside_envelope" } else { "extrapolation" };
        for class in [sample, envelope] {
            let t = tally.entry(class).or_default();
            t.0 += 1;
            t.1 += hit;
        }
    }
    if tally.is_empty() {
        return None;
    }
    let line = |class: &str, what: &str| {
        tally.get(class).map(|(n, k)| format!("  {what}: {k}/{n} inside ({:.0}%)\n", 100.0 * *k as f64 / *n as f64))
    };
    let mut text = String::from("\n90% interval coverage (each row's interval as `run` gives it):\n");
    for (class, what) in [
        ("fitted", "rows the profile was fitted on (in-sample, optimistic)"),
        ("unseen", "rows the profile never saw"),
        ("inside_envelope", "inside the calibrated envelope"),
        ("extrapolation", "extrapolations"),
    ] {
        text.push_str(&line(class, what).unwrap_or_default());
    }
    let json = tally.iter().map(|(class, (n, k))| (class.to_string(), serde_json::json!({"rows": n, "inside": k}))).collect();
    Some(CoverageNote { text, json: serde_json::Value::Object(json) })
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
            // A batched decode has one record per batch size: keyed by kind and batch.
            let key = b.params.get("batch").map_or_else(|| b.kind.id().to_string(), |n| format!("{} B{n}", b.kind));
            out.text.push_str(&format!("\n{key}, each repeat: {} tok/s (the best is the measured value)", list.join(", ")));
            out.json["rounds_tokens_per_s"][&key] = serde_json::json!(per_round);
            if let Some(mean) = b.mean_tokens_per_s_all_rounds() {
                out.text.push_str(&format!("; over every step of every repeat: {mean:.2} tok/s"));
                out.json["mean_tokens_per_s_all_rounds"][&key] = serde_json::json!(mean);
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

/// The profile's own fit: how many parameters it fitted on how many rows (the in-sample errors
/// above are those rows' residuals), with a warning below two rows per parameter.
fn fit_budget(profile: &Profile, out: &mut Output) {
    let Some(fit) = &profile.fit else {
        out.text.push_str(&format!("profile `{}` is not fitted (hand-set priors): every row above is out of sample\n", profile.meta.name));
        return;
    };
    let b = cv::ParamBudget::new(fit.params.len(), fit.residuals.len());
    out.text.push_str(&format!("in-sample: profile `{}` has {}\n", profile.meta.name, b.line()));
    out.json["fit_budget"] = serde_json::to_value(&b).expect("serializes");
}

/// The parameters a fold refits: of those `calibrate` tries for `data`, the ones the profile's
/// own calibration fitted (its `[uncertainty] params`), so that a fold refits what the shipped
/// fit fitted and the parameters `calibrate` dropped stay at their priors there too (the fold's
/// own budget then holds any that too few training rows move). All of them for a profile that
/// records no fit, or none of these.
fn cv_paths(data: &Dataset, profile: &Profile) -> Vec<String> {
    let all = crate::calibrate::default_params(data);
    let Some(u) = &profile.uncertainty else { return all };
    let fitted: Vec<String> = all.iter().filter(|p| u.params.contains(p)).cloned().collect();
    if fitted.is_empty() { all } else { fitted }
}

/// `--cv GROUPING`: each group predicted by a profile refitted without it, with 90% intervals.
fn cv_section(
    data: &Dataset,
    profile: &Profile,
    grouping: Grouping,
    selected: &[usize],
    args: &ValidateArgs,
    out: &mut Output,
) -> Result<cv::CvReport, CliError> {
    let groups = cv::groups(data, grouping, selected).len();
    super::note!("validate --cv {}: refitting without each of {groups} groups...", grouping.name());
    let t0 = std::time::Instant::now();
    // With --cv-exact (or --cv-cold) each fold ticks twice: its fast fold, then its exact refit.
    let refit = args.cv_exact || args.cv_cold;
    let pb = super::progress_bar(groups as u64 * if refit { 2 } else { 1 }, "folds");
    let input = cv::CvInput {
        profile,
        paths: cv_paths(data, profile),
        prior_weight: args.prior_weight,
        grouping,
        selected,
        method: if args.cv_cold {
            FoldMethod::Cold
        } else if args.cv_exact {
            FoldMethod::Exact
        } else {
            FoldMethod::Fast(args.cv_steps as usize)
        },
    };
    let r = cv::run(data, &input, &|| pb.inc(1)).map_err(|e| CliError::failure(format!("cross-validation: {e}")))?;
    pb.finish_and_clear();
    super::note!("validate --cv {}: {groups} folds in {:.1} s", grouping.name(), t0.elapsed().as_secs_f64());
    let how = match input.method {
        FoldMethod::Fast(n) => format!("at most {n} Gauss-Newton steps from the full fit"),
        FoldMethod::Exact => "a full Levenberg-Marquardt refit per fold".into(),
        FoldMethod::Cold => "a full Levenberg-Marquardt refit per fold, started from the prior".into(),
    };
    out.text.push_str(&format!("\ncross-validation by {} (each group predicted by a fit without it; {how}):\n", grouping.name()));
    out.text.push_str(&cv::table(&r));
    out.json["cv"] = serde_json::to_value(&r).expect("serializes");
    Ok(r)
}

/// `--plot DIR`: the predicted-vs-measured parity chart.
fn plot_section(
    report: &v::Report,
    held_out: Option<&str>,
    dir: &std::path::Path,
    args: &ValidateArgs,
    out: &mut Output,
) -> Result<(), CliError> {
    use crate::report::charts::{ParityPoint, unit_of};
    let points: Vec<ParityPoint> = report
        .rows
        .iter()
        .map(|r| ParityPoint { label: r.id.clone(), unit: unit_of(&r.metric), measured: r.measured, predicted: r.predicted })
        .collect();
    let stem = dir.join(match held_out {
        Some("row") => "parity-loo".to_string(),
        Some(g) => format!("parity-cv-{g}"),
        None => "parity".to_string(),
    });
    let title = match held_out {
        Some("row") => format!("supernode: leave-one-out (held-out) predictions vs measured ({})", args.against.display()),
        Some(g) => {
            format!("supernode: held-out predictions (--cv {g}: each {g} left out of the fit) vs measured ({})", args.against.display())
        }
        None => format!("supernode: predicted (in-sample fit) vs measured ({})", args.against.display()),
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| e.to_string())
        .and_then(|_| crate::report::charts::parity_chart(&stem, &title, &points).map_err(|e| e.to_string()))
        .map_err(|e| CliError::failure(format!("cannot draw the parity chart: {e}")))?;
    out.text.push_str(&format!("\nparity chart: {}.png, {}.svg\n", stem.display(), stem.display()));
    Ok(())
}
