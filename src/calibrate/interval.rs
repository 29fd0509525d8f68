//! Prediction intervals of `run`'s headline outputs: p5 / p50 / p95 from the fit's parameter
//! covariance (each output's sensitivity to every fitted parameter, by finite differences
//! through the same estimator) plus the rows' scatter of the output's kind (standardised
//! residuals: the parameters' part comes from the covariance alone), on a
//! log scale. The profile's `[uncertainty]` (written by `calibrate`) gives both; a profile
//! without it falls back on its fit report (standard errors, residual RMS), and a hand-set
//! profile with neither gets no intervals.

use std::collections::BTreeMap;

use serde::Serialize;

use super::params::{dvalue, from_free, get_param, is_fraction, set_params, to_free};
use crate::estimate::{Estimate, ServeBase, estimate, estimate_nudged, estimate_serve_base};
use crate::profile::{ChipParams, CommParams, Profile, RuntimeParams, Uncertainty};
use crate::scenario::Scenario;
use crate::util::Z90;

/// Step in the free variables for an output's sensitivity: 1%, well above the simulation's
/// integer-nanosecond rounding.
const STEP: f64 = 1e-2;

/// A prior whose one-sigma range moves a prediction by more than this (log units) is followed
/// to both ends of that range rather than along its tangent: over such a range a prediction can
/// bend (a host-bound step turns GPU-bound as the launch cost falls), and a tangent would carry
/// the interval past what the physics allows on one side.
const SECANT_ABOVE: f64 = 0.1;

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
        "decode_tokens_per_s" | "tpot_ms" | "tpot_p50_ms" | "tpot_p99_ms" | "itl_p50_ms" | "itl_p99_ms" => &["decode_tokens_per_s"],
        "prefill_tokens_per_s" | "ttft_s" | "ttft_p50_s" | "ttft_p99_s" => &["prefill_tokens_per_s"],
        "requests_per_s" | "total_tokens_per_s" => &["aggregate_decode_tokens_per_s"],
        // Arrival to last token: a prefill, then the decode steps.
        "e2e_mean_s" | "e2e_p50_s" | "e2e_p99_s" => &["prefill_tokens_per_s", "decode_tokens_per_s"],
        "energy_j_per_token" => &["node_power_w", "decode_tokens_per_s"],
        // Peak power and each phase's (`cluster_power_w_decode`).
        o if o.ends_with("_power_w") || o.ends_with("_power_w_decode") || o.ends_with("_power_w_prefill") => &["node_power_w"],
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

/// The profiled chips whose parameters a prediction for `sc` reads: each node's own chip, or
/// the one it borrows ([`Profile::params_chip`]: an M4 Pro runs with the M4 Max's), sorted.
fn params_chips(sc: &Scenario, profile: &Profile) -> Vec<String> {
    let mut chips: Vec<String> = sc.nodes.iter().map(|n| profile.params_chip(n)).collect();
    chips.sort_unstable();
    chips.dedup();
    chips
}

/// The profile chips whose parameters a node of `sc` borrows: the node's own chip has no
/// parameters of its own (`calibrated_as`, or the nearest generation; [`Profile::params_chip`]).
fn borrowed_chips(sc: &Scenario, profile: &Profile) -> Vec<String> {
    let mut chips: Vec<String> =
        sc.nodes.iter().map(|n| (n, profile.params_chip(n))).filter(|(n, c)| *c != n.chip).map(|(_, c)| c).collect();
    chips.sort_unstable();
    chips.dedup();
    chips
}

