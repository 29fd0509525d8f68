//! Calibration: fit a profile's parameters to measurements by non-linear least squares
//! (Levenberg-Marquardt over the twin itself, Jacobian by finite differences), with parameter
//! uncertainties, per-measurement residuals and refusal of degenerate data.
//!
//! The residual of a measurement is the relative error of the twin's prediction, so a fit
//! minimises exactly what `validate` reports. Parameters are fitted in log space (all of them are
//! positive: efficiencies, costs in microseconds, watts).

use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{DMatrix, DVector, Dyn, Owned};

use crate::profile::Profile;
use crate::util::{round_to, sig};

pub mod llama_bench;
pub mod validate;
pub use crate::profile::{FitReport, FittedParam, Residual};

/// Errors that stop a fit.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CalibrateError {
    /// Fewer measurements than parameters.
    #[error(
        "too few measurements: {points} for {params} parameters (need at least {params}); add measurements or fit fewer parameters with --params"
    )]
    TooFewPoints {
        /// Measurements.
        points: usize,
        /// Parameters.
        params: usize,
    },
    /// A measurement is NaN, infinite, zero or negative.
    #[error("measurement `{id}` has an unusable value {value}; remove or fix the row")]
    BadValue {
        /// Measurement id.
        id: String,
        /// Value.
        value: f64,
    },
    /// A parameter path does not exist in the profile.
    #[error("unknown parameter `{0}` (use a dotted path into the profile, e.g. chips.m3-ultra.bw_eff_dense)")]
    UnknownParam(String),
    /// A parameter is not positive (cannot be fitted in log space).
    #[error("parameter `{name}` starts at {value}; fitted parameters must be positive")]
    NonPositive {
        /// Name.
        name: String,
        /// Value.
        value: f64,
    },
    /// The data do not constrain a parameter.
    #[error(
        "the measurements do not constrain `{0}` (the prediction does not change with it); drop it from --params or add measurements that exercise it"
    )]
    Unconstrained(String),
    /// The data cannot separate parameters.
    #[error(
        "the measurements cannot separate {names} (collinear: e.g. all sizes equal); add measurements at other sizes or fit fewer parameters"
    )]
    Collinear {
        /// The parameters involved, for the message.
        names: String,
        /// The involved parameter listed last in the fit (dropped first when parameters were chosen automatically).
        last: String,
    },
    /// The prediction failed for some parameter values.
    #[error("prediction failed during the fit: {0}")]
    Prediction(String),
}

/// Reads a parameter by dotted path.
pub fn get_param(profile: &Profile, path: &str) -> Option<f64> {
    let v = serde_json::to_value(profile).ok()?;
    v.pointer(&pointer(path))?.as_f64()
}

/// Returns a copy of `profile` with the parameter at `path` set.
pub fn set_params(profile: &Profile, paths: &[String], values: &[f64]) -> Result<Profile, CalibrateError> {
    let mut v = serde_json::to_value(profile).expect("profile serializes");
    for (p, x) in paths.iter().zip(values) {
        let slot = v.pointer_mut(&pointer(p)).ok_or_else(|| CalibrateError::UnknownParam(p.clone()))?;
        if !slot.is_number() {
            return Err(CalibrateError::UnknownParam(p.clone()));
        }
        *slot = serde_json::json!(x);
    }
    serde_json::from_value(v).map_err(|e| CalibrateError::Prediction(e.to_string()))
}

fn pointer(path: &str) -> String {
    path.split('.').fold(String::new(), |acc, part| acc + "/" + part)
}

/// One measurement for a fit: an id and a measured value; the prediction comes from the caller.
#[derive(Clone, Debug)]
pub struct Target {
    /// Id.
    pub id: String,
    /// Measured value (must be positive and finite).
    pub measured: f64,
}

/// Predictions for all targets under a profile, in target order.
pub type Predictor<'a> = dyn Fn(&Profile) -> Result<Vec<f64>, String> + Sync + 'a;

/// How a parameter maps to the optimiser's unbounded variable: efficiencies (fractions of a
/// peak) through a logistic so they stay in (0, 1); everything else through a logarithm so it
/// stays positive.
fn is_fraction(path: &str) -> bool {
    path.rsplit('.').next().is_some_and(|leaf| leaf.contains("_eff"))
}

fn to_free(path: &str, v: f64) -> f64 {
    if is_fraction(path) { (v / (1.0 - v)).ln() } else { v.ln() }
}

fn from_free(path: &str, x: f64) -> f64 {
    // Clamped so that a trial step of the optimiser can never produce absurd values
    // (efficiencies of 1e-40, microsecond costs of 1e30).
    if is_fraction(path) { 1.0 / (1.0 + (-x.clamp(-12.0, 12.0)).exp()) } else { x.clamp(-14.0, 16.0).exp() }
}

/// d(value)/d(free variable), for propagating uncertainties.
fn dvalue(path: &str, v: f64) -> f64 {
    if is_fraction(path) { v * (1.0 - v) } else { v }
}

struct Problem<'a> {
    base: &'a Profile,
    paths: &'a [String],
    targets: &'a [Target],
    predict: &'a Predictor<'a>,
    /// Per-target weights (robust reweighting); residuals are multiplied by their square roots.
    weights: Vec<f64>,
    /// Best point evaluated so far (free variables, squared norm of residuals).
    best: std::cell::RefCell<Option<(DVector<f64>, f64)>>,
    x: DVector<f64>,
    residuals: Option<DVector<f64>>,
    evaluations: std::cell::Cell<usize>,
    /// Weak prior: extra residuals `prior_weight * (x - x0)` in the free (log / logit) variables,
    /// which hold a parameter the data barely constrain near its sourced starting value.
    prior_weight: f64,
    x0: DVector<f64>,
}

