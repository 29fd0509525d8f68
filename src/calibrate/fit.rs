//! The least-squares fit: Levenberg-Marquardt over the twin itself (Jacobian by finite
//! differences) in free variables (log, or logit for efficiencies), rounds of robust
//! reweighting, a weak prior toward the starting values, identifiability checks, and the
//! parameter uncertainties and residuals of the result.

use std::cell::{Cell, RefCell};

use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt, MinimizationReport};
use nalgebra::{DMatrix, DVector, Dyn, Owned};

use super::CalibrateError;
use super::params::{dvalue, from_free, get_param, is_fraction, set_params, to_free};
use super::target::{PredictError, Target};
use crate::profile::{FitReport, FittedParam, Profile, Residual};
use crate::util::{round_to, sig};

/// Predictions for all targets under a profile, in target order.
pub type Predictor<'a> = dyn Fn(&Profile) -> Result<Vec<f64>, PredictError> + Sync + 'a;

/// Rounds of iteratively reweighted least squares after the plain fit: each round weights every
/// measurement by `1 / max(|relative error|, c)` ([`huber_threshold`]), which turns the squared
/// loss into Huber's: squared for errors within the data's own scatter, absolute beyond it (so
/// one badly specified row does not drag every parameter).
pub const ROBUST_ROUNDS: usize = 4;

/// Huber's tuning constant: 95% efficiency under normal errors (Huber 1964; the textbook
/// default).
const HUBER_K: f64 = 1.345;

/// Median absolute deviation to a normal standard deviation.
const MAD_TO_SIGMA: f64 = 1.4826;

/// The floor of the robust loss's threshold: a relative error below 1% is noise in any
/// published figure.
const MIN_HUBER_THRESHOLD: f64 = 0.01;

/// Where Huber's loss turns from squared to absolute for these relative residuals: `k` times
/// their robust scale (the median absolute residual as a normal sigma), at least 1%.
///
/// Errors within the data's own scatter then weigh as in least squares, which is smooth in the
/// rows. Under the absolute loss with a 1% floor (before 2026-12-05) a fit sat on a vertex of
/// rows it matched exactly, and a fold could land on another vertex. Cross-validation on the
/// published rows, same profile and parameters: `--cv row` 12.1 -> 10.4%, `--cv model`
/// 14.3 -> 13.9%.
pub fn huber_threshold(residuals: impl Iterator<Item = f64>) -> f64 {
    let mut a: Vec<f64> = residuals.map(f64::abs).filter(|x| x.is_finite()).collect();
    if a.is_empty() {
        return MIN_HUBER_THRESHOLD;
    }
    a.sort_by(f64::total_cmp);
    let mid = a.len() / 2;
    let median = if a.len() % 2 == 1 { a[mid] } else { 0.5 * (a[mid - 1] + a[mid]) };
    (HUBER_K * MAD_TO_SIGMA * median).max(MIN_HUBER_THRESHOLD)
}