/// Whether parameter `path` can move a prediction for `sc`: a chip's parameters only move
/// clusters whose nodes run with that chip's parameters (`chips`, [`params_chips`]).
fn can_move(path: &str, chips: &[String]) -> bool {
    match path.strip_prefix("chips.").and_then(|r| r.split('.').next()) {
        Some(chip) => chips.iter().any(|c| c == chip),
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
    let movable = movable_params(&u, sc, profile);
    let priors = prior_params(sc, profile, &u);
    let reads = plan_reads(sc, profile);
    // d ln(output) / d(free variable) per movable parameter, then per prior-held one (none for
    // a parameter the plan does not read: its re-run would give the same outputs, a gradient of
    // exactly 0).
    let paths: Vec<&str> = movable.iter().map(|&k| u.params[k].as_str()).chain(priors.iter().map(|(p, _)| p.as_str())).collect();
    // ln(output under `p` / output) per headline; empty where the plan does not read the
    // nudged parameter or the estimate fails.
    let log_change = |p: Option<Profile>| -> BTreeMap<String, f64> {
        let Some(p) = p else { return BTreeMap::new() };
        if reads_unchanged(sc, &reads, &p) {
            return BTreeMap::new();
        }
        let Some(est2) = nudged(&p) else { return BTreeMap::new() };
        let h2 = headlines(&est2);
        base.iter().filter_map(|(key, y)| h2.get(key).map(|y2| (key.clone(), (y2 / y).ln()))).collect()
    };
    let grads: Vec<BTreeMap<String, f64>> =
        paths.par_iter().map(|path| log_change(nudged_profile(profile, path)).into_iter().map(|(k, d)| (k, d / STEP)).collect()).collect();
    // Priors whose range moves some output past the tangent's reach: both ends, re-run.
    let ends: Vec<Option<[BTreeMap<String, f64>; 2]>> = priors
        .par_iter()
        .zip(&grads[movable.len()..])
        .map(|((path, v), g)| {
            let s = v.max(0.0).sqrt();
            g.values().any(|d| (d * s).abs() > SECANT_ABOVE).then(|| [s, -s].map(|d| log_change(nudged_by(profile, path, d))))
        })
        .collect();
    let mut out = BTreeMap::new();
    for (key, y) in &base {
        let g: Vec<f64> = grads.iter().map(|m| m.get(key).copied().unwrap_or(0.0)).collect();
        let (fitted, held) = g.split_at(movable.len());
        let own = parameter_variance(&u, &movable, fitted);
        let moves: Vec<PriorMove> = priors
            .iter()
            .zip(held)
            .zip(&ends)
            .map(|(((_, v), g), e)| match e {
                Some([hi, lo]) => PriorMove::Ends(hi.get(key).copied().unwrap_or(0.0), lo.get(key).copied().unwrap_or(0.0)),
                None => PriorMove::Tangent(g * g * v),
            })
            .collect();
        let (down, up) = prior_spans(&moves);
        // The scatter of each kind the output adds, after the covariance (the sum's order kept).
        let scatter = kinds_of(key).iter().fold(0.0, |var, kind| {
            let s = u.scatter.get(*kind).or_else(|| u.scatter.get("all")).copied().unwrap_or(0.0);
            var + s * s
        });
        out.insert(key.clone(), interval_between(*y, own + down + scatter, own + up + scatter));
    }
    out
}

/// How a prior-held parameter moves a prediction: along its tangent (the variance it adds, log
/// units), or, past [`SECANT_ABOVE`], by the log-changes at the two ends of its one-sigma range.
#[derive(Clone, Copy, Debug, PartialEq)]
enum PriorMove {
    Tangent(f64),
    Ends(f64, f64),
}

/// The variances (log units) the priors add below and above a prediction: a tangent's on both
/// sides; the ends' rise above and fall below (a prediction capped on one side, e.g. by the GPU
/// once the host stops being the slower, widens only the other).
fn prior_spans(moves: &[PriorMove]) -> (f64, f64) {
    moves.iter().fold((0.0, 0.0), |(down, up), m| match *m {
        PriorMove::Tangent(v) => (down + v, up + v),
        PriorMove::Ends(a, b) => (down + a.min(b).min(0.0).powi(2), up + a.max(b).max(0.0).powi(2)),
    })
}

/// The parameters of `u` that can move a prediction for `sc` (its chips', the shared ones)
/// and that the fit left uncertain.
fn movable_params(u: &Uncertainty, sc: &Scenario, profile: &Profile) -> Vec<usize> {
    let chips = params_chips(sc, profile);
    (0..u.params.len()).filter(|&k| can_move(&u.params[k], &chips) && u.covariance[k].iter().any(|c| *c != 0.0)).collect()
}

/// The chip parameters a prediction reads whose value no fit pinned down: kernel
/// efficiencies and energies.
pub const CHIP_PRIOR_PARAMS: &[&str] = &[
    "bw_eff_dense",
    "bw_eff_expert",
    "bw_eff_attention",
    "compute_eff_dense",
    "compute_eff_expert",
    "compute_eff_attention",
    "pj_per_byte",
    "pj_per_flop",
];

/// The chip parameters that describe kernels rather than the chip alone: a fraction of a peak
/// that one library's kernels reach (energies per byte and per FLOP are the chip's).
const KERNEL_EFFICIENCIES: &[&str] =
    &["bw_eff_dense", "bw_eff_expert", "bw_eff_attention", "compute_eff_dense", "compute_eff_expert", "compute_eff_attention"];

/// Whether the fit set parameter `path` only from rows of kernel libraries other than
/// `runtime` (its report names them; an older profile without them: false).
fn fitted_on_other_kernels(profile: &Profile, path: &str, runtime: &str) -> bool {
    profile
        .fit
        .as_ref()
        .and_then(|f| f.params.iter().find(|p| p.name == path))
        .is_some_and(|p| !p.runtimes.is_empty() && !p.runtimes.iter().any(|r| r == runtime))
}

/// The runtime parameters of the same kind: launches and the kernel families' bandwidth.
pub const RUNTIME_PRIOR_PARAMS: &[&str] =
    &["kernel_launch_us", "graph_kernel_us", "bw_mult_half", "bw_mult_8bit", "bw_mult_mxfp4", "bw_mult_nvfp4", "bw_mult_fp8"];

/// What a parameter is, for how far its prior may miss: an efficiency (a fraction of a peak,
/// in logit), a dimensionless scale or energy (kernel-family bandwidth multipliers, pJ per byte
/// or FLOP: log), or a time cost (launches, host and stage work in microseconds: log).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PriorKind {
    /// A fraction of a peak.
    Efficiency,
    /// A multiplier or an energy per operation.
    Scale,
    /// A cost in microseconds.
    Cost,
}

