//! Prediction intervals of `run`'s headline outputs: p5 / p50 / p95 from the fit's parameter
//! covariance (each output's sensitivity to every fitted parameter, by finite differences
//! through the same estimator) plus the scatter of held-out rows of the output's kind, on a
//! log scale. The profile's `[uncertainty]` (written by `calibrate`) gives both; a profile
//! without it falls back on its fit report (standard errors, residual RMS), and a hand-set
//! profile with neither gets no intervals.

use std::collections::BTreeMap;

use serde::Serialize;

use super::cv::Z90;
use super::params::{dvalue, from_free, get_param, is_fraction, set_params, to_free};
use crate::estimate::{Estimate, ServeBase, estimate, estimate_nudged, estimate_serve_base};
use crate::profile::{ChipParams, CommParams, Profile, RuntimeParams, Uncertainty};
use crate::scenario::Scenario;

/// Step in the free variables for an output's sensitivity: 1%, well above the simulation's
/// integer-nanosecond rounding.
const STEP: f64 = 1e-2;

/// Headline outputs of an estimate that carry an interval (besides every `*_power_w` number).
pub const HEADLINES: &[&str] = &["decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s", "energy_j_per_token", "hpl_gflops"];

/// Suffix of the JSON key of an output's interval: `decode_tokens_per_s_interval`.
pub const SUFFIX: &str = "_interval";

/// A 90% prediction interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// 5th percentile.
    pub p5: f64,
    /// Median (the point prediction).
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
}

/// The measurement kinds whose scatter an output's interval adds (their variances add: energy
/// per token is power over decode rate).
pub fn kinds_of(output: &str) -> &'static [&'static str] {
    match output {
        "decode_tokens_per_s" => &["decode_tokens_per_s"],
        "prefill_tokens_per_s" | "ttft_s" => &["prefill_tokens_per_s"],
        "energy_j_per_token" => &["node_power_w", "decode_tokens_per_s"],
        o if o.ends_with("_power_w") => &["node_power_w"],
        _ => &["all"],
    }
}

/// The profile's uncertainty, or one derived from its fit report (diagonal covariance from the
/// standard errors, the residual RMS as scatter); `None` for a profile that was never fitted.
pub fn uncertainty(profile: &Profile) -> Option<Uncertainty> {
    if let Some(u) = &profile.uncertainty {
        return Some(u.clone());
    }
    let fit = profile.fit.as_ref()?;
    let params: Vec<_> = fit.params.iter().filter(|p| get_param(profile, &p.name).is_some()).collect();
    let n = params.len();
    let mut covariance = vec![vec![0.0; n]; n];
    for (k, p) in params.iter().enumerate() {
        let d = dvalue(is_fraction(profile, &p.name), p.value);
        covariance[k][k] = p.std_error.filter(|_| d > 0.0).map_or(0.0, |s| (s / d).powi(2));
    }
    let scatter = BTreeMap::from([("all".to_string(), fit.rms_percent / 100.0)]);
    Some(Uncertainty { params: params.iter().map(|p| p.name.clone()).collect(), covariance, scatter })
}

/// The numeric headline outputs of `est` (positive values only), by JSON key.
fn headlines(est: &Estimate) -> BTreeMap<String, f64> {
    let v = serde_json::to_value(est).expect("estimate serializes");
    let obj = v.as_object().expect("an estimate is an object");
    obj.iter()
        .filter(|(k, _)| HEADLINES.contains(&k.as_str()) || k.ends_with("_power_w"))
        .filter_map(|(k, x)| x.as_f64().filter(|x| x.is_finite() && *x > 0.0).map(|x| (k.clone(), x)))
        .collect()
}

/// Whether parameter `path` can move a prediction for `sc`: a chip's parameters only move
/// clusters with that chip.
fn can_move(path: &str, sc: &Scenario) -> bool {
    match path.strip_prefix("chips.").and_then(|r| r.split('.').next()) {
        Some(chip) => sc.nodes.iter().any(|n| n.chip == chip),
        None => true,
    }
}

/// The 90% intervals of `est`'s headline outputs (`est` is `estimate(sc, profile)`), keyed by
/// output; empty when the profile has no uncertainty. A serving scenario's sensitivities replay
/// its run with per-step sensitivities ([`crate::estimate::replay`]) instead of re-running the
/// whole serving estimate per parameter; other workloads re-run the estimate. The
/// sensitivities are estimated in parallel and combined in parameter order, so the result is
/// the same at any thread count.
pub fn intervals(sc: &Scenario, profile: &Profile, est: &Estimate) -> BTreeMap<String, Interval> {
    let base =
        if sc.workload.serve.is_some() && uncertainty(profile).is_some() { estimate_serve_base(sc, profile).ok().flatten() } else { None };
    match base {
        Some((_, base)) => intervals_replaying(sc, profile, est, &base),
        None => intervals_by_rerun(sc, profile, est),
    }
}