impl Problem<'_> {
    fn eval(&self, x: &DVector<f64>) -> Option<DVector<f64>> {
        self.evaluations.set(self.evaluations.get() + 1);
        let values: Vec<f64> = x.iter().zip(self.paths).map(|(l, p)| from_free(p, *l)).collect();
        let p = match set_params(self.base, self.paths, &values) {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!("fit: cannot set {values:?}: {e}");
                return None;
            }
        };
        let pred = match (self.predict)(&p) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!("fit: prediction failed at {values:?}: {e}");
                return None;
            }
        };
        if pred.len() != self.targets.len() || pred.iter().any(|v| !v.is_finite()) {
            tracing::debug!("fit: non-finite prediction at {values:?}: {pred:?}");
            return None;
        }
        let data = pred.iter().zip(self.targets).zip(&self.weights).map(|((p, t), w)| (p - t.measured) / t.measured * w.sqrt());
        let prior = x.iter().zip(self.x0.iter()).map(|(v, v0)| self.prior_weight * (v - v0));
        let n_prior = if self.prior_weight > 0.0 { x.len() } else { 0 };
        Some(DVector::from_iterator(self.targets.len() + n_prior, data.chain(prior.take(n_prior))))
    }
}

/// Step in log space for the finite-difference Jacobian: large enough to stay above the
/// integer-nanosecond rounding of the simulation, small enough to be local.
const FD_STEP: f64 = 2e-3;

fn jacobian_at(prob: &Problem<'_>, x: &DVector<f64>) -> Option<DMatrix<f64>> {
    let n = x.len();
    // Forward differences: one extra evaluation per parameter.
    let r0 = prob.eval(x)?;
    let mut j = DMatrix::zeros(r0.len(), n);
    for k in 0..n {
        let mut xp = x.clone();
        xp[k] += FD_STEP;
        let rp = prob.eval(&xp)?;
        j.set_column(k, &((rp - &r0) / FD_STEP));
    }
    Some(j)
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, x: &DVector<f64>) {
        self.x = x.clone();
        self.residuals = self.eval(x);
        if let Some(r) = &self.residuals {
            let norm = r.norm_squared();
            let mut best = self.best.borrow_mut();
            if best.as_ref().is_none_or(|(_, b)| norm < *b) {
                *best = Some((x.clone(), norm));
            }
        }
    }
    fn params(&self) -> DVector<f64> {
        self.x.clone()
    }
    fn residuals(&self) -> Option<DVector<f64>> {
        self.residuals.clone()
    }
    fn jacobian(&self) -> Option<DMatrix<f64>> {
        jacobian_at(self, &self.x)
    }
}

/// Fits `paths` of `base` so that `predict` matches `targets` in relative terms.
pub fn fit(base: &Profile, paths: &[String], targets: &[Target], predict: &Predictor<'_>) -> Result<(Profile, FitReport), CalibrateError> {
    fit_with(base, paths, targets, predict, 0)
}

/// Rounds of iteratively reweighted least squares after the plain fit: each round weights every
/// measurement by `1 / max(|relative error|, 1%)`, which turns the squared loss into the absolute
/// loss (the mean absolute percentage error that `validate` reports) and keeps one badly
/// specified row from dragging every parameter.
pub const ROBUST_ROUNDS: usize = 4;

/// [`fit`] followed by `robust_rounds` rounds of reweighting.
pub fn fit_with(
    base: &Profile,
    paths: &[String],
    targets: &[Target],
    predict: &Predictor<'_>,
    robust_rounds: usize,
) -> Result<(Profile, FitReport), CalibrateError> {
    fit_with_prior(base, paths, targets, predict, robust_rounds, 0.0)
}

/// Weight of the prior that [`calibrate`] puts on every parameter's starting value (in log /
/// logit units): moving a parameter by a factor e costs as much as a 1% relative error on one
/// measurement in the robust loss. It decides nothing the data constrain; it keeps a parameter
/// that only one or two measurements touch from wandering when one of them is left out.
pub const PRIOR_WEIGHT: f64 = 0.1;

/// Parses a prior weight from the command line: a finite number >= 0.
pub fn parse_prior_weight(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(w) if w.is_finite() && w >= 0.0 => Ok(w),
        _ => Err(format!("must be a finite number >= 0, got `{s}`")),
    }
}