impl PriorKind {
    /// The kind of parameter `path` by its field name; `None` for a parameter of none of these
    /// kinds (the expert popularity exponent, a fault rate).
    pub fn of(path: &str) -> Option<PriorKind> {
        let field = path.rsplit('.').next().unwrap_or(path);
        if field.starts_with("bw_eff_") || field.starts_with("compute_eff_") {
            Some(PriorKind::Efficiency)
        } else if field.starts_with("bw_mult_") || field.starts_with("pj_per_") {
            Some(PriorKind::Scale)
        } else if field.ends_with("_us") {
            Some(PriorKind::Cost)
        } else {
            None
        }
    }
}

/// How far, one standard deviation in the fit's free variables, a parameter the fit did not
/// constrain may be from its prior, per [`PriorKind`]: the root mean square of how far this
/// profile's own fitted parameters of that kind moved from their priors. Evidence, not a
/// guess: where data spoke, the priors missed by this much, so a prior where no data speak is
/// taken to miss as much (efficiencies moved 0.66 in logit, multipliers and energies 0.21 in
/// log, microsecond costs 1.6 in log in the 2026-12-04 fit; parameters of no kind, such as the
/// expert popularity exponent, are left out). A kind with fewer than two fitted
/// parameters borrows the efficiencies' spread (their logit is close to a log for the small
/// values most efficiencies have). `None` for a profile that was never fitted (no evidence: no
/// prior term).
pub fn prior_spread(profile: &Profile) -> Option<BTreeMap<PriorKind, f64>> {
    let fit = profile.fit.as_ref()?;
    let mut acc: BTreeMap<PriorKind, (f64, usize)> = BTreeMap::new();
    for p in &fit.params {
        let Some(kind) = PriorKind::of(&p.name) else { continue };
        let f = is_fraction(profile, &p.name);
        if !(p.initial > 0.0 && p.value > 0.0) || f && (p.initial >= 1.0 || p.value >= 1.0) {
            continue;
        }
        let d = to_free(f, p.value) - to_free(f, p.initial);
        let e = acc.entry(kind).or_default();
        e.0 += d * d;
        e.1 += 1;
    }
    let rms = |k: PriorKind| acc.get(&k).filter(|(_, n)| *n >= 2).map(|(sum, n)| (sum / *n as f64).sqrt());
    let efficiency = rms(PriorKind::Efficiency).unwrap_or(0.0);
    Some([PriorKind::Efficiency, PriorKind::Scale, PriorKind::Cost].into_iter().map(|k| (k, rms(k).unwrap_or(efficiency))).collect())
}