/// [`intervals`] of a serving estimate whose run `base` kept (`est` is its estimate): each
/// sensitivity replays the run under the nudged profile ([`estimate_nudged`]).
pub fn intervals_replaying(sc: &Scenario, profile: &Profile, est: &Estimate, base: &ServeBase) -> BTreeMap<String, Interval> {
    intervals_with(sc, profile, est, |p| estimate_nudged(sc, base, p).ok())
}

/// [`intervals`] with every sensitivity from the whole estimate re-run under the nudged profile:
/// the reference the serving replay is checked against.
pub fn intervals_by_rerun(sc: &Scenario, profile: &Profile, est: &Estimate) -> BTreeMap<String, Interval> {
    intervals_with(sc, profile, est, |p| estimate(sc, p).ok())
}

/// The intervals from the estimate under each nudged profile (`nudged`).
fn intervals_with(
    sc: &Scenario,
    profile: &Profile,
    est: &Estimate,
    nudged: impl Fn(&Profile) -> Option<Estimate> + Sync,
) -> BTreeMap<String, Interval> {
    use rayon::prelude::*;
    let Some(u) = uncertainty(profile) else { return BTreeMap::new() };
    let base = headlines(est);
    let movable = movable_params(&u, sc);
    let reads = plan_reads(sc, profile);
    // d ln(output) / d(free variable) per movable parameter (none for a parameter the plan
    // does not read: its re-run would give the same outputs, a gradient of exactly 0).
    let grads: Vec<BTreeMap<String, f64>> = movable
        .par_iter()
        .map(|&k| {
            let Some(p) = nudged_profile(profile, &u.params[k]) else { return BTreeMap::new() };
            if reads_unchanged(sc, &reads, &p) {
                return BTreeMap::new();
            }
            let Some(est2) = nudged(&p) else { return BTreeMap::new() };
            let h2 = headlines(&est2);
            base.iter().filter_map(|(key, y)| h2.get(key).map(|y2| (key.clone(), (y2 / y).ln() / STEP))).collect()
        })
        .collect();
    let mut out = BTreeMap::new();
    for (key, y) in &base {
        let g: Vec<f64> = grads.iter().map(|m| m.get(key).copied().unwrap_or(0.0)).collect();
        // The scatter of each kind the output adds, after the covariance (the sum's order kept).
        let var = kinds_of(key).iter().fold(parameter_variance(&u, &movable, &g), |var, kind| {
            let s = u.scatter.get(*kind).or_else(|| u.scatter.get("all")).copied().unwrap_or(0.0);
            var + s * s
        });
        out.insert(key.clone(), interval_around(*y, var));
    }
    out
}

/// The parameters of `u` that can move a prediction for `sc` (its chips', the shared ones)
/// and that the fit left uncertain.
fn movable_params(u: &Uncertainty, sc: &Scenario) -> Vec<usize> {
    (0..u.params.len()).filter(|&k| can_move(&u.params[k], sc) && u.covariance[k].iter().any(|c| *c != 0.0)).collect()
}

/// The uncertain parameters whose sensitivity [`intervals`] takes as 0 without a re-run for
/// `sc`: its plan does not read them (another chip's runtime, an engine it does not run).
pub fn unread_params(sc: &Scenario, profile: &Profile) -> Vec<String> {
    let Some(u) = uncertainty(profile) else { return Vec::new() };
    let reads = plan_reads(sc, profile);
    movable_params(&u, sc)
        .into_iter()
        .filter(|&k| nudged_profile(profile, &u.params[k]).is_some_and(|p| reads_unchanged(sc, &reads, &p)))
        .map(|k| u.params[k].clone())
        .collect()
}

/// What [`plan_reads`] returns: per node the chip and runtime parameters, the communication
/// parameters, the expert popularity.
type PlanReads = (Vec<ChipParams>, Vec<RuntimeParams>, CommParams, f64);

/// Whether the nudged profile `nudged` leaves what `sc`'s plan reads as `reads` (the base
/// profile's [`plan_reads`]) unchanged: its re-run can be skipped, its sensitivity is 0.
fn reads_unchanged(sc: &Scenario, reads: &Option<PlanReads>, nudged: &Profile) -> bool {
    reads.is_some() && plan_reads(sc, nudged) == *reads
}