/// [`fit_with`] plus a prior of `prior_weight` toward the starting values (0 = none).
pub fn fit_with_prior(
    base: &Profile,
    paths: &[String],
    targets: &[Target],
    predict: &Predictor<'_>,
    robust_rounds: usize,
    prior_weight: f64,
) -> Result<(Profile, FitReport), CalibrateError> {
    for t in targets {
        if !t.measured.is_finite() || t.measured <= 0.0 {
            return Err(CalibrateError::BadValue { id: t.id.clone(), value: t.measured });
        }
    }
    if targets.len() < paths.len() || paths.is_empty() {
        return Err(CalibrateError::TooFewPoints { points: targets.len(), params: paths.len() });
    }
    let mut initial = Vec::with_capacity(paths.len());
    for p in paths {
        let v = get_param(base, p).ok_or_else(|| CalibrateError::UnknownParam(p.clone()))?;
        if v <= 0.0 || !v.is_finite() {
            return Err(CalibrateError::NonPositive { name: p.clone(), value: v });
        }
        initial.push(v);
    }
    for (p, v) in paths.iter().zip(&initial) {
        if is_fraction(p) && *v >= 1.0 {
            return Err(CalibrateError::NonPositive { name: format!("{p} (an efficiency must be below 1)"), value: *v });
        }
    }
    let x0 = DVector::from_iterator(paths.len(), initial.iter().zip(paths).map(|(v, p)| to_free(p, *v)));
    let mut prob = Problem {
        base,
        paths,
        targets,
        predict,
        weights: vec![1.0; targets.len()],
        best: Default::default(),
        x: x0.clone(),
        residuals: None,
        evaluations: std::cell::Cell::new(0),
        prior_weight,
        x0: x0.clone(),
    };
    prob.residuals = prob.eval(&x0);
    if prob.residuals.is_none() {
        let err = predict(base).err().unwrap_or_else(|| "non-finite prediction".into());
        return Err(CalibrateError::Prediction(err));
    }
    // Identifiability: every parameter must move some prediction, and no combination may leave
    // all of them unchanged.
    let j0 = jacobian_at(&prob, &x0).ok_or_else(|| CalibrateError::Prediction("prediction failed near the start".into()))?;
    check_identifiable(&j0.rows(0, targets.len()).into_owned(), paths)?;
    let (mut prob, mut report) = LevenbergMarquardt::new().with_patience(60).minimize(prob);
    restore_best(&mut prob);
    for _ in 0..robust_rounds {
        let r = prob.residuals.clone().ok_or_else(|| CalibrateError::Prediction("prediction failed during reweighting".into()))?;
        let new_w: Vec<f64> = r.iter().zip(&prob.weights).map(|(ri, w)| 1.0 / (ri / w.sqrt()).abs().max(0.01)).collect();
        let x = prob.x.clone();
        prob.weights = new_w;
        *prob.best.borrow_mut() = None;
        prob.set_params(&x);
        let (p, rep) = LevenbergMarquardt::new().with_patience(60).minimize(prob);
        prob = p;
        restore_best(&mut prob);
        report = rep;
    }
    // Report plain relative residuals and plain-loss uncertainties at the solution.
    prob.weights = vec![1.0; targets.len()];
    let x = prob.x.clone();
    prob.set_params(&x);
    let r_all = prob.residuals.clone().ok_or_else(|| CalibrateError::Prediction("prediction failed at the solution".into()))?;
    let r = r_all.rows(0, targets.len()).into_owned();
    let values: Vec<f64> = x.iter().zip(paths).map(|(l, p)| sig(from_free(p, *l))).collect();
    let fitted = set_params(base, paths, &values)?;
    let m = targets.len();
    let n = paths.len();
    let dof = m - n;
    let rss = r.norm_squared();
    let std_errors: Vec<Option<f64>> = if dof > 0 {
        match jacobian_at(&prob, &x).and_then(|j| (j.transpose() * &j).pseudo_inverse(1e-12).ok()) {
            Some(cov) => (0..n).map(|k| Some(dvalue(&paths[k], values[k]) * (cov[(k, k)] * rss / dof as f64).max(0.0).sqrt())).collect(),
            None => vec![None; n],
        }
    } else {
        vec![None; n]
    };
    let params = paths
        .iter()
        .enumerate()
        .map(|(k, p)| FittedParam { name: p.clone(), initial: initial[k], value: sig(values[k]), std_error: std_errors[k].map(sig) })
        .collect();
    let residuals: Vec<Residual> =
        targets.iter().zip(r.iter()).map(|(t, e)| Residual { id: t.id.clone(), error_percent: round_to(e * 100.0, 3) }).collect();
    let mape = residuals.iter().map(|x| x.error_percent.abs()).sum::<f64>() / m as f64;
    let evaluations = prob.evaluations.get();
    Ok((
        fitted,
        FitReport {
            params,
            residuals,
            rms_percent: round_to((rss / m as f64).sqrt() * 100.0, 3),
            mape_percent: round_to(mape, 3),
            dof,
            evaluations,
            termination: format!("{:?}", report.termination),
        },
    ))
}

/// Puts the problem back at the best point it evaluated (the optimiser may stop on a failed trial).
fn restore_best(prob: &mut Problem<'_>) {
    let best = prob.best.borrow().clone();
    if let Some((x, _)) = best {
        prob.set_params(&x);
    }
}

fn check_identifiable(j: &DMatrix<f64>, paths: &[String]) -> Result<(), CalibrateError> {
    let norms: Vec<f64> = (0..j.ncols()).map(|k| j.column(k).norm()).collect();
    for (k, n) in norms.iter().enumerate() {
        if *n < 1e-7 {
            return Err(CalibrateError::Unconstrained(paths[k].clone()));
        }
    }
    if j.ncols() < 2 {
        return Ok(());
    }
    let mut scaled = j.clone();
    for (k, n) in norms.iter().enumerate() {
        scaled.column_mut(k).scale_mut(1.0 / n);
    }
    let svd = scaled.svd(false, true);
    let s = &svd.singular_values;
    let (imin, smin) = s.iter().enumerate().fold((0, f64::INFINITY), |acc, (i, v)| if *v < acc.1 { (i, *v) } else { acc });
    let smax = s.iter().cloned().fold(0.0, f64::max);
    if smin / smax < 1e-6 {
        let vt = svd.v_t.expect("requested");
        let row = vt.row(imin);
        let mut involved: Vec<(f64, &String)> = row.iter().zip(paths).filter(|(c, _)| c.abs() > 0.2).map(|(c, p)| (c.abs(), p)).collect();
        involved.sort_by(|a, b| b.0.total_cmp(&a.0));
        let names: Vec<String> = involved.iter().map(|(_, p)| format!("`{p}`")).collect();
        let last = paths.iter().rev().find(|p| involved.iter().any(|(_, q)| q == p)).cloned().unwrap_or_default();
        return Err(CalibrateError::Collinear { names: names.join(" and "), last });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        let p = Profile::default_profile();
        let v = get_param(&p, "chips.m3-ultra.bw_eff_dense").unwrap();
        let q = set_params(&p, &["chips.m3-ultra.bw_eff_dense".into()], &[v * 2.0]).unwrap();
        assert_eq!(get_param(&q, "chips.m3-ultra.bw_eff_dense").unwrap(), v * 2.0);
        assert!(set_params(&p, &["chips.nope.x".into()], &[1.0]).is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement sources.

/// A harness output file (schema version 1; see calibration/harness/schema.json).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct HarnessFile {
    /// Schema version.
    pub schema_version: u32,
    /// Always `supernode-harness`.
    pub tool: String,
    /// Machine description.
    pub machine: serde_json::Value,
    /// MLX version.
    pub mlx_version: String,
    /// Distributed backend (`ring`, `jaccl`, `none`).
    pub backend: String,
    /// Ranks.
    pub world_size: u32,
    /// `cpu` or `gpu`.
    pub device: String,
    /// Activation dtype.
    #[serde(default)]
    pub dtype: String,
    /// The measurements.
    pub benchmarks: Vec<HarnessBench>,
}

/// One harness measurement.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct HarnessBench {
    /// Kind (`qmm`, `gather_qmm`, `sdpa`, `all_sum`, `send_recv`, `membw`, `matmul_peak`, `sync`,
    /// `e2e_decode`, `e2e_prefill`, ...).
    pub kind: String,
    /// Shape and size parameters.
    pub params: serde_json::Value,
    /// Bytes moved per call.
    #[serde(default)]
    pub bytes: f64,
    /// FLOPs per call.
    #[serde(default)]
    pub flops: f64,
    /// Median seconds per call (rank 0's samples).
    pub median_s: f64,
    /// Every rank's median, when several ranks ran the case at the same time.
    #[serde(default)]
    pub per_rank_median_s: Vec<f64>,
    /// End-to-end tokens per second.
    #[serde(default)]
    pub tokens_per_s: Option<f64>,
    /// e2e decode: median host time per step spent building the step's graph in Python before
    /// evaluating it (serial with the step in the harness's synchronous loop).
    #[serde(default)]
    pub host_build_s: Option<f64>,
    /// End-to-end model configuration.
    #[serde(default)]
    pub model: Option<serde_json::Value>,
    /// Each round's own statistics when the harness timed the case in several rounds (the
    /// headline fields are the best round's).
    #[serde(default)]
    pub rounds: Vec<serde_json::Value>,
    /// Statistics pooled over every round.
    #[serde(default)]
    pub all_rounds: Option<serde_json::Value>,
}

impl HarnessBench {
    /// Tokens per second of every round of an end-to-end record (empty for a single round).
    pub fn round_tokens_per_s(&self) -> Vec<f64> {
        self.rounds.iter().filter_map(|r| r.get("tokens_per_s").and_then(|v| v.as_f64())).collect()
    }

    /// The decode rate over every step of every round (what a user of the box saw on average).
    pub fn mean_tokens_per_s_all_rounds(&self) -> Option<f64> {
        self.all_rounds.as_ref()?.get("tokens_per_s_mean")?.as_f64()
    }
}

/// Errors reading measurement files.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// I/O.
    #[error("cannot read {path}: {message}")]
    Io {
        /// Path.
        path: String,
        /// Message.
        message: String,
    },
    /// Format.
    #[error("{path}: {message}")]
    Format {
        /// Path.
        path: String,
        /// Message.
        message: String,
    },
}