/// The root mean square, in log, of how far this profile's fitted efficiencies moved from their
/// priors (0.14 in the 2026-12-06 fit): the relative miss of a prior efficiency. `None` for a
/// profile never fitted or with fewer than two fitted efficiencies.
fn efficiency_log_spread(profile: &Profile) -> Option<f64> {
    let fit = profile.fit.as_ref()?;
    let moves: Vec<f64> = fit
        .params
        .iter()
        .filter(|p| PriorKind::of(&p.name) == Some(PriorKind::Efficiency))
        .filter(|p| p.initial > 0.0 && p.value > 0.0 && p.initial < 1.0 && p.value < 1.0)
        .map(|p| (p.value / p.initial).ln())
        .collect();
    (moves.len() >= 2).then(|| (moves.iter().map(|d| d * d).sum::<f64>() / moves.len() as f64).sqrt())
}

/// The one-sigma spread, in the free variable, of a prior of `kind` at `value`: its kind's
/// ([`prior_spread`]), and for an efficiency near its peak at least the logit distance of a
/// miss downward by the efficiencies' relative spread ([`efficiency_log_spread`]). The logit
/// compresses a fraction near 1: at 0.95 the efficiencies' 0.66 would put the miss within
/// -5%, where the fitted efficiencies missed their priors by 14% on average (log): such a prior
/// is taken as far off as that, downward, 0.95 -> 0.82 (the ends are followed, so the
/// interval widens below the prediction; no efficiency passes 1). Elsewhere the logit's spread
/// is the wider and stays.
fn prior_sd(kind: PriorKind, spread: &BTreeMap<PriorKind, f64>, log_spread: Option<f64>, value: f64) -> f64 {
    let sd = spread[&kind];
    match log_spread {
        Some(l) if kind == PriorKind::Efficiency && value > 0.0 && value < 1.0 => {
            sd.max(to_free(true, value) - to_free(true, value * (-l).exp()))
        }
        _ => sd,
    }
}

/// The parameters a prediction for `sc` reads that the fit left without an uncertainty (held
/// at their prior, never fitted, or fitted to no standard error), or whose fitted value a node
/// borrows for a chip no row measured ([`borrowed_chips`]: its efficiencies), each with the
/// variance of its prior in free units ([`prior_spread`]): the chips' efficiencies and energies, the launches
/// and kernel-family multipliers of the runtime each node runs, that engine's host costs. A
/// parameter at 0 (a cost the runtime does not have) is left out: its prior is exact.
fn prior_params(sc: &Scenario, profile: &Profile, u: &Uncertainty) -> Vec<(String, f64)> {
    let pinned = |path: &str| u.params.iter().position(|q| q == path).is_some_and(|k| u.covariance[k].iter().any(|c| *c != 0.0));
    held_params(sc, profile, &pinned)
}

/// The variances (log units) below and above a published row's prediction that the priors of
/// the parameters it reads but no fit over `fitted` moves give it (`prior_params`, with the
/// parameters of `fitted` taken as pinned; a prior past `SECANT_ABOVE` followed to both ends of
/// its range, as `run` takes it): what a cross-validation fold adds to the interval of a row it
/// predicts. (0, 0) for a harness target or a profile that was never fitted.
pub fn prior_row_variance(data: &crate::calibrate::Dataset, i: usize, profile: &Profile, fitted: &[String]) -> (f64, f64) {
    let crate::calibrate::TargetSource::Row(p) = &data.sources[i] else { return (0.0, 0.0) };
    let priors = held_params(&p.scenario, profile, &|path: &str| fitted.iter().any(|f| f == path));
    let y = match data.predict_one(i, profile) {
        Ok(y) if y.is_finite() && y > 0.0 => y,
        _ => return (0.0, 0.0),
    };
    let reads = plan_reads(&p.scenario, profile);
    let grads: Vec<f64> = priors.iter().map(|(path, _)| row_log_gradient(data, i, &p.scenario, profile, &reads, path, y)).collect();
    prior_spans(&row_prior_moves(data, i, profile, &priors, &grads, y))
}