/// The residual variance that scales the covariance of a fit under Huber's loss, per degree of
/// freedom `dof`: `sum psi(r)^2 / dof / (m / n)^2`, with `psi` Huber's influence (the residual
/// within the fit's threshold [`huber_threshold`], the threshold beyond it) and `m` of the `n`
/// rows within it (Huber 1981, section 7.6: an M-estimator's asymptotic covariance). A row the
/// loss treats as an outlier moves the fit by at most the threshold, so it adds at most the
/// threshold's square here, not its own; with every row within the threshold this is the least-
/// squares `rss / dof`. (To 2026-12-07, `rss / dof`: the rows the twin misses by 25-35% widened
/// every parameter's standard error as if the fit had followed them.) The rows' scatter, which
/// intervals add, keeps every residual whole.
pub fn huber_residual_variance(residuals: impl Iterator<Item = f64> + Clone, dof: usize) -> f64 {
    let c = huber_threshold(residuals.clone());
    let (mut sum, mut inside, mut n) = (0.0, 0usize, 0usize);
    for r in residuals {
        sum += r.clamp(-c, c).powi(2);
        inside += usize::from(r.abs() <= c);
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    let share = inside.max(1) as f64 / n as f64;
    sum / dof.max(1) as f64 / (share * share)
}

/// Huber's loss of a relative residual at threshold `c`, scaled to equal `|r| - c/2` beyond
/// it; its reweighting is `1 / max(|r|, c)`.
pub fn huber_loss(r: f64, c: f64) -> f64 {
    let a = r.abs();
    if a <= c { a * a / (2.0 * c) } else { a - 0.5 * c }
}

/// Weight of the prior that [`crate::calibrate::calibrate`] puts on every parameter's starting
/// value (in log / logit units): moving a parameter by a factor e costs as much as 1% more
/// relative error on one measurement beyond the robust loss's threshold (where that loss is
/// absolute; [`huber_threshold`]). It decides nothing the data constrain; it keeps a
/// parameter that only one or two measurements touch from wandering when one of them is left out.
pub const PRIOR_WEIGHT: f64 = 0.1;

/// Step in log space for the finite-difference Jacobian: large enough to stay above the
/// integer-nanosecond rounding of the simulation, small enough to be local.
pub(crate) const FD_STEP: f64 = 2e-3;

/// Largest prior weight accepted: 1e7 times the default, where the prior already pins every
/// parameter to its start (a larger weight only makes the fit's steps underflow and never end).
pub const MAX_PRIOR_WEIGHT: f64 = 1e6;

/// Parses a prior weight from the command line: a finite number in 0..=[`MAX_PRIOR_WEIGHT`].
pub fn parse_prior_weight(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(w) if w.is_finite() && (0.0..=MAX_PRIOR_WEIGHT).contains(&w) => Ok(w),
        _ => Err(format!("must be a number from 0 to {MAX_PRIOR_WEIGHT:e} (default {PRIOR_WEIGHT}), got `{s}`")),
    }
}

/// Debug output of the fit (`-v` / `RUST_LOG=supernode::calibrate=debug`); the message is only
/// built when that level is on.
fn debug(what: impl FnOnce() -> String) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!("fit: {}", what());
    }
}

/// Predictions evaluated by every fit in this process so far: what `calibrate`'s progress
/// display counts (a fit's number of evaluations is not known in advance).
pub static EVALUATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

struct Problem<'a> {
    base: &'a Profile,
    paths: &'a [String],
    /// Whether each parameter is a fraction (logit) rather than positive (log).
    fractions: Vec<bool>,
    targets: &'a [Target],
    predict: &'a Predictor<'a>,
    /// Per-target weights (robust reweighting); residuals are multiplied by their square roots.
    weights: Vec<f64>,
    /// Best point evaluated so far (free variables, squared norm of residuals).
    best: RefCell<Option<(DVector<f64>, f64)>>,
    x: DVector<f64>,
    residuals: Option<DVector<f64>>,
    evaluations: Cell<usize>,
    /// Weak prior: extra residuals `prior_weight * (x - x0)` in the free (log / logit) variables,
    /// which hold a parameter the data barely constrain near its sourced starting value.
    prior_weight: f64,
    x0: DVector<f64>,
}

impl Problem<'_> {
    fn values(&self, x: &DVector<f64>) -> Vec<f64> {
        x.iter().zip(&self.fractions).map(|(l, f)| from_free(*f, *l)).collect()
    }

    fn eval(&self, x: &DVector<f64>) -> Option<DVector<f64>> {
        self.evaluations.set(self.evaluations.get() + 1);
        EVALUATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let values = self.values(x);
        let p = set_params(self.base, self.paths, &values).map_err(|e| debug(|| format!("cannot set {values:?}: {e}"))).ok()?;
        let pred = (self.predict)(&p).map_err(|e| debug(|| format!("prediction failed at {values:?}: {e}"))).ok()?;
        if pred.len() != self.targets.len() || pred.iter().any(|v| !v.is_finite()) {
            debug(|| format!("non-finite prediction at {values:?}: {pred:?}"));
            return None;
        }
        let data = pred.iter().zip(self.targets).zip(&self.weights).map(|((p, t), w)| (p - t.measured) / t.measured * w.sqrt());
        let prior = x.iter().zip(self.x0.iter()).map(|(v, v0)| self.prior_weight * (v - v0));
        let n_prior = if self.prior_weight > 0.0 { x.len() } else { 0 };
        Some(DVector::from_iterator(self.targets.len() + n_prior, data.chain(prior.take(n_prior))))
    }

    /// Puts the problem back at the best point it evaluated (the optimiser may stop on a failed trial).
    fn restore_best(&mut self) {
        let best = self.best.borrow().clone();
        if let Some((x, _)) = best {
            self.set_params(&x);
        }
    }
}

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