/// The profile's values an estimate of `sc` reads, as its plan resolves them: every node's
/// chip parameters and the runtime's it runs (an engine's own host costs and a borrowed chip's
/// included; the chip's tables of other runtimes left out), the communication parameters and
/// the expert popularity. The estimate reads the profile only
/// through its plan (faults aside, which no fit moves), so a nudged profile whose plan reads the
/// same values gives the same estimate, and its re-run can be skipped (a test re-runs every one
/// to check). `None` where no plan is built (HPL, a plan that fails): always re-run.
fn plan_reads(sc: &Scenario, profile: &Profile) -> Option<PlanReads> {
    if sc.workload.kind == crate::scenario::WorkloadKind::Hpl {
        return None;
    }
    let plan = crate::estimate::generate_plan(sc, profile).ok()?;
    // A chip's tables of every runtime and engine ride along in its parameters; the plan has
    // already resolved the one each node runs into `runtimes`.
    let chips = plan.chips.into_iter().map(|c| ChipParams { runtimes: Default::default(), engines: Default::default(), ..c }).collect();
    Some((chips, plan.runtimes, plan.comm, plan.expert_skew))
}

/// `profile` with parameter `path` one [`STEP`] up in its free variable; `None` when the
/// profile lacks it.
fn nudged_profile(profile: &Profile, path: &str) -> Option<Profile> {
    let v = get_param(profile, path)?;
    let f = is_fraction(profile, path);
    set_params(profile, &[path.to_string()], &[from_free(f, to_free(f, v) + STEP)]).ok()
}

/// The variance (log units) the parameter covariance gives a prediction whose log-gradient
/// over the `movable` parameters is `g`.
fn parameter_variance(u: &Uncertainty, movable: &[usize], g: &[f64]) -> f64 {
    let mut var = 0.0;
    for (a, &ka) in movable.iter().enumerate() {
        for (b, &kb) in movable.iter().enumerate() {
            var += g[a] * u.covariance[ka][kb] * g[b];
        }
    }
    var
}

/// The 90% interval around prediction `y` of log-variance `var`.
fn interval_around(y: f64, var: f64) -> Interval {
    let s = var.max(0.0).sqrt();
    Interval { p5: crate::util::sig(y * (-Z90 * s).exp()), p50: y, p95: crate::util::sig(y * (Z90 * s).exp()) }
}

/// The scatter (log units) `u` gives a measured metric: its own kind's when the fit measured
/// that kind, else the kinds [`kinds_of`] maps it to (time to first token: prefill), else `all`.
fn metric_scatter(u: &Uncertainty, metric: &str) -> f64 {
    if let Some(s) = u.scatter.get(metric) {
        return *s;
    }
    let var: f64 =
        kinds_of(metric).iter().map(|k| u.scatter.get(*k).or_else(|| u.scatter.get("all")).copied().unwrap_or(0.0).powi(2)).sum();
    var.sqrt()
}

/// The 90% interval of target `i` of `data`, predicted at `predicted` under `profile`: the
/// profile's parameter covariance through the target's sensitivities (finite differences of
/// its prediction, one nudged profile per parameter that can move it, as `run` takes them)
/// plus the scatter of its metric. This is the interval `run` would print for the row's
/// scenario, so on rows no fit saw, the share inside it is the intervals' real coverage.
/// `None` for a harness measurement, a profile without uncertainty or a failed prediction.
pub fn target_interval(data: &crate::calibrate::Dataset, i: usize, profile: &Profile, predicted: f64) -> Option<Interval> {
    use rayon::prelude::*;
    let crate::calibrate::TargetSource::Row(p) = &data.sources[i] else { return None };
    let u = uncertainty(profile)?;
    if !(predicted.is_finite() && predicted > 0.0) {
        return None;
    }
    let movable = movable_params(&u, &p.scenario);
    let reads = plan_reads(&p.scenario, profile);
    // d ln(prediction) / d(free variable) per movable parameter; 0 where a nudge fails or the
    // plan does not read the parameter.
    let grads: Vec<f64> = movable
        .par_iter()
        .map(|&k| {
            let Some(q) = nudged_profile(profile, &u.params[k]) else { return 0.0 };
            if reads_unchanged(&p.scenario, &reads, &q) {
                return 0.0;
            }
            match data.predict_one(i, &q) {
                Ok(y2) if y2.is_finite() && y2 > 0.0 => (y2 / predicted).ln() / STEP,
                _ => 0.0,
            }
        })
        .collect();
    Some(interval_around(predicted, parameter_variance(&u, &movable, &grads) + metric_scatter(&u, &p.row.metric).powi(2)))
}