/// How each prior of `priors` (with its tangent `grads`) moves target `i`'s prediction `y`:
/// its tangent's variance, or past [`SECANT_ABOVE`] the log-changes at the ends of its range.
fn row_prior_moves(
    data: &crate::calibrate::Dataset,
    i: usize,
    profile: &Profile,
    priors: &[(String, f64)],
    grads: &[f64],
    y: f64,
) -> Vec<PriorMove> {
    use rayon::prelude::*;
    let log_change = |q: Option<Profile>| q.and_then(|q| row_log_change(data, i, &q, y)).unwrap_or(0.0);
    priors
        .par_iter()
        .zip(grads)
        .map(|((path, v), g)| {
            let s = v.max(0.0).sqrt();
            if (g * s).abs() > SECANT_ABOVE {
                PriorMove::Ends(log_change(nudged_by(profile, path, s)), log_change(nudged_by(profile, path, -s)))
            } else {
                PriorMove::Tangent(g * g * v)
            }
        })
        .collect()
}

/// d ln(prediction of target `i`) / d(free variable of `path`) around its prediction `y` under
/// `profile`; 0 where the nudge fails or the plan does not read the parameter (`reads`).
fn row_log_gradient(
    data: &crate::calibrate::Dataset,
    i: usize,
    sc: &Scenario,
    profile: &Profile,
    reads: &Option<PlanReads>,
    path: &str,
    y: f64,
) -> f64 {
    let Some(q) = nudged_profile(profile, path) else { return 0.0 };
    if reads_unchanged(sc, reads, &q) {
        return 0.0;
    }
    row_log_change(data, i, &q, y).map_or(0.0, |d| d / STEP)
}

/// ln(prediction of target `i` under `q` / `y`); `None` where that prediction fails or is not
/// a positive number.
fn row_log_change(data: &crate::calibrate::Dataset, i: usize, q: &Profile, y: f64) -> Option<f64> {
    data.predict_one(i, q).ok().filter(|y2| y2.is_finite() && *y2 > 0.0).map(|y2| (y2 / y).ln())
}

/// [`prior_params`] with `pinned` saying which parameters a fit constrained.
fn held_params(sc: &Scenario, profile: &Profile, pinned: &dyn Fn(&str) -> bool) -> Vec<(String, f64)> {
    let Some(spread) = prior_spread(profile) else { return Vec::new() };
    let log_spread = efficiency_log_spread(profile);
    let kind = sc.engine.kind;
    let runtime = kind.behaviour().kernels().id();
    let borrowed = borrowed_chips(sc, profile);
    let mut out = Vec::new();
    for chip in params_chips(sc, profile) {
        // A chip no row measured reads a measured chip's efficiencies: fitted there, a guess
        // here, as far off as a prior (the fit's own evidence of how far priors miss). So is a
        // kernel efficiency fitted only on another kernel library's rows (MLX's GEMMs on a chip
        // whose efficiency llama.cpp's rows set: the two libraries' kernels differ).
        let guessed = |path: &str| {
            let field = path.rsplit('.').next().unwrap_or(path);
            (borrowed.contains(&chip) && CHIP_PRIOR_PARAMS.contains(&field))
                || (KERNEL_EFFICIENCIES.contains(&field) && fitted_on_other_kernels(profile, path, runtime))
        };
        let mut paths: Vec<String> = CHIP_PRIOR_PARAMS.iter().map(|f| format!("chips.{chip}.{f}")).collect();
        paths.extend(RUNTIME_PRIOR_PARAMS.iter().map(|f| format!("chips.{chip}.runtimes.{runtime}.{f}")));
        // An engine's host costs, where the chip has them or borrows them (`Profile::engine_host`).
        if let Some(host) = sc.engine.host_key()
            && let Some((host_chip, _)) = profile.engine_host(&chip, host)
        {
            paths.extend(["host_per_step_us", "host_per_seq_us"].iter().map(|f| format!("chips.{host_chip}.engines.{host}.{f}")));
        }
        for path in paths {
            let Some(v) = get_param(profile, &path) else { continue };
            if v <= 0.0 || (pinned(&path) && !guessed(&path)) || out.iter().any(|(p, _)| *p == path) || !family_used(&sc.quant, &path) {
                continue;
            }
            let Some(kind) = PriorKind::of(&path) else { continue };
            let sd = prior_sd(kind, &spread, log_spread, v);
            out.push((path, sd * sd));
        }
    }
    out
}