/// The starting values of `paths`, checked: every measurement usable, enough of them, every
/// parameter known, positive, and below 1 if it is an efficiency.
fn starting_values(base: &Profile, paths: &[String], targets: &[Target]) -> Result<Vec<f64>, CalibrateError> {
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
        if is_fraction(base, p) && *v >= 1.0 {
            return Err(CalibrateError::NonPositive { name: format!("{p} (an efficiency must be below 1)"), value: *v });
        }
    }
    Ok(initial)
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
    let initial = starting_values(base, paths, targets)?;
    fit_toward(base, paths, targets, predict, robust_rounds, prior_weight, &initial)
}

/// [`fit_with_prior`] with the prior centred on `center` (one value per path) instead of the
/// starting values: a refit that starts from a previous fit (warm start) and keeps the prior
/// of the original fit.
pub fn fit_toward(
    base: &Profile,
    paths: &[String],
    targets: &[Target],
    predict: &Predictor<'_>,
    robust_rounds: usize,
    prior_weight: f64,
    center: &[f64],
) -> Result<(Profile, FitReport), CalibrateError> {
    let initial = starting_values(base, paths, targets)?;
    let fractions: Vec<bool> = paths.iter().map(|p| is_fraction(base, p)).collect();
    let free = |v: &[f64]| DVector::from_iterator(paths.len(), v.iter().zip(&fractions).map(|(v, f)| to_free(*f, *v)));
    let (x0, xc) = (free(&initial), free(center));
    let mut prob = Problem {
        base,
        paths,
        fractions,
        targets,
        predict,
        weights: vec![1.0; targets.len()],
        best: Default::default(),
        x: x0.clone(),
        residuals: None,
        evaluations: Cell::new(0),
        prior_weight,
        x0: xc,
    };
    prob.residuals = prob.eval(&x0);
    if prob.residuals.is_none() {
        let err = predict(base).err().map_or_else(|| "non-finite prediction".into(), |e| e.to_string());
        return Err(CalibrateError::Prediction(err));
    }
    // Identifiability: every parameter must move some prediction, and no combination may leave
    // all of them unchanged.
    let j0 = jacobian_at(&prob, &x0).ok_or_else(|| CalibrateError::Prediction("prediction failed near the start".into()))?;
    check_identifiable(&j0.rows(0, targets.len()).into_owned(), paths)?;
    let (prob, report) = minimise(prob, robust_rounds)?;
    result(prob, &initial, &report)
}

/// The plain fit, then `robust_rounds` reweighted fits from where the previous one stopped.
fn minimise(prob: Problem<'_>, robust_rounds: usize) -> Result<(Problem<'_>, MinimizationReport<f64>), CalibrateError> {
    let (mut prob, mut report) = LevenbergMarquardt::new().with_patience(60).minimize(prob);
    prob.restore_best();
    for _ in 0..robust_rounds {
        let r = prob.residuals.clone().ok_or_else(|| CalibrateError::Prediction("prediction failed during reweighting".into()))?;
        let raw: Vec<f64> = r.iter().zip(&prob.weights).map(|(ri, w)| ri / w.sqrt()).collect();
        let c = huber_threshold(raw.iter().copied());
        let new_w: Vec<f64> = raw.iter().map(|ri| 1.0 / ri.abs().max(c)).collect();
        let x = prob.x.clone();
        prob.weights = new_w;
        *prob.best.borrow_mut() = None;
        prob.set_params(&x);
        let (p, rep) = LevenbergMarquardt::new().with_patience(60).minimize(prob);
        prob = p;
        prob.restore_best();
        report = rep;
    }
    Ok((prob, report))
}