/// Reads and checks a harness file.
pub fn read_harness(path: &std::path::Path) -> Result<HarnessFile, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|e| SourceError::Io { path: path.display().to_string(), message: e.to_string() })?;
    let f: HarnessFile = serde_json::from_str(&text)
        .map_err(|e| SourceError::Format { path: path.display().to_string(), message: format!("not a harness file: {e}") })?;
    if f.tool != "supernode-harness" || f.schema_version != 1 {
        return Err(SourceError::Format {
            path: path.display().to_string(),
            message: format!("unsupported harness file (tool `{}`, schema {})", f.tool, f.schema_version),
        });
    }
    for b in &f.benchmarks {
        if !b.median_s.is_finite() || b.median_s <= 0.0 {
            return Err(SourceError::Format {
                path: path.display().to_string(),
                message: format!("benchmark `{}` {} has median {}", b.kind, b.params, b.median_s),
            });
        }
    }
    Ok(f)
}

/// Chip key under which a harness host's parameters live in a profile.
pub const HOST_CHIP: &str = "harness-host";

/// The measured machine as a node: peak bandwidth and compute are the harness's own
/// measurements (large reduction, large matmul), not catalog figures.
pub fn host_node(h: &HarnessFile) -> Result<crate::hw::NodeSpec, SourceError> {
    let fmt = |m: &str| SourceError::Format { path: "harness".into(), message: m.into() };
    let membw = h.benchmarks.iter().filter(|b| b.kind == "membw").map(|b| b.bytes / b.median_s).fold(0.0, f64::max);
    let flops = h.benchmarks.iter().filter(|b| b.kind == "matmul_peak").map(|b| b.flops / b.median_s).fold(0.0, f64::max);
    if membw <= 0.0 || flops <= 0.0 {
        return Err(fmt("the harness file needs membw and matmul_peak measurements"));
    }
    let ram = h.machine.get("ram_bytes").and_then(|v| v.as_f64()).unwrap_or(16e9);
    let cores = h.machine.get("cores").and_then(|v| v.as_u64()).unwrap_or(1) as u32;
    Ok(crate::hw::NodeSpec {
        id: "harness-host".into(),
        name: format!("harness host {}", h.machine.get("hostname").and_then(|v| v.as_str()).unwrap_or("?")),
        chip: HOST_CHIP.into(),
        os: if h.device == "gpu" { crate::hw::Os::Macos } else { crate::hw::Os::Linux },
        gpu_cores: 0,
        cpu_cores: cores,
        memory_gb: ram / 1e9,
        mem_bw_gbs: membw / 1e9,
        fp16_tflops: flops / 1e12,
        price_usd: 0.0,
        idle_w: 0.0,
        max_w: 1e9,
        rdma_ports: 0,
        tb_ports: 0,
        qsfp_ports: 0,
        tb_generation: 0,
        ethernet_gbps: 0.0,
        wired_fraction: 0.9,
        hpl_cpu_gflops: 0.0,
        hpl_w: 0.0,
        sources: [("mem_bw_gbs".to_string(), "harness membw".to_string()), ("fp16_tflops".to_string(), "harness matmul_peak".to_string())]
            .into_iter()
            .collect(),
    })
}

/// The link between ranks: latency and bandwidth from a least-squares line through the
/// send/recv measurements (one-way time = latency + bytes / bandwidth).
pub fn host_fabric(h: &HarnessFile) -> Result<crate::hw::FabricSpec, SourceError> {
    let pts: Vec<(f64, f64)> = h
        .benchmarks
        .iter()
        .filter(|b| b.kind == "send_recv")
        .filter_map(|b| b.params.get("message_bytes").and_then(|v| v.as_f64()).map(|x| (x, b.median_s)))
        .collect();
    let fmt = |m: String| SourceError::Format { path: "harness".into(), message: m };
    if pts.len() < 2 {
        return Err(fmt(format!("need at least 2 send_recv sizes to fit latency and bandwidth, found {}", pts.len())));
    }
    let x = DMatrix::from_fn(pts.len(), 2, |i, j| if j == 0 { 1.0 } else { pts[i].0 });
    let y = DVector::from_iterator(pts.len(), pts.iter().map(|p| p.1));
    let xtx = x.transpose() * &x;
    let coef =
        xtx.try_inverse().ok_or_else(|| fmt("send_recv sizes are all equal (collinear): cannot separate latency from bandwidth".into()))?
            * x.transpose()
            * y;
    let latency_s = coef[0].max(1e-7);
    let per_byte = coef[1];
    if per_byte <= 0.0 {
        return Err(fmt("send_recv time does not grow with size: cannot fit a bandwidth".into()));
    }
    let transport = if h.backend == "jaccl" { crate::hw::Transport::Rdma } else { crate::hw::Transport::Tcp };
    Ok(crate::hw::FabricSpec {
        id: "harness-link".into(),
        name: format!("harness {} link", h.backend),
        transport,
        backend: if h.backend == "jaccl" { crate::hw::Backend::Jaccl } else { crate::hw::Backend::Ring },
        port: crate::hw::PortKind::None,
        min_tb_generation: 0,
        link_gbps: 0.0,
        latency_us: latency_s * 1e6,
        bandwidth_gbs: 1.0 / per_byte / 1e9,
        topologies: vec![crate::hw::Topology::FullMesh],
        cable_usd: 0.0,
        switch_usd: 0.0,
        sources: Default::default(),
    })
}