/// Whether a kernel-family bandwidth multiplier (`...bw_mult_mxfp4`) can move a prediction of a
/// model quantized as `quant`: the families a per-class quantization stores (its default, its
/// overrides, and bf16 for whatever is left unquantized), or every family for GGUF file types
/// (their rules pick k-quant, legacy and half types by tensor and shape). Any other parameter:
/// true. Skips the re-run of a multiplier whose gradient is 0 by construction.
fn family_used(quant: &crate::llm::QuantSpec, path: &str) -> bool {
    use crate::llm::{KernelFamily as K, QuantScheme};
    let Some(family) = path.rsplit('.').next().and_then(|f| f.strip_prefix("bw_mult_")) else { return true };
    let QuantScheme::PerClass { default, overrides } = &quant.scheme else { return true };
    let stored: Vec<K> = std::iter::once(default.kernel).chain(overrides.iter().map(|o| o.format.kernel)).chain([K::Half]).collect();
    stored.iter().any(|k| match family {
        "half" => *k == K::Half,
        "8bit" => matches!(k, K::Affine8 | K::Legacy),
        "fp8" => *k == K::Fp8,
        "mxfp4" => *k == K::Mxfp4,
        "nvfp4" => *k == K::Nvfp4,
        _ => true,
    })
}

/// The uncertain parameters whose sensitivity [`intervals`] takes as 0 without a re-run for
/// `sc`: its plan does not read them (another chip's runtime, an engine it does not run).
pub fn unread_params(sc: &Scenario, profile: &Profile) -> Vec<String> {
    let Some(u) = uncertainty(profile) else { return Vec::new() };
    let reads = plan_reads(sc, profile);
    movable_params(&u, sc, profile)
        .into_iter()
        .filter(|&k| nudged_profile(profile, &u.params[k]).is_some_and(|p| reads_unchanged(sc, &reads, &p)))
        .map(|k| u.params[k].clone())
        .collect()
}

/// What [`plan_reads`] returns: per node the chip and runtime parameters, the communication
/// parameters, the expert popularity, and flash attention's compute ratio where the runtime
/// runs flash attention.
type PlanReads = (Vec<ChipParams>, Vec<RuntimeParams>, CommParams, f64, Option<f64>);

/// Whether the nudged profile `nudged` leaves what `sc`'s plan reads as `reads` (the base
/// profile's [`plan_reads`]) unchanged: its re-run can be skipped, its sensitivity is 0.
fn reads_unchanged(sc: &Scenario, reads: &Option<PlanReads>, nudged: &Profile) -> bool {
    reads.is_some() && plan_reads(sc, nudged) == *reads
}

/// The profile's values an estimate of `sc` reads, as its plan resolves them: every node's
/// chip parameters and the runtime's it runs (an engine's own host costs and a borrowed chip's
/// included; the chip's tables of other runtimes left out), the communication parameters, the
/// expert popularity and, where the runtime runs flash attention, its compute ratio. The
/// estimate reads the profile only
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
    let flash = plan.options.kind.runtime().flash_attention().then_some(plan.flash_compute_ratio);
    Some((chips, plan.runtimes, plan.comm, plan.expert_skew, flash))
}

/// `profile` with parameter `path` one [`STEP`] up in its free variable; `None` when the
/// profile lacks it.
fn nudged_profile(profile: &Profile, path: &str) -> Option<Profile> {
    nudged_by(profile, path, STEP)
}