/// The fitted profile and its report: plain relative residuals at the solution, and standard
/// errors from the robust loss's residual variance ([`huber_residual_variance`]).
fn result(mut prob: Problem<'_>, initial: &[f64], report: &MinimizationReport<f64>) -> Result<(Profile, FitReport), CalibrateError> {
    let (paths, targets) = (prob.paths, prob.targets);
    prob.weights = vec![1.0; targets.len()];
    let x = prob.x.clone();
    prob.set_params(&x);
    let r_all = prob.residuals.clone().ok_or_else(|| CalibrateError::Prediction("prediction failed at the solution".into()))?;
    let r = r_all.rows(0, targets.len()).into_owned();
    let values: Vec<f64> = prob.values(&x).into_iter().map(sig).collect();
    let fitted = set_params(prob.base, paths, &values)?;
    let (m, n) = (targets.len(), paths.len());
    let dof = m - n;
    let rss = r.norm_squared();
    // The robust fit's residual variance (outliers capped at the loss's threshold), as the
    // intervals' covariance takes it.
    let s2 = huber_residual_variance(r.iter().copied(), dof);
    let std_errors: Vec<Option<f64>> =
        match (dof > 0).then(|| jacobian_at(&prob, &x).and_then(|j| (j.transpose() * &j).pseudo_inverse(1e-12).ok())).flatten() {
            Some(cov) => (0..n).map(|k| Some(dvalue(prob.fractions[k], values[k]) * (cov[(k, k)] * s2).max(0.0).sqrt())).collect(),
            None => vec![None; n],
        };
    let params = paths
        .iter()
        .enumerate()
        .map(|(k, p)| FittedParam {
            name: p.clone(),
            initial: initial[k],
            value: sig(values[k]),
            std_error: std_errors[k].map(sig),
            rows: Vec::new(),
            runtimes: Vec::new(),
        })
        .collect();
    let residuals: Vec<Residual> =
        targets.iter().zip(r.iter()).map(|(t, e)| Residual { id: t.id.clone(), error_percent: round_to(e * 100.0, 3) }).collect();
    let mape = residuals.iter().map(|x| x.error_percent.abs()).sum::<f64>() / m as f64;
    let report = FitReport {
        params,
        residuals,
        rms_percent: round_to((rss / m as f64).sqrt() * 100.0, 3),
        mape_percent: round_to(mape, 3),
        dof,
        evaluations: prob.evaluations.get(),
        termination: format!("{:?}", report.termination),
    };
    Ok((fitted, report))
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

/// Splits `paths` into those that move at least `min_rows` predictions of `predict` when nudged
/// by ten finite-difference steps (in the fitted, log / logit space) and those that move fewer
/// (a parameter one row alone constrains is held at its prior: the row would only be fitted
/// exactly, and its error would vanish from every report).
pub(crate) fn moving_params(base: &Profile, paths: Vec<String>, predict: &Predictor<'_>, min_rows: usize) -> (Vec<String>, Vec<String>) {
    let Ok(p0) = predict(base) else {
        return (paths, Vec::new()); // the fit reports the failure
    };
    let (mut kept, mut idle) = (Vec::new(), Vec::new());
    for path in paths {
        let fraction = is_fraction(base, &path);
        let moves = match get_param(base, &path) {
            Some(v) if v > 0.0 && v.is_finite() && !(fraction && v >= 1.0) => {
                let nudged = from_free(fraction, to_free(fraction, v) + 10.0 * FD_STEP);
                match set_params(base, std::slice::from_ref(&path), &[nudged]).ok().and_then(|p| predict(&p).ok()) {
                    Some(p1) => p1.iter().zip(&p0).filter(|(a, b)| (*a / *b - 1.0).abs() > 1e-9).count() >= min_rows.max(1),
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

/// The rows whose prediction `path` moves materially ([`moves_materially`]: a doubling
/// of the parameter changes the row by about 3.5% or more) at `profile`; `None` where the
/// parameter cannot be nudged or the prediction fails there.
pub(crate) fn material_rows(profile: &Profile, path: &str, predict: &Predictor<'_>) -> Option<usize> {
    let p0 = predict(profile).ok()?;
    let fraction = is_fraction(profile, path);
    let v = get_param(profile, path).filter(|v| *v > 0.0 && v.is_finite() && !(fraction && *v >= 1.0))?;
    let step = 10.0 * FD_STEP;
    let nudged = from_free(fraction, to_free(fraction, v) + step);
    let p1 = predict(&set_params(profile, &[path.to_string()], &[nudged]).ok()?).ok()?;
    Some(p1.iter().zip(&p0).filter(|(a, b)| moves_materially(**b, **a, step)).count())
}

/// The least elasticity |d ln(prediction) / d(free variable)| at the full fit for a row to count
/// as moving a parameter in a fold's budget: a doubling of the parameter must change the row's
/// prediction by about 3.5% or more. A row a parameter barely touches cannot constrain it: with
/// "any change at all", a term that one row sets (the 405B's working set) counted a 3B and a 70B
/// row that it moves by 0.1% and 4% per doubling, was "fitted" without its one row and sent the
/// held-out 405B to -81%. (`calibrate` itself, starting from the priors, keeps "any change":
/// a per-call cost whose prior is small moves its rows little there, and far more at the fit.)
pub const MATERIAL_ELASTICITY: f64 = 0.05;

/// Whether a row whose prediction went from `p0` to `p1` when a parameter's free variable moved by
/// `step` counts as moved by it (see [`MATERIAL_ELASTICITY`]).
pub fn moves_materially(p0: f64, p1: f64, step: f64) -> bool {
    p0 > 0.0 && p1 > 0.0 && (p1 / p0).ln().abs() >= MATERIAL_ELASTICITY * step.abs()
}

#[cfg(test)]
mod tests {
    use super::{huber_loss, huber_residual_variance, huber_threshold};

    /// Within the threshold every row counts as in least squares; a row beyond it adds only the
    /// threshold's square, and the share of rows within it scales the variance up.
    #[test]
    fn huber_residual_variance_caps_an_outlier_at_the_threshold() {
        let calm = [0.01, -0.01, 0.012, -0.008];
        let rss: f64 = calm.iter().map(|r| r * r).sum();
        assert!((huber_residual_variance(calm.iter().copied(), 2) - rss / 2.0).abs() < 1e-15);
        // Median |r| 0.01: threshold 1.345 x 1.4826 x 0.01 = 0.019941; four rows within it.
        let wild = [0.01, -0.01, 0.01, -0.01, 0.5];
        let c = 1.345 * 1.4826 * 0.01;
        let want = (4.0 * 1e-4 + c * c) / 3.0 / (0.8f64 * 0.8);
        let got = huber_residual_variance(wild.iter().copied(), 3);
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        assert!(got < 0.01 * wild.iter().map(|r| r * r).sum::<f64>() / 3.0, "least squares would be 200x larger");
        assert_eq!(huber_residual_variance(std::iter::empty(), 3), 0.0);
    }

    /// The threshold is 1.345 x 1.4826 x the median absolute residual (sign ignored), never
    /// below 1%; with no residual it is the floor.
    #[test]
    fn huber_threshold_is_the_residuals_robust_scale_with_a_floor() {
        let c = huber_threshold([0.02, -0.04, 0.10, -0.50, 0.06].into_iter());
        assert!((c - 1.345 * 1.4826 * 0.06).abs() < 1e-12, "{c}");
        let even = huber_threshold([0.02, -0.04, 0.08, 0.10].into_iter());
        assert!((even - 1.345 * 1.4826 * 0.06).abs() < 1e-12, "{even}");
        assert_eq!(huber_threshold([0.001, -0.002, 0.0].into_iter()), 0.01);
        assert_eq!(huber_threshold(std::iter::empty()), 0.01);
        // One wild row moves the median, not the scale with it.
        let wild = huber_threshold([0.02, 0.04, 0.06, 0.08, 9.0].into_iter());
        assert!((wild - 1.345 * 1.4826 * 0.06).abs() < 1e-12, "{wild}");
    }

    /// Squared inside the threshold, absolute beyond, continuous with a continuous slope at it.
    #[test]
    fn huber_loss_is_squared_then_absolute_and_smooth_at_the_threshold() {
        let c = 0.05;
        assert_eq!(huber_loss(0.0, c), 0.0);
        assert!((huber_loss(0.02, c) - 0.0004 / 0.1).abs() < 1e-15);
        assert!((huber_loss(-0.2, c) - (0.2 - 0.025)).abs() < 1e-15);
        let (below, above) = (huber_loss(c - 1e-9, c), huber_loss(c + 1e-9, c));
        assert!((below - above).abs() < 1e-8, "{below} {above}");
        let slope = |r: f64| (huber_loss(r + 1e-7, c) - huber_loss(r - 1e-7, c)) / 2e-7;
        assert!((slope(c - 1e-6) - 1.0).abs() < 1e-3 && (slope(c + 1e-6) - 1.0).abs() < 1e-3);
        assert_eq!(huber_loss(0.03, c), huber_loss(-0.03, c));
    }
}