/// The harness's end-to-end model as a twin model (from the config the harness recorded).
pub fn e2e_model(cfg: &serde_json::Value) -> Result<crate::llm::ModelSpec, String> {
    let g = |k: &str| cfg.get(k).cloned().unwrap_or(serde_json::Value::Null);
    let hf = serde_json::json!({
        "model_type": "llama", "num_hidden_layers": g("layers"), "hidden_size": g("hidden"), "num_attention_heads": g("heads"),
        "num_key_value_heads": g("kv_heads"), "head_dim": g("head_dim"), "intermediate_size": g("ffn"), "vocab_size": g("vocab"),
        "tie_word_embeddings": g("tie_word_embeddings"),
    });
    crate::llm::ModelSpec::from_hf_config("harness-e2e", "harness end-to-end model", &hf).map_err(|e| e.to_string())
}

fn quant_for_bits(bits: u64) -> crate::llm::QuantSpec {
    let id = match bits {
        8 => "mlx-8bit",
        6 => "mlx-6bit",
        16 => "bf16",
        _ => "mlx-4bit",
    };
    crate::catalog::catalog().quant(id).expect("quant exists").clone()
}

/// What one harness measurement is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HarnessUse {
    /// A microbenchmark the profile is fitted to.
    Fit,
    /// An end-to-end measurement the fitted twin must predict.
    Validate,
    /// A machine fact (bandwidth, peak compute, link line) or not modelled.
    Fact,
}

/// Classifies a harness measurement.
pub fn harness_use(kind: &str) -> HarnessUse {
    match kind {
        "qmm" | "gather_qmm" | "sdpa" | "all_sum" | "op_chain" | "segment_chain" => HarnessUse::Fit,
        "e2e_decode" | "e2e_prefill" => HarnessUse::Validate,
        _ => HarnessUse::Fact,
    }
}