/// `profile` with parameter `path` moved by `delta` in its free variable (log or logit).
fn nudged_by(profile: &Profile, path: &str, delta: f64) -> Option<Profile> {
    let v = get_param(profile, path)?;
    let f = is_fraction(profile, path);
    set_params(profile, &[path.to_string()], &[from_free(f, to_free(f, v) + delta)]).ok()
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

/// The 90% interval around prediction `y` of log-variance `down` below it and `up` above it.
fn interval_between(y: f64, down: f64, up: f64) -> Interval {
    let (d, u) = (down.max(0.0).sqrt(), up.max(0.0).sqrt());
    Interval { p5: crate::util::sig(y * (-Z90 * d).exp()), p50: y, p95: crate::util::sig(y * (Z90 * u).exp()) }
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
    let movable = movable_params(&u, &p.scenario, profile);
    let priors = prior_params(&p.scenario, profile, &u);
    let reads = plan_reads(&p.scenario, profile);
    // d ln(prediction) / d(free variable) per movable parameter, then per prior-held one; 0
    // where a nudge fails or the plan does not read the parameter.
    let paths: Vec<&str> = movable.iter().map(|&k| u.params[k].as_str()).chain(priors.iter().map(|(p, _)| p.as_str())).collect();
    let grads: Vec<f64> = paths.par_iter().map(|path| row_log_gradient(data, i, &p.scenario, profile, &reads, path, predicted)).collect();
    let (fitted, held) = grads.split_at(movable.len());
    // A prior that moves the row past the tangent's reach: both ends of its range, as `run` takes them.
    let moves = row_prior_moves(data, i, profile, &priors, held, predicted);
    let (down, up) = prior_spans(&moves);
    let own = parameter_variance(&u, &movable, fitted) + metric_scatter(&u, &p.row.metric).powi(2);
    Some(interval_between(predicted, own + down, own + up))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tangent prior widens both sides alike; a prior followed to its ends widens each side by
    /// what that side's end moves: a prediction capped above (a host-bound step that turns
    /// GPU-bound as the launch cost falls: +5% at one end, -60% at the other) gains little room
    /// above and much below.
    #[test]
    fn priors_followed_to_their_ends_widen_each_side_by_its_own_move() {
        let (down, up) = prior_spans(&[PriorMove::Tangent(0.01), PriorMove::Ends(0.05f64.ln_1p(), (-0.6f64).ln_1p())]);
        assert!((up - (0.01 + 1.05f64.ln().powi(2))).abs() < 1e-12, "{up}");
        assert!((down - (0.01 + 0.4f64.ln().powi(2))).abs() < 1e-12, "{down}");
        // Both ends on one side: the larger move counts on that side, none on the other.
        assert_eq!(prior_spans(&[PriorMove::Ends(0.2, 0.1)]), (0.0, 0.2f64.powi(2)));
        let iv = interval_between(100.0, 0.0, 0.01);
        assert_eq!((iv.p5, iv.p50), (100.0, 100.0));
        assert!((iv.p95 - 100.0 * (Z90 * 0.1).exp()).abs() < 0.01, "{iv:?}");
    }

    /// An efficiency prior near its peak is taken as far off as the efficiencies' relative
    /// spread downward (the logit would compress it); lower down the logit spread is the wider
    /// and stays; other kinds keep theirs.
    #[test]
    fn an_efficiency_prior_near_its_peak_may_miss_by_the_relative_spread_downward() {
        let spread = BTreeMap::from([(PriorKind::Efficiency, 0.66), (PriorKind::Scale, 0.2), (PriorKind::Cost, 1.6)]);
        let down = |sd: f64, v: f64| from_free(true, to_free(true, v) - sd);
        // 0.95 with a 14% relative spread: one sigma below is 0.95 x exp(-0.14) = 0.826 (the
        // logit's 0.66 alone would reach only 0.907).
        let sd = prior_sd(PriorKind::Efficiency, &spread, Some(0.14), 0.95);
        assert!((down(sd, 0.95) - 0.95 * (-0.14f64).exp()).abs() < 1e-9, "{sd}");
        assert!(from_free(true, to_free(true, 0.95) + sd) < 1.0);
        for v in [0.3, 0.6] {
            assert_eq!(prior_sd(PriorKind::Efficiency, &spread, Some(0.14), v), 0.66, "{v}");
        }
        assert_eq!(prior_sd(PriorKind::Efficiency, &spread, None, 0.95), 0.66);
        assert_eq!(prior_sd(PriorKind::Scale, &spread, Some(0.14), 0.95), 0.2);
    }
}