/// The twin's prediction of one harness measurement (seconds per call, or tokens/s for e2e).
pub fn predict_harness(h: &HarnessFile, b: &HarnessBench, profile: &Profile) -> Result<f64, String> {
    use crate::engine::{EngineKind, EngineOptions, Parallelism, Plan, PlanInput, lower_all_sum};
    use crate::llm::{Op, Placement};
    let node = host_node(h).map_err(|e| e.to_string())?;
    let p = |k: &str| b.params.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    let ranks = h.world_size.max(1) as usize;
    let act = if h.dtype == "float32" { 4 } else { 2 };
    let tiny = crate::catalog::catalog().model("llama-3.2-3b").expect("preset").1.clone();
    let make_plan =
        |n: usize, model: &crate::llm::ModelSpec, quant: &crate::llm::QuantSpec, chunk: u64, logits_all: bool| -> Result<Plan, String> {
            let fabric = if n > 1 {
                host_fabric(h).map_err(|e| e.to_string())?
            } else {
                crate::catalog::catalog().fabric("none").expect("exists").clone()
            };
            let mut options = EngineOptions::december_2025(EngineKind::Exo, if n > 1 { Parallelism::Tensor } else { Parallelism::None });
            options.activation_bytes = act;
            options.prefill_chunk = chunk.max(1);
            options.prefill_logits_all = logits_all;
            // The harness times its prefill as one forward over the whole prompt.
            options.prefill_last_token_alone = false;
            let nodes = vec![node.clone(); n];
            Plan::new(PlanInput {
                nodes: &nodes,
                fabric: &fabric,
                topology: if n > 1 { crate::hw::Topology::FullMesh } else { crate::hw::Topology::None },
                model,
                quant,
                options: &options,
                wired_limit_fraction: Some(1.0),
                context: 1,
                profile,
            })
            .map_err(|e| e.to_string())
        };
    match b.kind.as_str() {
        "qmm" => {
            let quant = quant_for_bits(p("bits") as u64);
            let plan = make_plan(1, &tiny, &quant, 1, false)?;
            let op = Op::dense("qmm", (p("K") * p("N")) as u64, Placement::Replicated);
            Ok(plan.op_ns(0, &op, p("M").max(1.0) as u64, 0) / 1e9)
        }
        "gather_qmm" => {
            let quant = quant_for_bits(p("bits") as u64);
            let plan = make_plan(1, &tiny, &quant, 1, false)?;
            // Expert ops are sharded; on one rank the share is 1.
            let op = Op::experts("gather_qmm", (p("K") * p("N")) as u64, 1, p("experts") as u64, p("top_k") as u64);
            Ok(plan.op_ns(0, &op, p("M").max(1.0) as u64, 0) / 1e9)
        }
        "sdpa" => {
            let quant = quant_for_bits(16);
            let plan = make_plan(1, &tiny, &quant, 1, false)?;
            let (heads, kvh, hd) = (p("heads") as u64, p("kv_heads") as u64, p("head_dim") as u64);
            let op = Op::attention("sdpa", 2 * kvh * hd * act, false, 4 * heads * hd, None);
            let q = p("q_len").max(1.0) as u64;
            let kv = p("kv_len") as u64;
            Ok(plan.op_ns(0, &op, q, kv.saturating_sub(q)) / 1e9)
        }
        "op_chain" => {
            // `ops` element-wise ops over `elements` values, evaluated as one graph.
            let plan = make_plan(1, &tiny, &quant_for_bits(16), 1, false)?;
            let elements_scale = p("elements") / tiny.hidden as f64;
            let op = Op::elementwise("add", 1);
            let launch = plan.runtimes[0].kernel_launch_us * 1e3;
            let one = (plan.op_ns(0, &op, 1, 0) - launch) * elements_scale + launch;
            Ok(p("ops") * one / 1e9)
        }
        "segment_chain" => {
            let quant = quant_for_bits(p("bits") as u64);
            let plan = make_plan(ranks, &tiny, &quant, 1, false)?;
            let blocks: Vec<Vec<Op>> = b
                .params
                .get("blocks")
                .and_then(|v| v.as_array())
                .ok_or("segment_chain without blocks")?
                .iter()
                .map(|blk| {
                    let mut ops: Vec<Op> = blk
                        .get("shapes")
                        .and_then(|v| v.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|s| Some(s.get(0)?.as_u64()? * s.get(1)?.as_u64()?))
                        .map(|params| Op::dense("qmm", params, Placement::Replicated))
                        .collect();
                    let ew = blk.get("elementwise").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
                    ops.push(Op::elementwise("element-wise", ew));
                    ops
                })
                .collect();
            let mut low = crate::engine::lower_segment_chain(&plan, &blocks, p("repeats").max(1.0) as usize, p("all_sum_bytes") as u64);
            low.retime(&plan, 0);
            // The mean over repetitions with one seeded stream of jitter.
            let mut jitter = crate::sim::Jitter::new(CHAIN_SEED, plan.jitter_cv);
            let reps = 8;
            let total: u64 = (0..reps).map(|_| crate::sim::execute(&low.graph, 0, &mut jitter).makespan).sum();
            Ok(total as f64 / reps as f64 / 1e9)
        }
        "all_sum" => {
            let plan = make_plan(ranks, &tiny, &quant_for_bits(16), 1, false)?;
            let low = lower_all_sum(&plan, p("message_bytes") as u64);
            Ok(crate::sim::execute(&low.graph, 0, &mut crate::sim::Jitter::none()).makespan as f64 / 1e9)
        }
        "e2e_decode" | "e2e_prefill" => {
            let cfg = b.model.as_ref().ok_or("e2e measurement without its model config")?;
            let model = e2e_model(cfg)?;
            let quant = quant_for_bits(cfg.get("bits").and_then(|v| v.as_u64()).unwrap_or(4));
            let n = cfg.get("ranks").and_then(|v| v.as_u64()).unwrap_or(ranks as u64) as usize;
            let prompt = p("prompt_tokens") as u64;
            let chunk = if p("chunk") > 0.0 { p("chunk") as u64 } else { prompt };
            // The harness's model applies the LM head to the last position only; files that
            // say otherwise (`"prefill_logits": "all"`) are honoured.
            let logits_all = cfg.get("prefill_logits").and_then(|v| v.as_str()) == Some("all");
            let mut plan = make_plan(n, &model, &quant, chunk, logits_all)?;
            if b.kind == "e2e_decode" {
                // The harness builds each step's graph in Python, then evaluates it: measured
                // host time, serial with the step (0 in files that predate the measurement).
                if let Some(build) = b.host_build_s.filter(|x| x.is_finite() && *x > 0.0) {
                    for rt in &mut plan.runtimes {
                        rt.host_per_step_us = build * 1e6;
                    }
                }
                let gen_tokens = p("gen_tokens").max(1.0) as u64;
                let run = crate::estimate::simulate_generate(&plan, prompt.max(1), gen_tokens, 1);
                Ok(gen_tokens as f64 / (run.decode_ns as f64 / 1e9))
            } else {
                let run = crate::estimate::simulate_generate(&plan, prompt.max(1), 1, 1);
                Ok(prompt as f64 / (run.prefill_ns as f64 / 1e9))
            }
        }
        other => Err(format!("harness measurement `{other}` is not predicted")),
    }
}

/// The slowest rank's median of a case every rank ran at once (rank 0's when only that is known).
fn slowest_rank_median(b: &HarnessBench) -> f64 {
    b.per_rank_median_s.iter().copied().filter(|v| v.is_finite() && *v > 0.0).fold(b.median_s, f64::max)
}

/// Drift of a harness run, per benchmark: the ratio of the machine's pace during the end-to-end
/// decode (the mean of the `pace` probes taken between its steps and right after it) to its pace
/// around the benchmark (the mean of the nearest probes before and after it). 1 everywhere when
/// the file has no probes (older files, `--only` subsets). Not applied to the fit: on this 2-core
/// VM the probe itself is bimodal (1.1 or 1.7 ms) and scaling by it helped one closed-loop run and
/// hurt two; `validate` reports the drift so that a user knows the run's noise floor.
pub fn pace_factors(h: &HarnessFile) -> Vec<f64> {
    let n = h.benchmarks.len();
    // (index, slowest rank's probe time, taken in the decode window)
    let probes: Vec<(usize, f64, bool)> = h
        .benchmarks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.kind == "pace" && b.median_s > 0.0)
        .map(|(i, b)| {
            let at = b.params.get("at").and_then(|v| v.as_str()).unwrap_or("");
            (i, slowest_rank_median(b), at == "e2e decode" || at == "after e2e")
        })
        .collect();
    let at_decode: Vec<f64> = probes.iter().filter(|p| p.2).map(|p| p.1).collect();
    if at_decode.is_empty() {
        return vec![1.0; n];
    }
    let reference = at_decode.iter().sum::<f64>() / at_decode.len() as f64;
    (0..n)
        .map(|i| {
            let before = probes.iter().rev().find(|p| p.0 < i).map(|p| p.1);
            let after = probes.iter().find(|p| p.0 > i).map(|p| p.1);
            let local = match (before, after) {
                (Some(a), Some(b)) => (a + b) / 2.0,
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => reference,
            };
            reference / local
        })
        .collect()
}

/// How much slower (positive) or faster the machine ran during the e2e decode than on average
/// around the microbenchmarks, in percent, from the pace probes; `None` without probes.
pub fn pace_drift_percent(h: &HarnessFile) -> Option<f64> {
    let f = pace_factors(h);
    let fits: Vec<f64> = h.benchmarks.iter().zip(&f).filter(|(b, _)| harness_use(&b.kind) == HarnessUse::Fit).map(|(_, x)| *x).collect();
    if fits.is_empty() || fits.iter().all(|x| *x == 1.0) {
        return None;
    }
    Some((fits.iter().sum::<f64>() / fits.len() as f64 - 1.0) * 100.0)
}

/// Seed of the jitter stream when predicting a segment chain.
const CHAIN_SEED: u64 = 7;

/// The measured value that [`predict_harness`] predicts.
///
/// For a kernel timed on every rank at once this is the slowest rank's median: in a
/// tensor-parallel step every segment of kernels ends in a collective that waits for the last
/// rank, so the slowest rank's pace is the one the step runs at (on a shared box the ranks'
/// cores differ by 10-50%, measured).
pub fn harness_measured(b: &HarnessBench) -> f64 {
    match b.kind.as_str() {
        "e2e_decode" | "e2e_prefill" => b.tokens_per_s.unwrap_or(f64::NAN),
        "qmm" | "gather_qmm" | "sdpa" | "op_chain" | "segment_chain" => slowest_rank_median(b),
        _ => b.median_s,
    }
}

/// Id of a harness measurement.
pub fn harness_id(b: &HarnessBench, i: usize) -> String {
    let g = |k: &str| b.params.get(k).map(|v| v.to_string()).unwrap_or_default();
    match b.kind.as_str() {
        "qmm" => format!("{i}:qmm M{} {}x{} {}b", g("M"), g("K"), g("N"), g("bits")),
        "gather_qmm" => format!("{i}:gather_qmm M{} {}x{}", g("M"), g("K"), g("N")),
        "sdpa" => format!("{i}:sdpa {} kv{}", g("phase").trim_matches('"'), g("kv_len")),
        "all_sum" => format!("{i}:all_sum {}B", g("message_bytes")),
        "op_chain" => format!("{i}:op_chain {} ops", g("ops")),
        "segment_chain" => format!("{i}:segment_chain x{} {}", g("repeats"), if g("sync") == "true" { "with all_sums" } else { "no sync" }),
        other => format!("{i}:{other}"),
    }
}

/// A profile seeded for a harness host: the chip parameters start from the M3 Ultra values.
pub fn with_host_chip(base: &Profile) -> Profile {
    let mut p = base.clone();
    if !p.chips.contains_key(HOST_CHIP) {
        let mut chip = p.chips.get("m3-ultra").cloned().expect("default profile has m3-ultra");
        chip.runtimes.retain(|k, _| k == "mlx");
        p.chips.insert(HOST_CHIP.into(), chip);
    }
    p
}

/// Parameters fitted from harness microbenchmarks by default.
pub fn harness_params() -> Vec<String> {
    [
        "bw_eff_dense",
        "compute_eff_dense",
        "bw_eff_expert",
        "compute_eff_expert",
        "bw_eff_attention",
        "compute_eff_attention",
        "runtimes.mlx.kernel_launch_us",
    ]
    .iter()
    .map(|p| format!("chips.{HOST_CHIP}.{p}"))
    .chain(["comm.tcp_message_us".to_string(), "comm.collective_in_context_us".to_string()])
    .collect()
}

/// Parameters fitted from the published rows by default.
pub fn published_params() -> Vec<String> {
    [
        "chips.m3-ultra.bw_eff_dense",
        "chips.m3-ultra.bw_eff_expert",
        "chips.m3-ultra.compute_eff_dense",
        "chips.m3-ultra.compute_eff_expert",
        "chips.m3-ultra.compute_eff_attention",
        "chips.m3-ultra.gpu_dynamic_w",
        "chips.m3-ultra.runtimes.mlx.kernel_launch_us",
        "chips.m3-ultra.runtimes.llama-cpp.kernel_launch_us",
        "comm.jaccl_round_us",
        "comm.jaccl_peer_us",
        "comm.rpc_call_us",
        "comm.rpc_graph_node_us",
        "chips.gb10.bw_eff_dense",
        "chips.gb10.runtimes.llama-cpp.kernel_launch_us",
        "chips.ryzen-ai-max-395.bw_eff_dense",
        "chips.ryzen-ai-max-395.bw_eff_expert",
        "chips.ryzen-ai-max-395.runtimes.llama-cpp.kernel_launch_us",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

// ---------------------------------------------------------------------------------------------
// Data sets: published rows and harness measurements behind one predictor.

/// Where a target's prediction comes from.
#[derive(Clone, Debug)]
pub enum TargetSource {
    /// A published row (a scenario through the run estimator).
    Row(Box<crate::calibrate::validate::Prepared>),
    /// A harness measurement (file, index into its benchmarks).
    Harness(std::sync::Arc<HarnessFile>, usize),
}

/// Measurements with their predictors.
#[derive(Clone, Debug, Default)]
pub struct Dataset {
    /// Targets, in order.
    pub targets: Vec<Target>,
    /// How to predict each.
    pub sources: Vec<TargetSource>,
    /// Rows or measurements left out, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Input files.
    pub files: Vec<String>,
}

impl Dataset {
    /// Adds a measurement CSV (the format of shared/data/measurements.csv).
    pub fn add_csv(&mut self, path: &std::path::Path, profile: &Profile) -> Result<(), SourceError> {
        let rows = crate::calibrate::validate::read_csv(path)
            .map_err(|e| SourceError::Format { path: path.display().to_string(), message: e.to_string() })?;
        let (prepared, skipped) = crate::calibrate::validate::prepare(&rows, profile);
        for p in prepared {
            self.targets.push(Target { id: p.row.id.clone(), measured: p.row.value });
            self.sources.push(TargetSource::Row(Box::new(p)));
        }
        self.skipped.extend(skipped.into_iter().map(|s| (s.id, s.reason)));
        self.files.push(path.display().to_string());
        Ok(())
    }

    /// Adds the microbenchmarks of a harness file (`use_` selects fit or validation targets).
    pub fn add_harness(&mut self, path: &std::path::Path, use_: HarnessUse) -> Result<(), SourceError> {
        let h = std::sync::Arc::new(read_harness(path)?);
        for (i, b) in h.benchmarks.iter().enumerate() {
            if harness_use(&b.kind) == use_ {
                self.targets.push(Target { id: harness_id(b, i), measured: harness_measured(b) });
                self.sources.push(TargetSource::Harness(h.clone(), i));
            } else if use_ == HarnessUse::Fit {
                self.skipped.push((harness_id(b, i), format!("{} measurement: a machine fact or a validation target, not fitted", b.kind)));
            }
        }
        self.files.push(path.display().to_string());
        Ok(())
    }

    /// Predicts every target under `profile`.
    pub fn predict(&self, profile: &Profile) -> Result<Vec<f64>, String> {
        use rayon::prelude::*;
        // Independent predictions, collected in target order: identical at any thread count.
        self.sources
            .par_iter()
            .map(|s| match s {
                TargetSource::Row(p) => crate::calibrate::validate::predict(p, profile),
                TargetSource::Harness(h, i) => predict_harness(h, &h.benchmarks[*i], profile),
            })
            .collect()
    }

    /// The prior weight `calibrate` uses unless told otherwise: [`PRIOR_WEIGHT`] when the data
    /// include published rows, whose parameters start from sourced values; 0 for harness files
    /// alone, whose host parameters start from another chip's values (a seed, not a belief), so
    /// a prior would only pull them toward the wrong machine.
    pub fn default_prior_weight(&self) -> f64 {
        if self.sources.iter().any(|s| matches!(s, TargetSource::Row(_))) { PRIOR_WEIGHT } else { 0.0 }
    }

    /// A copy without target `i`.
    pub fn without(&self, i: usize) -> Dataset {
        let mut d = self.clone();
        d.targets.remove(i);
        d.sources.remove(i);
        d
    }

    /// Node counts and the largest context the data cover; chips of the nodes.
    pub fn envelope(&self) -> (Vec<u32>, u64, Vec<String>) {
        let mut counts = std::collections::BTreeSet::new();
        let mut chips = std::collections::BTreeSet::new();
        let mut ctx = 0;
        for s in &self.sources {
            match s {
                TargetSource::Row(p) => {
                    counts.insert(p.scenario.nodes.len() as u32);
                    for n in &p.scenario.nodes {
                        chips.insert(n.chip.clone());
                    }
                    ctx = ctx.max(p.scenario.workload.prompt_tokens + p.scenario.workload.generate_tokens);
                }
                TargetSource::Harness(h, _) => {
                    counts.insert(h.world_size);
                    chips.insert(HOST_CHIP.to_string());
                }
            }
        }
        (counts.into_iter().collect(), ctx, chips.into_iter().collect())
    }
}

/// Fits `params` (or the defaults for the data) and returns the fitted profile. With default
/// parameters, those the data do not constrain, and the later one of a pair the data cannot
/// separate, are dropped (kept as they are, and listed).
/// `prior_weight` is the weight of the prior toward the base values ([`PRIOR_WEIGHT`] by default).
pub fn calibrate(
    data: &Dataset,
    base: &Profile,
    params: Option<Vec<String>>,
    prior_weight: f64,
) -> Result<(Profile, FitReport, Vec<String>), CalibrateError> {
    let explicit = params.is_some();
    let mut params = params.unwrap_or_else(|| {
        let has_rows = data.sources.iter().any(|s| matches!(s, TargetSource::Row(_)));
        let has_harness = data.sources.iter().any(|s| matches!(s, TargetSource::Harness(..)));
        let mut v = Vec::new();
        if has_rows {
            v.extend(published_params());
        }
        if has_harness {
            v.extend(harness_params());
        }
        v
    });
    // Costs are fitted in log space and need a positive start: a collective's in-context cost is 0
    // in profiles fitted without segment chains, so a harness fit starts it at 10 us.
    let mut base = base.clone();
    if params.iter().any(|p| p == "comm.collective_in_context_us") && base.comm.collective_in_context_us <= 0.0 {
        base.comm.collective_in_context_us = 10.0;
    }
    let base = &base;
    let mut dropped = Vec::new();
    let predictor = |p: &Profile| data.predict(p);
    if !explicit {
        // Parameters no measurement depends on (another chip's, a fabric nobody used) are left
        // out before counting points against parameters.
        let (kept, idle) = moving_params(base, params, &predictor);
        params = kept;
        dropped.extend(idle);
    }
    loop {
        match fit_with_prior(base, &params, &data.targets, &predictor, ROBUST_ROUNDS, prior_weight) {
            Err(CalibrateError::Unconstrained(p)) if !explicit => {
                params.retain(|x| *x != p);
                dropped.push(p);
            }
            Err(CalibrateError::UnknownParam(p)) if !explicit => {
                params.retain(|x| *x != p);
                dropped.push(p);
            }
            // Parameters chosen automatically that the data cannot tell apart: keep the one
            // listed first (efficiencies come before per-call costs) and leave the other as is.
            Err(CalibrateError::Collinear { last, .. }) if !explicit && !last.is_empty() => {
                params.retain(|x| *x != last);
                dropped.push(last);
            }
            other => return other.map(|(prof, rep)| (prof, rep, dropped)),
        }
    }
}

/// Splits `paths` into those that move some prediction of `predict` when nudged by one
/// finite-difference step (in the fitted, log / logit space) and those that move none.
fn moving_params(base: &Profile, paths: Vec<String>, predict: &Predictor<'_>) -> (Vec<String>, Vec<String>) {
    let Ok(p0) = predict(base) else {
        return (paths, Vec::new()); // the fit reports the failure
    };
    let (mut kept, mut idle) = (Vec::new(), Vec::new());
    for path in paths {
        let moves = match get_param(base, &path) {
            Some(v) if v > 0.0 && v.is_finite() && !(is_fraction(&path) && v >= 1.0) => {
                let nudged = from_free(&path, to_free(&path, v) + 10.0 * FD_STEP);
                match set_params(base, std::slice::from_ref(&path), &[nudged]).ok().and_then(|p| predict(&p).ok()) {
                    Some(p1) => p1.iter().zip(&p0).any(|(a, b)| (a / b - 1.0).abs() > 1e-9),
                    None => true,
                }
            }
            // Unknown or invalid starting values: the fit names the problem.
            _ => true,
        };
        if moves { kept.push(path) } else { idle.push(path) }
    }
    (kept, idle)
}
